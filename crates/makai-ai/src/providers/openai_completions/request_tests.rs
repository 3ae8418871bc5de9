use serde_json::{Value, json};

use super::*;
use crate::build_request;
use crate::message::{
    AssistantMessage, StopReason, TextContent, ThinkingContent, ToolCall, UserMessage,
};
use crate::model::{Api, CompatFlags, Modality};

fn model(base_url: &str) -> Model {
    Model::custom(Api::OpenAiCompletions, "local", "qwen", base_url)
}

fn local() -> Model {
    model("http://127.0.0.1:8080/v1")
}

fn openai() -> Model {
    let mut m = model("https://api.openai.com/v1");
    m.provider = "openai".into();
    m.id = "o4-mini".into();
    m
}

fn opts() -> StreamOptions {
    StreamOptions {
        api_key: Some(ApiKey::new("sk-test")),
        ..Default::default()
    }
}

fn body(m: &Model, c: &Context, o: &StreamOptions) -> Value {
    match build_request(m, c, o) {
        Ok(r) => r.body,
        Err(e) => panic!("request failed: {e}"),
    }
}

fn user(text: &str) -> Message {
    Message::User(UserMessage::text(text))
}

/// An assistant message produced by `m` (so its thinking counts as "same model").
fn from_model(m: &Model, content: Vec<AssistantContent>, stop: StopReason) -> Message {
    Message::Assistant(AssistantMessage {
        content,
        api: m.api.as_str().into(),
        provider: m.provider.clone(),
        model: m.id.clone(),
        stop_reason: stop,
        ..Default::default()
    })
}

fn call(id: &str, name: &str, args: Value) -> AssistantContent {
    let Value::Object(map) = args else {
        panic!("arguments must be an object")
    };
    AssistantContent::ToolCall(ToolCall::new(id, name, map))
}

fn text(t: &str) -> AssistantContent {
    AssistantContent::Text(TextContent {
        text: t.into(),
        text_signature: None,
    })
}

fn thinking(t: &str, field: Option<&str>) -> AssistantContent {
    AssistantContent::Thinking(ThinkingContent {
        thinking: t.into(),
        thinking_signature: field.map(str::to_string),
        redacted: false,
    })
}

fn read_tool() -> ToolDefinition {
    ToolDefinition {
        name: "read_file".into(),
        description: "Reads a file".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    }
}

/// A tool-call round trip: user, assistant calling `read_file`, the result, a new user turn.
fn tool_round(m: &Model) -> Vec<Message> {
    vec![
        user("read README.md"),
        from_model(
            m,
            vec![call("call_1", "read_file", json!({"path": "README.md"}))],
            StopReason::ToolUse,
        ),
        Message::ToolResult(ToolResultMessage::text(
            "call_1",
            "read_file",
            "# makai",
            false,
        )),
        user("thanks"),
    ]
}

#[test]
fn url_headers_and_basic_body() {
    let c = Context {
        system_prompt: Some("Be brief.".into()),
        messages: vec![user("Hi")],
        ..Default::default()
    };
    let mut m = local();
    m.headers.insert("X-Model".into(), "a".into());
    m.headers.insert("X-Both".into(), "model".into());
    let mut o = opts();
    o.headers.insert("x-both".into(), "options".into());
    let r = build_request(&m, &c, &o).unwrap();
    assert_eq!(r.url, "http://127.0.0.1:8080/v1/chat/completions");
    assert_eq!(
        r.headers,
        vec![
            ("authorization".to_string(), "Bearer sk-test".to_string()),
            ("X-Model".to_string(), "a".to_string()),
            ("x-both".to_string(), "options".to_string()),
        ]
    );
    assert_eq!(
        r.body,
        json!({
            "model": "qwen",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Hi"}
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
            "max_tokens": 16384
        })
    );
}

#[test]
fn keyless_local_server_gets_no_authorization_header() {
    let mut m = model("http://localhost:11434/v1/");
    m.provider = "ollama".into();
    let c = Context {
        messages: vec![user("Hi")],
        ..Default::default()
    };
    let r = build_request(&m, &c, &StreamOptions::default()).unwrap();
    assert_eq!(r.url, "http://localhost:11434/v1/chat/completions");
    assert!(r.headers.is_empty(), "{:?}", r.headers);
    // A full endpoint URL is used as given.
    let m = model("http://localhost:8000/v1/chat/completions");
    let r = build_request(&m, &c, &StreamOptions::default()).unwrap();
    assert_eq!(r.url, "http://localhost:8000/v1/chat/completions");
}

#[test]
fn openai_reasoning_model_gets_developer_role_and_openai_only_fields() {
    let mut m = openai();
    m.reasoning = true;
    let c = Context {
        system_prompt: Some("sys".into()),
        messages: vec![user("Hi")],
        ..Default::default()
    };
    let mut o = opts();
    o.max_tokens = Some(1000);
    o.thinking = ThinkingLevel::Xhigh;
    o.session_id = Some("session-123".into());
    let b = body(&m, &c, &o);
    assert_eq!(
        b["messages"][0],
        json!({"role": "developer", "content": "sys"})
    );
    assert_eq!(b["max_completion_tokens"], 1000);
    assert!(b.get("max_tokens").is_none());
    assert_eq!(b["reasoning_effort"], "high");
    assert_eq!(b["store"], false);
    assert_eq!(b["prompt_cache_key"], "session-123");

    // No caching requested: no cache key.
    o.cache_retention = CacheRetention::None;
    assert!(body(&m, &c, &o).get("prompt_cache_key").is_none());

    // The same reasoning model on a local server: system role, no OpenAI-only fields.
    let mut l = local();
    l.reasoning = true;
    let b = body(&l, &c, &o);
    assert_eq!(b["messages"][0]["role"], "system");
    assert_eq!(b["max_tokens"], 1000);
    assert_eq!(b["reasoning_effort"], "high");
    for absent in ["store", "prompt_cache_key", "max_completion_tokens"] {
        assert!(b.get(absent).is_none(), "{absent} sent to a local server");
    }
}

#[test]
fn reasoning_effort_follows_level_model_and_compat() {
    let c = Context {
        messages: vec![user("Hi")],
        ..Default::default()
    };
    let mut m = local();
    let mut o = opts();
    o.thinking = ThinkingLevel::Minimal;
    // Not a reasoning model: never sent.
    assert!(body(&m, &c, &o).get("reasoning_effort").is_none());
    m.reasoning = true;
    assert_eq!(body(&m, &c, &o)["reasoning_effort"], "minimal");
    o.thinking = ThinkingLevel::Off;
    assert!(body(&m, &c, &o).get("reasoning_effort").is_none());
    o.thinking = ThinkingLevel::Medium;
    m.compat = Some(CompatFlags {
        supports_reasoning_effort: Some(false),
        ..Default::default()
    });
    assert!(body(&m, &c, &o).get("reasoning_effort").is_none());
    // xAI rejects it by default.
    let mut x = model("https://api.x.ai/v1");
    x.reasoning = true;
    assert!(body(&x, &c, &o).get("reasoning_effort").is_none());
}

#[test]
fn compat_flags_switch_usage_and_max_tokens_field() {
    let c = Context {
        messages: vec![user("Hi")],
        ..Default::default()
    };
    let mut m = local();
    m.compat = Some(CompatFlags {
        supports_usage_in_streaming: Some(false),
        max_tokens_field_is_completion: Some(true),
        ..Default::default()
    });
    let mut o = opts();
    o.temperature = Some(0.7);
    let b = body(&m, &c, &o);
    assert!(b.get("stream_options").is_none());
    assert_eq!(b["max_completion_tokens"], 16384);
    assert_eq!(b["temperature"].to_string(), "0.7");
    // Mistral rejects stream_options by default.
    assert!(
        body(&model("https://api.mistral.ai/v1"), &c, &o)
            .get("stream_options")
            .is_none()
    );
}

#[test]
fn tools_and_tool_choice() {
    let mut c = Context {
        messages: vec![user("read it")],
        tools: vec![read_tool()],
        ..Default::default()
    };
    let mut o = opts();
    o.tool_choice = Some(ToolChoice::Tool("read_file".into()));
    let mut named = local();
    named.compat = Some(CompatFlags {
        supports_named_tool_choice: Some(true),
        ..Default::default()
    });
    let b = body(&named, &c, &o);
    assert_eq!(
        b["tools"],
        json!([{"type": "function", "function": {
            "name": "read_file",
            "description": "Reads a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
        }}])
    );
    assert_eq!(
        b["tool_choice"],
        json!({"type": "function", "function": {"name": "read_file"}})
    );
    for (choice, wire) in [
        (ToolChoice::Auto, "auto"),
        (ToolChoice::None, "none"),
        (ToolChoice::Required, "required"),
    ] {
        o.tool_choice = Some(choice);
        assert_eq!(body(&local(), &c, &o)["tool_choice"], wire);
    }
    // Without tools neither field is sent (OpenAI rejects tool_choice alone).
    c.tools.clear();
    o.tool_choice = Some(ToolChoice::Tool("read_file".into()));
    let b = body(&local(), &c, &o);
    assert!(b.get("tools").is_none() && b.get("tool_choice").is_none());
}

#[test]
fn a_named_tool_choice_on_a_local_server_is_required_with_that_tool_only() {
    // llama.cpp's server ignores the named form, so the model answered in
    // text instead of calling the tool; "required" with the one tool forces it.
    let mut ls = read_tool();
    ls.name = "ls".into();
    let c = Context {
        messages: vec![user("read it")],
        tools: vec![ls, read_tool()],
        ..Default::default()
    };
    let mut o = opts();
    o.tool_choice = Some(ToolChoice::Tool("read_file".into()));
    let b = body(&local(), &c, &o);
    assert_eq!(b["tool_choice"], "required");
    let names: Vec<&str> = b["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["read_file"]);
    // Hosted servers get the named form and every tool.
    let mut hosted = model("https://api.groq.com/openai/v1");
    hosted.provider = "groq".into();
    let b = body(&hosted, &c, &o);
    assert_eq!(
        b["tool_choice"],
        json!({"type": "function", "function": {"name": "read_file"}})
    );
    assert_eq!(b["tools"].as_array().unwrap().len(), 2);
    // A name that is not among the tools is sent as it is (the server says so).
    o.tool_choice = Some(ToolChoice::Tool("nope".into()));
    let b = body(&local(), &c, &o);
    assert_eq!(
        b["tool_choice"],
        json!({"type": "function", "function": {"name": "nope"}})
    );
    assert_eq!(b["tools"].as_array().unwrap().len(), 2);
    // Other choices are unchanged.
    o.tool_choice = Some(ToolChoice::Auto);
    assert_eq!(body(&local(), &c, &o)["tool_choice"], "auto");
}

#[test]
fn tool_calls_and_results_never_send_null_content() {
    let m = local();
    let mut messages = tool_round(&m);
    // An assistant message with text and a call.
    messages.push(from_model(
        &m,
        vec![
            text("Reading"),
            text("again."),
            call("call_2", "read_file", json!({"path": "b"})),
        ],
        StopReason::ToolUse,
    ));
    messages.push(Message::ToolResult(ToolResultMessage::text(
        "call_2",
        "read_file",
        "",
        true,
    )));
    let c = Context {
        messages,
        tools: vec![read_tool()],
        ..Default::default()
    };
    let b = body(&m, &c, &opts());
    let msgs = b["messages"].as_array().unwrap();
    assert_eq!(
        msgs[1],
        json!({"role": "assistant", "tool_calls": [{
            "id": "call_1", "type": "function",
            "function": {"name": "read_file", "arguments": "{\"path\":\"README.md\"}"}
        }]})
    );
    assert_eq!(
        msgs[2],
        json!({"role": "tool", "tool_call_id": "call_1", "content": "# makai"})
    );
    assert_eq!(msgs[3], json!({"role": "user", "content": "thanks"}));
    assert_eq!(msgs[4]["content"], "Reading\n\nagain.");
    assert_eq!(msgs[4]["tool_calls"][0]["id"], "call_2");
    // A blank result is sent as "(no output)" (a blank one fails the request).
    assert_eq!(msgs[5]["content"], "(no output)");
    for m in msgs {
        assert!(
            m.get("content").is_none_or(|c| !c.is_null()),
            "content: null in {m}"
        );
    }
}

#[path = "request_compat_tests.rs"]
mod compat;

#[path = "request_history_tests.rs"]
mod history;
