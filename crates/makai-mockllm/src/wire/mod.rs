//! Rendering a [`ScriptedResponse`] in each wire format: SSE event lists for
//! streams, one JSON value for non-stream requests, and error payloads.

mod anthropic;
pub(crate) mod bedrock;
mod chat;
mod errors;
pub(crate) mod eventstream;
mod gemini;
mod responses;

use bytes::Bytes;
use serde_json::Value;

use crate::record::WireApi;
use crate::script::{ErrorKind, ScriptedResponse, StopKind};

pub(crate) use errors::{http_error_body, stream_error_event};

/// Per-request facts the renderers need besides the script.
#[derive(Debug, Clone)]
pub(crate) struct Ctx {
    /// Model name echoed back (from the body, or the URL for Gemini).
    pub(crate) model: String,
    /// Unique per-server request number, used to build ids.
    pub(crate) seq: u64,
    /// Unix seconds.
    pub(crate) created: u64,
    /// Chat Completions: `stream_options.include_usage` was true.
    pub(crate) include_usage: bool,
    /// Gemini: `alt=sse` (otherwise a streamed JSON array).
    pub(crate) gemini_sse: bool,
}

/// The events of a streamed response, each fully framed (terminators
/// included), in order. Honors `omit_terminal`; other faults are applied by
/// the body driver.
pub(crate) fn render_stream(api: WireApi, resp: &ScriptedResponse, ctx: &Ctx) -> Vec<Bytes> {
    match api {
        WireApi::ChatCompletions => chat::stream(resp, ctx),
        WireApi::Responses => responses::stream(resp, ctx),
        WireApi::AnthropicMessages => anthropic::stream(resp, ctx),
        WireApi::Gemini => gemini::stream(resp, ctx),
        WireApi::BedrockConverseStream => bedrock::stream(resp, ctx),
    }
}

/// The whole response of a non-stream request as one JSON value.
pub(crate) fn render_complete(api: WireApi, resp: &ScriptedResponse, ctx: &Ctx) -> Value {
    match api {
        WireApi::ChatCompletions => chat::complete(resp, ctx),
        WireApi::Responses => responses::complete(resp, ctx),
        WireApi::AnthropicMessages => anthropic::complete(resp, ctx),
        WireApi::Gemini => gemini::complete(resp, ctx),
        WireApi::BedrockConverseStream => bedrock::complete(resp, ctx),
    }
}

/// `data: <json>\n\n`.
pub(crate) fn sse_data(json: &Value) -> Bytes {
    Bytes::from(format!("data: {json}\n\n"))
}

/// `event: <name>\ndata: <json>\n\n`.
pub(crate) fn sse_event(name: &str, json: &Value) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {json}\n\n"))
}

/// Tool arguments as a JSON value for APIs that carry them parsed (Anthropic
/// `input`, Gemini `args`); text that is not a JSON object becomes `{}`.
pub(crate) fn parse_args(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => {
            tracing::warn!(%arguments, "mockllm: tool arguments are not a JSON object; sending {{}}");
            Value::Object(serde_json::Map::new())
        }
    }
}

/// A human message for an in-stream error kind.
pub(crate) fn error_message(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Overloaded => "Overloaded",
        ErrorKind::RateLimit => "Rate limit reached. Please try again later.",
        ErrorKind::Server => "The server had an error while processing your request.",
        ErrorKind::InvalidRequest => "Invalid request.",
    }
}

/// Chat Completions `finish_reason`.
pub(crate) fn chat_finish(stop: StopKind) -> &'static str {
    match stop {
        StopKind::Stop => "stop",
        StopKind::Length => "length",
        StopKind::ToolUse => "tool_calls",
    }
}
