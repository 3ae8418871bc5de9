//! Builds the `POST {base_url}/chat/completions` request.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::{Value, json};

use super::compat::Compat;
use crate::context::{Context, ToolDefinition};
use crate::error::ProviderError;
use crate::message::{
    AssistantContent, AssistantMessage, ImageContent, Message, ToolResultMessage, UserContent,
};
use crate::model::Model;
use crate::options::{ApiKey, CacheRetention, StreamOptions, ThinkingLevel, ToolChoice};
use crate::provider::{WireRequest, encode};
use crate::providers::decimal_f32;

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

/// The request body, borrowing from the context; fields in the order they are sent.
#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: Vec<ChatMessage<'a>>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<Vec<Tool<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    store: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_retention: Option<&'static str>,
}

/// One Chat Completions message; each role uses some of the fields.
#[derive(Debug, Default, Serialize)]
struct ChatMessage<'a> {
    role: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<Content<'a>>,
    /// The reasoning fields (`REASONING_FIELDS`); at most one is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_text: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_calls: Option<Vec<ChatToolCall<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
}

impl<'a> ChatMessage<'a> {
    fn text(role: &'static str, text: impl Into<Cow<'a, str>>) -> Self {
        ChatMessage {
            role,
            content: Some(Content::Text(text.into())),
            ..Default::default()
        }
    }
}

/// Message content: a string, or typed parts when there are images.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Content<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<Part<'a>>),
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: ImageUrl },
}

#[derive(Debug, Serialize)]
struct ImageUrl {
    url: String,
}

#[derive(Debug, Serialize)]
struct ChatToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: CallFunction<'a>,
}

#[derive(Debug, Serialize)]
struct CallFunction<'a> {
    name: &'a str,
    arguments: String,
}

#[derive(Serialize)]
struct Tool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: ToolFunction<'a>,
}

#[derive(Serialize)]
struct ToolFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

/// Builds the request. `messages` must already be prepared by
/// [`crate::transform::prepare_messages`].
pub(crate) fn build(
    model: &Model,
    context: &Context,
    messages: &[Cow<'_, Message>],
    options: &StreamOptions,
    api_key: Option<&ApiKey>,
    compat: &Compat,
) -> Result<WireRequest, ProviderError> {
    Ok(WireRequest {
        url: endpoint(&model.base_url),
        headers: headers(model, options, api_key),
        body: encode(&body(model, context, messages, options, compat))?,
    })
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

fn body<'a>(
    model: &'a Model,
    context: &'a Context,
    messages: &'a [Cow<'_, Message>],
    options: &StreamOptions,
    compat: &Compat,
) -> Body<'a> {
    let max_tokens = Some(options.max_tokens.unwrap_or(model.max_tokens)).filter(|&n| n > 0);
    let tools = !context.tools.is_empty();
    // A named choice the server cannot take: "required" with only that tool.
    let forced = match &options.tool_choice {
        Some(ToolChoice::Tool(name)) if !compat.named_tool_choice => {
            Some(name.as_str()).filter(|n| context.tools.iter().any(|t| t.name == *n))
        }
        _ => None,
    };
    // Long retention: `prompt_cache_retention` where it is taken, and the
    // cache key with it where `models.json` says the proxy takes long
    // retention (pi's `promptCacheKeyMode: auto`), unless the key is off.
    let long_retention = crate::providers::openai_long_retention(model, options.cache_retention);
    let key_for_long = long_retention
        && model.long_cache_retention_set() == Some(true)
        && model.compat.as_ref().and_then(|c| c.prompt_cache_key_mode)
            != Some(crate::model::PromptCacheKeyMode::Disabled);
    Body {
        model: &model.id,
        messages: convert_messages(model, context, messages, compat),
        stream: true,
        stream_options: compat
            .usage_in_streaming
            .then(|| json!({"include_usage": true})),
        max_completion_tokens: max_tokens.filter(|_| compat.max_completion_tokens),
        max_tokens: max_tokens.filter(|_| !compat.max_completion_tokens),
        temperature: options.temperature.map(decimal_f32),
        tools: if tools {
            Some(
                context
                    .tools
                    .iter()
                    .filter(|t| forced.is_none_or(|name| t.name == name))
                    .map(tool)
                    .collect(),
            )
        } else if compat.tools_with_tool_history && has_tool_history(messages) {
            Some(Vec::new())
        } else {
            None
        },
        tool_choice: options
            .tool_choice
            .as_ref()
            .filter(|_| tools)
            .map(|c| match forced {
                Some(_) => json!("required"),
                None => tool_choice(c),
            }),
        reasoning_effort: effort(model, options, compat),
        store: compat.store.then_some(false),
        prompt_cache_key: ((compat.prompt_cache_key || key_for_long)
            && options.cache_retention != CacheRetention::None)
            .then(|| options.session_id.as_deref().filter(|s| !s.is_empty()))
            .flatten()
            .map(|session| session.chars().take(MAX_PROMPT_CACHE_KEY).collect()),
        prompt_cache_retention: long_retention.then_some("24h"),
    }
}

/// True when an earlier message called a tool or answered a call.
fn has_tool_history(messages: &[Cow<'_, Message>]) -> bool {
    messages.iter().any(|m| match m.as_ref() {
        Message::Assistant(a) => a.tool_calls().next().is_some(),
        Message::ToolResult(_) => true,
        _ => false,
    })
}

/// The `reasoning_effort` the request carries, when it carries one.
pub(super) fn effort<'m>(
    model: &'m Model,
    options: &StreamOptions,
    compat: &Compat,
) -> Option<&'m str> {
    (model.reasoning && compat.reasoning_effort)
        .then(|| {
            model
                .thinking_value(options.thinking)
                .or_else(|| reasoning_effort(options.thinking))
        })
        .flatten()
}

fn reasoning_effort(level: ThinkingLevel) -> Option<&'static str> {
    match level {
        ThinkingLevel::Off => None,
        ThinkingLevel::Minimal => Some("minimal"),
        ThinkingLevel::Low => Some("low"),
        ThinkingLevel::Medium => Some("medium"),
        ThinkingLevel::High | ThinkingLevel::Xhigh | ThinkingLevel::Max => Some("high"),
    }
}

fn tool(t: &ToolDefinition) -> Tool<'_> {
    Tool {
        kind: "function",
        function: ToolFunction {
            name: &t.name,
            description: &t.description,
            parameters: &t.parameters,
        },
    }
}

fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
    }
}

fn data_url(image: &ImageContent) -> Part<'_> {
    Part::ImageUrl {
        image_url: ImageUrl {
            url: format!("data:{};base64,{}", image.mime_type, image.data),
        },
    }
}

/// The conversation as Chat Completions messages.
fn convert_messages<'a>(
    model: &Model,
    context: &'a Context,
    messages: &'a [Cow<'_, Message>],
    compat: &Compat,
) -> Vec<ChatMessage<'a>> {
    let mut out: Vec<ChatMessage<'a>> = Vec::with_capacity(messages.len() + 1);
    if let Some(system) = context.system_prompt.as_deref().filter(|s| !s.is_empty()) {
        let role = if model.reasoning && compat.developer_role {
            "developer"
        } else {
            "system"
        };
        out.push(ChatMessage::text(role, system));
    }
    // True when the last message sent was a tool result.
    let mut after_tool = false;
    let mut i = 0;
    while i < messages.len() {
        match &*messages[i] {
            Message::User(u) => {
                if u.content.is_empty() {
                    i += 1;
                    continue;
                }
                if after_tool && compat.assistant_after_tool_result {
                    out.push(ChatMessage::text("assistant", TOOL_RESULTS_PROCESSED));
                }
                out.push(ChatMessage {
                    role: "user",
                    content: Some(user_content(&u.content)),
                    ..Default::default()
                });
                after_tool = false;
            }
            Message::Assistant(a) => {
                if let Some(m) = assistant(model, a, compat) {
                    out.push(m);
                    after_tool = false;
                }
            }
            Message::ToolResult(_) => {
                let mut images: Vec<Part<'a>> = Vec::new();
                while let Some(Message::ToolResult(r)) = messages.get(i).map(|m| &**m) {
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
                        out.push(ChatMessage::text("assistant", TOOL_RESULTS_PROCESSED));
                    }
                    let mut parts = vec![Part::Text {
                        text: TOOL_RESULT_IMAGES,
                    }];
                    parts.extend(images);
                    out.push(ChatMessage {
                        role: "user",
                        content: Some(Content::Parts(parts)),
                        ..Default::default()
                    });
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
fn user_content(content: &[UserContent]) -> Content<'_> {
    if content.iter().all(|c| matches!(c, UserContent::Text(_))) {
        let mut texts = content.iter().filter_map(|c| match c {
            UserContent::Text(t) => Some(t.text.as_str()),
            UserContent::Image(_) => None,
        });
        return match (texts.next(), content.len()) {
            (Some(only), 1) => Content::Text(Cow::Borrowed(only)),
            (first, _) => Content::Text(Cow::Owned(
                first
                    .into_iter()
                    .chain(texts)
                    .collect::<Vec<_>>()
                    .join("\n"),
            )),
        };
    }
    Content::Parts(
        content
            .iter()
            .map(|c| match c {
                UserContent::Text(t) => Part::Text { text: &t.text },
                UserContent::Image(img) => data_url(img),
            })
            .collect(),
    )
}

/// `parts` joined with `sep`, borrowed when there is only one.
fn joined<'a>(parts: &[&'a str], sep: &str) -> Cow<'a, str> {
    match parts {
        [only] => Cow::Borrowed(only),
        _ => Cow::Owned(parts.join(sep)),
    }
}

/// An assistant turn; `None` when it has nothing a server would accept.
fn assistant<'a>(
    model: &Model,
    a: &'a AssistantMessage,
    compat: &Compat,
) -> Option<ChatMessage<'a>> {
    let mut texts: Vec<&str> = Vec::new();
    let mut thinking: Vec<&str> = Vec::new();
    let mut reasoning_field: Option<&'static str> = None;
    let mut calls: Vec<ChatToolCall<'a>> = Vec::new();
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
                let arguments = serde_json::to_string(&c.arguments).unwrap_or_else(|_| "{}".into());
                calls.push(ChatToolCall {
                    id: &c.id,
                    kind: "function",
                    function: CallFunction {
                        name: &c.name,
                        arguments,
                    },
                });
            }
        }
    }
    // Separate text blocks (around tool calls or former thinking) are paragraphs.
    let mut text = joined(&texts, "\n\n");
    let mut reasoning: Option<(&str, Cow<'a, str>)> = None;
    if !thinking.is_empty() {
        if compat.thinking_as_text {
            let mut all = thinking.join("\n\n");
            if !text.is_empty() {
                all.push_str("\n\n");
                all.push_str(&text);
            }
            text = Cow::Owned(all);
        } else if compat.reasoning_content {
            let field = reasoning_field.unwrap_or(REASONING_FIELDS[0]);
            reasoning = Some((field, joined(&thinking, "\n")));
        }
    }
    if text.is_empty() && calls.is_empty() {
        return None;
    }
    let mut m = ChatMessage {
        role: "assistant",
        ..Default::default()
    };
    // Never `content: null` (llama.cpp answers 500): omit it beside tool calls
    // (or send "" where the server requires the field), else send the text.
    if !text.is_empty() || calls.is_empty() || compat.non_null_assistant_content {
        m.content = Some(Content::Text(text));
    }
    match reasoning {
        Some((field, value)) => *reasoning_slot(&mut m, field) = Some(value),
        None if compat.empty_reasoning_content && model.reasoning => {
            m.reasoning_content = Some(Cow::Borrowed(""));
        }
        None => {}
    }
    if !calls.is_empty() {
        m.tool_calls = Some(calls);
    }
    Some(m)
}

/// The field of `m` that carries reasoning under the wire name `field`.
fn reasoning_slot<'m, 'a>(m: &'m mut ChatMessage<'a>, field: &str) -> &'m mut Option<Cow<'a, str>> {
    match field {
        "reasoning" => &mut m.reasoning,
        "reasoning_text" => &mut m.reasoning_text,
        _ => &mut m.reasoning_content,
    }
}

fn tool_result<'a>(r: &'a ToolResultMessage, compat: &Compat) -> ChatMessage<'a> {
    let content = crate::providers::tool_output_text(r, SEE_ATTACHED_IMAGE);
    ChatMessage {
        role: "tool",
        tool_call_id: Some(&r.tool_call_id),
        content: Some(Content::Text(content)),
        name: (compat.tool_result_name && !r.tool_name.is_empty()).then_some(r.tool_name.as_str()),
        ..Default::default()
    }
}

/// Rewrites tool-call ids to exactly `len` ASCII letters and digits (Mistral's
/// rule), consistently for calls and their results. Ids already in that form stay.
pub(crate) fn exact_alnum_ids(messages: &mut [Cow<'_, Message>], len: usize) {
    let fits = |id: &str| id.len() == len && id.bytes().all(|b| b.is_ascii_alphanumeric());
    let fix = |id: &mut String| {
        if !fits(id) {
            *id = alnum_id(id, len);
        }
    };
    for m in messages {
        // Only a message with an id to rewrite is copied.
        let all_fit = match &**m {
            Message::Assistant(a) => a.tool_calls().all(|c| fits(&c.id)),
            Message::ToolResult(r) => fits(&r.tool_call_id),
            Message::User(_) => true,
        };
        if all_fit {
            continue;
        }
        match m.to_mut() {
            Message::Assistant(a) => {
                for c in &mut a.content {
                    if let AssistantContent::ToolCall(call) = c {
                        fix(&mut call.id);
                    }
                }
            }
            Message::ToolResult(r) => fix(&mut r.tool_call_id),
            Message::User(_) => {}
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
