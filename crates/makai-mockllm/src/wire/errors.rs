//! Error payloads: HTTP error bodies and in-stream error events per API.

use bytes::Bytes;
use serde_json::{Value, json};

use super::{Ctx, error_message, sse_data, sse_event};
use crate::record::WireApi;
use crate::script::ErrorKind;

/// The JSON body a real API sends with an HTTP error `status`.
/// `api == None` (unknown route) gives `{"error":{"message":...}}`.
pub(crate) fn http_error_body(api: Option<WireApi>, status: u16, message: &str) -> Value {
    match api {
        Some(WireApi::AnthropicMessages) => json!({
            "type": "error",
            "error": {"type": anthropic_type_for_status(status), "message": message},
        }),
        Some(WireApi::Gemini) => json!({
            "error": {"code": status, "message": message, "status": gemini_status_for(status)},
        }),
        Some(WireApi::BedrockConverseStream) => json!({"message": message}),
        Some(WireApi::ChatCompletions | WireApi::Responses) => {
            let (ty, code) = openai_type_for_status(status);
            json!({"error": {"message": message, "type": ty, "param": null, "code": code}})
        }
        None => json!({"error": {"message": message}}),
    }
}

fn anthropic_type_for_status(status: u16) -> &'static str {
    match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    }
}

fn openai_type_for_status(status: u16) -> (&'static str, Value) {
    match status {
        400 => ("invalid_request_error", Value::Null),
        401 => ("invalid_request_error", json!("invalid_api_key")),
        404 => ("invalid_request_error", json!("model_not_found")),
        429 => ("requests", json!("rate_limit_exceeded")),
        _ => ("server_error", Value::Null),
    }
}

fn gemini_status_for(status: u16) -> &'static str {
    match status {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        429 => "RESOURCE_EXHAUSTED",
        503 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        _ => "INTERNAL",
    }
}

/// The API's in-stream error event, sent after `events_sent` events.
pub(crate) fn stream_error_event(
    api: WireApi,
    kind: ErrorKind,
    ctx: &Ctx,
    events_sent: usize,
) -> Bytes {
    let message = error_message(kind);
    match api {
        WireApi::BedrockConverseStream => super::bedrock::stream_error(kind),
        WireApi::AnthropicMessages => {
            let ty = match kind {
                ErrorKind::Overloaded => "overloaded_error",
                ErrorKind::RateLimit => "rate_limit_error",
                ErrorKind::Server => "api_error",
                ErrorKind::InvalidRequest => "invalid_request_error",
            };
            sse_event(
                "error",
                &json!({"type": "error", "error": {"type": ty, "message": message}}),
            )
        }
        WireApi::ChatCompletions => {
            let (ty, code) = openai_kind(kind);
            sse_data(&json!({
                "error": {"message": message, "type": ty, "param": null, "code": code},
            }))
        }
        WireApi::Responses => {
            let (_, code) = openai_kind(kind);
            let code = if code.is_null() {
                json!("server_error")
            } else {
                code
            };
            let payload = json!({
                "type": "response.failed",
                "response": {
                    "id": format!("resp_mock{}", ctx.seq),
                    "object": "response",
                    "created_at": ctx.created,
                    "status": "failed",
                    "error": {"code": code, "message": message},
                    "incomplete_details": null,
                    "model": ctx.model,
                    "output": [],
                    "usage": null,
                },
                "sequence_number": events_sent,
            });
            sse_event("response.failed", &payload)
        }
        WireApi::Gemini => {
            let (code, status) = match kind {
                ErrorKind::Overloaded => (503, "UNAVAILABLE"),
                ErrorKind::RateLimit => (429, "RESOURCE_EXHAUSTED"),
                ErrorKind::Server => (500, "INTERNAL"),
                ErrorKind::InvalidRequest => (400, "INVALID_ARGUMENT"),
            };
            let payload = json!({"error": {"code": code, "message": message, "status": status}});
            if ctx.gemini_sse {
                Bytes::from(format!("data: {payload}\r\n\r\n"))
            } else if events_sent == 0 {
                Bytes::from(format!("[{payload}]"))
            } else {
                Bytes::from(format!(",\r\n{payload}]"))
            }
        }
    }
}

fn openai_kind(kind: ErrorKind) -> (&'static str, Value) {
    match kind {
        ErrorKind::Overloaded | ErrorKind::Server => ("server_error", Value::Null),
        ErrorKind::RateLimit => ("requests", json!("rate_limit_exceeded")),
        ErrorKind::InvalidRequest => ("invalid_request_error", Value::Null),
    }
}
