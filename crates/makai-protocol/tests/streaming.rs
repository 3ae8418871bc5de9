//! Model calls through the server over real sockets on loopback, with the
//! scripted LLM (makai-mockllm) behind the server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use futures::StreamExt;
use makai_ai::ProtocolClient;
use makai_ai::{Api, AssistantMessageEvent, RetryPolicy, StopReason, StreamOptions};
use makai_mockllm::{ErrorKind, MockServer, Scenario, ScriptedResponse};
use makai_protocol::ServerConfig;

const ALL_KINDS: [&str; 13] = [
    "start",
    "text_start",
    "text_delta",
    "text_end",
    "thinking_start",
    "thinking_delta",
    "thinking_end",
    "toolcall_start",
    "toolcall_delta",
    "toolcall_end",
    "retry",
    "done",
    "error",
];

fn scripts() -> Vec<ScriptedResponse> {
    vec![
        ScriptedResponse::new()
            .with_thinking_signed("Let me look at the file first.", "sig-1")
            .with_text("Reading it now.")
            .with_tool_call("call_1", "read", r#"{"path":"a.txt","limit":10}"#)
            .chunk_size(7),
        ScriptedResponse::new().with_status(500),
        ScriptedResponse::text("Second attempt worked."),
        ScriptedResponse::text("this answer is cut short").error_after(3, ErrorKind::Overloaded),
    ]
}

fn call_options(i: usize) -> StreamOptions {
    let mut o = options();
    if i == 1 {
        o.retry = RetryPolicy {
            max_retries: 1,
            initial_delay: Duration::from_millis(5),
            max_delay: Duration::from_secs(1),
        };
    }
    o
}

/// Every event the provider yields on the server arrives unchanged, in order,
/// over both transports; together the calls produce every event type.
#[tokio::test]
async fn every_event_type_round_trips_exactly() {
    for transport in ["ws", "tcp"] {
        let llm = mock(scripts()).await;
        let tap = TapClient::default();
        let server = start(ServerConfig::ephemeral(TOKEN).with_client(Arc::new(tap.clone()))).await;
        let url = if transport == "ws" {
            server.ws_url()
        } else {
            server.tcp_url().unwrap()
        };
        let remote = client(&url).await;
        let mut seen = BTreeSet::new();
        let apis = [Api::AnthropicMessages, Api::OpenAiCompletions];
        for (i, api) in apis.into_iter().enumerate() {
            let m = model(&llm, api);
            let got = collect(remote.stream(&m, &context("hi"), call_options(i)).await).await;
            let want = tap.events(i);
            assert_eq!(got, want, "{transport} call {i}");
            seen.extend(kinds(&got));
        }
        // The overloaded error mid-stream.
        let m = model(&llm, Api::OpenAiResponses);
        let got = collect(remote.stream(&m, &context("hi"), options()).await).await;
        assert_eq!(got, tap.events(2), "{transport} error call");
        assert!(matches!(
            got.last(),
            Some(AssistantMessageEvent::Error {
                reason: StopReason::Error,
                ..
            })
        ));
        seen.extend(kinds(&got));
        let missing: Vec<_> = ALL_KINDS.iter().filter(|k| !seen.contains(**k)).collect();
        assert!(
            missing.is_empty(),
            "{transport}: no {missing:?} event was exercised"
        );
        let stats = remote.stats();
        assert_eq!((stats.duplicates, stats.gaps), (0, 0));
        // Everything was acknowledged: the server forgot the streams.
        eventually("streams forgotten", || server.stats().streams == 0).await;
    }
}

fn marker_responder() -> makai_mockllm::Responder {
    Arc::new(|req: &makai_mockllm::RecordedRequest| {
        let body = &req.raw_body;
        let marker = body
            .find("req-")
            .map(|i| {
                body[i..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                    .collect::<String>()
            })
            .unwrap_or_default();
        let words: Vec<String> = (0..20).map(|w| format!("{marker}.{w}")).collect();
        ScriptedResponse::text(words.join(" "))
    })
}

/// 500 streams at once on one connection: every one completes, in order,
/// with its own content.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_concurrent_streams_complete_in_order() {
    let llm = MockServer::start(Scenario::from_responder(marker_responder()))
        .await
        .unwrap();
    let server = start(ServerConfig::ephemeral(TOKEN)).await;
    let remote = client(&server.ws_url()).await;
    let m = model(&llm, Api::OpenAiCompletions);
    let mut tasks = Vec::new();
    for i in 0..500 {
        let remote = remote.clone();
        let m = m.clone();
        tasks.push(tokio::spawn(async move {
            let events = collect(
                remote
                    .stream(&m, &context(&format!("req-{i}")), options())
                    .await,
            )
            .await;
            (i, events)
        }));
    }
    for t in tasks {
        let (i, events) = t.await.unwrap();
        let k = kinds(&events);
        assert_eq!(k.first().map(String::as_str), Some("start"), "stream {i}");
        assert_eq!(
            k.last().map(String::as_str),
            Some("done"),
            "stream {i}: {k:?}"
        );
        let text = streamed_text(&events);
        let want: Vec<String> = (0..20).map(|w| format!("req-{i}.{w}")).collect();
        assert_eq!(text, want.join(" "), "stream {i}");
        let AssistantMessageEvent::Done { message, .. } = events.last().unwrap() else {
            unreachable!()
        };
        assert_eq!(message.text(), text, "stream {i}");
    }
    let stats = remote.stats();
    assert_eq!((stats.duplicates, stats.gaps, stats.reconnects), (0, 0, 0));
    assert_eq!(server.stats().streams_started, 500);
    eventually("streams forgotten", || server.stats().streams == 0).await;
}

/// The Unix socket transport carries streams too.
#[cfg(unix)]
#[tokio::test]
async fn unix_socket_transport_streams() {
    let llm = mock(vec![ScriptedResponse::text("over a unix socket")]).await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = ServerConfig::ephemeral(TOKEN);
    config.unix_socket = Some(dir.path().join("makai.sock"));
    let server = start(config).await;
    let remote = client(&server.unix_url().unwrap()).await;
    let m = model(&llm, Api::OpenAiCompletions);
    let msg = remote
        .stream(&m, &context("hi"), options())
        .await
        .result()
        .await;
    assert_eq!(msg.text(), "over a unix socket");
    assert_eq!(msg.stop_reason, StopReason::Stop);
}

/// Request options cross the wire; API keys and extra headers do not.
#[tokio::test]
async fn options_cross_the_wire_but_credentials_do_not() {
    let llm = mock(vec![ScriptedResponse::text("ok")]).await;
    let server = start(ServerConfig::ephemeral(TOKEN)).await;
    let remote = client(&server.ws_url()).await;
    let m = model(&llm, Api::OpenAiCompletions);
    let mut o = options();
    o.api_key = Some("sk-client-secret-must-not-travel".into());
    o.headers.insert("x-client-secret".into(), "hunter2".into());
    o.temperature = Some(0.25);
    o.max_tokens = Some(77);
    let msg = remote.stream(&m, &context("hi"), o).await.result().await;
    assert_eq!(msg.text(), "ok");
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert!(!r.raw_body.contains("sk-client-secret"), "{}", r.raw_body);
    assert!(
        r.header("authorization")
            .is_none_or(|v| !v.contains("sk-client-secret"))
    );
    assert!(r.header("x-client-secret").is_none());
    assert_eq!(r.body["temperature"], serde_json::json!(0.25));
    assert!(r.raw_body.contains("77"), "{}", r.raw_body);
}

/// A slow consumer stalls only its own stream: the server stops pulling from
/// that provider stream after a bounded number of events, while another
/// client's stream on the same server completes at full speed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_client_slows_only_itself_with_bounded_buffering() {
    let llm = MockServer::start(
        Scenario::new().with_fallback(ScriptedResponse::text("word ".repeat(5000)).chunk_size(5)),
    )
    .await
    .unwrap();
    let tap = TapClient::default();
    let mut config = ServerConfig::ephemeral(TOKEN).with_client(Arc::new(tap.clone()));
    config.limits.replay_capacity = 64;
    config.limits.send_window = 32;
    let server = start(config).await;
    let slow = client(&server.ws_url()).await;
    let fast = client(&server.ws_url()).await;
    let m = model(&llm, Api::OpenAiCompletions);
    let mut stalled = slow.stream(&m, &context("slow"), options()).await;
    assert!(stalled.next().await.is_some());
    // Never read again; meanwhile another client streams everything.
    let started = std::time::Instant::now();
    let msg = fast
        .stream(&m, &context("fast"), options())
        .await
        .result()
        .await;
    assert_eq!(msg.stop_reason, StopReason::Stop);
    assert!(started.elapsed() < Duration::from_secs(10));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let pulled = tap.events(0).len();
    // Replay capacity (64) + the client's queue (8 batches of at most 32) + the
    // batch its forwarder holds while that queue is full (32) + the tap's channel
    // (16): far below the 5000 the response has.
    assert!(
        pulled <= 64 + 8 * 32 + 32 + 16 + 2,
        "the server pulled {pulled} events for a stalled client"
    );
    assert!(!tap.events(0).last().unwrap().is_terminal());
    // Reading resumes the flow and the stream completes.
    let rest: Vec<_> = tokio::time::timeout(WAIT, stalled.collect::<Vec<_>>())
        .await
        .unwrap();
    assert!(matches!(
        rest.last(),
        Some(AssistantMessageEvent::Done { .. })
    ));
}

/// Dropping the client handle does not cut off a stream it returned.
#[tokio::test]
async fn a_stream_outlives_its_client_handle() {
    let llm = mock(vec![
        ScriptedResponse::text("still here after the handle is gone").delay(2),
    ])
    .await;
    let server = start(ServerConfig::ephemeral(TOKEN)).await;
    let remote = client(&server.ws_url()).await;
    let m = model(&llm, Api::OpenAiCompletions);
    let s = remote.stream(&m, &context("hi"), options()).await;
    drop(remote);
    let msg = tokio::time::timeout(WAIT, s.result()).await.unwrap();
    assert_eq!(msg.stop_reason, StopReason::Stop);
    assert_eq!(msg.text(), "still here after the handle is gone");
    // With the last stream done, the connection closes.
    eventually("connection closed", || server.stats().connections == 0).await;
}

/// `preconnect` over the wire: the server opens the connection to the model
/// server that the client's next call then takes, without sending a request.
#[tokio::test]
async fn a_preconnect_opens_the_connection_the_servers_next_call_takes() {
    let llm = mock(vec![ScriptedResponse::text("over the warm connection")]).await;
    let server = start(ServerConfig::ephemeral(TOKEN)).await;
    let client = client(&server.ws_url()).await;
    let m = model(&llm, Api::OpenAiCompletions);
    client.preconnect(&m, &options()).await;
    let deadline = tokio::time::Instant::now() + WAIT;
    while llm.connections() == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the server never connected"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(llm.served(), 0, "a preconnect sends no request");
    let events = collect(client.stream(&m, &context("hi"), options()).await).await;
    assert_eq!(streamed_text(&events), "over the warm connection");
    assert_eq!(
        llm.connections(),
        1,
        "the call took the preconnected connection"
    );
}
