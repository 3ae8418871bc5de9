//! How a Responses stream ends: the terminal events' `status` becomes a stop
//! reason, their `usage` the message's token counts, and a failed response or an
//! `error` event becomes a [`Fault`].
//!
//! - `completed`: [`StopReason::ToolUse`] when the response holds a function call,
//!   else [`StopReason::Stop`]; a response whose only output is a refusal fails
//!   (a refusal is not an answer);
//! - `incomplete`: [`StopReason::Length`], except a content-filter stop, which fails;
//! - `failed` / `cancelled`, and `error` events: a fault, retryable when the error
//!   code names a transient server condition (a retry hint in the message is kept).
//!
//! Usage: `input_tokens` counts cached tokens too, so the uncached input is
//! `input_tokens - cached_tokens`.

use serde_json::Value;

use super::str_at;
use crate::builder::MessageBuilder;
use crate::error::{Fault, retry_hint_in_text};
use crate::message::StopReason;
use crate::model::Model;

/// What the decoder saw of the response's output before its terminal event.
pub(super) struct Output<'a> {
    /// A function call item was announced or finished.
    pub(super) saw_function_call: bool,
    /// Refusal text of the message items.
    pub(super) refusal: &'a str,
}

/// Finishes the message for a `response.completed` / `response.incomplete` /
/// `response.done` event; `status_hint` is used when the response has no `status`.
pub(super) fn complete(
    response: Option<&Value>,
    status_hint: &str,
    seen: Output<'_>,
    out: &mut MessageBuilder,
    model: &Model,
) -> Result<(), Fault> {
    let status = response
        .and_then(|r| str_at(r, "status"))
        .unwrap_or(status_hint);
    if let Some(r) = response {
        if let Some(id) = str_at(r, "id") {
            out.set_response_id(id);
        }
        if let Some(answered) = str_at(r, "model") {
            out.set_response_model(answered);
        }
        read_usage(r, out);
    }
    // The provider's word: why it is incomplete, else its status.
    let raw = response
        .and_then(|r| r.pointer("/incomplete_details/reason"))
        .and_then(Value::as_str)
        .unwrap_or(status);
    out.set_raw_stop_reason(raw);
    match status {
        "incomplete" => {
            let reason = response
                .and_then(|r| r.pointer("/incomplete_details/reason"))
                .and_then(Value::as_str);
            if reason == Some("content_filter") {
                out.fail(
                    StopReason::Error,
                    "OpenAI stopped the response: its content filter flagged the output",
                    model,
                );
            } else {
                out.finish(StopReason::Length, model);
            }
        }
        "failed" | "cancelled" => {
            return Err(fault_from_error(
                response.and_then(|r| r.get("error")),
                status,
            ));
        }
        _ => {
            let has_calls = seen.saw_function_call || out.message().tool_calls().next().is_some();
            let has_text = !out.message().text().is_empty();
            if !seen.refusal.is_empty() && !has_calls && !has_text {
                let msg = format!("the model refused to answer: {}", seen.refusal);
                out.fail(StopReason::Error, msg, model);
            } else if has_calls {
                out.finish(StopReason::ToolUse, model);
            } else {
                out.finish(StopReason::Stop, model);
            }
        }
    }
    Ok(())
}

/// The fault for a `response.failed` / `response.cancelled` event (`kind`),
/// keeping the usage the response reports.
pub(super) fn failed(response: Option<&Value>, kind: &str, out: &mut MessageBuilder) -> Fault {
    if let Some(r) = response {
        read_usage(r, out);
    }
    fault_from_error(response.and_then(|r| r.get("error")), kind)
}

/// The fault for an `error` event: its nested `error` object when there is one,
/// else its top-level `code` and `message`.
pub(super) fn error_event(
    error: Option<&Value>,
    code: Option<&Value>,
    message: Option<&str>,
) -> Fault {
    match error.filter(|e| e.is_object()) {
        Some(e) => fault_from_error(Some(e), "error"),
        None => {
            let flat = serde_json::json!({
                "code": code,
                "message": message,
            });
            fault_from_error(Some(&flat), "error")
        }
    }
}

fn read_usage(response: &Value, out: &mut MessageBuilder) {
    let Some(usage) = response.get("usage").filter(|u| u.is_object()) else {
        return;
    };
    let n = |p: &str| usage.pointer(p).and_then(Value::as_u64).unwrap_or(0);
    let input = n("/input_tokens");
    let cached = n("/input_tokens_details/cached_tokens");
    let output = n("/output_tokens");
    let u = out.usage_mut();
    u.cache_read = cached;
    u.input = input.saturating_sub(cached);
    u.output = output;
    u.reasoning = usage
        .pointer("/output_tokens_details/reasoning_tokens")
        .and_then(Value::as_u64);
}

/// The fault for an `error` event or a failed response's `error` object.
fn fault_from_error(error: Option<&Value>, what: &str) -> Fault {
    let text = |key: &str| {
        error
            .and_then(|e| e.get(key))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let code = text("code").or_else(|| text("type"));
    let message = match (text("message"), code) {
        (Some(m), _) => m.to_string(),
        (None, Some(c)) => {
            format!("the Responses stream reported an error ({what}, code {c}) without a message")
        }
        (None, None) => format!("the Responses stream reported an error ({what}) without details"),
    };
    let retryable = matches!(
        code,
        Some(
            "server_error"
                | "internal_error"
                | "rate_limit_exceeded"
                | "server_is_overloaded"
                | "overloaded"
                | "slow_down"
                | "timeout"
                | "service_unavailable"
        )
    );
    if retryable {
        let mut fault = Fault::retryable(message);
        fault.retry_after = retry_hint_in_text(&fault.message);
        fault
    } else {
        Fault::fatal(message)
    }
}
