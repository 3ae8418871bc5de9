//! Request-shape tests for the Responses API.

use serde_json::{Value, json};

use super::request::reasoning_effort;
use crate::build_request;
use crate::context::{Context, ToolDefinition};
use crate::message::{
    AssistantContent, AssistantMessage, Message, StopReason, TextContent, ThinkingContent,
    ToolCall, ToolResultMessage, UserContent, UserMessage,
};
use crate::model::{Api, Modality, Model};
use crate::options::{ApiKey, CacheRetention, StreamOptions, ThinkingLevel, ToolChoice};

// Realistic ids: together longer than 64 characters, so the pair does not survive
// `prepare_messages` unchanged and must be recovered.
const CALL_ID: &str = "call_AB6AaRZ1FYZB2RwS6A5vbdqn";
const FC_ID: &str = "fc_01830d662ab3856501693c32151234819091cfca267e98cc5f";

fn model(reasoning: bool) -> Model {
    let mut m = Model::custom(
        Api::OpenAiResponses,
        "openai",
        "gpt-5.1-codex-max",
        "https://api.openai.com/v1/",
    );
    m.reasoning = reasoning;
    m.input = vec![Modality::Text, Modality::Image];
    m
}

fn options() -> StreamOptions {
    StreamOptions {
        api_key: Some(ApiKey::new("sk-test")),
        ..Default::default()
    }
}

fn body(model: &Model, context: &Context, options: &StreamOptions) -> Value {
    build_request(model, context, options).unwrap().body
}

fn reasoning_item(encrypted: Option<&str>) -> String {
    let mut item = json!({"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": "plan"}]});
    if let Some(e) = encrypted {
        item["encrypted_content"] = json!(e);
    }
    item.to_string()
}

fn assistant_turn(provider: &str, model_id: &str, encrypted: Option<&str>) -> AssistantMessage {
    AssistantMessage {
        content: vec![
            AssistantContent::Thinking(ThinkingContent {
                thinking: "plan".into(),
                thinking_signature: Some(reasoning_item(encrypted)),
                redacted: false,
            }),
            AssistantContent::Text(TextContent {
                text: "Let me compute.".into(),
                text_signature: Some("msg_42".into()),
            }),
            AssistantContent::ToolCall(ToolCall::new(
                format!("{CALL_ID}|{FC_ID}"),
                "calculator",
                json!({"a": 1}).as_object().unwrap().clone(),
            )),
        ],
        api: "openai-responses".into(),
        provider: provider.into(),
        model: model_id.into(),
        stop_reason: StopReason::ToolUse,
        ..Default::default()
    }
}

fn conversation(turn: AssistantMessage) -> Context {
    Context {
        system_prompt: Some("Be brief.".into()),
        messages: vec![
            UserMessage::text("What is 1 + 1?").into(),
            turn.into(),
            ToolResultMessage::text(format!("{CALL_ID}|{FC_ID}"), "calculator", "2", false).into(),
        ],
        tools: vec![ToolDefinition {
            name: "calculator".into(),
            description: "Adds".into(),
            parameters: json!({"type": "object", "properties": {"a": {"type": "number"}}}),
        }],
    }
}

#[test]
fn basic_request_shape() {
    let m = model(false);
    let mut o = options();
    o.temperature = Some(0.5);
    o.max_tokens = Some(1000);
    o.session_id = Some("sess-1".into());
    o.tool_choice = Some(ToolChoice::Tool("calculator".into()));
    let req = build_request(
        &m,
        &conversation(assistant_turn("openai", "other", None)),
        &o,
    )
    .unwrap();
    assert_eq!(req.url, "https://api.openai.com/v1/responses");
    assert!(
        req.headers
            .contains(&("authorization".into(), "Bearer sk-test".into()))
    );
    let b = req.body;
    assert_eq!(b["model"], "gpt-5.1-codex-max");
    assert_eq!(b["instructions"], "Be brief.");
    assert_eq!(b["stream"], true);
    assert_eq!(b["store"], false);
    assert_eq!(b["max_output_tokens"], 1000);
    assert_eq!(b["temperature"], 0.5);
    assert_eq!(b["prompt_cache_key"], "sess-1");
    assert_eq!(
        b["tools"],
        json!([{"type": "function", "name": "calculator", "description": "Adds",
                "parameters": {"type": "object", "properties": {"a": {"type": "number"}}}, "strict": false}])
    );
    assert_eq!(
        b["tool_choice"],
        json!({"type": "function", "name": "calculator"})
    );
    assert!(b.get("reasoning").is_none());
    assert!(b.get("include").is_none());
    assert_eq!(
        b["input"][0],
        json!({"role": "user", "content": [{"type": "input_text", "text": "What is 1 + 1?"}]})
    );
}

#[test]
fn no_key_means_no_authorization_header_and_no_cache_key_without_caching() {
    let mut m = model(false);
    m.provider = "lmstudio".into();
    m.base_url = "http://127.0.0.1:1234/v1".into();
    let o = StreamOptions {
        session_id: Some("s".into()),
        cache_retention: CacheRetention::None,
        ..Default::default()
    };
    let req = build_request(&m, &Context::default(), &o).unwrap();
    assert!(
        !req.headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("authorization"))
    );
    assert_eq!(req.url, "http://127.0.0.1:1234/v1/responses");
    assert!(req.body.get("prompt_cache_key").is_none());
}

#[test]
fn long_cache_retention_asks_openai_for_24_hours_and_nobody_else() {
    let o = StreamOptions {
        session_id: Some("s".into()),
        cache_retention: CacheRetention::Long,
        ..options()
    };
    let b = body(&model(false), &Context::default(), &o);
    assert_eq!(b["prompt_cache_key"], "s");
    assert_eq!(b["prompt_cache_retention"], "24h");
    let short = StreamOptions {
        cache_retention: CacheRetention::Short,
        ..o.clone()
    };
    assert!(
        body(&model(false), &Context::default(), &short)
            .get("prompt_cache_retention")
            .is_none()
    );
    let mut other = model(false);
    other.base_url = "http://127.0.0.1:1234/v1".into();
    let b = body(&other, &Context::default(), &o);
    assert_eq!(b["prompt_cache_key"], "s");
    assert!(b.get("prompt_cache_retention").is_none());
}

#[test]
fn reasoning_model_gets_effort_and_encrypted_content_but_no_temperature() {
    let m = model(true);
    let mut o = options();
    o.temperature = Some(0.2);
    o.thinking = ThinkingLevel::High;
    let b = body(&m, &Context::default(), &o);
    assert!(b.get("temperature").is_none());
    assert_eq!(b["reasoning"], json!({"effort": "high", "summary": "auto"}));
    assert_eq!(b["include"], json!(["reasoning.encrypted_content"]));
    // Thinking off: no effort, but encrypted reasoning is still requested.
    o.thinking = ThinkingLevel::Off;
    let b = body(&m, &Context::default(), &o);
    assert!(b.get("reasoning").is_none());
    assert_eq!(b["include"], json!(["reasoning.encrypted_content"]));
}

#[test]
fn effort_mapping() {
    assert_eq!(
        reasoning_effort("gpt-5", ThinkingLevel::Minimal),
        Some("minimal")
    );
    assert_eq!(
        reasoning_effort("gpt-5.1", ThinkingLevel::Minimal),
        Some("low")
    );
    assert_eq!(
        reasoning_effort("gpt-5", ThinkingLevel::Xhigh),
        Some("high")
    );
    assert_eq!(
        reasoning_effort("gpt-5.1-codex-max", ThinkingLevel::Xhigh),
        Some("xhigh")
    );
    assert_eq!(reasoning_effort("o4-mini", ThinkingLevel::Off), None);
}

#[test]
fn same_model_turn_replays_reasoning_and_pairs_call_ids() {
    let m = model(true);
    let b = body(
        &m,
        &conversation(assistant_turn("openai", &m.id, Some("gAAAA-enc"))),
        &options(),
    );
    let input = b["input"].as_array().unwrap();
    assert_eq!(input.len(), 5, "{input:#?}");
    let replayed: Value = serde_json::from_str(&reasoning_item(Some("gAAAA-enc"))).unwrap();
    assert_eq!(input[1], replayed);
    assert_eq!(
        input[2],
        json!({"type": "message", "role": "assistant", "status": "completed", "id": "msg_42",
               "content": [{"type": "output_text", "text": "Let me compute.", "annotations": []}]})
    );
    assert_eq!(
        input[3],
        json!({"type": "function_call", "call_id": CALL_ID, "id": FC_ID, "name": "calculator",
               "arguments": "{\"a\":1}"})
    );
    assert_eq!(
        input[4],
        json!({"type": "function_call_output", "call_id": CALL_ID, "output": "2"})
    );
}

#[test]
fn reasoning_without_encrypted_content_is_dropped_with_the_item_ids() {
    let m = model(true);
    let b = body(
        &m,
        &conversation(assistant_turn("openai", &m.id, None)),
        &options(),
    );
    let input = b["input"].as_array().unwrap();
    assert!(input.iter().all(|i| i["type"] != "reasoning"), "{input:#?}");
    let call = input.iter().find(|i| i["type"] == "function_call").unwrap();
    assert_eq!(call["call_id"], CALL_ID);
    assert!(call.get("id").is_none());
    let msg = input.iter().find(|i| i["type"] == "message").unwrap();
    assert!(msg.get("id").is_none());
    let out = input
        .iter()
        .find(|i| i["type"] == "function_call_output")
        .unwrap();
    assert_eq!(out["call_id"], CALL_ID);
}

#[test]
fn other_model_turn_sends_no_item_ids_and_thinking_as_text() {
    let m = model(true);
    let b = body(
        &m,
        &conversation(assistant_turn("openai", "gpt-4.1", Some("enc"))),
        &options(),
    );
    let input = b["input"].as_array().unwrap();
    assert!(input.iter().all(|i| i["type"] != "reasoning"));
    let texts: Vec<&str> = input
        .iter()
        .filter(|i| i["type"] == "message")
        .map(|i| i["content"][0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["plan", "Let me compute."]);
    assert!(input.iter().all(|i| i.get("id").is_none()));
    let call = input.iter().find(|i| i["type"] == "function_call").unwrap();
    assert_eq!(call["call_id"], CALL_ID);
}

#[test]
fn foreign_ids_are_made_acceptable_and_stay_paired() {
    let m = model(false);
    let turn = AssistantMessage {
        content: vec![AssistantContent::ToolCall(ToolCall::new(
            "toolu_01.x:y",
            "ls",
            Default::default(),
        ))],
        api: "anthropic-messages".into(),
        provider: "anthropic".into(),
        model: "claude".into(),
        stop_reason: StopReason::ToolUse,
        ..Default::default()
    };
    let ctx = Context {
        messages: vec![
            UserMessage::text("hi").into(),
            turn.into(),
            ToolResultMessage::text("toolu_01.x:y", "ls", "a.txt", false).into(),
        ],
        ..Default::default()
    };
    let b = body(&m, &ctx, &options());
    let call_id = b["input"][1]["call_id"].as_str().unwrap();
    assert!(
        call_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
        "{call_id}"
    );
    assert_eq!(b["input"][2]["call_id"], call_id);
}

#[test]
fn images_in_user_messages_and_tool_results() {
    let m = model(false);
    let mut user = UserMessage::text("look");
    user.content.push(UserContent::image("AAAA", "image/png"));
    let turn = AssistantMessage {
        content: vec![AssistantContent::ToolCall(ToolCall::new(
            "call_1",
            "screenshot",
            Default::default(),
        ))],
        api: "openai-responses".into(),
        provider: "openai".into(),
        model: m.id.clone(),
        stop_reason: StopReason::ToolUse,
        ..Default::default()
    };
    let mut result = ToolResultMessage::text("call_1", "screenshot", "", false);
    result.content = vec![UserContent::image("BBBB", "image/jpeg")];
    let ctx = Context {
        messages: vec![user.into(), turn.into(), result.into()],
        ..Default::default()
    };
    let b = body(&m, &ctx, &options());
    let input = b["input"].as_array().unwrap();
    assert_eq!(
        input[0]["content"][1],
        json!({"type": "input_image", "detail": "auto", "image_url": "data:image/png;base64,AAAA"})
    );
    assert_eq!(input[2]["type"], "function_call_output");
    assert!(!input[2]["output"].as_str().unwrap().is_empty());
    assert_eq!(input[3]["role"], "user");
    assert_eq!(
        input[3]["content"][1]["image_url"],
        "data:image/jpeg;base64,BBBB"
    );
}

#[test]
fn every_call_is_answered_even_when_the_result_is_missing() {
    let m = model(false);
    let turn = AssistantMessage {
        content: vec![AssistantContent::ToolCall(ToolCall::new(
            format!("{CALL_ID}|{FC_ID}"),
            "ls",
            Default::default(),
        ))],
        api: "openai-responses".into(),
        provider: "openai".into(),
        model: m.id.clone(),
        stop_reason: StopReason::ToolUse,
        ..Default::default()
    };
    let ctx = Context {
        messages: vec![
            UserMessage::text("hi").into(),
            turn.into(),
            Message::User(UserMessage::text("go on")),
        ],
        ..Default::default()
    };
    let b = body(&m, &ctx, &options());
    let input = b["input"].as_array().unwrap();
    assert_eq!(input[2]["type"], "function_call_output");
    assert_eq!(input[2]["call_id"], CALL_ID);
}

/// pi 1.5: GPT-5.6 and later take long retention as
/// `prompt_cache_options.ttl: "30m"`; `supportsLongCacheRetention` sends it
/// to a proxy (true) or keeps it from OpenAI (false).
#[test]
fn long_retention_follows_the_model_and_supports_long_cache_retention() {
    let o = StreamOptions {
        session_id: Some("s".into()),
        cache_retention: CacheRetention::Long,
        ..options()
    };
    let mut newer = model(false);
    newer.id = "gpt-5.6-mini".into();
    let b = body(&newer, &Context::default(), &o);
    assert_eq!(b["prompt_cache_options"], json!({"ttl": "30m"}));
    assert!(b.get("prompt_cache_retention").is_none());
    for (id, options) in [
        ("gpt-6", true),
        ("gpt-5.10", true),
        ("gpt-5.5", false),
        ("gpt-4.1", false),
        ("o3", false),
    ] {
        let mut m = model(false);
        m.id = id.into();
        let b = body(&m, &Context::default(), &o);
        assert_eq!(b.get("prompt_cache_options").is_some(), options, "{id}");
        assert_eq!(b.get("prompt_cache_retention").is_some(), !options, "{id}");
    }
    let mut proxy = model(false);
    proxy.base_url = "http://127.0.0.1:1234/v1".into();
    proxy.compat = Some(crate::model::CompatFlags {
        supports_long_cache_retention: Some(true),
        ..Default::default()
    });
    assert_eq!(
        body(&proxy, &Context::default(), &o)["prompt_cache_retention"],
        "24h"
    );
    let mut refuses = model(false);
    refuses.compat = Some(crate::model::CompatFlags {
        supports_long_cache_retention: Some(false),
        ..Default::default()
    });
    let b = body(&refuses, &Context::default(), &o);
    assert!(b.get("prompt_cache_retention").is_none() && b.get("prompt_cache_options").is_none());
    assert_eq!(b["prompt_cache_key"], "s");
}
