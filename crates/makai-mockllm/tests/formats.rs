//! Each wire format, over real HTTP, reassembles to the scripted content.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use makai_mockllm::{MockServer, Scenario, ScriptedResponse, StopKind, Usage};
use serde_json::{Value, json};

const TEXT: &str = "Hello wörld, this is a test.";
const THINKING: &str = "Let me think about it.";
const ARGS: &str = r#"{"path":"src/main.rs","limit":100,"note":"ünïcode \"quoted\""}"#;

fn rich() -> ScriptedResponse {
    ScriptedResponse::new()
        .with_thinking_signed(THINKING, "sig-123")
        .with_text(TEXT)
        .with_tool_call("call_1", "read", ARGS)
        .with_tool_call("call_2", "ls", "{}")
        .usage(Usage::new(30, 7).with_cache(5, 2))
}

fn expected_calls() -> Vec<(String, String, String)> {
    vec![
        ("call_1".into(), "read".into(), ARGS.into()),
        ("call_2".into(), "ls".into(), "{}".into()),
    ]
}

async fn server(responses: Vec<ScriptedResponse>) -> MockServer {
    MockServer::start(Scenario::new().extend(responses))
        .await
        .unwrap()
}

#[tokio::test]
async fn chat_completions_stream() {
    let s = server(vec![rich(), ScriptedResponse::text("plain")]).await;
    let url = format!("{}/chat/completions", s.base_url_v1());
    let body = json!({"model": "gpt-test", "stream": true,
        "stream_options": {"include_usage": true}, "messages": []});
    let (status, ct, text) = post(&url, &body).await;
    assert_eq!(status, 200);
    assert_eq!(ct, "text/event-stream");
    let events = parse_sse(&text);
    let first = events[0].json();
    assert_eq!(
        first["choices"][0]["delta"],
        json!({"role": "assistant", "content": ""})
    );
    assert!(first["id"].as_str().unwrap().starts_with("chatcmpl-"));
    let a = assemble_chat(&events);
    assert_eq!(a.text, TEXT);
    assert_eq!(a.thinking, THINKING);
    assert_eq!(a.tool_calls, expected_calls());
    assert_eq!(a.stop.as_deref(), Some("tool_calls"));
    assert_eq!(a.usage, Some((35, 7)), "prompt_tokens = input + cache_read");
    assert!(a.terminated);
    assert_eq!(a.model.as_deref(), Some("gpt-test"));
    // Default chunking: one word (with its trailing space) per text delta.
    let text_deltas: Vec<String> = events
        .iter()
        .filter(|e| e.data != "[DONE]")
        .filter_map(|e| {
            e.json()["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .filter(|t| !t.is_empty())
        .collect();
    assert_eq!(
        text_deltas,
        ["Hello ", "wörld, ", "this ", "is ", "a ", "test."]
    );

    // Without include_usage there is no usage chunk; the alias path works.
    let body = json!({"model": "m2", "stream": true, "messages": []});
    let (_, _, text) = post(&format!("{}/chat/completions", s.url()), &body).await;
    let a = assemble_chat(&parse_sse(&text));
    assert_eq!(a.text, "plain");
    assert_eq!(a.stop.as_deref(), Some("stop"));
    assert_eq!(a.usage, None);
    assert!(a.terminated);
}

#[tokio::test]
async fn anthropic_messages_stream() {
    let s = server(vec![rich()]).await;
    let body = json!({"model": "claude-test", "stream": true, "max_tokens": 100, "messages": []});
    let (status, ct, text) = post(&format!("{}/messages", s.base_url_v1()), &body).await;
    assert_eq!((status, ct.as_str()), (200, "text/event-stream"));
    let events = parse_sse(&text);
    let names: Vec<&str> = events.iter().map(|e| e.name.as_deref().unwrap()).collect();
    assert_eq!(names[..3], ["message_start", "content_block_start", "ping"]);
    assert_eq!(names.iter().filter(|n| **n == "ping").count(), 1);
    assert_eq!(names.last(), Some(&"message_stop"));
    let start = events[0].json();
    assert_eq!(start["message"]["usage"]["cache_read_input_tokens"], 5);
    assert_eq!(start["message"]["usage"]["cache_creation_input_tokens"], 2);
    let thinking_block = events[1].json();
    assert_eq!(
        thinking_block["content_block"],
        json!({"type": "thinking", "thinking": "", "signature": ""})
    );
    let a = assemble_anthropic(&events);
    assert_eq!(a.text, TEXT);
    assert_eq!(a.thinking, THINKING);
    assert_eq!(a.signature.as_deref(), Some("sig-123"));
    assert_eq!(a.tool_calls, expected_calls());
    assert_eq!(a.stop.as_deref(), Some("tool_use"));
    assert_eq!(a.usage, Some((30, 7)));
    assert_eq!(a.model.as_deref(), Some("claude-test"));
    assert!(a.terminated);
}

#[tokio::test]
async fn responses_stream() {
    let s = server(vec![rich()]).await;
    let body = json!({"model": "gpt-5-test", "stream": true, "input": []});
    let (status, ct, text) = post(&format!("{}/responses", s.base_url_v1()), &body).await;
    assert_eq!((status, ct.as_str()), (200, "text/event-stream"));
    let events = parse_sse(&text);
    assert_eq!(events[0].name.as_deref(), Some("response.created"));
    assert_eq!(events[1].name.as_deref(), Some("response.in_progress"));
    let a = assemble_responses(&events);
    assert_eq!(a.text, TEXT);
    assert_eq!(a.thinking, THINKING);
    assert_eq!(a.signature.as_deref(), Some("sig-123"));
    assert_eq!(a.tool_calls, expected_calls());
    assert_eq!(a.stop.as_deref(), Some("completed"));
    assert_eq!(a.usage, Some((35, 7)));
    assert!(a.terminated);
    let last = events.last().unwrap().json();
    assert_eq!(last["type"], "response.completed");
    assert_eq!(
        last["response"]["usage"]["input_tokens_details"]["cached_tokens"],
        5
    );
    assert_eq!(last["response"]["output"].as_array().unwrap().len(), 4);
    for name in [
        "response.content_part.added",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
    ] {
        assert!(
            events.iter().any(|e| e.name.as_deref() == Some(name)),
            "{name}"
        );
    }
}

#[tokio::test]
async fn gemini_stream_sse() {
    let s = server(vec![rich()]).await;
    let url = format!(
        "{}/v1beta/models/gemini-test:streamGenerateContent?alt=sse",
        s.url()
    );
    let (status, ct, text) = post(&url, &json!({"contents": []})).await;
    assert_eq!((status, ct.as_str()), (200, "text/event-stream"));
    assert!(text.ends_with("\r\n\r\n"));
    assert!(!text.replace("\r\n\r\n", "").contains("\n\n"));
    let a = assemble_gemini(&parse_sse(&text));
    assert_eq!(a.text, TEXT);
    assert_eq!(a.thinking, THINKING);
    assert_eq!(a.signature.as_deref(), Some("sig-123"));
    let calls: Vec<(String, Value)> = a
        .tool_calls
        .iter()
        .map(|(_, n, args)| (n.clone(), serde_json::from_str(args).unwrap()))
        .collect();
    assert_eq!(
        calls,
        vec![
            ("read".into(), serde_json::from_str(ARGS).unwrap()),
            ("ls".into(), json!({}))
        ]
    );
    assert_eq!(a.stop.as_deref(), Some("STOP"));
    assert_eq!(a.usage, Some((35, 7)));
    assert_eq!(a.model.as_deref(), Some("gemini-test"));
}

#[tokio::test]
async fn gemini_stream_json_array_without_alt_sse() {
    let s = server(vec![ScriptedResponse::text("one two three")]).await;
    let url = format!("{}/v1beta/models/g:streamGenerateContent", s.url());
    let (status, ct, text) = post(&url, &json!({"contents": []})).await;
    assert_eq!((status, ct.as_str()), (200, "application/json"));
    let chunks: Vec<Value> = serde_json::from_str(&text).unwrap();
    assert_eq!(chunks.len(), 3);
    let a = assemble_gemini_chunks(&chunks);
    assert_eq!(a.text, "one two three");
    assert_eq!(a.stop.as_deref(), Some("STOP"));
}

#[tokio::test]
async fn chunk_size_and_length_stop_in_every_format() {
    let resp = || {
        ScriptedResponse::text("abcdefghij")
            .with_tool_call("c", "t", r#"{"k":"vvvvvvvv"}"#)
            .chunk_size(3)
            .stop(StopKind::Length)
    };
    let s = server(vec![resp(), resp(), resp(), resp()]).await;
    let stream = json!({"model": "m", "stream": true, "messages": []});

    let (_, _, text) = post(&format!("{}/chat/completions", s.base_url_v1()), &stream).await;
    let events = parse_sse(&text);
    for e in events.iter().filter(|e| e.data != "[DONE]") {
        let v = e.json();
        if let Some(t) = v["choices"][0]["delta"]["content"].as_str() {
            assert!(t.chars().count() <= 3);
        }
    }
    let a = assemble_chat(&events);
    assert_eq!(
        (a.text.as_str(), a.stop.as_deref()),
        ("abcdefghij", Some("length"))
    );
    assert_eq!(a.tool_calls[0].2, r#"{"k":"vvvvvvvv"}"#);

    let (_, _, text) = post(&format!("{}/messages", s.base_url_v1()), &stream).await;
    let a = assemble_anthropic(&parse_sse(&text));
    assert_eq!(
        (a.text.as_str(), a.stop.as_deref()),
        ("abcdefghij", Some("max_tokens"))
    );

    let (_, _, text) = post(&format!("{}/responses", s.base_url_v1()), &stream).await;
    let events = parse_sse(&text);
    assert_eq!(
        events.last().unwrap().name.as_deref(),
        Some("response.incomplete")
    );
    let a = assemble_responses(&events);
    assert_eq!(
        (a.text.as_str(), a.stop.as_deref()),
        ("abcdefghij", Some("incomplete"))
    );
    let last = events.last().unwrap().json();
    assert_eq!(
        last["response"]["incomplete_details"]["reason"],
        "max_output_tokens"
    );

    let url = format!("{}/v1beta/models/g:streamGenerateContent?alt=sse", s.url());
    let (_, _, text) = post(&url, &json!({})).await;
    let a = assemble_gemini(&parse_sse(&text));
    assert_eq!(
        (a.text.as_str(), a.stop.as_deref()),
        ("abcdefghij", Some("MAX_TOKENS"))
    );
}

#[tokio::test]
async fn non_stream_json_responses() {
    let s = server(vec![rich(), rich(), rich(), rich()]).await;
    let body = json!({"model": "m", "messages": []});

    let (status, ct, text) = post(&format!("{}/chat/completions", s.base_url_v1()), &body).await;
    assert_eq!((status, ct.as_str()), (200, "application/json"));
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["object"], "chat.completion");
    let msg = &v["choices"][0]["message"];
    assert_eq!(msg["content"], TEXT);
    assert_eq!(msg["reasoning_content"], THINKING);
    assert_eq!(msg["tool_calls"][0]["function"]["arguments"], ARGS);
    assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(v["usage"]["prompt_tokens"], 35);

    let (_, _, text) = post(&format!("{}/messages", s.base_url_v1()), &body).await;
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["type"], "message");
    assert_eq!(v["content"][1], json!({"type": "text", "text": TEXT}));
    assert_eq!(
        v["content"][2]["input"],
        serde_json::from_str::<Value>(ARGS).unwrap()
    );
    assert_eq!(v["stop_reason"], "tool_use");

    let (_, _, text) = post(&format!("{}/responses", s.base_url_v1()), &body).await;
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["object"], "response");
    assert_eq!(v["status"], "completed");
    assert_eq!(v["output"][2]["type"], "function_call");
    assert_eq!(v["output"][2]["arguments"], ARGS);

    let url = format!("{}/v1beta/models/g:generateContent", s.url());
    let (_, ct, text) = post(&url, &json!({})).await;
    assert_eq!(ct, "application/json");
    let v: Value = serde_json::from_str(&text).unwrap();
    let a = assemble_gemini_chunks(&[v]);
    assert_eq!(a.text, TEXT);
    assert_eq!(a.stop.as_deref(), Some("STOP"));
}
