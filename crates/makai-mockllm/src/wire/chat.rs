//! OpenAI Chat Completions: `chat.completion.chunk` SSE events and the
//! non-stream `chat.completion` object.

use bytes::Bytes;
use serde_json::{Value, json};

use super::{Ctx, chat_finish, sse_data};
use crate::chunking::{arg_pieces, text_pieces};
use crate::script::{Item, ScriptedResponse, Usage};

/// The `data: [DONE]` terminator.
pub(crate) const DONE: &[u8] = b"data: [DONE]\n\n";

fn chunk(ctx: &Ctx, delta: Value, finish: Option<&str>) -> Bytes {
    sse_data(&json!({
        "id": format!("chatcmpl-mock{}", ctx.seq),
        "object": "chat.completion.chunk",
        "created": ctx.created,
        "model": ctx.model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }))
}

/// The Chat Completions `usage` object.
pub(crate) fn usage_json(u: Usage) -> Value {
    let prompt = u.input + u.cache_read;
    json!({
        "prompt_tokens": prompt,
        "completion_tokens": u.output,
        "total_tokens": prompt + u.output,
        "prompt_tokens_details": {"cached_tokens": u.cache_read},
    })
}

pub(super) fn stream(resp: &ScriptedResponse, ctx: &Ctx) -> Vec<Bytes> {
    let cs = resp.chunk_size;
    let mut events = vec![chunk(
        ctx,
        json!({"role": "assistant", "content": ""}),
        None,
    )];
    let mut tool_index = 0usize;
    for item in &resp.items {
        match item {
            Item::Text(text) => {
                for piece in text_pieces(text, cs) {
                    events.push(chunk(ctx, json!({"content": piece}), None));
                }
            }
            Item::Thinking { text, .. } => {
                for piece in text_pieces(text, cs) {
                    events.push(chunk(ctx, json!({"reasoning_content": piece}), None));
                }
            }
            Item::ToolCall {
                id,
                name,
                arguments,
            } => {
                let header = json!({"tool_calls": [{
                    "index": tool_index,
                    "id": id,
                    "type": "function",
                    "function": {"name": name, "arguments": ""},
                }]});
                events.push(chunk(ctx, header, None));
                for piece in arg_pieces(arguments, cs) {
                    let delta = json!({"tool_calls": [{
                        "index": tool_index,
                        "function": {"arguments": piece},
                    }]});
                    events.push(chunk(ctx, delta, None));
                }
                tool_index += 1;
            }
        }
    }
    events.push(chunk(
        ctx,
        json!({}),
        Some(chat_finish(resp.effective_stop())),
    ));
    if ctx.include_usage {
        events.push(sse_data(&json!({
            "id": format!("chatcmpl-mock{}", ctx.seq),
            "object": "chat.completion.chunk",
            "created": ctx.created,
            "model": ctx.model,
            "choices": [],
            "usage": usage_json(resp.effective_usage()),
        })));
    }
    if !resp.omit_terminal {
        events.push(Bytes::from_static(DONE));
    }
    events
}

pub(super) fn complete(resp: &ScriptedResponse, ctx: &Ctx) -> Value {
    let mut content = String::new();
    let mut reasoning = String::new();
    let mut tool_calls = Vec::new();
    for item in &resp.items {
        match item {
            Item::Text(text) => content.push_str(text),
            Item::Thinking { text, .. } => reasoning.push_str(text),
            Item::ToolCall {
                id,
                name,
                arguments,
            } => tool_calls.push(json!({
                "id": id,
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            })),
        }
    }
    let mut message = serde_json::Map::new();
    message.insert("role".into(), json!("assistant"));
    let has_text = resp.items.iter().any(|i| matches!(i, Item::Text(_)));
    message.insert(
        "content".into(),
        if has_text {
            json!(content)
        } else {
            Value::Null
        },
    );
    if !reasoning.is_empty() {
        message.insert("reasoning_content".into(), json!(reasoning));
    }
    if !tool_calls.is_empty() {
        message.insert("tool_calls".into(), Value::Array(tool_calls));
    }
    json!({
        "id": format!("chatcmpl-mock{}", ctx.seq),
        "object": "chat.completion",
        "created": ctx.created,
        "model": ctx.model,
        "choices": [{
            "index": 0,
            "message": message,
            "finish_reason": chat_finish(resp.effective_stop()),
        }],
        "usage": usage_json(resp.effective_usage()),
    })
}
