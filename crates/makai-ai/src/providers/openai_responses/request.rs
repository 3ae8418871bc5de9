//! The request of the Responses API: URL, headers and JSON body.
//!
//! Choices worth knowing:
//! - `store: false`: makai keeps the conversation itself, so every request is
//!   self-contained. Reasoning is therefore replayed from the reasoning item kept in
//!   the thinking block's signature, and only when that item carries
//!   `encrypted_content` (a bare `rs_…` id cannot be resolved without storage).
//!   When a reasoning item of an assistant message cannot be replayed, the ids of
//!   that message's other items are left out too: OpenAI rejects a `msg_…`/`fc_…`
//!   item whose reasoning item is missing, while id-less items are always accepted.
//! - Item ids (`msg_…`, `fc_…`) are only replayed for messages produced by this
//!   very model (same provider, API and model id).
//! - Function tools are sent with `strict: false`: the API defaults to strict mode,
//!   which rejects ordinary JSON schemas (optional properties, open objects).
//! - `temperature` is not sent to reasoning models (they reject it).
//! - Reasoning effort is only sent when thinking is on and the model reasons;
//!   `xhigh` becomes `high` except on models known to offer it (`*codex-max*`,
//!   `gpt-5.2*`), and `minimal` becomes `low` on `gpt-5.1*`/`gpt-5.2*`, which
//!   replaced it.
//! - `include: ["reasoning.encrypted_content"]` is sent for every reasoning model
//!   (it reasons even without an explicit effort, and the encrypted content is what
//!   lets the next turn replay it); non-reasoning models reject the field.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Serialize;
use serde_json::{Value, json};

use crate::context::Context;
use crate::error::ProviderError;
use crate::message::{AssistantContent, AssistantMessage, Message, ThinkingContent, UserContent};
use crate::model::Model;
use crate::options::{ApiKey, CacheRetention, StreamOptions, ThinkingLevel, ToolChoice};
use crate::provider::{WireRequest, encode};
use crate::providers::decimal_f32;
use crate::transform::{ToolCallIdRules, prepare_messages};

/// What OpenAI accepts as a `call_id`: letters, digits, `_` and `-`, at most 64.
const CALL_ID_RULES: ToolCallIdRules = ToolCallIdRules {
    max_len: 64,
    extra_chars: "_-",
};

/// The request body, borrowing from the context; fields in the order they are sent.
#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    input: Vec<Item<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    instructions: Option<&'a str>,
    stream: bool,
    store: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<Vec<Tool<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    include: Option<[&'static str; 1]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_retention: Option<&'static str>,
    /// GPT-5.6 and later: long retention as `{"ttl": "30m"}` (pi 1.5).
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_options: Option<Value>,
}

/// A function tool (`strict: false`, see the module docs).
#[derive(Serialize)]
struct Tool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
    strict: bool,
}

/// One item of `input`.
#[derive(Serialize)]
#[serde(untagged)]
enum Item<'a> {
    /// A user message: `{"role": "user", "content": [...]}`.
    User {
        role: &'static str,
        content: Vec<Part<'a>>,
    },
    Typed(TypedItem<'a>),
    /// A reasoning item replayed as it was received.
    Replayed(Value),
}

impl<'a> Item<'a> {
    fn user(content: Vec<Part<'a>>) -> Self {
        Item::User {
            role: "user",
            content,
        }
    }
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum TypedItem<'a> {
    Message {
        role: &'static str,
        status: &'static str,
        content: [OutputText<'a>; 1],
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<&'a str>,
    },
    FunctionCall {
        call_id: String,
        name: &'a str,
        arguments: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<&'a str>,
    },
    FunctionCallOutput {
        call_id: String,
        output: String,
    },
}

#[derive(Serialize)]
struct OutputText<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
    annotations: [(); 0],
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    InputText {
        text: &'a str,
    },
    InputImage {
        detail: &'static str,
        image_url: String,
    },
}

/// Builds the request.
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

/// The instructions sent to the Codex endpoint when the context has no system
/// prompt (it requires some).
pub(crate) const CODEX_DEFAULT_INSTRUCTIONS: &str = "You are a helpful assistant.";

/// The JSON body. `codex`: the ChatGPT Codex endpoint's variant, which
/// requires `instructions` and rejects `max_output_tokens` and
/// `prompt_cache_retention`.
pub(crate) fn body(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    codex: bool,
) -> Result<bytes::Bytes, ProviderError> {
    let messages = prepare_messages(model, &context.messages, ToolCallIdRules::LENIENT);
    let ids = IdMap::new(&context.messages);
    let max_tokens = options.max_tokens.unwrap_or(model.max_tokens);
    let tools = !context.tools.is_empty();
    let caching = options.cache_retention != CacheRetention::None;
    let long_retention =
        !codex && crate::providers::openai_long_retention(model, options.cache_retention);
    let ttl_options = takes_cache_ttl_options(&model.id);
    let body = Body {
        model: &model.id,
        input: convert_messages(model, &messages, &ids),
        instructions: context
            .system_prompt
            .as_deref()
            .filter(|s| !s.trim().is_empty())
            .or(codex.then_some(CODEX_DEFAULT_INSTRUCTIONS)),
        stream: true,
        store: false,
        max_output_tokens: (max_tokens > 0 && !codex).then_some(max_tokens),
        temperature: options
            .temperature
            .filter(|_| !model.reasoning)
            .map(decimal_f32),
        tools: tools.then(|| {
            context
                .tools
                .iter()
                .map(|t| Tool {
                    kind: "function",
                    name: &t.name,
                    description: &t.description,
                    parameters: &t.parameters,
                    strict: false,
                })
                .collect()
        }),
        tool_choice: options
            .tool_choice
            .as_ref()
            .filter(|_| tools)
            .map(tool_choice),
        reasoning: effort(model, options)
            .map(|effort| json!({"effort": effort, "summary": "auto"})),
        include: model.reasoning.then_some(["reasoning.encrypted_content"]),
        prompt_cache_key: options
            .session_id
            .as_deref()
            .filter(|s| caching && !s.is_empty()),
        prompt_cache_retention: (long_retention && !ttl_options).then_some("24h"),
        prompt_cache_options: (long_retention && ttl_options).then(|| json!({"ttl": "30m"})),
    };
    encode(&body)
}

/// GPT-5.6 and later take long retention as `prompt_cache_options.ttl`
/// (pi 1.5), earlier models as `prompt_cache_retention`.
fn takes_cache_ttl_options(model_id: &str) -> bool {
    let id = model_id.rsplit('/').next().unwrap_or(model_id);
    let Some(version) = id.strip_prefix("gpt-") else {
        return false;
    };
    let mut parts = version
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(major), _) if major > 5 => true,
        (Some(5), Some(minor)) => minor >= 6 && version.starts_with(&format!("5.{minor}")),
        _ => false,
    }
}

fn endpoint(base_url: &str) -> String {
    let base = base_url.trim_end_matches('/');
    if base.ends_with("/responses") {
        base.to_string()
    } else {
        format!("{base}/responses")
    }
}

fn headers(
    model: &Model,
    options: &StreamOptions,
    api_key: Option<&ApiKey>,
) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = vec![("accept".into(), "text/event-stream".into())];
    if let Some(key) = api_key.map(|k| k.expose().trim()).filter(|k| !k.is_empty()) {
        out.push(("authorization".into(), format!("Bearer {key}")));
    }
    for (k, v) in model.headers.iter().chain(options.headers.iter()) {
        out.retain(|(existing, _)| !existing.eq_ignore_ascii_case(k));
        out.push((k.clone(), v.clone()));
    }
    out
}

fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Tool(name) => json!({"type": "function", "name": name}),
    }
}

/// The `reasoning.effort` the request carries, when it carries one.
pub(crate) fn effort<'m>(model: &'m Model, options: &StreamOptions) -> Option<&'m str> {
    model
        .reasoning
        .then(|| {
            model
                .thinking_value(options.thinking)
                .or_else(|| reasoning_effort(&model.id, options.thinking))
        })
        .flatten()
}

/// The `reasoning.effort` for `level`, or `None` when thinking is off.
pub(super) fn reasoning_effort(model_id: &str, level: ThinkingLevel) -> Option<&'static str> {
    let id = model_id.rsplit('/').next().unwrap_or(model_id);
    let newer = id.starts_with("gpt-5.1") || id.starts_with("gpt-5.2");
    let has_max = has_max_effort(id);
    let has_xhigh = has_max || id.contains("codex-max") || id.starts_with("gpt-5.2");
    Some(match level {
        ThinkingLevel::Off => return None,
        ThinkingLevel::Minimal if newer => "low",
        ThinkingLevel::Minimal => "minimal",
        ThinkingLevel::Low => "low",
        ThinkingLevel::Medium => "medium",
        ThinkingLevel::High => "high",
        ThinkingLevel::Max if has_max => "max",
        ThinkingLevel::Xhigh | ThinkingLevel::Max if has_xhigh => "xhigh",
        ThinkingLevel::Xhigh | ThinkingLevel::Max => "high",
    })
}

/// True for the models that take the `max` effort: GPT-5.6 and later (pi
/// 1.5's catalog maps its `max` level to `max` for them).
fn has_max_effort(id: &str) -> bool {
    let Some(rest) = id.strip_prefix("gpt-") else {
        return false;
    };
    let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
    let n = digits(rest);
    let Ok(major) = rest[..n].parse::<u32>() else {
        return false;
    };
    let minor = rest[n..]
        .strip_prefix('.')
        .map(|r| r[..digits(r)].parse::<u32>().unwrap_or(0))
        .unwrap_or(0);
    major > 5 || (major == 5 && minor >= 6)
}

/// Maps the ids `prepare_messages` produced back to the original tool-call ids,
/// which hold the `call_id|fc_id` pair (the `|` does not survive normalisation).
struct IdMap(HashMap<String, String>);

impl IdMap {
    fn new(original: &[Message]) -> Self {
        let mut map = HashMap::new();
        let mut add = |id: &str| {
            let normalized = ToolCallIdRules::LENIENT.normalize(id);
            if normalized != id {
                map.insert(normalized, id.to_string());
            }
        };
        for m in original {
            match m {
                Message::Assistant(a) => a.tool_calls().for_each(|c| add(&c.id)),
                Message::ToolResult(r) => add(&r.tool_call_id),
                _ => {}
            }
        }
        IdMap(map)
    }

    /// The wire `call_id` and, when known, the `fc_…` item id of `prepared_id`.
    fn split<'a>(&'a self, prepared_id: &'a str) -> (String, Option<&'a str>) {
        let original = self
            .0
            .get(prepared_id)
            .map(String::as_str)
            .unwrap_or(prepared_id);
        let (call, item) = match original.split_once('|') {
            Some((call, item)) => (call, Some(item)),
            None => (original, None),
        };
        let item = item.filter(|i| i.starts_with("fc_") && CALL_ID_RULES.accepts(i));
        (CALL_ID_RULES.normalize(call), item)
    }
}

fn convert_messages<'a>(
    model: &Model,
    messages: &'a [Cow<'_, Message>],
    ids: &'a IdMap,
) -> Vec<Item<'a>> {
    let mut input = Vec::with_capacity(messages.len());
    // Images returned by consecutive tool results, sent in one user item after them.
    let mut tool_images: Vec<Part<'a>> = Vec::new();
    for message in messages {
        let message: &Message = message;
        if !matches!(message, Message::ToolResult(_)) {
            flush_tool_images(&mut input, &mut tool_images);
        }
        match message {
            Message::User(u) => {
                let content: Vec<Part<'a>> = u.content.iter().filter_map(user_part).collect();
                if !content.is_empty() {
                    input.push(Item::user(content));
                }
            }
            Message::Assistant(a) => convert_assistant(model, a, ids, &mut input),
            Message::ToolResult(r) => {
                let (call_id, _) = ids.split(&r.tool_call_id);
                let images: Vec<Part<'a>> = r
                    .content
                    .iter()
                    .filter(|c| matches!(c, UserContent::Image(_)))
                    .filter_map(user_part)
                    .collect();
                let output = crate::providers::tool_output_text(r, IMAGES_BELOW).into_owned();
                input.push(Item::Typed(TypedItem::FunctionCallOutput {
                    call_id,
                    output,
                }));
                tool_images.extend(images);
            }
        }
    }
    flush_tool_images(&mut input, &mut tool_images);
    input
}

/// A tool result that is only images says where they are.
const IMAGES_BELOW: &str = "(the tool returned the image(s) attached below)";

fn flush_tool_images<'a>(input: &mut Vec<Item<'a>>, images: &mut Vec<Part<'a>>) {
    if images.is_empty() {
        return;
    }
    let mut content = vec![Part::InputText {
        text: "Image(s) returned by the tool call(s) above:",
    }];
    content.append(images);
    input.push(Item::user(content));
}

fn user_part(c: &UserContent) -> Option<Part<'_>> {
    match c {
        UserContent::Text(t) if t.text.is_empty() => None,
        UserContent::Text(t) => Some(Part::InputText { text: &t.text }),
        UserContent::Image(i) => Some(Part::InputImage {
            detail: "auto",
            image_url: format!("data:{};base64,{}", i.mime_type, i.data),
        }),
    }
}

/// The reasoning item kept in a thinking block's signature, when it can be replayed.
fn replayable_reasoning(t: &ThinkingContent) -> Option<Value> {
    let item: Value = serde_json::from_str(t.thinking_signature.as_deref()?).ok()?;
    let ok = item.get("type").and_then(Value::as_str) == Some("reasoning")
        && item
            .get("encrypted_content")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty());
    ok.then_some(item)
}

fn convert_assistant<'a>(
    model: &Model,
    a: &'a AssistantMessage,
    ids: &'a IdMap,
    input: &mut Vec<Item<'a>>,
) {
    let same_model =
        a.provider == model.provider && a.api == model.api.as_str() && a.model == model.id;
    // Item ids are only safe when they come from this model and every reasoning item
    // they may be paired with is replayed as well.
    let keep_ids = same_model
        && a.content.iter().all(|c| match c {
            AssistantContent::Thinking(t) => replayable_reasoning(t).is_some(),
            _ => true,
        });
    for block in &a.content {
        match block {
            AssistantContent::Thinking(t) => {
                if same_model && let Some(item) = replayable_reasoning(t) {
                    input.push(Item::Replayed(item));
                }
            }
            AssistantContent::Text(t) => {
                if t.text.is_empty() {
                    continue;
                }
                let id = t
                    .text_signature
                    .as_deref()
                    .filter(|id| keep_ids && id.starts_with("msg_"));
                input.push(Item::Typed(TypedItem::Message {
                    role: "assistant",
                    status: "completed",
                    content: [OutputText {
                        kind: "output_text",
                        text: &t.text,
                        annotations: [],
                    }],
                    id,
                }));
            }
            AssistantContent::ToolCall(c) => {
                let (call_id, item_id) = ids.split(&c.id);
                input.push(Item::Typed(TypedItem::FunctionCall {
                    call_id,
                    name: &c.name,
                    arguments: serde_json::to_string(&c.arguments).unwrap_or_else(|_| "{}".into()),
                    id: item_id.filter(|_| keep_ids),
                }));
            }
        }
    }
}
