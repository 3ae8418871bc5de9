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
//!   `$schema`, `$id`, `$comment` and `additionalProperties` are removed (at every
//!   level reached through `properties`, `items`, `anyOf`, `oneOf`, `allOf`); an
//!   object schema without properties is left out entirely (Gemini rejects an
//!   OBJECT with empty `properties`). `$ref` is passed through untouched.
//! - Thinking (when on and the model reasons): Gemini 3 models get a
//!   `thinkingLevel` (`minimal`/`low`/`medium`/`high`; Pro models only offer `low`
//!   and `high`, so `minimal`/`low` → `low` and the rest → `high`); older models
//!   get a `thinkingBudget` from [`crate::ThinkingBudgets`]. `includeThoughts` is
//!   always set so reasoning is streamed. With thinking off nothing is sent and
//!   the model uses its default.

use serde_json::{Map, Value, json};

use crate::context::{Context, ToolDefinition};
use crate::error::ProviderError;
use crate::message::{AssistantContent, AssistantMessage, Message, UserContent};
use crate::model::Model;
use crate::options::{ApiKey, StreamOptions, ThinkingLevel, ToolChoice};
use crate::provider::HttpRequest;
use crate::transform::{ToolCallIdRules, prepare_messages};

/// The placeholder signature Google documents for function calls whose real
/// signature is unknown (e.g. produced by another model).
pub(super) const SKIP_SIGNATURE: &str = "skip_thought_signature_validator";

/// Builds the request.
pub(super) fn build(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    api_key: Option<&ApiKey>,
) -> Result<HttpRequest, ProviderError> {
    let messages = prepare_messages(model, &context.messages, ToolCallIdRules::LENIENT);
    let base = model.base_url.trim().trim_end_matches('/');
    if base.is_empty() {
        return Err(ProviderError::InvalidRequest(format!(
            "model '{}' has no base URL; set baseUrl (for Gemini: https://generativelanguage.googleapis.com/v1beta)",
            model.id
        )));
    }
    let id = model.id.strip_prefix("models/").unwrap_or(&model.id);
    let url = format!("{base}/models/{id}:streamGenerateContent?alt=sse");

    let mut body = Map::new();
    body.insert(
        "contents".into(),
        Value::Array(convert_messages(model, &messages)),
    );
    if let Some(system) = context
        .system_prompt
        .as_deref()
        .filter(|s| !s.trim().is_empty())
    {
        body.insert(
            "systemInstruction".into(),
            json!({"parts": [{"text": system}]}),
        );
    }
    if !context.tools.is_empty() {
        let declarations: Vec<Value> = context.tools.iter().map(declaration).collect();
        body.insert(
            "tools".into(),
            json!([{"functionDeclarations": declarations}]),
        );
        if let Some(choice) = &options.tool_choice {
            body.insert(
                "toolConfig".into(),
                json!({"functionCallingConfig": calling_config(choice)}),
            );
        }
    }
    let mut config = Map::new();
    if let Some(t) = options.temperature {
        config.insert("temperature".into(), json!(clean_f32(t)));
    }
    let max_tokens = options.max_tokens.unwrap_or(model.max_tokens);
    if max_tokens > 0 {
        config.insert("maxOutputTokens".into(), json!(max_tokens));
    }
    if model.reasoning && options.thinking != ThinkingLevel::Off {
        config.insert("thinkingConfig".into(), thinking_config(model, options));
    }
    if !config.is_empty() {
        body.insert("generationConfig".into(), Value::Object(config));
    }

    let mut headers: Vec<(String, String)> = vec![("accept".into(), "text/event-stream".into())];
    if let Some(key) = api_key.map(|k| k.expose().trim()).filter(|k| !k.is_empty()) {
        headers.push(("x-goog-api-key".into(), key.to_string()));
    }
    for (k, v) in model.headers.iter().chain(options.headers.iter()) {
        headers.retain(|(existing, _)| !existing.eq_ignore_ascii_case(k));
        headers.push((k.clone(), v.clone()));
    }
    Ok(HttpRequest {
        url,
        headers,
        body: Value::Object(body),
    })
}

/// `0.7f32` as `0.7`, not `0.699999988079071`.
fn clean_f32(v: f32) -> f64 {
    v.to_string().parse().unwrap_or(f64::from(v))
}

fn is_gemini_3(model: &Model) -> bool {
    model.id.contains("gemini-3")
}

fn thinking_config(model: &Model, options: &StreamOptions) -> Value {
    if is_gemini_3(model) {
        let pro = model.id.contains("pro");
        let level = match options.thinking {
            ThinkingLevel::Minimal | ThinkingLevel::Low if pro => "low",
            ThinkingLevel::Minimal => "minimal",
            ThinkingLevel::Low => "low",
            ThinkingLevel::Medium if !pro => "medium",
            _ => "high",
        };
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
struct ToolTurn {
    responses: Vec<Value>,
    images: Vec<Value>,
}

impl ToolTurn {
    fn flush(&mut self, contents: &mut Vec<Value>) {
        if self.responses.is_empty() && self.images.is_empty() {
            return;
        }
        let mut parts = std::mem::take(&mut self.responses);
        if !self.images.is_empty() {
            parts.push(json!({"text": "Image(s) returned by the tool call(s) above:"}));
            parts.append(&mut self.images);
        }
        contents.push(json!({"role": "user", "parts": parts}));
    }
}

fn convert_messages(model: &Model, messages: &[Message]) -> Vec<Value> {
    let mut contents = Vec::with_capacity(messages.len());
    let mut tools = ToolTurn::default();
    for message in messages {
        match message {
            Message::User(u) => {
                tools.flush(&mut contents);
                let parts: Vec<Value> = u.content.iter().filter_map(user_part).collect();
                if !parts.is_empty() {
                    contents.push(json!({"role": "user", "parts": parts}));
                }
            }
            Message::Assistant(a) => {
                tools.flush(&mut contents);
                let parts = assistant_parts(model, a);
                if !parts.is_empty() {
                    contents.push(json!({"role": "model", "parts": parts}));
                }
            }
            Message::ToolResult(r) => {
                let text = r.text_content();
                let has_images = r.content.iter().any(|c| matches!(c, UserContent::Image(_)));
                let text = if text.is_empty() && has_images {
                    "(the tool returned the image(s) attached below)".to_string()
                } else {
                    text
                };
                let response = if r.is_error {
                    json!({"error": text})
                } else {
                    json!({"output": text})
                };
                tools.responses.push(json!({"functionResponse": {
                    "name": r.tool_name,
                    "response": response,
                }}));
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
fn merge_same_role(contents: Vec<Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(contents.len());
    for turn in contents {
        if let Some(last) = out.last_mut()
            && last.get("role") == turn.get("role")
            && let (Some(into), Some(parts)) = (
                last.get_mut("parts").and_then(Value::as_array_mut),
                turn.get("parts").and_then(Value::as_array),
            )
        {
            into.extend(parts.iter().cloned());
            continue;
        }
        out.push(turn);
    }
    out
}

fn user_part(c: &UserContent) -> Option<Value> {
    match c {
        UserContent::Text(t) if t.text.is_empty() => None,
        UserContent::Text(t) => Some(json!({"text": t.text})),
        UserContent::Image(i) => {
            Some(json!({"inlineData": {"mimeType": i.mime_type, "data": i.data}}))
        }
    }
}

fn assistant_parts(model: &Model, a: &AssistantMessage) -> Vec<Value> {
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
                    parts.push(
                        json!({"text": t.thinking, "thought": true, "thoughtSignature": sig}),
                    );
                }
            }
            AssistantContent::Text(t) => {
                let sig = t
                    .text_signature
                    .as_deref()
                    .filter(|s| same_model && !s.is_empty());
                match sig {
                    Some(sig) => parts.push(json!({"text": t.text, "thoughtSignature": sig})),
                    None if !t.text.is_empty() => parts.push(json!({"text": t.text})),
                    None => {}
                }
            }
            AssistantContent::ToolCall(c) => {
                let mut part = json!({"functionCall": {"name": c.name, "args": Value::Object(c.arguments.clone())}});
                let sig = c
                    .thought_signature
                    .as_deref()
                    .filter(|s| same_model && !s.is_empty())
                    .or(is_gemini_3(model).then_some(SKIP_SIGNATURE));
                if let (Some(sig), Value::Object(map)) = (sig, &mut part) {
                    map.insert("thoughtSignature".into(), json!(sig));
                }
                parts.push(part);
            }
        }
    }
    parts
}
