//! The request of the Gemini API: URL, headers and JSON body.
//!
//! Choices worth knowing:
//! - The API key travels in the `x-goog-api-key` header, never in the URL (URLs
//!   end up in logs and error messages).
//! - Function calls and responses are sent without their `id`: the public Gemini
//!   API rejects the field in requests (`Unknown name "id" at …function_call`)
//!   and pairs calls with responses by name and order. Consecutive tool results
//!   become one `user` turn of `functionResponse` parts (images returned by tools
//!   follow as `inlineData` parts in the same turn).
//! - Thought parts are replayed (`{text, thought: true, thoughtSignature}`) only
//!   for turns of this very model and only when they carry a signature; other
//!   models' thinking arrives here as plain text (see [`crate::transform`]).
//!   Gemini 3 requires a signature on replayed function calls; a call that has
//!   none (it came from another model) gets Google's documented placeholder
//!   `skip_thought_signature_validator`.
//! - Tool schemas: `parameters` takes an OpenAPI-style subset of JSON Schema, so
//!   `$schema`, `$id`, `$comment` and `additionalProperties` are removed and
//!   `const` becomes a one-value `enum` (at every level reached through
//!   `properties`, `items`, `anyOf`, `oneOf`, `allOf`; values such as
//!   `default` and `examples` are left as they are); an
//!   object schema without properties is left out entirely (Gemini rejects an
//!   OBJECT with empty `properties`). `$ref` is passed through untouched.
//! - Thinking (when on and the model reasons): Gemini 3 models get a
//!   `thinkingLevel` (`minimal`/`low`/`medium`/`high`; Pro models only offer `low`
//!   and `high`, so `minimal`/`low` → `low` and the rest → `high`); older models
//!   get a `thinkingBudget` from [`crate::ThinkingBudgets`]. `includeThoughts` is
//!   always set so reasoning is streamed. With thinking off nothing is sent and
//!   the model uses its default.

use serde::Serialize;
use serde_json::{Map, Value, json};
use std::borrow::Cow;

use crate::context::{Context, ToolDefinition};
use crate::error::ProviderError;
use crate::message::{AssistantContent, AssistantMessage, Message, UserContent};
use crate::model::Model;
use crate::options::{ApiKey, StreamOptions, ThinkingLevel, ToolChoice};
use crate::provider::{WireRequest, encode};
use crate::providers::decimal_f32;
use crate::transform::{ToolCallIdRules, prepare_messages};

/// The placeholder signature Google documents for function calls whose real
/// signature is unknown (e.g. produced by another model).
pub(super) const SKIP_SIGNATURE: &str = "skip_thought_signature_validator";

/// The request body, borrowing from the context; fields in the order they are sent.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Body<'a> {
    contents: Vec<Content<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    system_instruction: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_config: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    generation_config: Option<Map<String, Value>>,
}

/// One turn: `user` or `model`.
#[derive(Serialize)]
struct Content<'a> {
    role: &'static str,
    parts: Vec<Part<'a>>,
}

/// One part of a turn.
#[derive(Serialize)]
#[serde(untagged)]
enum Part<'a> {
    Text {
        text: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        thought: Option<bool>,
        #[serde(rename = "thoughtSignature", skip_serializing_if = "Option::is_none")]
        thought_signature: Option<&'a str>,
    },
    InlineData {
        #[serde(rename = "inlineData")]
        inline_data: InlineData<'a>,
    },
    FunctionCall {
        #[serde(rename = "functionCall")]
        function_call: FunctionCall<'a>,
        #[serde(rename = "thoughtSignature", skip_serializing_if = "Option::is_none")]
        thought_signature: Option<&'a str>,
    },
    FunctionResponse {
        #[serde(rename = "functionResponse")]
        function_response: FunctionResponse<'a>,
    },
}

impl<'a> Part<'a> {
    fn text(text: &'a str) -> Self {
        Part::Text {
            text,
            thought: None,
            thought_signature: None,
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct InlineData<'a> {
    mime_type: &'a str,
    data: &'a str,
}

#[derive(Serialize)]
struct FunctionCall<'a> {
    name: &'a str,
    args: &'a Map<String, Value>,
}

#[derive(Serialize)]
struct FunctionResponse<'a> {
    name: &'a str,
    response: ToolResponse,
}

/// `{"output": text}`, or `{"error": text}` for a failed call.
#[derive(Serialize)]
#[serde(rename_all = "lowercase")]
enum ToolResponse {
    Output(String),
    Error(String),
}

/// pi writes Gemini's base URL with its API version
/// (`https://generativelanguage.googleapis.com/v1beta`); Google's SDKs take the
/// host alone and add the version. A base URL without a path gets `/v1beta`.
fn versioned(base: &str) -> std::borrow::Cow<'_, str> {
    let after_scheme = base.split_once("://").map_or(base, |(_, rest)| rest);
    if after_scheme.contains('/') {
        base.into()
    } else {
        format!("{base}/v1beta").into()
    }
}

/// Builds the request.
pub(crate) fn build(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    api_key: Option<&ApiKey>,
) -> Result<WireRequest, ProviderError> {
    let messages = prepare_messages(model, &context.messages, ToolCallIdRules::LENIENT);
    let base = model.base_url.trim().trim_end_matches('/');
    if base.is_empty() {
        return Err(ProviderError::InvalidRequest(format!(
            "model '{}' has no base URL; set baseUrl (for Gemini: https://generativelanguage.googleapis.com/v1beta)",
            model.id
        )));
    }
    let id = model.id.strip_prefix("models/").unwrap_or(&model.id);
    let url = format!(
        "{}/models/{id}:streamGenerateContent?alt=sse",
        versioned(base)
    );

    let tools = !context.tools.is_empty();
    let mut config = Map::new();
    if let Some(t) = options.temperature {
        config.insert("temperature".into(), json!(decimal_f32(t)));
    }
    let max_tokens = options.max_tokens.unwrap_or(model.max_tokens);
    if max_tokens > 0 {
        config.insert("maxOutputTokens".into(), json!(max_tokens));
    }
    if model.reasoning && options.thinking != ThinkingLevel::Off {
        config.insert("thinkingConfig".into(), thinking_config(model, options));
    }
    let body = Body {
        contents: convert_messages(model, &messages),
        system_instruction: context
            .system_prompt
            .as_deref()
            .filter(|s| !s.trim().is_empty())
            .map(|system| json!({"parts": [{"text": system}]})),
        tools: tools.then(|| {
            let declarations: Vec<Value> = context.tools.iter().map(declaration).collect();
            json!([{"functionDeclarations": declarations}])
        }),
        tool_config: options
            .tool_choice
            .as_ref()
            .filter(|_| tools)
            .map(|choice| json!({"functionCallingConfig": calling_config(choice)})),
        generation_config: (!config.is_empty()).then_some(config),
    };

    let mut headers: Vec<(String, String)> = vec![("accept".into(), "text/event-stream".into())];
    if let Some(key) = api_key.map(|k| k.expose().trim()).filter(|k| !k.is_empty()) {
        headers.push(("x-goog-api-key".into(), key.to_string()));
    }
    for (k, v) in model.headers.iter().chain(options.headers.iter()) {
        headers.retain(|(existing, _)| !existing.eq_ignore_ascii_case(k));
        headers.push((k.clone(), v.clone()));
    }
    Ok(WireRequest {
        url,
        headers,
        body: encode(&body)?,
    })
}

fn is_gemini_3(model: &Model) -> bool {
    model.id.contains("gemini-3")
}

/// The `thinkingLevel` the request carries (Gemini 3; older models take a
/// token budget instead), when it carries one.
pub(crate) fn thinking_level(model: &Model, options: &StreamOptions) -> Option<&'static str> {
    if !model.reasoning || options.thinking == ThinkingLevel::Off || !is_gemini_3(model) {
        return None;
    }
    let pro = model.id.contains("pro");
    Some(match options.thinking {
        ThinkingLevel::Minimal | ThinkingLevel::Low if pro => "low",
        ThinkingLevel::Minimal => "minimal",
        ThinkingLevel::Low => "low",
        ThinkingLevel::Medium if !pro => "medium",
        _ => "high",
    })
}

fn thinking_config(model: &Model, options: &StreamOptions) -> Value {
    if let Some(level) = thinking_level(model, options) {
        json!({"includeThoughts": true, "thinkingLevel": level})
    } else {
        let budget = options
            .thinking_budgets
            .for_level(options.thinking)
            .unwrap_or(0);
        json!({"includeThoughts": true, "thinkingBudget": budget})
    }
}

fn calling_config(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!({"mode": "AUTO"}),
        ToolChoice::None => json!({"mode": "NONE"}),
        ToolChoice::Required => json!({"mode": "ANY"}),
        ToolChoice::Tool(name) => json!({"mode": "ANY", "allowedFunctionNames": [name]}),
    }
}

fn declaration(tool: &ToolDefinition) -> Value {
    let mut d = Map::new();
    d.insert("name".into(), json!(tool.name));
    d.insert("description".into(), json!(tool.description));
    let schema = clean_schema(&tool.parameters);
    let empty_object = schema.get("type").and_then(Value::as_str) == Some("object")
        && schema
            .get("properties")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty);
    let meaningful = schema.as_object().is_some_and(|m| !m.is_empty());
    if meaningful && !empty_object {
        d.insert("parameters".into(), schema);
    }
    Value::Object(d)
}

/// Removes the JSON-Schema keywords Gemini's `parameters` rejects (see module docs).
pub(super) fn clean_schema(schema: &Value) -> Value {
    let Value::Object(map) = schema else {
        return schema.clone();
    };
    let mut out = Map::new();
    for (key, value) in map {
        let cleaned = match key.as_str() {
            "$schema" | "$id" | "$comment" | "additionalProperties" => continue,
            // Gemini rejects `const`: a single-value `enum` says the same
            // (pi's #11308); a schema that has an `enum` keeps it.
            "const" => {
                if !map.contains_key("enum") {
                    out.insert("enum".into(), Value::Array(vec![value.clone()]));
                }
                continue;
            }
            "properties" => match value {
                Value::Object(props) => Value::Object(
                    props
                        .iter()
                        .map(|(name, s)| (name.clone(), clean_schema(s)))
                        .collect(),
                ),
                other => other.clone(),
            },
            "items" => match value {
                Value::Array(list) => Value::Array(list.iter().map(clean_schema).collect()),
                other => clean_schema(other),
            },
            "anyOf" | "oneOf" | "allOf" => match value {
                Value::Array(list) => Value::Array(list.iter().map(clean_schema).collect()),
                other => other.clone(),
            },
            _ => value.clone(),
        };
        out.insert(key.clone(), cleaned);
    }
    Value::Object(out)
}

/// Tool results waiting to be sent as one `user` turn.
#[derive(Default)]
struct ToolTurn<'a> {
    responses: Vec<Part<'a>>,
    images: Vec<Part<'a>>,
}

impl<'a> ToolTurn<'a> {
    fn flush(&mut self, contents: &mut Vec<Content<'a>>) {
        if self.responses.is_empty() && self.images.is_empty() {
            return;
        }
        let mut parts = std::mem::take(&mut self.responses);
        if !self.images.is_empty() {
            parts.push(Part::text("Image(s) returned by the tool call(s) above:"));
            parts.append(&mut self.images);
        }
        contents.push(Content {
            role: "user",
            parts,
        });
    }
}

fn convert_messages<'a>(model: &Model, messages: &'a [Cow<'_, Message>]) -> Vec<Content<'a>> {
    let mut contents = Vec::with_capacity(messages.len());
    let mut tools = ToolTurn::default();
    for message in messages {
        match &**message {
            Message::User(u) => {
                tools.flush(&mut contents);
                let parts: Vec<Part<'a>> = u.content.iter().filter_map(user_part).collect();
                if !parts.is_empty() {
                    contents.push(Content {
                        role: "user",
                        parts,
                    });
                }
            }
            Message::Assistant(a) => {
                tools.flush(&mut contents);
                let parts = assistant_parts(model, a);
                if !parts.is_empty() {
                    contents.push(Content {
                        role: "model",
                        parts,
                    });
                }
            }
            Message::ToolResult(r) => {
                let text = crate::providers::tool_output_text(
                    r,
                    "(the tool returned the image(s) attached below)",
                )
                .into_owned();
                let response = if r.is_error {
                    ToolResponse::Error(text)
                } else {
                    ToolResponse::Output(text)
                };
                tools.responses.push(Part::FunctionResponse {
                    function_response: FunctionResponse {
                        name: &r.tool_name,
                        response,
                    },
                });
                tools.images.extend(
                    r.content
                        .iter()
                        .filter(|c| matches!(c, UserContent::Image(_)))
                        .filter_map(user_part),
                );
            }
        }
    }
    tools.flush(&mut contents);
    merge_same_role(contents)
}

/// Gemini expects turns to alternate: consecutive turns of one role (tool
/// responses followed by user text, say) become one turn with all their parts.
fn merge_same_role(contents: Vec<Content<'_>>) -> Vec<Content<'_>> {
    let mut out: Vec<Content<'_>> = Vec::with_capacity(contents.len());
    for turn in contents {
        match out.last_mut() {
            Some(last) if last.role == turn.role => last.parts.extend(turn.parts),
            _ => out.push(turn),
        }
    }
    out
}

fn user_part(c: &UserContent) -> Option<Part<'_>> {
    match c {
        UserContent::Text(t) if t.text.is_empty() => None,
        UserContent::Text(t) => Some(Part::text(&t.text)),
        UserContent::Image(i) => Some(Part::InlineData {
            inline_data: InlineData {
                mime_type: &i.mime_type,
                data: &i.data,
            },
        }),
    }
}

fn assistant_parts<'a>(model: &Model, a: &'a AssistantMessage) -> Vec<Part<'a>> {
    let same_model =
        a.provider == model.provider && a.api == model.api.as_str() && a.model == model.id;
    let mut parts = Vec::with_capacity(a.content.len());
    for block in &a.content {
        match block {
            AssistantContent::Thinking(t) => {
                if !same_model || t.redacted {
                    continue;
                }
                if let Some(sig) = t.thinking_signature.as_deref().filter(|s| !s.is_empty()) {
                    parts.push(Part::Text {
                        text: &t.thinking,
                        thought: Some(true),
                        thought_signature: Some(sig),
                    });
                }
            }
            AssistantContent::Text(t) => {
                let sig = t
                    .text_signature
                    .as_deref()
                    .filter(|s| same_model && !s.is_empty());
                if sig.is_some() || !t.text.is_empty() {
                    parts.push(Part::Text {
                        text: &t.text,
                        thought: None,
                        thought_signature: sig,
                    });
                }
            }
            AssistantContent::ToolCall(c) => {
                let sig = c
                    .thought_signature
                    .as_deref()
                    .filter(|s| same_model && !s.is_empty())
                    .or(is_gemini_3(model).then_some(SKIP_SIGNATURE));
                parts.push(Part::FunctionCall {
                    function_call: FunctionCall {
                        name: &c.name,
                        args: &c.arguments,
                    },
                    thought_signature: sig,
                });
            }
        }
    }
    parts
}
