//! Anthropic Messages: named SSE events (`message_start` ... `message_stop`)
//! and the non-stream `message` object.

use bytes::Bytes;
use serde_json::{Value, json};

use super::{Ctx, parse_args, sse_event};
use crate::chunking::{arg_pieces, text_pieces};
use crate::script::{Item, ScriptedResponse, StopKind, Usage};

/// Anthropic `stop_reason`.
pub(crate) fn stop_reason(stop: StopKind) -> &'static str {
    match stop {
        StopKind::Stop => "end_turn",
        StopKind::Length => "max_tokens",
        StopKind::ToolUse => "tool_use",
    }
}

fn usage_json(u: Usage, output: u64) -> Value {
    json!({
        "input_tokens": u.input,
        "cache_creation_input_tokens": u.cache_write,
        "cache_read_input_tokens": u.cache_read,
        "output_tokens": output,
    })
}

/// The `message` object of `message_start` (empty content, no stop reason).
pub(crate) fn start_message(ctx: &Ctx, usage: Usage) -> Value {
    json!({
        "id": format!("msg_mock{}", ctx.seq),
        "type": "message",
        "role": "assistant",
        "model": ctx.model,
        "content": [],
        "stop_reason": null,
        "stop_sequence": null,
        "usage": usage_json(usage, 1),
    })
}

fn delta(index: usize, delta: Value) -> Bytes {
    sse_event(
        "content_block_delta",
        &json!({"type": "content_block_delta", "index": index, "delta": delta}),
    )
}

pub(super) fn stream(resp: &ScriptedResponse, ctx: &Ctx) -> Vec<Bytes> {
    let cs = resp.chunk_size;
    let usage = resp.effective_usage();
    let ping = sse_event("ping", &json!({"type": "ping"}));
    let mut events = vec![sse_event(
        "message_start",
        &json!({"type": "message_start", "message": start_message(ctx, usage)}),
    )];
    if resp.items.is_empty() {
        events.push(ping.clone());
    }
    for (index, item) in resp.items.iter().enumerate() {
        let block = match item {
            Item::Text(_) => json!({"type": "text", "text": ""}),
            Item::Thinking { .. } => json!({"type": "thinking", "thinking": "", "signature": ""}),
            Item::ToolCall { id, name, .. } => {
                json!({"type": "tool_use", "id": id, "name": name, "input": {}})
            }
        };
        events.push(sse_event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": block}),
        ));
        if index == 0 {
            events.push(ping.clone());
        }
        match item {
            Item::Text(text) => {
                for piece in text_pieces(text, cs) {
                    events.push(delta(index, json!({"type": "text_delta", "text": piece})));
                }
            }
            Item::Thinking { text, signature } => {
                for piece in text_pieces(text, cs) {
                    events.push(delta(
                        index,
                        json!({"type": "thinking_delta", "thinking": piece}),
                    ));
                }
                if let Some(sig) = signature {
                    events.push(delta(
                        index,
                        json!({"type": "signature_delta", "signature": sig}),
                    ));
                }
            }
            Item::ToolCall { arguments, .. } => {
                for piece in arg_pieces(arguments, cs) {
                    events.push(delta(
                        index,
                        json!({"type": "input_json_delta", "partial_json": piece}),
                    ));
                }
            }
        }
        events.push(sse_event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
    }
    events.push(sse_event(
        "message_delta",
        &json!({
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason(resp.effective_stop()), "stop_sequence": null},
            "usage": {"output_tokens": usage.output},
        }),
    ));
    if !resp.omit_terminal {
        events.push(message_stop());
    }
    events
}

/// The `message_stop` event.
pub(crate) fn message_stop() -> Bytes {
    Bytes::from_static(b"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
}

pub(super) fn complete(resp: &ScriptedResponse, ctx: &Ctx) -> Value {
    let usage = resp.effective_usage();
    let content: Vec<Value> = resp
        .items
        .iter()
        .map(|item| match item {
            Item::Text(text) => json!({"type": "text", "text": text}),
            Item::Thinking { text, signature } => json!({
                "type": "thinking",
                "thinking": text,
                "signature": signature.clone().unwrap_or_default(),
            }),
            Item::ToolCall {
                id,
                name,
                arguments,
            } => {
                json!({"type": "tool_use", "id": id, "name": name, "input": parse_args(arguments)})
            }
        })
        .collect();
    json!({
        "id": format!("msg_mock{}", ctx.seq),
        "type": "message",
        "role": "assistant",
        "model": ctx.model,
        "content": content,
        "stop_reason": stop_reason(resp.effective_stop()),
        "stop_sequence": null,
        "usage": usage_json(usage, usage.output),
    })
}
