//! ConverseStream events as [`MessageBuilder`] calls.
//!
//! Events (named by the frame's `:event-type`): `messageStart`,
//! `contentBlockStart` (tool calls only; text and reasoning blocks start with
//! their first delta), `contentBlockDelta` (`text`, `toolUse.input`,
//! `reasoningContent.text` / `.signature` / `.redactedContent`),
//! `contentBlockStop`, `messageStop` (the stop reason) and `metadata` (usage,
//! the last event). Exceptions inside the stream end the attempt:
//! throttling, service-unavailable, internal-server and model-stream exceptions
//! are retried like HTTP 429/503/500 (AWS documents the last as "retry your
//! request"); validation and other errors are not.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;

use crate::builder::MessageBuilder;
use crate::error::Fault;
use crate::message::StopReason;
use crate::model::Model;
use crate::provider::WireDecoder;
use crate::quote::bounded;
use crate::sse::SseEvent;

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Raw {
    content_block_index: Option<u64>,
    start: Option<Start>,
    delta: Option<Delta>,
    stop_reason: Option<String>,
    usage: Option<Usage>,
    message: Option<String>,
    #[serde(rename = "Message")]
    message_upper: Option<String>,
    /// `modelStreamErrorException`: the model's own status and message.
    original_status_code: Option<u64>,
    original_message: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Start {
    tool_use: Option<ToolUseStart>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolUseStart {
    tool_use_id: String,
    name: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Delta {
    text: Option<String>,
    tool_use: Option<ToolUseDelta>,
    reasoning_content: Option<Reasoning>,
}

#[derive(Deserialize)]
struct ToolUseDelta {
    input: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Reasoning {
    text: Option<String>,
    signature: Option<String>,
    redacted_content: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Usage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_write_input_tokens: Option<u64>,
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Text,
    Thinking,
    Tool,
}

/// The decoder of one response.
#[derive(Default)]
pub(super) struct Decoder {
    /// Bedrock's block index → (builder content index, kind).
    blocks: HashMap<u64, (usize, Kind)>,
    stop: Option<String>,
}

/// Maps a Bedrock stop reason; `Err` for reasons that are failures.
fn stop_reason(reason: &str) -> Result<StopReason, String> {
    match reason {
        "end_turn" | "stop_sequence" => Ok(StopReason::Stop),
        "max_tokens" | "model_context_window_exceeded" => Ok(StopReason::Length),
        "tool_use" => Ok(StopReason::ToolUse),
        "guardrail_intervened" => {
            Err("a Bedrock guardrail blocked the response (guardrail_intervened)".into())
        }
        "content_filtered" => {
            Err("the response was blocked by content filtering (content_filtered)".into())
        }
        other => Ok({
            tracing::debug!(
                reason = other,
                "unknown Bedrock stop reason; treated as stop"
            );
            StopReason::Stop
        }),
    }
}

impl Decoder {
    fn block(&mut self, index: u64, kind: Kind, out: &mut MessageBuilder) -> usize {
        if let Some((i, k)) = self.blocks.get(&index)
            && *k == kind
            && out.is_open(*i)
        {
            return *i;
        }
        if let Some((old, _)) = self.blocks.remove(&index) {
            out.end_block(old);
        }
        let i = match kind {
            Kind::Text => out.start_text(),
            Kind::Thinking => out.start_thinking(),
            Kind::Tool => out.start_tool_call("", ""),
        };
        self.blocks.insert(index, (i, kind));
        i
    }

    fn finish(&mut self, out: &mut MessageBuilder, model: &Model) -> Result<(), Fault> {
        let Some(reason) = self.stop.take() else {
            return Err(Fault::retryable(
                "the Bedrock stream ended before messageStop",
            ));
        };
        match stop_reason(&reason) {
            Ok(mut r) => {
                if r == StopReason::Stop && out.message().tool_calls().next().is_some() {
                    r = StopReason::ToolUse;
                }
                out.finish(r, model);
            }
            Err(message) => out.fail(StopReason::Error, message, model),
        }
        Ok(())
    }
}

fn exception_message(raw: &Raw, data: &str) -> String {
    let message = raw
        .message
        .clone()
        .or_else(|| raw.message_upper.clone())
        .unwrap_or_else(|| bounded(data).to_string());
    match (&raw.original_message, raw.original_status_code) {
        (Some(original), Some(status)) => {
            format!("{message} (the model answered {status}: {original})")
        }
        (Some(original), None) => format!("{message} ({original})"),
        _ => message,
    }
}

impl WireDecoder for Decoder {
    fn on_event(
        &mut self,
        event: SseEvent<'_>,
        out: &mut MessageBuilder,
        model: &Model,
    ) -> Result<(), Fault> {
        let known = matches!(
            event.event,
            "messageStart"
                | "contentBlockStart"
                | "contentBlockDelta"
                | "contentBlockStop"
                | "messageStop"
                | "metadata"
                | "error"
        ) || event.event.ends_with("Exception");
        if !known {
            // Events this client does not know (added later) are skipped unread.
            return Ok(());
        }
        let raw: Raw = if event.data.trim_ascii().is_empty() {
            Raw::default()
        } else {
            serde_json::from_str(event.data).map_err(|e| {
                Fault::fatal(format!(
                    "Bedrock sent a {} event that is not valid JSON ({e}): {}",
                    event.event,
                    bounded(event.data)
                ))
            })?
        };
        match event.event {
            "messageStart" => out.start(),
            "contentBlockStart" => {
                if let (Some(index), Some(tool)) =
                    (raw.content_block_index, raw.start.and_then(|s| s.tool_use))
                {
                    let i = self.block(index, Kind::Tool, out);
                    out.set_tool_call_identity(i, Some(&tool.tool_use_id), Some(&tool.name));
                }
            }
            "contentBlockDelta" => {
                let index = raw.content_block_index.unwrap_or(0);
                let Some(delta) = raw.delta else {
                    return Ok(());
                };
                if let Some(text) = delta.text {
                    let i = self.block(index, Kind::Text, out);
                    out.push_text(i, &text);
                } else if let Some(tool) = delta.tool_use {
                    let i = self.block(index, Kind::Tool, out);
                    out.push_tool_args(i, tool.input.as_deref().unwrap_or(""));
                } else if let Some(r) = delta.reasoning_content {
                    let i = self.block(index, Kind::Thinking, out);
                    if let Some(text) = r.text {
                        out.push_thinking(i, &text);
                    }
                    if let Some(sig) = r.signature {
                        out.push_thinking_signature(i, &sig);
                    }
                    if let Some(payload) = r.redacted_content {
                        out.set_redacted_thinking(i, &payload);
                    }
                }
            }
            "contentBlockStop" => {
                if let Some((i, _)) = raw.content_block_index.and_then(|n| self.blocks.remove(&n)) {
                    out.end_block(i);
                }
            }
            "messageStop" => {
                if let Some(reason) = &raw.stop_reason {
                    out.set_raw_stop_reason(reason);
                }
                self.stop = Some(raw.stop_reason.unwrap_or_else(|| "end_turn".to_string()));
            }
            "metadata" => {
                if let Some(u) = raw.usage {
                    let usage = out.usage_mut();
                    usage.input = u.input_tokens.unwrap_or(0);
                    usage.output = u.output_tokens.unwrap_or(0);
                    usage.cache_read = u.cache_read_input_tokens.unwrap_or(0);
                    usage.cache_write = u.cache_write_input_tokens.unwrap_or(0);
                }
                if self.stop.is_some() {
                    self.finish(out, model)?;
                }
            }
            "throttlingException"
            | "serviceUnavailableException"
            | "internalServerException"
            | "modelStreamErrorException" => {
                let message = format!(
                    "Bedrock {}: {}",
                    event.event,
                    exception_message(&raw, event.data)
                );
                return Err(Fault::retryable(message));
            }
            name if name.ends_with("Exception") || name == "error" => {
                let code = serde_json::from_str::<Value>(event.data)
                    .ok()
                    .and_then(|v| v.get("code").and_then(Value::as_str).map(str::to_string));
                let what = code.as_deref().unwrap_or(name);
                return Err(Fault::fatal(format!(
                    "Bedrock {what}: {}",
                    exception_message(&raw, event.data)
                )));
            }
            _ => {}
        }
        Ok(())
    }

    fn on_eof(&mut self, out: &mut MessageBuilder, model: &Model) -> Result<(), Fault> {
        // `metadata` may be missing (a proxy that drops it); the stop reason is enough.
        self.finish(out, model)
    }
}
