//! Cancellation across the wire, and graceful shutdown.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::*;
use futures::StreamExt;
use makai_ai::{Api, AssistantMessageEvent, StopReason};
use makai_ai::{CancellationToken, ProtocolClient};
use makai_mockllm::ScriptedResponse;
use makai_protocol::testing::EchoSession;
use makai_protocol::{ClientError, RemoteProtocolClient, ServerConfig};

fn slow_answer(words: usize, delay_ms: u64) -> ScriptedResponse {
    let text: Vec<String> = (0..words).map(|i| format!("w{i}")).collect();
    ScriptedResponse::text(text.join(" "))
        .chunk_size(4)
        .delay(delay_ms)
}

/// Cancelling on the client aborts the provider request on the server: the
/// server-side stream ends `aborted` and its HTTP connection to the LLM closes.
#[tokio::test]
async fn cancel_on_the_client_stops_the_server_side_request() {
    let llm = mock(vec![slow_answer(2000, 5)]).await;
    let proxy = Proxy::start(llm.addr()).await;
    let tap = TapClient::default();
    let server = start(ServerConfig::ephemeral(TOKEN).with_client(Arc::new(tap.clone()))).await;
    let remote = client(&server.ws_url()).await;
    let m = model_for(proxy.base_url_v1(), Api::OpenAiCompletions);
    let cancel = CancellationToken::new();
    let mut o = options();
    o.cancel = cancel.clone();
    let mut s = remote.stream(&m, &context("go"), o).await;
    for _ in 0..5 {
        s.next().await.unwrap();
    }
    assert_eq!(proxy.open.load(Ordering::SeqCst), 1);
    let t0 = Instant::now();
    cancel.cancel();
    let rest = collect_tail(s).await;
    let last = rest.last().unwrap();
    assert!(
        matches!(
            last,
            AssistantMessageEvent::Error {
                reason: StopReason::Aborted,
                ..
            }
        ),
        "{last:?}"
    );
    eventually("the LLM connection closed", || {
        proxy.open.load(Ordering::SeqCst) == 0
    })
    .await;
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    // The server-side provider stream itself ended aborted.
    let server_last = tap.events(0).last().cloned().unwrap();
    assert!(matches!(
        server_last,
        AssistantMessageEvent::Error {
            reason: StopReason::Aborted,
            ..
        }
    ));
    eventually("stream forgotten", || server.stats().streams == 0).await;
}

/// Dropping the returned stream cancels too.
#[tokio::test]
async fn dropping_the_stream_stops_the_server_side_request() {
    let llm = mock(vec![slow_answer(2000, 5)]).await;
    let proxy = Proxy::start(llm.addr()).await;
    let server = start(ServerConfig::ephemeral(TOKEN)).await;
    let remote = client(&server.tcp_url().unwrap()).await;
    let m = model_for(proxy.base_url_v1(), Api::AnthropicMessages);
    let mut s = remote.stream(&m, &context("go"), options()).await;
    for _ in 0..5 {
        s.next().await.unwrap();
    }
    drop(s);
    eventually("the LLM connection closed", || {
        proxy.open.load(Ordering::SeqCst) == 0
    })
    .await;
    eventually("stream forgotten", || server.stats().streams == 0).await;
}

/// Shutdown waits for running calls within the grace period.
#[tokio::test]
async fn graceful_shutdown_lets_running_calls_finish() {
    let llm = mock(vec![slow_answer(60, 5)]).await;
    let server = start(ServerConfig::ephemeral(TOKEN)).await;
    let url = server.ws_url();
    let remote = client(&url).await;
    let m = model(&llm, Api::OpenAiCompletions);
    let mut s = remote.stream(&m, &context("go"), options()).await;
    s.next().await.unwrap();
    let shutdown = tokio::spawn(server.shutdown(Duration::from_secs(20)));
    let rest = collect_tail(s).await;
    let AssistantMessageEvent::Done { message, .. } = rest.last().unwrap() else {
        panic!("{:?}", rest.last())
    };
    assert_eq!(message.text().split(' ').count(), 60);
    let report = tokio::time::timeout(WAIT, shutdown).await.unwrap().unwrap();
    assert_eq!(report.cut_short, 0);
    // No new connections afterwards.
    assert!(RemoteProtocolClient::connect(&url, TOKEN).await.is_err());
}

/// Past the grace period, running calls end with a clear error that keeps the
/// text received so far; subscriptions end; the session handler is told.
#[tokio::test]
async fn shutdown_past_grace_ends_streams_with_a_clear_error() {
    let llm = mock(vec![slow_answer(5000, 5)]).await;
    let session = Arc::new(EchoSession::new());
    let config = ServerConfig::ephemeral(TOKEN).with_session(session.clone());
    let server = start(config).await;
    let remote = client(&server.ws_url()).await;
    let mut events = remote.subscribe().await.unwrap();
    let m = model(&llm, Api::OpenAiCompletions);
    let mut s = remote.stream(&m, &context("go"), options()).await;
    for _ in 0..10 {
        s.next().await.unwrap();
    }
    let report = server.shutdown(Duration::from_millis(100)).await;
    assert_eq!(report.cut_short, 1);
    let rest = collect_tail(s).await;
    let AssistantMessageEvent::Error { reason, error } = rest.last().unwrap() else {
        panic!("{:?}", rest.last())
    };
    assert_eq!(*reason, StopReason::Error);
    let msg = error.error_message.clone().unwrap();
    assert!(msg.contains("shutting down"), "{msg}");
    assert!(
        error.text().starts_with("w0 w1"),
        "the partial text is kept: {}",
        error.text()
    );
    let end = tokio::time::timeout(WAIT, events.next()).await.unwrap();
    assert!(
        matches!(end, Some(Err(ClientError::StreamEnded(ref m))) if m.contains("shutting down")),
        "{end:?}"
    );
    assert!(session.was_shut_down());
}
