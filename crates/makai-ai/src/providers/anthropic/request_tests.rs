//! Request-building tests: the body and headers sent for a context.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};

use crate::context::{Context, ToolDefinition};
use crate::message::{
    AssistantContent, AssistantMessage, Message, StopReason, TextContent, ThinkingContent,
    ToolCall, ToolResultMessage, UserContent, UserMessage,
};
use crate::model::{Api, Modality, Model};
use crate::options::{ApiKey, CacheRetention, StreamOptions, ThinkingLevel, ToolChoice};
use crate::provider::HttpRequest;

fn model(id: &str) -> Model {
    let mut m = Model::custom(
        Api::AnthropicMessages,
        "anthropic",
        id,
        "https://api.anthropic.com/v1/",
    );
    m.max_tokens = 32_000;
    m.input = vec![Modality::Text, Modality::Image];
    m
}

fn options() -> StreamOptions {
    StreamOptions {
        api_key: Some(ApiKey::new("sk-ant-api03-test")),
        ..Default::default()
    }
}

fn build(model: &Model, context: &Context, options: &StreamOptions) -> HttpRequest {
    crate::build_request(model, context, options).expect("request builds")
}

fn header<'a>(req: &'a HttpRequest, name: &str) -> Option<&'a str> {
    req.headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

fn user(text: &str) -> Message {
    UserMessage::text(text).into()
}

fn assistant(m: &Model, content: Vec<AssistantContent>, stop: StopReason) -> Message {
    AssistantMessage {
        content,
        api: m.api.as_str().into(),
        provider: m.provider.clone(),
        model: m.id.clone(),
        stop_reason: stop,
        ..Default::default()
    }
    .into()
}

fn text(t: &str) -> AssistantContent {
    AssistantContent::Text(TextContent {
        text: t.into(),
        text_signature: None,
    })
}

fn call(id: &str, name: &str, args: Value) -> AssistantContent {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    AssistantContent::ToolCall(ToolCall::new(id, name, args))
}

fn tool(name: &str) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        description: format!("The {name} tool."),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    }
}

#[test]
fn url_headers_and_basic_body() {
    let m = model("claude-sonnet-4-5-20250929");
    let ctx = Context {
        system_prompt: Some("You are terse.".into()),
        messages: vec![user("Hi")],
        tools: vec![],
    };
    let mut o = options();
    o.temperature = Some(0.7);
    o.cache_retention = CacheRetention::None;
    let req = build(&m, &ctx, &o);
    assert_eq!(req.url, "https://api.anthropic.com/v1/messages");
    assert_eq!(header(&req, "x-api-key"), Some("sk-ant-api03-test"));
    assert_eq!(header(&req, "anthropic-version"), Some("2023-06-01"));
    assert_eq!(header(&req, "accept"), Some("text/event-stream"));
    assert_eq!(header(&req, "authorization"), None);
    assert_eq!(
        req.body,
        json!({
            "model": "claude-sonnet-4-5-20250929",
            "max_tokens": 32_000,
            "stream": true,
            "system": [{"type": "text", "text": "You are terse."}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
            "temperature": 0.7,
        })
    );
}

#[test]
fn oauth_tokens_use_bearer_auth_and_the_beta_flag() {
    let m = model("claude-sonnet-4-5");
    let ctx = Context {
        messages: vec![user("Hi")],
        ..Default::default()
    };
    let mut o = options();
    o.api_key = Some(ApiKey::new("sk-ant-oat01-abc"));
    o.headers.insert(
        "anthropic-beta".into(),
        "fine-grained-tool-streaming-2025-05-14".into(),
    );
    let req = build(&m, &ctx, &o);
    assert_eq!(
        header(&req, "authorization"),
        Some("Bearer sk-ant-oat01-abc")
    );
    assert_eq!(header(&req, "x-api-key"), None);
    assert_eq!(
        header(&req, "anthropic-beta"),
        Some("fine-grained-tool-streaming-2025-05-14,oauth-2025-04-20")
    );
}

#[test]
fn option_headers_override_model_headers_which_override_defaults() {
    let mut m = model("claude-sonnet-4-5");
    m.headers.insert("X-Team".into(), "model".into());
    m.headers
        .insert("anthropic-version".into(), "2099-01-01".into());
    let mut o = options();
    o.headers.insert("x-team".into(), "options".into());
    let ctx = Context {
        messages: vec![user("Hi")],
        ..Default::default()
    };
    let req = build(&m, &ctx, &o);
    assert_eq!(header(&req, "x-team"), Some("options"));
    assert_eq!(header(&req, "anthropic-version"), Some("2099-01-01"));
    let teams = req
        .headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("x-team"))
        .count();
    assert_eq!(teams, 1, "{:?}", req.headers);
}

#[test]
fn tools_carry_input_schema_and_tool_choice_maps() {
    let m = model("claude-sonnet-4-5");
    let ctx = Context {
        messages: vec![user("Read a.txt")],
        tools: vec![tool("read"), tool("write")],
        ..Default::default()
    };
    let mut o = options();
    o.cache_retention = CacheRetention::None;
    let req = build(&m, &ctx, &o);
    assert_eq!(
        req.body["tools"][0],
        json!({"name": "read", "description": "The read tool.",
               "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}})
    );
    assert!(req.body.get("tool_choice").is_none());

    for (choice, expected) in [
        (ToolChoice::Auto, json!({"type": "auto"})),
        (ToolChoice::None, json!({"type": "none"})),
        (ToolChoice::Required, json!({"type": "any"})),
        (
            ToolChoice::Tool("write".into()),
            json!({"type": "tool", "name": "write"}),
        ),
    ] {
        o.tool_choice = Some(choice);
        assert_eq!(build(&m, &ctx, &o).body["tool_choice"], expected);
    }

    let no_tools = Context {
        messages: vec![user("Hi")],
        ..Default::default()
    };
    o.tool_choice = Some(ToolChoice::Required);
    let body = build(&m, &no_tools, &o).body;
    assert!(body.get("tool_choice").is_none() && body.get("tools").is_none());
}

#[test]
fn tool_results_go_in_one_user_turn_before_following_user_text() {
    let m = model("claude-sonnet-4-5");
    let mut image_result = ToolResultMessage::text("toolu_b", "shot", "screenshot:", false);
    image_result
        .content
        .push(UserContent::image("iVBORw0KGgo=", "image/png"));
    let ctx = Context {
        messages: vec![
            user("Do two things"),
            assistant(
                &m,
                vec![
                    text("Running both."),
                    call("toolu_a", "read", json!({"path": "a"})),
                    call("toolu_b", "shot", json!({})),
                ],
                StopReason::ToolUse,
            ),
            ToolResultMessage::text("toolu_a", "read", "no such file", true).into(),
            image_result.into(),
            user("Thanks"),
        ],
        ..Default::default()
    };
    let mut o = options();
    o.cache_retention = CacheRetention::None;
    let body = build(&m, &ctx, &o).body;
    let msgs = body["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 3, "{body:#}");
    assert_eq!(msgs[1]["role"], "assistant");
    assert_eq!(
        msgs[1]["content"],
        json!([
            {"type": "text", "text": "Running both."},
            {"type": "tool_use", "id": "toolu_a", "name": "read", "input": {"path": "a"}},
            {"type": "tool_use", "id": "toolu_b", "name": "shot", "input": {}},
        ])
    );
    assert_eq!(msgs[2]["role"], "user");
    assert_eq!(
        msgs[2]["content"],
        json!([
            {"type": "tool_result", "tool_use_id": "toolu_a", "is_error": true,
             "content": [{"type": "text", "text": "no such file"}]},
            {"type": "tool_result", "tool_use_id": "toolu_b", "is_error": false,
             "content": [{"type": "text", "text": "screenshot:"},
                         {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]},
            {"type": "text", "text": "Thanks"},
        ])
    );
}

#[test]
fn cache_control_marks_system_last_tool_and_last_user_block() {
    let m = model("claude-sonnet-4-5");
    let ctx = Context {
        system_prompt: Some("sys".into()),
        messages: vec![
            user("first"),
            assistant(&m, vec![text("ok")], StopReason::Stop),
            UserMessage {
                content: vec![UserContent::text("second"), UserContent::text("third")],
                timestamp: 0,
            }
            .into(),
        ],
        tools: vec![tool("read"), tool("write")],
    };
    let body = build(&m, &ctx, &options()).body;
    let eph = json!({"type": "ephemeral"});
    assert_eq!(body["system"][0]["cache_control"], eph);
    assert!(body["tools"][0].get("cache_control").is_none());
    assert_eq!(body["tools"][1]["cache_control"], eph);
    let msgs = body["messages"].as_array().unwrap();
    assert!(msgs[0]["content"][0].get("cache_control").is_none());
    assert!(msgs[1]["content"][0].get("cache_control").is_none());
    assert!(msgs[2]["content"][0].get("cache_control").is_none());
    assert_eq!(msgs[2]["content"][1]["cache_control"], eph);
    assert_eq!(body.to_string().matches("cache_control").count(), 3);

    let mut o = options();
    o.cache_retention = CacheRetention::Long;
    let body = build(&m, &ctx, &o).body;
    assert_eq!(
        body["system"][0]["cache_control"],
        json!({"type": "ephemeral", "ttl": "1h"})
    );
    o.cache_retention = CacheRetention::None;
    assert!(
        !build(&m, &ctx, &o)
            .body
            .to_string()
            .contains("cache_control")
    );
}

#[test]
fn cache_breakpoint_lands_on_the_tool_result_turn_when_it_is_last() {
    let m = model("claude-sonnet-4-5");
    let ctx = Context {
        messages: vec![
            user("go"),
            assistant(
                &m,
                vec![call("t1", "read", json!({"path": "x"}))],
                StopReason::ToolUse,
            ),
            ToolResultMessage::text("t1", "read", "data", false).into(),
        ],
        ..Default::default()
    };
    let body = build(&m, &ctx, &options()).body;
    let last = &body["messages"][2]["content"][0];
    assert_eq!(last["type"], "tool_result");
    assert_eq!(last["cache_control"], json!({"type": "ephemeral"}));
    assert!(
        body["messages"][0]["content"][0]
            .get("cache_control")
            .is_none()
    );
}

#[test]
fn budget_thinking_sets_budget_below_max_tokens_and_drops_temperature() {
    let mut m = model("claude-sonnet-4-5-20250929");
    m.reasoning = true;
    let ctx = Context {
        messages: vec![user("Think")],
        ..Default::default()
    };
    let mut o = options();
    o.thinking = ThinkingLevel::High;
    o.temperature = Some(0.2);
    o.max_tokens = Some(8000);
    let body = build(&m, &ctx, &o).body;
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 16_384})
    );
    assert_eq!(body["max_tokens"], 16_384 + 8000);
    assert!(body.get("temperature").is_none());
    assert!(body.get("output_config").is_none());

    o.thinking = ThinkingLevel::Low;
    let body = build(&m, &ctx, &o).body;
    assert_eq!(body["thinking"]["budget_tokens"], 2048);
    assert_eq!(body["max_tokens"], 8000);

    // A model that does not reason gets no thinking, and keeps its temperature.
    m.reasoning = false;
    let body = build(&m, &ctx, &o).body;
    assert!(body.get("thinking").is_none());
    assert_eq!(body["temperature"], json!(0.2));
}

#[test]
fn adaptive_thinking_for_4_6_and_later() {
    let mut m = model("claude-opus-4-6");
    m.reasoning = true;
    let ctx = Context {
        messages: vec![user("Think")],
        ..Default::default()
    };
    let mut o = options();
    o.thinking = ThinkingLevel::Medium;
    let body = build(&m, &ctx, &o).body;
    assert_eq!(
        body["thinking"],
        json!({"type": "adaptive", "display": "summarized"})
    );
    assert_eq!(body["output_config"], json!({"effort": "medium"}));
    assert_eq!(body["max_tokens"], 32_000);

    m.id = "claude-opus-4-7".into();
    o.thinking = ThinkingLevel::Xhigh;
    assert_eq!(build(&m, &ctx, &o).body["output_config"]["effort"], "xhigh");
}

#[test]
fn forced_tool_choice_leaves_thinking_off() {
    let mut m = model("claude-sonnet-4-5");
    m.reasoning = true;
    let ctx = Context {
        messages: vec![user("Read")],
        tools: vec![tool("read")],
        ..Default::default()
    };
    let mut o = options();
    o.thinking = ThinkingLevel::High;
    o.tool_choice = Some(ToolChoice::Tool("read".into()));
    let body = build(&m, &ctx, &o).body;
    assert!(body.get("thinking").is_none());
    o.tool_choice = Some(ToolChoice::Auto);
    assert!(build(&m, &ctx, &o).body.get("thinking").is_some());
}

#[path = "request_history_tests.rs"]
mod history;
