//! The HTTP request: URL, headers and JSON body.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::{Value, json};

use super::messages::{Block, Turn, to_turns};
use super::thinking;
use crate::context::{Context, ToolDefinition};
use crate::error::ProviderError;
use crate::model::Model;
use crate::options::{ApiKey, CacheRetention, StreamOptions, ToolChoice};
use crate::provider::{WireRequest, encode};
use crate::providers::decimal_f32;
use crate::transform::{ToolCallIdRules, prepare_messages};

/// The API version header value.
pub(super) const API_VERSION: &str = "2023-06-01";
/// The beta flag that OAuth access tokens require.
pub(super) const OAUTH_BETA: &str = "oauth-2025-04-20";
/// Prefix of Anthropic OAuth access tokens (sent as a bearer token, not `x-api-key`).
const OAUTH_TOKEN_PREFIX: &str = "sk-ant-oat";

/// The request body, borrowing from the context; fields in the order they are sent.
#[derive(Serialize)]
struct Body<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    anthropic_version: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<&'a str>,
    max_tokens: u64,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<[Block<'a>; 1]>,
    messages: Vec<Turn<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<Vec<Tool<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_config: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
}

/// A tool declaration.
#[derive(Serialize)]
struct Tool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: Cow<'a, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<&'a Value>,
}

/// The `anthropic_version` Claude on Vertex AI takes in the body.
pub(crate) const VERTEX_VERSION: &str = "vertex-2023-10-16";

/// Builds the request for one streamed call.
pub(super) fn build(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    api_key: Option<&ApiKey>,
) -> Result<WireRequest, ProviderError> {
    Ok(WireRequest {
        url: endpoint(&model.base_url),
        headers: headers(model, options, api_key),
        body: body(model, context, options, false)?,
    })
}

/// The JSON body; `vertex` names the version in the body instead of the model
/// (Claude on Vertex AI names the model in the URL).
pub(crate) fn body(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    vertex: bool,
) -> Result<bytes::Bytes, ProviderError> {
    let messages = prepare_messages(model, &context.messages, ToolCallIdRules::ANTHROPIC);
    let mut turns = to_turns(&messages);
    if turns.is_empty() {
        return Err(ProviderError::InvalidRequest(format!(
            "the conversation for {} has no message with content; add a user message with non-empty text",
            model.id
        )));
    }
    let cache = cache_control(model.cache_retention(options.cache_retention));

    let tool_choice = if context.tools.is_empty() {
        None
    } else {
        options.tool_choice.as_ref().map(tool_choice_value)
    };
    let forces_tool = tool_choice
        .as_ref()
        .and_then(|c| c["type"].as_str())
        .is_some_and(|t| t == "any" || t == "tool");
    let plan = thinking::plan(model, options, forces_tool);

    let system = context
        .system_prompt
        .as_deref()
        .filter(|s| !s.trim().is_empty())
        .map(|text| {
            [Block::Text {
                text,
                cache_control: cache.as_ref(),
            }]
        });

    if let Some(cache) = &cache
        && let Some(turn) = turns.iter_mut().rev().find(|t| t.role == "user")
        && let Some(last) = turn.content.last_mut()
    {
        last.set_cache_control(cache);
    }

    let tools = (!context.tools.is_empty()).then(|| {
        let mut tools: Vec<Tool<'_>> = context.tools.iter().map(tool).collect();
        if let Some(last) = tools.last_mut() {
            last.cache_control = cache.as_ref();
        }
        tools
    });

    let body = Body {
        anthropic_version: vertex.then_some(VERTEX_VERSION),
        model: (!vertex).then_some(model.id.as_str()),
        max_tokens: plan.max_tokens,
        stream: true,
        system,
        messages: turns,
        tools,
        tool_choice,
        thinking: plan.thinking.as_ref(),
        output_config: plan.output_config.as_ref(),
        // The API rejects a temperature together with thinking.
        temperature: options
            .temperature
            .filter(|_| !plan.is_on())
            .map(decimal_f32),
    };

    encode(&body)
}

/// The Messages endpoint. The base URL is written as the Anthropic SDKs, pi
/// and `ANTHROPIC_BASE_URL` write it, the host without `/v1`
/// (`https://api.anthropic.com`, a gateway's `https://proxy.example/anthropic`),
/// and `/v1/messages` is appended; a base already ending in `/v1` (or in
/// `/v1/messages`) is taken as it is.
pub(crate) fn endpoint(base_url: &str) -> String {
    let base = base_url.trim().trim_end_matches('/');
    if base.ends_with("/messages") {
        base.to_string()
    } else if base.ends_with("/v1") {
        format!("{base}/messages")
    } else {
        format!("{base}/v1/messages")
    }
}

/// `{type: "ephemeral"}` (with `ttl: "1h"` for long retention), or `None` when caching is off.
fn cache_control(retention: CacheRetention) -> Option<Value> {
    match retention {
        CacheRetention::None => None,
        CacheRetention::Short => Some(json!({"type": "ephemeral"})),
        CacheRetention::Long => Some(json!({"type": "ephemeral", "ttl": "1h"})),
    }
}

fn tool_choice_value(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!({"type": "auto"}),
        ToolChoice::None => json!({"type": "none"}),
        ToolChoice::Required => json!({"type": "any"}),
        ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
    }
}

fn tool(tool: &ToolDefinition) -> Tool<'_> {
    // The API requires an object schema; a tool declared without one takes no arguments.
    let input_schema = if tool.parameters.is_object() {
        Cow::Borrowed(&tool.parameters)
    } else {
        Cow::Owned(json!({"type": "object", "properties": {}}))
    };
    Tool {
        name: &tool.name,
        description: &tool.description,
        input_schema,
        cache_control: None,
    }
}

/// Default headers, then the model's, then the options' (later ones win, names
/// compared case-insensitively). OAuth tokens go in `authorization` and need the
/// OAuth beta flag, which is kept even when a caller sets other `anthropic-beta` flags.
fn headers(
    model: &Model,
    options: &StreamOptions,
    api_key: Option<&ApiKey>,
) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let oauth = api_key.is_some_and(|k| k.expose().starts_with(OAUTH_TOKEN_PREFIX));
    if let Some(key) = api_key {
        if oauth {
            set(
                &mut out,
                "authorization",
                &format!("Bearer {}", key.expose()),
            );
            set(&mut out, "anthropic-beta", OAUTH_BETA);
        } else {
            set(&mut out, "x-api-key", key.expose());
        }
    }
    set(&mut out, "anthropic-version", API_VERSION);
    set(&mut out, "accept", "text/event-stream");
    for (k, v) in model.headers.iter().chain(options.headers.iter()) {
        set(&mut out, k, v);
    }
    if oauth
        && let Some((_, beta)) = out
            .iter_mut()
            .find(|(k, _)| k.eq_ignore_ascii_case("anthropic-beta"))
        && !beta.split(',').any(|f| f.trim() == OAUTH_BETA)
    {
        beta.push(',');
        beta.push_str(OAUTH_BETA);
    }
    out
}

fn set(headers: &mut Vec<(String, String)>, name: &str, value: &str) {
    match headers
        .iter_mut()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
    {
        Some(slot) => slot.1 = value.to_string(),
        None => headers.push((name.to_ascii_lowercase(), value.to_string())),
    }
}
