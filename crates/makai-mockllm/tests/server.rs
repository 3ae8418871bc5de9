//! Server behaviour over real HTTP: recording, status and headers, script
//! exhaustion, routing, runtime pushes, responders and the bench script.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::*;
use makai_mockllm::{
    BenchPacing, MockServer, RecordedRequest, Responder, Scenario, ScriptedResponse, WireApi,
    bench_responder, bench_responder_in_paragraphs,
};
use serde_json::{Value, json};

#[tokio::test]
async fn records_every_request() {
    let s = MockServer::start(Scenario::new().push(ScriptedResponse::text("hi")))
        .await
        .unwrap();
    let url = format!(
        "{}/v1beta/models/gem-1:streamGenerateContent?alt=sse",
        s.url()
    );
    let resp = client()
        .post(&url)
        .header("x-goog-api-key", "secret")
        .header("X-Custom", "Value")
        .json(&json!({"contents": [{"role": "user", "parts": [{"text": "hello"}]}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    resp.text().await.unwrap();
    client()
        .post(format!("{}/nope", s.url()))
        .body("not json")
        .send()
        .await
        .unwrap();

    let reqs = s.requests();
    assert_eq!(reqs.len(), 2);
    let r = &reqs[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1beta/models/gem-1:streamGenerateContent");
    assert_eq!(r.query.as_deref(), Some("alt=sse"));
    assert_eq!(r.header("x-goog-api-key"), Some("secret"));
    assert!(
        r.headers
            .iter()
            .any(|(k, v)| k == "x-custom" && v == "Value")
    );
    assert_eq!(r.body["contents"][0]["parts"][0]["text"], "hello");
    assert_eq!(serde_json::from_str::<Value>(&r.raw_body).unwrap(), r.body);
    assert_eq!(r.wire_api(), Some(WireApi::Gemini));
    assert_eq!(r.model().as_deref(), Some("gem-1"));
    assert!(r.wants_stream());
    assert_eq!(reqs[1].body, Value::Null);
    assert_eq!(reqs[1].raw_body, "not json");
    s.clear_requests();
    assert!(s.requests().is_empty());
}

#[tokio::test]
async fn status_headers_and_body_override() {
    let rate_limit = r#"{"error":{"message":"Rate limit reached. Please try again in 1.8s"}}"#;
    let s = MockServer::start(
        Scenario::new()
            .push(
                ScriptedResponse::new()
                    .with_status(429)
                    .with_header("retry-after", "2")
                    .with_header("x-ratelimit-reset-requests", "1.8s")
                    .with_body(rate_limit),
            )
            .push(ScriptedResponse::new().with_status(529))
            .push(ScriptedResponse::text("ok").with_header("x-request-id", "req_1"))
            .push(
                ScriptedResponse::new()
                    .with_status(503)
                    .with_body("upstream down"),
            ),
    )
    .await
    .unwrap();
    let body = json!({"model": "m", "stream": true, "messages": []});
    let url = format!("{}/chat/completions", s.base_url_v1());
    let resp = client().post(&url).json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 429);
    assert_eq!(resp.headers()["retry-after"], "2");
    assert_eq!(resp.headers()["x-ratelimit-reset-requests"], "1.8s");
    assert_eq!(resp.headers()["content-type"], "application/json");
    assert_eq!(resp.text().await.unwrap(), rate_limit);

    // A bare error status gets the route's usual error body.
    let resp = client()
        .post(format!("{}/messages", s.base_url_v1()))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 529);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["type"], "overloaded_error");

    let resp = client().post(&url).json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["x-request-id"], "req_1");
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    assert_eq!(
        assemble_chat(&parse_sse(&resp.text().await.unwrap())).text,
        "ok"
    );

    let (status, ct, text) = post(&url, &body).await;
    assert_eq!(
        (status, ct.as_str(), text.as_str()),
        (503, "text/plain; charset=utf-8", "upstream down")
    );
}

#[tokio::test]
async fn script_exhaustion_and_runtime_push() {
    let s = MockServer::start(Scenario::new().push(ScriptedResponse::text("one")))
        .await
        .unwrap();
    let body = json!({"model": "m", "stream": true, "messages": []});
    let url = format!("{}/responses", s.base_url_v1());
    assert_eq!(s.remaining(), 1);
    let (status, _, _) = post(&url, &body).await;
    assert_eq!(status, 200);
    assert_eq!(s.remaining(), 0);
    let (status, ct, text) = post(&url, &body).await;
    assert_eq!((status, ct.as_str()), (500, "application/json"));
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        json!({"error": {"message": "mockllm: script exhausted after 1 requests"}})
    );
    s.push(ScriptedResponse::text("two"));
    let (status, _, text) = post(&url, &body).await;
    assert_eq!(status, 200);
    assert_eq!(assemble_responses(&parse_sse(&text)).text, "two");
    assert_eq!(s.served(), 2);
}

#[tokio::test]
async fn routes_models_and_404() {
    let s = MockServer::start(Scenario::new()).await.unwrap();
    let resp = client()
        .get(format!("{}/models", s.base_url_v1()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["object"], "list");
    assert!(v["data"][0]["id"].is_string());

    let resp = client()
        .get(format!("{}/v2/whatever", s.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    let v: Value = resp.json().await.unwrap();
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("/v2/whatever")
    );

    let resp = client()
        .get(format!("{}/messages", s.base_url_v1()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 405);
    assert_eq!(s.served(), 0, "non-LLM requests consume nothing");
}

#[tokio::test]
async fn responder_after_queue() {
    let responder = Arc::new(|req: &RecordedRequest| {
        let n = req.body["messages"].as_array().map_or(0, Vec::len);
        ScriptedResponse::text(format!("you sent {n} messages"))
    });
    let s = MockServer::start(
        Scenario::new()
            .push(ScriptedResponse::text("scripted first"))
            .with_responder(responder),
    )
    .await
    .unwrap();
    // The bodies are placeholders, not conversations.
    s.skip_invariant_check();
    let url = format!("{}/chat/completions", s.base_url_v1());
    let body = json!({"model": "m", "stream": true, "messages": [1, 2, 3]});
    let texts = [
        assemble_chat(&parse_sse(&post(&url, &body).await.2)).text,
        assemble_chat(&parse_sse(&post(&url, &body).await.2)).text,
    ];
    assert_eq!(texts, ["scripted first", "you sent 3 messages"]);
}

#[tokio::test]
async fn friendly_scenario_always_answers() {
    let s = MockServer::start(Scenario::friendly()).await.unwrap();
    let body = json!({"model": "m", "stream": true, "messages": []});
    for _ in 0..3 {
        let (_, _, text) = post(&format!("{}/messages", s.base_url_v1()), &body).await;
        let a = assemble_anthropic(&parse_sse(&text));
        assert!(
            a.text.starts_with("Hello from makai-mockllm!"),
            "{}",
            a.text
        );
    }
}

/// The Chat Completions events of `events` that carry text.
fn chat_text_events(events: &[Event]) -> usize {
    events
        .iter()
        .filter(|e| e.data != "[DONE]")
        .filter(|e| {
            e.json()["choices"][0]["delta"]["content"]
                .as_str()
                .is_some_and(|t| !t.is_empty())
        })
        .count()
}

/// A server answering with a bench responder, for hand-written bodies that
/// only carry what the responder reads (no invariant check on them).
async fn bench_server(responder: Responder) -> MockServer {
    let s = MockServer::start(Scenario::from_responder(responder))
        .await
        .unwrap();
    s.skip_invariant_check();
    s
}

/// Drives the bench script through a full agent loop on the Chat and
/// Anthropic wire formats, feeding back tool results like an agent would.
#[tokio::test]
async fn bench_responder_agent_loop() {
    let s = bench_server(bench_responder(4, 2, BenchPacing::Replay)).await;
    // Chat Completions.
    let url = format!("{}/chat/completions", s.base_url_v1());
    let mut messages = vec![json!({"role": "user", "content": "go"})];
    for round in 0..=2 {
        let body = json!({"model": "bench-m", "stream": true, "messages": messages});
        let (_, _, text) = post(&url, &body).await;
        let events = parse_sse(&text);
        let a = assemble_chat(&events);
        assert!(a.terminated && a.usage.is_some());
        assert_eq!(a.model.as_deref(), Some("bench-m"));
        assert_eq!(chat_text_events(&events), 4, "one event per token");
        if round < 2 {
            assert_eq!(a.text, "w0 w1 w2 w3 ");
            assert_eq!(a.stop.as_deref(), Some("tool_calls"));
            let (id, name, args) = &a.tool_calls[0];
            assert_eq!(
                (id.as_str(), name.as_str()),
                (format!("call_{round}").as_str(), "echo")
            );
            let args: Value = serde_json::from_str(args).unwrap();
            messages.push(json!({"role": "assistant", "tool_calls": [
                {"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}}
            ]}));
            messages.push(json!({"role": "tool", "tool_call_id": id, "content": args["text"]}));
        } else {
            assert_eq!(a.text, "w0 w1 w2 [final]");
            assert_eq!(a.stop.as_deref(), Some("stop"));
            assert!(a.tool_calls.is_empty());
        }
    }
    // A wrong tool result is detected.
    messages[2]["content"] = json!("wrong");
    let body = json!({"model": "bench-m", "stream": true, "messages": messages});
    let (_, _, text) = post(&url, &body).await;
    assert_eq!(
        assemble_chat(&parse_sse(&text)).text,
        "w0 w1 w2 [bad-tool-result]"
    );

    // Anthropic Messages.
    let url = format!("{}/messages", s.base_url_v1());
    let mut messages = vec![json!({"role": "user", "content": "go"})];
    for round in 0..=2 {
        let body = json!({"model": "m", "stream": true, "max_tokens": 10, "messages": messages});
        let (_, _, text) = post(&url, &body).await;
        let a = assemble_anthropic(&parse_sse(&text));
        assert!(a.terminated);
        if round < 2 {
            assert_eq!(a.stop.as_deref(), Some("tool_use"));
            let (id, _, args) = a.tool_calls[0].clone();
            let args: Value = serde_json::from_str(&args).unwrap();
            messages.push(json!({"role": "assistant", "content": [
                {"type": "tool_use", "id": id, "name": "echo", "input": args}]}));
            messages.push(json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": id, "content": args["text"]}]}));
        } else {
            assert_eq!(a.text, "w0 w1 w2 [final]");
            assert_eq!(a.stop.as_deref(), Some("end_turn"));
        }
    }

    // Responses and Gemini use the generic renderers.
    let body = json!({"model": "m", "stream": true, "input": [
        {"type": "function_call_output", "call_id": "call_0", "output": "echo-0"},
        {"type": "function_call_output", "call_id": "call_1", "output": "echo-1"}]});
    let (_, _, text) = post(&format!("{}/responses", s.base_url_v1()), &body).await;
    assert_eq!(
        assemble_responses(&parse_sse(&text)).text,
        "w0 w1 w2 [final]"
    );
    let body = json!({"contents": [{"role": "user", "parts": [{"text": "go"}]}]});
    let url = format!("{}/v1beta/models/g:streamGenerateContent?alt=sse", s.url());
    let (_, _, text) = post(&url, &body).await;
    let a = assemble_gemini(&parse_sse(&text));
    assert_eq!(a.text, "w0 w1 w2 w3 ");
    assert_eq!(a.tool_calls[0].1, "echo");
}

/// The bench script in paragraphs: a blank line after every `paragraph_words`
/// tokens, one event per token still, and the last token still the verdict.
#[tokio::test]
async fn bench_responder_in_paragraphs_ends_a_paragraph_every_n_tokens() {
    let s = bench_server(bench_responder_in_paragraphs(7, 0, BenchPacing::Replay, 3)).await;
    let url = format!("{}/chat/completions", s.base_url_v1());
    let body =
        json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "go"}]});
    let (_, _, text) = post(&url, &body).await;
    let events = parse_sse(&text);
    let a = assemble_chat(&events);
    assert_eq!(a.text, "w0 w1 w2\n\nw3 w4 w5\n\n[final]");
    assert_eq!(chat_text_events(&events), 7, "one event per token");
}
