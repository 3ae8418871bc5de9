//! Builds the `POST {base_url}/chat/completions` request.

use serde_json::{Map, Value, json};

use super::compat::Compat;
use crate::context::{Context, ToolDefinition};
use crate::message::{
    AssistantContent, AssistantMessage, ImageContent, Message, ToolResultMessage, UserContent,
};
use crate::model::Model;
use crate::options::{ApiKey, CacheRetention, StreamOptions, ThinkingLevel, ToolChoice};
use crate::provider::HttpRequest;

/// The text of the assistant turn inserted between a tool result and a user
/// message for servers that reject that order.
pub(crate) const TOOL_RESULTS_PROCESSED: &str = "I have processed the tool results.";

/// The text sent as the content of a tool result that holds only images.
pub(crate) const SEE_ATTACHED_IMAGE: &str = "(see attached image)";

/// The text introducing images taken out of tool results into a user message.
pub(crate) const TOOL_RESULT_IMAGES: &str = "Attached image(s) from tool result:";

/// The reasoning fields servers stream and accept back, in order of preference.
pub(crate) const REASONING_FIELDS: [&str; 3] = ["reasoning_content", "reasoning", "reasoning_text"];

/// OpenAI's limit on `prompt_cache_key`.
const MAX_PROMPT_CACHE_KEY: usize = 64;

/// Builds the request. `messages` must already be prepared by
/// [`crate::transform::prepare_messages`].
pub(crate) fn build(
    model: &Model,
    context: &Context,
    messages: &[Message],
    options: &StreamOptions,
    api_key: Option<&ApiKey>,
    compat: &Compat,
) -> HttpRequest {
    HttpRequest {
        url: endpoint(&model.base_url),
        headers: headers(model, options, api_key),
        body: body(model, context, messages, options, compat),
    }
}

fn endpoint(base_url: &str) -> String {
    let base = base_url.trim_end_matches('/');
    if base.ends_with("/chat/completions") {
        base.to_string()
    } else {
        format!("{base}/chat/completions")
    }
}

fn headers(
    model: &Model,
    options: &StreamOptions,
    api_key: Option<&ApiKey>,
) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    if let Some(key) = api_key.map(|k| k.expose().trim()).filter(|k| !k.is_empty()) {
        out.push(("authorization".into(), format!("Bearer {key}")));
    }
    for (k, v) in model.headers.iter().chain(options.headers.iter()) {
        out.retain(|(existing, _)| !existing.eq_ignore_ascii_case(k));
        out.push((k.clone(), v.clone()));
    }
    out
}

fn body(
    model: &Model,
    context: &Context,
    messages: &[Message],
    options: &StreamOptions,
    compat: &Compat,
) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    body.insert(
        "messages".into(),
        Value::Array(convert_messages(model, context, messages, compat)),
    );
    body.insert("stream".into(), json!(true));
    if compat.usage_in_streaming {
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    let max_tokens = options.max_tokens.unwrap_or(model.max_tokens);
    if max_tokens > 0 {
        let field = if compat.max_completion_tokens {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        body.insert(field.into(), json!(max_tokens));
    }
    if let Some(t) = options.temperature {
        // Through the shortest decimal form, so 0.7f32 is sent as 0.7, not 0.699999988.
        let t: f64 = t.to_string().parse().unwrap_or(f64::from(t));
        body.insert("temperature".into(), json!(t));
    }
    if !context.tools.is_empty() {
        body.insert(
            "tools".into(),
            Value::Array(context.tools.iter().map(tool).collect()),
        );
        if let Some(choice) = &options.tool_choice {
            body.insert("tool_choice".into(), tool_choice(choice));
        }
    }
    if model.reasoning
        && compat.reasoning_effort
        && let Some(effort) = reasoning_effort(options.thinking)
    {
        body.insert("reasoning_effort".into(), json!(effort));
    }
    if compat.store {
        body.insert("store".into(), json!(false));
    }
    if compat.prompt_cache_key
        && options.cache_retention != CacheRetention::None
        && let Some(session) = options.session_id.as_deref().filter(|s| !s.is_empty())
    {
        let key: String = session.chars().take(MAX_PROMPT_CACHE_KEY).collect();
        body.insert("prompt_cache_key".into(), json!(key));
    }
    Value::Object(body)
}

fn reasoning_effort(level: ThinkingLevel) -> Option<&'static str> {
    match level {
        ThinkingLevel::Off => None,
        ThinkingLevel::Minimal => Some("minimal"),
        ThinkingLevel::Low => Some("low"),
        ThinkingLevel::Medium => Some("medium"),
        ThinkingLevel::High | ThinkingLevel::Xhigh => Some("high"),
    }
}

fn tool(t: &ToolDefinition) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": t.name,
            "description": t.description,
            "parameters": t.parameters,
        }
    })
}

fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
    }
}

fn data_url(image: &ImageContent) -> Value {
    json!({
        "type": "image_url",
        "image_url": {"url": format!("data:{};base64,{}", image.mime_type, image.data)}
    })
}

/// The conversation as Chat Completions messages.
fn convert_messages(
    model: &Model,
    context: &Context,
    messages: &[Message],
    compat: &Compat,
) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(messages.len() + 1);
    if let Some(system) = context.system_prompt.as_deref().filter(|s| !s.is_empty()) {
        let role = if model.reasoning && compat.developer_role {
            "developer"
        } else {
            "system"
        };
        out.push(json!({"role": role, "content": system}));
    }
    // True when the last message sent was a tool result.
    let mut after_tool = false;
    let mut i = 0;
    while i < messages.len() {
        match &messages[i] {
            Message::User(u) => {
                if u.content.is_empty() {
                    i += 1;
                    continue;
                }
                if after_tool && compat.assistant_after_tool_result {
                    out.push(json!({"role": "assistant", "content": TOOL_RESULTS_PROCESSED}));
                }
                out.push(json!({"role": "user", "content": user_content(&u.content)}));
                after_tool = false;
            }
            Message::Assistant(a) => {
                if let Some(m) = assistant(model, a, compat) {
                    out.push(m);
                    after_tool = false;
                }
            }
            Message::ToolResult(_) => {
                let mut images: Vec<Value> = Vec::new();
                while let Some(Message::ToolResult(r)) = messages.get(i) {
                    out.push(tool_result(r, compat));
                    if model.accepts_images() {
                        for c in &r.content {
                            if let UserContent::Image(img) = c {
                                images.push(data_url(img));
                            }
                        }
                    }
                    i += 1;
                }
                after_tool = true;
                if !images.is_empty() {
                    if compat.assistant_after_tool_result {
                        out.push(json!({"role": "assistant", "content": TOOL_RESULTS_PROCESSED}));
                    }
                    let mut parts = vec![json!({"type": "text", "text": TOOL_RESULT_IMAGES})];
                    parts.extend(images);
                    out.push(json!({"role": "user", "content": parts}));
                    after_tool = false;
                }
                continue;
            }
        }
        i += 1;
    }
    out
}

/// A plain string when every part is text, else an array of parts.
fn user_content(content: &[UserContent]) -> Value {
    let mut texts: Vec<&str> = Vec::with_capacity(content.len());
    for c in content {
        match c {
            UserContent::Text(t) => texts.push(&t.text),
            _ => {
                let parts = content
                    .iter()
                    .map(|c| match c {
                        UserContent::Text(t) => json!({"type": "text", "text": t.text}),
                        UserContent::Image(img) => data_url(img),
                    })
                    .collect();
                return Value::Array(parts);
            }
        }
    }
    Value::String(texts.join("\n"))
}

/// An assistant turn; `None` when it has nothing a server would accept.
fn assistant(model: &Model, a: &AssistantMessage, compat: &Compat) -> Option<Value> {
    let mut texts: Vec<&str> = Vec::new();
    let mut thinking: Vec<&str> = Vec::new();
    let mut reasoning_field: Option<&'static str> = None;
    let mut calls: Vec<Value> = Vec::new();
    for block in &a.content {
        match block {
            AssistantContent::Text(t) => {
                if !t.text.trim().is_empty() {
                    texts.push(&t.text);
                }
            }
            AssistantContent::Thinking(t) => {
                if t.redacted || t.thinking.trim().is_empty() {
                    continue;
                }
                thinking.push(&t.thinking);
                if reasoning_field.is_none() {
                    reasoning_field = t
                        .thinking_signature
                        .as_deref()
                        .and_then(|s| REASONING_FIELDS.into_iter().find(|f| *f == s));
                }
            }
            AssistantContent::ToolCall(c) => {
                let arguments = Value::Object(c.arguments.clone()).to_string();
                calls.push(json!({
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": arguments},
                }));
            }
        }
    }
    // Separate text blocks (around tool calls or former thinking) are paragraphs.
    let mut text = texts.join("\n\n");
    let mut reasoning: Option<(&str, String)> = None;
    if !thinking.is_empty() {
        if compat.thinking_as_text {
            let mut joined = thinking.join("\n\n");
            if !text.is_empty() {
                joined.push_str("\n\n");
                joined.push_str(&text);
            }
            text = joined;
        } else if compat.reasoning_content {
            let field = reasoning_field.unwrap_or(REASONING_FIELDS[0]);
            reasoning = Some((field, thinking.join("\n")));
        }
    }
    if text.is_empty() && calls.is_empty() {
        return None;
    }
    let mut m = Map::new();
    m.insert("role".into(), json!("assistant"));
    // Never `content: null` (llama.cpp answers 500): omit it beside tool calls,
    // else send the text.
    if !text.is_empty() || calls.is_empty() {
        m.insert("content".into(), Value::String(text));
    }
    if let Some((field, value)) = reasoning {
        m.insert(field.into(), Value::String(value));
    } else if compat.empty_reasoning_content && model.reasoning {
        m.insert("reasoning_content".into(), json!(""));
    }
    if !calls.is_empty() {
        m.insert("tool_calls".into(), Value::Array(calls));
    }
    Some(Value::Object(m))
}

fn tool_result(r: &ToolResultMessage, compat: &Compat) -> Value {
    let text = r.text_content();
    let has_images = r.content.iter().any(|c| matches!(c, UserContent::Image(_)));
    let content = if text.is_empty() && has_images {
        SEE_ATTACHED_IMAGE.to_string()
    } else {
        text
    };
    let mut m = Map::new();
    m.insert("role".into(), json!("tool"));
    m.insert("tool_call_id".into(), json!(r.tool_call_id));
    m.insert("content".into(), Value::String(content));
    if compat.tool_result_name && !r.tool_name.is_empty() {
        m.insert("name".into(), json!(r.tool_name));
    }
    Value::Object(m)
}

/// Rewrites tool-call ids to exactly `len` ASCII letters and digits (Mistral's
/// rule), consistently for calls and their results. Ids already in that form stay.
pub(crate) fn exact_alnum_ids(messages: &mut [Message], len: usize) {
    let fix = |id: &mut String| {
        if id.len() == len && id.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return;
        }
        *id = alnum_id(id, len);
    };
    for m in messages {
        match m {
            Message::Assistant(a) => {
                for c in &mut a.content {
                    if let AssistantContent::ToolCall(call) = c {
                        fix(&mut call.id);
                    }
                }
            }
            Message::ToolResult(r) => fix(&mut r.tool_call_id),
            _ => {}
        }
    }
}

/// A deterministic `len`-character alphanumeric id derived from `id`.
fn alnum_id(id: &str, len: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut out = String::with_capacity(len);
    let mut round: u64 = 0;
    while out.len() < len {
        // FNV-1a over the id and a round counter, so long ids get fresh bits.
        let mut h: u64 = 0xcbf29ce484222325 ^ round;
        for b in id.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x100000001b3);
        }
        for _ in 0..10 {
            if out.len() == len {
                break;
            }
            out.push(char::from(ALPHABET[(h % 62) as usize]));
            h /= 62;
        }
        round += 1;
    }
    out
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
