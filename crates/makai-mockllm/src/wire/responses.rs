//! OpenAI Responses: typed SSE events with `sequence_number`, and the
//! non-stream `response` object.

use bytes::Bytes;
use serde_json::{Map, Value, json};

use super::{Ctx, sse_event};
use crate::chunking::{arg_pieces, text_pieces};
use crate::script::{Item, ScriptedResponse, StopKind, Usage};

/// Collects events, numbering them in order.
struct Emitter {
    events: Vec<Bytes>,
}

impl Emitter {
    fn emit(&mut self, ty: &str, fields: Value) {
        let mut obj = Map::new();
        obj.insert("type".into(), json!(ty));
        if let Value::Object(fields) = fields {
            obj.extend(fields);
        }
        obj.insert("sequence_number".into(), json!(self.events.len()));
        self.events.push(sse_event(ty, &Value::Object(obj)));
    }
}

fn usage_json(u: Usage) -> Value {
    let input = u.input + u.cache_read;
    json!({
        "input_tokens": input,
        "input_tokens_details": {"cached_tokens": u.cache_read},
        "output_tokens": u.output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input + u.output,
    })
}

fn response_object(ctx: &Ctx, status: &str, output: Vec<Value>, usage: Option<Usage>) -> Value {
    let incomplete = if status == "incomplete" {
        json!({"reason": "max_output_tokens"})
    } else {
        Value::Null
    };
    json!({
        "id": format!("resp_mock{}", ctx.seq),
        "object": "response",
        "created_at": ctx.created,
        "status": status,
        "error": null,
        "incomplete_details": incomplete,
        "model": ctx.model,
        "output": output,
        "usage": usage.map(usage_json),
    })
}

/// The finished output item for `item` (as in `response.output_item.done`).
fn done_item(ctx: &Ctx, index: usize, item: &Item) -> Value {
    match item {
        Item::Text(text) => json!({
            "id": format!("msg_mock{}_{index}", ctx.seq),
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }),
        Item::Thinking { text, signature } => {
            let mut v = json!({
                "id": format!("rs_mock{}_{index}", ctx.seq),
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": text}],
            });
            if let (Some(sig), Value::Object(map)) = (signature, &mut v) {
                map.insert("encrypted_content".into(), json!(sig));
            }
            v
        }
        Item::ToolCall {
            id,
            name,
            arguments,
        } => json!({
            "id": format!("fc_mock{}_{index}", ctx.seq),
            "type": "function_call",
            "status": "completed",
            "arguments": arguments,
            "call_id": id,
            "name": name,
        }),
    }
}

fn final_status(stop: StopKind) -> &'static str {
    match stop {
        StopKind::Length => "incomplete",
        StopKind::Stop | StopKind::ToolUse => "completed",
    }
}

pub(super) fn stream(resp: &ScriptedResponse, ctx: &Ctx) -> Vec<Bytes> {
    let cs = resp.chunk_size;
    let mut em = Emitter { events: Vec::new() };
    let initial = response_object(ctx, "in_progress", Vec::new(), None);
    em.emit("response.created", json!({"response": initial.clone()}));
    em.emit("response.in_progress", json!({"response": initial}));
    let mut output = Vec::with_capacity(resp.items.len());
    for (oi, item) in resp.items.iter().enumerate() {
        match item {
            Item::Text(text) => {
                let item_id = format!("msg_mock{}_{oi}", ctx.seq);
                em.emit(
                    "response.output_item.added",
                    json!({"output_index": oi, "item": {
                        "id": item_id, "type": "message", "status": "in_progress",
                        "role": "assistant", "content": [],
                    }}),
                );
                let part = |t: &str| json!({"type": "output_text", "text": t, "annotations": []});
                let at = json!({"item_id": item_id, "output_index": oi, "content_index": 0});
                em.emit("response.content_part.added", with(&at, "part", part("")));
                for piece in text_pieces(text, cs) {
                    em.emit(
                        "response.output_text.delta",
                        with(&at, "delta", json!(piece)),
                    );
                }
                em.emit("response.output_text.done", with(&at, "text", json!(text)));
                em.emit("response.content_part.done", with(&at, "part", part(text)));
            }
            Item::Thinking { text, .. } => {
                let item_id = format!("rs_mock{}_{oi}", ctx.seq);
                em.emit(
                    "response.output_item.added",
                    json!({"output_index": oi, "item": {
                        "id": item_id, "type": "reasoning", "summary": [],
                    }}),
                );
                let part = |t: &str| json!({"type": "summary_text", "text": t});
                let at = json!({"item_id": item_id, "output_index": oi, "summary_index": 0});
                em.emit(
                    "response.reasoning_summary_part.added",
                    with(&at, "part", part("")),
                );
                for piece in text_pieces(text, cs) {
                    em.emit(
                        "response.reasoning_summary_text.delta",
                        with(&at, "delta", json!(piece)),
                    );
                }
                em.emit(
                    "response.reasoning_summary_text.done",
                    with(&at, "text", json!(text)),
                );
                em.emit(
                    "response.reasoning_summary_part.done",
                    with(&at, "part", part(text)),
                );
            }
            Item::ToolCall {
                id,
                name,
                arguments,
            } => {
                let item_id = format!("fc_mock{}_{oi}", ctx.seq);
                em.emit(
                    "response.output_item.added",
                    json!({"output_index": oi, "item": {
                        "id": item_id, "type": "function_call", "status": "in_progress",
                        "arguments": "", "call_id": id, "name": name,
                    }}),
                );
                let at = json!({"item_id": item_id, "output_index": oi});
                for piece in arg_pieces(arguments, cs) {
                    em.emit(
                        "response.function_call_arguments.delta",
                        with(&at, "delta", json!(piece)),
                    );
                }
                em.emit(
                    "response.function_call_arguments.done",
                    with(&at, "arguments", json!(arguments)),
                );
            }
        }
        let done = done_item(ctx, oi, item);
        em.emit(
            "response.output_item.done",
            json!({"output_index": oi, "item": done.clone()}),
        );
        output.push(done);
    }
    if !resp.omit_terminal {
        let status = final_status(resp.effective_stop());
        let ty = if status == "incomplete" {
            "response.incomplete"
        } else {
            "response.completed"
        };
        let response = response_object(ctx, status, output, Some(resp.effective_usage()));
        em.emit(ty, json!({"response": response}));
    }
    em.events
}

/// `base` (an object) plus one more field.
fn with(base: &Value, key: &str, value: Value) -> Value {
    let mut v = base.clone();
    if let Value::Object(map) = &mut v {
        map.insert(key.into(), value);
    }
    v
}

pub(super) fn complete(resp: &ScriptedResponse, ctx: &Ctx) -> Value {
    let output = resp
        .items
        .iter()
        .enumerate()
        .map(|(i, item)| done_item(ctx, i, item))
        .collect();
    response_object(
        ctx,
        final_status(resp.effective_stop()),
        output,
        Some(resp.effective_usage()),
    )
}
