//! The ConverseStream request: URL, headers and JSON body.
//!
//! Choices worth knowing:
//! - The model id (a foundation model, a cross-region inference profile such as
//!   `us.anthropic.claude-...` or `global.anthropic...`, or an inference-profile
//!   ARN) is one percent-encoded path segment:
//!   `/model/{id}/converse-stream`.
//! - Consecutive tool results become one `user` turn of `toolResult` blocks
//!   (Bedrock requires it); images are `{format, source: {bytes: base64}}`.
//! - Reasoning of earlier turns is replayed as `reasoningContent` with its
//!   signature only to Claude models of this very model id (other models reject
//!   the field); everyone else gets it as plain text (see [`crate::transform`]).
//! - Prompt caching: a `cachePoint` after the system prompt, after the tools and
//!   at the end of the last user turn (with `ttl: "1h"` for long retention), for
//!   models that cache (Claude, Nova: the catalog prices cache reads).
//! - Claude reasoning goes in `additionalModelRequestFields.thinking`, planned
//!   like the Anthropic API's (budget or adaptive), with the interleaved-thinking
//!   beta for budget models.
//! - A Bedrock API key (`AWS_BEARER_TOKEN_BEDROCK`) is a bearer token; AWS
//!   credentials sign each attempt instead (`crate::sigv4`).

use base64::Engine;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::borrow::Cow;

use crate::context::Context;
use crate::credentials::Credential;
use crate::error::ProviderError;
use crate::message::{AssistantContent, Message, UserContent};
use crate::model::Model;
use crate::options::{CacheRetention, StreamOptions, ToolChoice};
use crate::provider::{WireRequest, encode};
use crate::providers::anthropic::{forces_tool, planned_effort, thinking_plan};
use crate::providers::decimal_f32;
use crate::transform::{ToolCallIdRules, prepare_messages};

/// A path segment keeps only unreserved characters.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Body<'a> {
    messages: Vec<Turn<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    system: Vec<Value>,
    inference_config: InferenceConfig,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_config: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    additional_model_request_fields: Option<Map<String, Value>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct InferenceConfig {
    max_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
}

#[derive(Serialize)]
struct Turn<'a> {
    role: &'static str,
    content: Vec<Block<'a>>,
}

/// One content block (Bedrock's union: exactly one member is set).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
enum Block<'a> {
    Text(&'a str),
    Image(Image),
    ToolUse {
        #[serde(rename = "toolUseId")]
        tool_use_id: String,
        name: &'a str,
        input: &'a Map<String, Value>,
    },
    ToolResult {
        #[serde(rename = "toolUseId")]
        tool_use_id: String,
        content: Vec<Block<'a>>,
        status: &'static str,
    },
    ReasoningContent(Value),
    CachePoint(Value),
}

#[derive(Serialize)]
struct Image {
    format: &'static str,
    source: ImageSource,
}

#[derive(Serialize)]
struct ImageSource {
    bytes: String,
}

/// True for Claude models (which take reasoning signatures and Anthropic's thinking fields).
/// The adaptive effort a Claude request carries (pi's `providerThinkingLevel`).
pub(super) fn provider_effort(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Option<String> {
    is_claude(model)
        .then(|| planned_effort(model, options, forces_tool(context, options)))
        .flatten()
}

fn is_claude(model: &Model) -> bool {
    let id = model.id.to_ascii_lowercase();
    id.contains("anthropic.claude") || id.contains("anthropic/claude") || id.contains("claude")
}

/// True when the request's cache points last an hour: Bedrock reports its
/// cache writes without a split by lifetime, so they are all one-hour ones.
pub(super) fn caches_for_an_hour(model: &Model, options: &StreamOptions) -> bool {
    caches(model) && model.cache_retention(options.cache_retention) == CacheRetention::Long
}

/// True when the model caches prompts.
fn caches(model: &Model) -> bool {
    model.cost.cache_read > 0.0 || model.cost.cache_write > 0.0 || is_claude(model)
}

fn cache_point(retention: CacheRetention) -> Option<Value> {
    match retention {
        CacheRetention::None => None,
        CacheRetention::Short => Some(json!({"type": "default"})),
        CacheRetention::Long => Some(json!({"type": "default", "ttl": "1h"})),
    }
}

/// The URL of a model's stream.
pub(super) fn url(model: &Model) -> String {
    format!(
        "{}/model/{}/converse-stream",
        model.base_url.trim_end_matches('/'),
        utf8_percent_encode(&model.id, SEGMENT)
    )
}

/// Builds the request.
pub(super) fn build(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    credential: Option<&Credential>,
) -> Result<WireRequest, ProviderError> {
    let messages = prepare_messages(model, &context.messages, ToolCallIdRules::ANTHROPIC);
    let mut turns = convert(model, &messages);
    if turns.is_empty() {
        return Err(ProviderError::InvalidRequest(format!(
            "the conversation for {} has no message with content; add a user message with non-empty text",
            model.id
        )));
    }
    let cache =
        cache_point(model.cache_retention(options.cache_retention)).filter(|_| caches(model));
    if let Some(point) = &cache
        && let Some(last) = turns.last_mut()
        && last.role == "user"
    {
        last.content.push(Block::CachePoint(point.clone()));
    }
    let mut system = Vec::new();
    if let Some(prompt) = context
        .system_prompt
        .as_deref()
        .filter(|s| !s.trim().is_empty())
    {
        system.push(json!({"text": prompt}));
        if let Some(point) = &cache {
            system.push(json!({"cachePoint": point}));
        }
    }
    let choice = options.tool_choice.as_ref();
    let tool_config = (!context.tools.is_empty() && choice != Some(&ToolChoice::None)).then(|| {
        let mut tools: Vec<Value> = context
            .tools
            .iter()
            .map(|t| {
                let schema = if t.parameters.is_object() {
                    t.parameters.clone()
                } else {
                    json!({"type": "object", "properties": {}})
                };
                json!({"toolSpec": {"name": t.name, "description": t.description, "inputSchema": {"json": schema}}})
            })
            .collect();
        if let Some(point) = &cache {
            tools.push(json!({"cachePoint": point}));
        }
        let mut config = json!({ "tools": tools });
        match choice {
            Some(ToolChoice::Required) => config["toolChoice"] = json!({"any": {}}),
            Some(ToolChoice::Tool(name)) => config["toolChoice"] = json!({"tool": {"name": name}}),
            Some(ToolChoice::Auto) => config["toolChoice"] = json!({"auto": {}}),
            _ => {}
        }
        config
    });
    let forces_tool = forces_tool(context, options);
    let mut max_tokens = options.max_tokens.unwrap_or(model.max_tokens).max(1);
    let mut additional = Map::new();
    let mut thinking_on = false;
    if is_claude(model) {
        let plan = thinking_plan(model, options, forces_tool);
        max_tokens = plan.max_tokens;
        if let Some(thinking) = &plan.thinking {
            thinking_on = true;
            additional.insert("thinking".into(), thinking.clone());
            if let Some(output) = &plan.output_config {
                additional.insert("output_config".into(), output.clone());
            } else {
                additional.insert(
                    "anthropic_beta".into(),
                    json!(["interleaved-thinking-2025-05-14"]),
                );
            }
        }
    }
    let body = Body {
        messages: turns,
        system,
        inference_config: InferenceConfig {
            max_tokens,
            temperature: options
                .temperature
                .filter(|_| !thinking_on)
                .map(decimal_f32),
        },
        tool_config,
        additional_model_request_fields: (!additional.is_empty()).then_some(additional),
    };
    let mut headers: Vec<(String, String)> =
        vec![("accept".into(), "application/vnd.amazon.eventstream".into())];
    if let Some(Credential::ApiKey(key) | Credential::Bearer(key)) = credential {
        headers.push(("authorization".into(), format!("Bearer {}", key.expose())));
    }
    for (k, v) in model.headers.iter().chain(options.headers.iter()) {
        headers.retain(|(existing, _)| !existing.eq_ignore_ascii_case(k));
        headers.push((k.clone(), v.clone()));
    }
    Ok(WireRequest {
        url: url(model),
        headers,
        body: encode(&body)?,
    })
}

fn image(mime: &str, data: &str) -> Option<Block<'static>> {
    let format = match mime {
        "image/jpeg" | "image/jpg" => "jpeg",
        "image/png" => "png",
        "image/gif" => "gif",
        "image/webp" => "webp",
        _ => return None,
    };
    // Re-encoding normalises whitespace or URL-safe input; unreadable data is dropped.
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .ok()
        .map(|b| base64::engine::general_purpose::STANDARD.encode(b))?;
    Some(Block::Image(Image {
        format,
        source: ImageSource { bytes },
    }))
}

fn user_block(c: &UserContent) -> Option<Block<'_>> {
    match c {
        UserContent::Text(t) if t.text.is_empty() => None,
        UserContent::Text(t) => Some(Block::Text(&t.text)),
        UserContent::Image(i) => image(&i.mime_type, &i.data),
    }
}

fn convert<'a>(model: &Model, messages: &'a [Cow<'_, Message>]) -> Vec<Turn<'a>> {
    let mut turns: Vec<Turn<'a>> = Vec::with_capacity(messages.len());
    // Images of failed tool results, sent after the turn's tool results.
    let mut deferred: Vec<Block<'a>> = Vec::new();
    for message in messages {
        if !matches!(&**message, Message::ToolResult(_)) && !deferred.is_empty() {
            push(&mut turns, "user", std::mem::take(&mut deferred));
        }
        match &**message {
            Message::User(u) => {
                let content: Vec<Block<'a>> = u.content.iter().filter_map(user_block).collect();
                if !content.is_empty() {
                    push(&mut turns, "user", content);
                }
            }
            Message::Assistant(a) => {
                let same_model = a.provider == model.provider
                    && a.api == model.api.as_str()
                    && a.model == model.id;
                let mut content = Vec::new();
                for block in &a.content {
                    match block {
                        AssistantContent::Text(t) if t.text.trim().is_empty() => {}
                        AssistantContent::Text(t) => content.push(Block::Text(&t.text)),
                        AssistantContent::Thinking(t) => {
                            if !(same_model && is_claude(model)) {
                                if !t.thinking.trim().is_empty() && !t.redacted {
                                    content.push(Block::Text(&t.thinking));
                                }
                                continue;
                            }
                            if t.redacted {
                                if let Some(payload) = &t.thinking_signature {
                                    content.push(Block::ReasoningContent(
                                        json!({"redactedContent": payload}),
                                    ));
                                }
                            } else if !t.thinking.trim().is_empty() {
                                let mut text = json!({"text": t.thinking});
                                if let Some(sig) =
                                    t.thinking_signature.as_deref().filter(|s| !s.is_empty())
                                {
                                    text["signature"] = json!(sig);
                                }
                                content
                                    .push(Block::ReasoningContent(json!({"reasoningText": text})));
                            }
                        }
                        AssistantContent::ToolCall(c) => content.push(Block::ToolUse {
                            tool_use_id: c.id.clone(),
                            name: &c.name,
                            input: &c.arguments,
                        }),
                    }
                }
                if !content.is_empty() {
                    push(&mut turns, "assistant", content);
                }
            }
            Message::ToolResult(r) => {
                let mut content: Vec<Block<'a>> = r.content.iter().filter_map(user_block).collect();
                if r.is_error && content.iter().any(|b| matches!(b, Block::Image(_))) {
                    // Bedrock refuses images in a failed result: they go
                    // after the turn's tool results (pi's #10794).
                    let (images, mut text): (Vec<Block<'a>>, Vec<Block<'a>>) = content
                        .into_iter()
                        .partition(|b| matches!(b, Block::Image(_)));
                    deferred.extend(images);
                    text.push(Block::Text(crate::providers::anthropic::IMAGES_AFTER));
                    content = text;
                }
                if content.is_empty() {
                    content.push(Block::Text("(no output)"));
                }
                let block = Block::ToolResult {
                    tool_use_id: r.tool_call_id.clone(),
                    content,
                    status: if r.is_error { "error" } else { "success" },
                };
                push(&mut turns, "user", vec![block]);
            }
        }
    }
    if !deferred.is_empty() {
        push(&mut turns, "user", deferred);
    }
    turns
}

/// Appends to the last turn when it has the same role (Bedrock requires
/// alternating roles and all tool results of a turn in one message).
fn push<'a>(turns: &mut Vec<Turn<'a>>, role: &'static str, content: Vec<Block<'a>>) {
    match turns.last_mut() {
        Some(last) if last.role == role => last.content.extend(content),
        _ => turns.push(Turn { role, content }),
    }
}
