//! Request-shape tests for Gemini.

use serde_json::{Value, json};

use super::request::{SKIP_SIGNATURE, clean_schema};
use crate::build_request;
use crate::context::{Context, ToolDefinition};
use crate::message::{
    AssistantContent, AssistantMessage, StopReason, TextContent, ThinkingContent, ToolCall,
    ToolResultMessage, UserContent, UserMessage,
};
use crate::model::{Api, Modality, Model};
use crate::options::{ApiKey, StreamOptions, ThinkingLevel, ToolChoice};

const KEY: &str = "AIza-secret-key-123";

fn model(id: &str) -> Model {
    let mut m = Model::custom(
        Api::GoogleGenerativeAi,
        "google",
        id,
        "https://generativelanguage.googleapis.com/v1beta/",
    );
    m.reasoning = true;
    m.input = vec![Modality::Text, Modality::Image];
    m
}

fn options() -> StreamOptions {
    StreamOptions {
        api_key: Some(ApiKey::new(KEY)),
        ..Default::default()
    }
}

fn body(m: &Model, c: &Context, o: &StreamOptions) -> Value {
    build_request(m, c, o).unwrap().body
}

fn own_turn(m: &Model, provider: &str) -> AssistantMessage {
    AssistantMessage {
        content: vec![
            AssistantContent::Thinking(ThinkingContent {
                thinking: "I should list files.".into(),
                thinking_signature: Some("THOUGHT_SIG".into()),
                redacted: false,
            }),
            AssistantContent::Text(TextContent {
                text: "Listing.".into(),
                text_signature: Some("TEXT_SIG".into()),
            }),
            AssistantContent::ToolCall(ToolCall {
                thought_signature: Some("CALL_SIG".into()),
                ..ToolCall::new(
                    "call_1",
                    "ls",
                    json!({"path": "."}).as_object().unwrap().clone(),
                )
            }),
            AssistantContent::ToolCall(ToolCall::new(
                "call_2",
                "cat",
                json!({"path": "a"}).as_object().unwrap().clone(),
            )),
        ],
        api: "google-generative-ai".into(),
        provider: provider.into(),
        model: m.id.clone(),
        stop_reason: StopReason::ToolUse,
        ..Default::default()
    }
}

fn conversation(turn: AssistantMessage) -> Context {
    Context {
        system_prompt: Some("You are terse.".into()),
        messages: vec![
            UserMessage::text("List files").into(),
            turn.into(),
            ToolResultMessage::text("call_1", "ls", "a\nb", false).into(),
            ToolResultMessage::text("call_2", "cat", "no such file", true).into(),
            UserMessage::text("thanks").into(),
        ],
        tools: vec![],
    }
}

#[test]
fn url_and_key_header_never_key_in_url() {
    let m = model("gemini-2.5-flash");
    let req = build_request(&m, &Context::default(), &options()).unwrap();
    assert_eq!(
        req.url,
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert!(!req.url.contains(KEY) && !req.url.contains("key="));
    assert!(req.headers.contains(&("x-goog-api-key".into(), KEY.into())));
    assert!(!req.body.to_string().contains(KEY));
    let mut prefixed = m.clone();
    prefixed.id = "models/gemini-2.5-flash".into();
    assert_eq!(
        build_request(&prefixed, &Context::default(), &options())
            .unwrap()
            .url,
        req.url
    );
}

#[test]
fn missing_base_url_is_a_typed_error() {
    let mut m = model("gemini-2.5-flash");
    m.base_url = String::new();
    let err = build_request(&m, &Context::default(), &options()).unwrap_err();
    assert!(err.to_string().contains("base URL"), "{err}");
}

#[test]
fn conversation_shape_with_merged_tool_results() {
    let m = model("gemini-2.5-flash");
    let b = body(&m, &conversation(own_turn(&m, "google")), &options());
    assert_eq!(
        b["systemInstruction"],
        json!({"parts": [{"text": "You are terse."}]})
    );
    let contents = b["contents"].as_array().unwrap();
    let roles: Vec<&str> = contents
        .iter()
        .map(|c| c["role"].as_str().unwrap())
        .collect();
    // Tool responses and the following user text share one user turn.
    assert_eq!(roles, ["user", "model", "user"]);
    assert_eq!(
        contents[1]["parts"],
        json!([
            {"text": "I should list files.", "thought": true, "thoughtSignature": "THOUGHT_SIG"},
            {"text": "Listing.", "thoughtSignature": "TEXT_SIG"},
            {"functionCall": {"name": "ls", "args": {"path": "."}}, "thoughtSignature": "CALL_SIG"},
            {"functionCall": {"name": "cat", "args": {"path": "a"}}},
        ])
    );
    assert_eq!(
        contents[2]["parts"],
        json!([
            {"functionResponse": {"name": "ls", "response": {"output": "a\nb"}}},
            {"functionResponse": {"name": "cat", "response": {"error": "no such file"}}},
            {"text": "thanks"},
        ])
    );
    assert!(
        !b.to_string().contains("\"id\""),
        "no call ids are sent: {b}"
    );
}

#[test]
fn other_models_turns_lose_signatures_and_thought_parts() {
    let m = model("gemini-2.5-flash");
    let b = body(&m, &conversation(own_turn(&m, "google-vertex")), &options());
    let parts = &b["contents"][1]["parts"];
    assert_eq!(
        *parts,
        json!([
            {"text": "I should list files."},
            {"text": "Listing."},
            {"functionCall": {"name": "ls", "args": {"path": "."}}},
            {"functionCall": {"name": "cat", "args": {"path": "a"}}},
        ])
    );
}

#[test]
fn gemini_3_calls_without_signature_get_the_placeholder() {
    let m = model("gemini-3-pro-preview");
    let b = body(&m, &conversation(own_turn(&m, "google")), &options());
    let parts = &b["contents"][1]["parts"];
    assert_eq!(parts[2]["thoughtSignature"], "CALL_SIG");
    assert_eq!(parts[3]["thoughtSignature"], SKIP_SIGNATURE);
}

#[test]
fn images_become_inline_data() {
    let m = model("gemini-2.5-flash");
    let mut u = UserMessage::text("what is this?");
    u.content.push(UserContent::image("AAAA", "image/png"));
    let b = body(
        &m,
        &Context {
            messages: vec![u.into()],
            ..Default::default()
        },
        &options(),
    );
    assert_eq!(
        b["contents"][0]["parts"][1],
        json!({"inlineData": {"mimeType": "image/png", "data": "AAAA"}})
    );
}

#[test]
fn tools_schema_cleaning_and_tool_config() {
    let m = model("gemini-2.5-flash");
    let tools = vec![
        ToolDefinition {
            name: "read".into(),
            description: "Reads a file".into(),
            parameters: json!({
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "path": {"type": "string"},
                    "ranges": {"type": "array", "items": {"type": "object", "additionalProperties": false,
                               "properties": {"additionalProperties": {"type": "string"}}}}
                },
                "required": ["path"]
            }),
        },
        ToolDefinition {
            name: "now".into(),
            description: "Current time".into(),
            parameters: json!({"type": "object", "properties": {}}),
        },
    ];
    let mut o = options();
    o.tool_choice = Some(ToolChoice::Tool("read".into()));
    let b = body(
        &m,
        &Context {
            tools,
            ..Default::default()
        },
        &o,
    );
    assert_eq!(
        b["tools"],
        json!([{"functionDeclarations": [
            {"name": "read", "description": "Reads a file", "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "ranges": {"type": "array", "items": {"type": "object",
                               "properties": {"additionalProperties": {"type": "string"}}}}
                },
                "required": ["path"]
            }},
            {"name": "now", "description": "Current time"}
        ]}])
    );
    assert_eq!(
        b["toolConfig"],
        json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["read"]}})
    );
    assert_eq!(
        clean_schema(&json!({"anyOf": [{"$comment": "x", "type": "string"}]})),
        json!({"anyOf": [{"type": "string"}]})
    );
    // `const` becomes a one-value `enum` in schemas only; a property named
    // `const` and data in `default` stay (pi's #11308).
    assert_eq!(
        clean_schema(&json!({
            "type": "object",
            "properties": {
                "kind": {"type": "string", "const": "file"},
                "const": {"type": "integer", "default": {"const": 1}},
                "either": {"anyOf": [{"const": 2}, {"const": "x", "enum": ["x", "y"]}]}
            }
        })),
        json!({
            "type": "object",
            "properties": {
                "kind": {"type": "string", "enum": ["file"]},
                "const": {"type": "integer", "default": {"const": 1}},
                "either": {"anyOf": [{"enum": [2]}, {"enum": ["x", "y"]}]}
            }
        })
    );
    o.tool_choice = Some(ToolChoice::Required);
    let b = body(
        &m,
        &Context {
            tools: vec![ToolDefinition {
                name: "x".into(),
                description: "".into(),
                parameters: json!({}),
            }],
            ..Default::default()
        },
        &o,
    );
    assert_eq!(
        b["toolConfig"],
        json!({"functionCallingConfig": {"mode": "ANY"}})
    );
}

#[test]
fn generation_config_and_thinking() {
    let mut o = options();
    o.temperature = Some(0.7);
    o.max_tokens = Some(4096);
    o.thinking = ThinkingLevel::Medium;
    let b = body(&model("gemini-2.5-flash"), &Context::default(), &o);
    assert_eq!(
        b["generationConfig"],
        json!({"temperature": 0.7, "maxOutputTokens": 4096,
               "thinkingConfig": {"includeThoughts": true, "thinkingBudget": 8192}})
    );
    let b = body(&model("gemini-3-pro-preview"), &Context::default(), &o);
    assert_eq!(
        b["generationConfig"]["thinkingConfig"],
        json!({"includeThoughts": true, "thinkingLevel": "high"})
    );
    o.thinking = ThinkingLevel::Minimal;
    let b = body(&model("gemini-3-pro-preview"), &Context::default(), &o);
    assert_eq!(
        b["generationConfig"]["thinkingConfig"]["thinkingLevel"],
        "low"
    );
    let b = body(&model("gemini-3-flash-preview"), &Context::default(), &o);
    assert_eq!(
        b["generationConfig"]["thinkingConfig"]["thinkingLevel"],
        "minimal"
    );
    o.thinking = ThinkingLevel::Off;
    let b = body(&model("gemini-3-flash-preview"), &Context::default(), &o);
    assert!(b["generationConfig"].get("thinkingConfig").is_none());
    let mut plain = model("gemini-2.0-flash");
    plain.reasoning = false;
    o.thinking = ThinkingLevel::High;
    let b = body(&plain, &Context::default(), &o);
    assert!(b["generationConfig"].get("thinkingConfig").is_none());
}

#[test]
fn images_returned_by_tools_follow_the_responses_in_the_same_turn() {
    let m = model("gemini-2.5-flash");
    let mut shot = ToolResultMessage::text("call_1", "screenshot", "", false);
    shot.content = vec![UserContent::image("QUJD", "image/png")];
    let c = Context {
        messages: vec![
            UserMessage::text("Take a screenshot").into(),
            own_turn(&m, "google").into(),
            shot.into(),
            ToolResultMessage::text("call_2", "cat", "done", false).into(),
            UserMessage::text("describe it").into(),
        ],
        ..Default::default()
    };
    let b = body(&m, &c, &options());
    let contents = b["contents"].as_array().unwrap();
    assert_eq!(contents.len(), 3, "{b}");
    assert_eq!(
        contents[2],
        json!({"role": "user", "parts": [
            {"functionResponse": {"name": "screenshot", "response": {"output": "(the tool returned the image(s) attached below)"}}},
            {"functionResponse": {"name": "cat", "response": {"output": "done"}}},
            {"text": "Image(s) returned by the tool call(s) above:"},
            {"inlineData": {"mimeType": "image/png", "data": "QUJD"}},
            {"text": "describe it"},
        ]})
    );
}
