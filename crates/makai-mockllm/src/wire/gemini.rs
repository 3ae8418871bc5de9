//! Gemini `streamGenerateContent`: `GenerateContentResponse` chunks as SSE
//! (`alt=sse`, `\r\n\r\n` terminators) or as a streamed JSON array, and the
//! single object of `generateContent`.

use bytes::Bytes;
use serde_json::{Value, json};

use super::{Ctx, parse_args};
use crate::chunking::text_pieces;
use crate::script::{Item, ScriptedResponse, StopKind, Usage};

fn finish_reason(stop: StopKind) -> &'static str {
    match stop {
        StopKind::Length => "MAX_TOKENS",
        StopKind::Stop | StopKind::ToolUse => "STOP",
    }
}

fn prompt_tokens(u: Usage) -> u64 {
    u.input + u.cache_read
}

fn full_usage(u: Usage) -> Value {
    let prompt = prompt_tokens(u);
    json!({
        "promptTokenCount": prompt,
        "candidatesTokenCount": u.output,
        "totalTokenCount": prompt + u.output,
        "cachedContentTokenCount": u.cache_read,
    })
}

fn chunk(ctx: &Ctx, parts: Vec<Value>, finish: Option<&str>, usage: Value) -> Value {
    let mut candidate = json!({"content": {"parts": parts, "role": "model"}});
    if let (Some(reason), Value::Object(map)) = (finish, &mut candidate) {
        map.insert("finishReason".into(), json!(reason));
    }
    if let Value::Object(map) = &mut candidate {
        map.insert("index".into(), json!(0));
    }
    json!({
        "candidates": [candidate],
        "usageMetadata": usage,
        "modelVersion": ctx.model,
        "responseId": format!("mock{}", ctx.seq),
    })
}

/// One part per streamed delta, in order.
fn delta_parts(resp: &ScriptedResponse) -> Vec<Value> {
    let mut parts = Vec::new();
    for item in &resp.items {
        match item {
            Item::Text(text) => {
                for piece in text_pieces(text, resp.chunk_size) {
                    parts.push(json!({"text": piece}));
                }
            }
            Item::Thinking { text, signature } => {
                let pieces = text_pieces(text, resp.chunk_size);
                let last = pieces.len().saturating_sub(1);
                for (i, piece) in pieces.into_iter().enumerate() {
                    let mut part = json!({"text": piece, "thought": true});
                    if let (true, Some(sig), Value::Object(map)) = (i == last, signature, &mut part)
                    {
                        map.insert("thoughtSignature".into(), json!(sig));
                    }
                    parts.push(part);
                }
            }
            Item::ToolCall {
                name, arguments, ..
            } => parts.push(json!({"functionCall": {"name": name, "args": parse_args(arguments)}})),
        }
    }
    parts
}

pub(super) fn stream(resp: &ScriptedResponse, ctx: &Ctx) -> Vec<Bytes> {
    let usage = resp.effective_usage();
    let partial = json!({
        "promptTokenCount": prompt_tokens(usage),
        "totalTokenCount": prompt_tokens(usage),
    });
    let mut parts = delta_parts(resp);
    let finish = finish_reason(resp.effective_stop());
    let last = if resp.omit_terminal {
        None
    } else {
        Some(parts.pop().unwrap_or_else(|| json!({"text": ""})))
    };
    let mut chunks: Vec<Value> = parts
        .into_iter()
        .map(|p| chunk(ctx, vec![p], None, partial.clone()))
        .collect();
    if let Some(p) = last {
        chunks.push(chunk(ctx, vec![p], Some(finish), full_usage(usage)));
    }
    if ctx.gemini_sse {
        return chunks
            .iter()
            .map(|c| Bytes::from(format!("data: {c}\r\n\r\n")))
            .collect();
    }
    // Without alt=sse the API streams one JSON array.
    let mut events: Vec<Bytes> = chunks
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let sep = if i == 0 { "[" } else { ",\r\n" };
            Bytes::from(format!("{sep}{c}"))
        })
        .collect();
    if chunks.is_empty() {
        events.push(Bytes::from_static(b"["));
    }
    events.push(Bytes::from_static(b"]"));
    events
}

pub(super) fn complete(resp: &ScriptedResponse, ctx: &Ctx) -> Value {
    let mut parts = Vec::new();
    for item in &resp.items {
        match item {
            Item::Text(text) => parts.push(json!({"text": text})),
            Item::Thinking { text, signature } => {
                let mut part = json!({"text": text, "thought": true});
                if let (Some(sig), Value::Object(map)) = (signature, &mut part) {
                    map.insert("thoughtSignature".into(), json!(sig));
                }
                parts.push(part);
            }
            Item::ToolCall {
                name, arguments, ..
            } => parts.push(json!({"functionCall": {"name": name, "args": parse_args(arguments)}})),
        }
    }
    let usage = resp.effective_usage();
    chunk(
        ctx,
        parts,
        Some(finish_reason(resp.effective_stop())),
        full_usage(usage),
    )
}
