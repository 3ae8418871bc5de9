//! Amazon Bedrock ConverseStream: the events of one response as AWS
//! event-stream messages (`messageStart`, `contentBlockStart`/`Delta`/`Stop`,
//! `messageStop`, `metadata`), exceptions for in-stream errors, and the
//! non-stream `Converse` object.

use bytes::Bytes;
use serde_json::{Value, json};

use super::eventstream::{event, exception};
use super::{Ctx, parse_args};
use crate::chunking::{arg_pieces, text_pieces};
use crate::script::{ErrorKind, Item, ScriptedResponse, StopKind};

/// Bedrock's `stopReason`.
fn stop_reason(stop: StopKind) -> &'static str {
    match stop {
        StopKind::Stop => "end_turn",
        StopKind::Length => "max_tokens",
        StopKind::ToolUse => "tool_use",
    }
}

fn usage_json(resp: &ScriptedResponse) -> Value {
    let u = resp.effective_usage();
    json!({
        "inputTokens": u.input,
        "outputTokens": u.output,
        "totalTokens": u.input + u.output + u.cache_read + u.cache_write,
        "cacheReadInputTokens": u.cache_read,
        "cacheWriteInputTokens": u.cache_write,
    })
}

fn delta(index: usize, delta: Value) -> Bytes {
    // `p` pads the event as Bedrock does, hiding lengths.
    event(
        "contentBlockDelta",
        &json!({"contentBlockIndex": index, "delta": delta, "p": "abcdefgh"}),
    )
}

pub(super) fn stream(resp: &ScriptedResponse, _ctx: &Ctx) -> Vec<Bytes> {
    let cs = resp.chunk_size;
    let mut events = vec![event(
        "messageStart",
        &json!({"role": "assistant", "p": "abc"}),
    )];
    for (index, item) in resp.items.iter().enumerate() {
        match item {
            Item::Text(text) => {
                for piece in text_pieces(text, cs) {
                    events.push(delta(index, json!({"text": piece})));
                }
            }
            Item::Thinking { text, signature } => {
                for piece in text_pieces(text, cs) {
                    events.push(delta(index, json!({"reasoningContent": {"text": piece}})));
                }
                if let Some(sig) = signature {
                    events.push(delta(
                        index,
                        json!({"reasoningContent": {"signature": sig}}),
                    ));
                }
            }
            Item::ToolCall {
                id,
                name,
                arguments,
            } => {
                events.push(event(
                    "contentBlockStart",
                    &json!({"contentBlockIndex": index, "start": {"toolUse": {"toolUseId": id, "name": name}}}),
                ));
                for piece in arg_pieces(arguments, cs) {
                    events.push(delta(index, json!({"toolUse": {"input": piece}})));
                }
            }
        }
        events.push(event(
            "contentBlockStop",
            &json!({"contentBlockIndex": index}),
        ));
    }
    if !resp.omit_terminal {
        events.push(event(
            "messageStop",
            &json!({"stopReason": stop_reason(resp.effective_stop())}),
        ));
        events.push(event(
            "metadata",
            &json!({"usage": usage_json(resp), "metrics": {"latencyMs": 42}}),
        ));
    }
    events
}

/// The in-stream exception for an error kind.
pub(crate) fn stream_error(kind: ErrorKind) -> Bytes {
    let (name, message) = match kind {
        ErrorKind::Overloaded => (
            "serviceUnavailableException",
            "Bedrock is unable to process your request.",
        ),
        ErrorKind::RateLimit => (
            "throttlingException",
            "Too many tokens, please wait before trying again.",
        ),
        ErrorKind::Server => (
            "internalServerException",
            "The server encountered an internal error.",
        ),
        ErrorKind::InvalidRequest => ("validationException", "The provided request is not valid."),
    };
    exception(name, message)
}

/// The AWS error type sent in `x-amzn-ErrorType` for an HTTP status.
pub(crate) fn error_type_for_status(status: u16) -> &'static str {
    match status {
        400 => "ValidationException",
        403 => "AccessDeniedException",
        404 => "ResourceNotFoundException",
        429 => "ThrottlingException",
        503 => "ServiceUnavailableException",
        _ => "InternalServerException",
    }
}

pub(super) fn complete(resp: &ScriptedResponse, _ctx: &Ctx) -> Value {
    let content: Vec<Value> = resp
        .items
        .iter()
        .map(|item| match item {
            Item::Text(text) => json!({"text": text}),
            Item::Thinking { text, signature } => {
                json!({"reasoningContent": {"reasoningText": {"text": text, "signature": signature}}})
            }
            Item::ToolCall { id, name, arguments } => {
                json!({"toolUse": {"toolUseId": id, "name": name, "input": parse_args(arguments)}})
            }
        })
        .collect();
    json!({
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop_reason(resp.effective_stop()),
        "usage": usage_json(resp),
        "metrics": {"latencyMs": 42},
    })
}
