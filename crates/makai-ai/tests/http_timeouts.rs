//! Time in `stream()` through real HTTP on loopback: the idle timeout of a
//! silent or slow server, and cancellation.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use crate::http_behaviour::{context, model, run};
use common::contract;

use std::time::{Duration, Instant};

use futures::StreamExt;
use makai_ai::{Api, AssistantMessageEvent, Model, RetryPolicy, StopReason, StreamOptions, stream};
use makai_mockllm::{MockServer, Scenario, ScriptedResponse};

#[tokio::test]
async fn stalled_stream_hits_the_idle_timeout() {
    let scenario = Scenario::new().push(ScriptedResponse::text("a b c d").stall_after(2));
    let options = StreamOptions {
        retry: RetryPolicy::none(),
        idle_timeout: Some(Duration::from_millis(300)),
        ..Default::default()
    };
    let started = Instant::now();
    let (_events, message, _server) = run(Api::OpenAiCompletions, scenario, options).await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(message.stop_reason, StopReason::Error);
    assert!(message.error_message.unwrap().contains("idle timeout"));
}

/// The idle timeout is one timer per body, moved when it fires after data came
/// (not one per read): a stream slower in total than the timeout, each gap
/// shorter, must still finish.
#[tokio::test]
async fn idle_timeout_counts_from_the_last_read_not_the_first() {
    let scenario =
        Scenario::new().push(ScriptedResponse::text("w1 w2 w3 w4 w5 w6 w7 w8 w9 w10").delay(60));
    let options = StreamOptions {
        retry: RetryPolicy::none(),
        idle_timeout: Some(Duration::from_millis(250)),
        ..Default::default()
    };
    let started = Instant::now();
    let (_events, message, _server) = run(Api::OpenAiCompletions, scenario, options).await;
    assert!(
        started.elapsed() > Duration::from_millis(250),
        "the stream must outlast one idle timeout for this test to mean anything"
    );
    assert_eq!(
        message.stop_reason,
        StopReason::Stop,
        "{:?}",
        message.error_message
    );
    assert_eq!(message.text(), "w1 w2 w3 w4 w5 w6 w7 w8 w9 w10");
}

/// The idle timer ticks instead of reading the clock per read; ticks missed
/// while the consumer paused must count as one. A consumer that stops reading
/// for longer than the idle timeout, then resumes while the server is still
/// sending, gets the rest of the stream, not a stall of its own making.
#[tokio::test]
async fn a_consumer_pausing_longer_than_the_idle_timeout_gets_the_rest_of_the_stream() {
    let words = "w1 w2 w3 w4 w5 w6 w7 w8 w9 w10";
    let scenario = Scenario::new().push(ScriptedResponse::text(words).delay(100));
    let server = MockServer::start(scenario).await.unwrap();
    let m = model(Api::OpenAiCompletions, &server);
    let options = StreamOptions {
        retry: RetryPolicy::none(),
        idle_timeout: Some(Duration::from_millis(300)),
        ..Default::default()
    };
    let mut s = stream(&m, &context(), options);
    let mut events = vec![s.next().await.expect("a first event")];
    // The server goes on writing; nothing reads it for twice the timeout.
    tokio::time::sleep(Duration::from_millis(600)).await;
    while let Some(e) = s.next().await {
        events.push(e);
    }
    contract::assert_stream_contract(&events);
    let Some(AssistantMessageEvent::Done { message, .. }) = events.last() else {
        panic!("expected the stream to finish: {:?}", events.last())
    };
    assert_eq!(message.text(), words);
}

/// Regression: the wait for the response head had no timeout, so a server
/// that took the request and never answered held the stream forever.
#[tokio::test]
async fn a_server_that_never_answers_is_an_idle_timeout_not_a_hang() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // Accepts, reads the request, and says nothing.
    let silent = tokio::spawn(async move {
        let mut held = Vec::new();
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let mut buf = vec![0u8; 64 * 1024];
            let _ = tokio::io::AsyncReadExt::read(&mut socket, &mut buf).await;
            held.push(socket);
        }
    });
    let m = Model::custom(
        Api::OpenAiCompletions,
        "mock",
        "mock-model",
        format!("http://{addr}/v1"),
    );
    let options = StreamOptions {
        retry: RetryPolicy::none(),
        idle_timeout: Some(Duration::from_millis(300)),
        ..Default::default()
    };
    let started = Instant::now();
    let events: Vec<_> = tokio::time::timeout(
        Duration::from_secs(30),
        stream(&m, &context(), options).collect(),
    )
    .await
    .expect("the stream must end on its own idle timeout");
    assert!(started.elapsed() >= Duration::from_millis(300));
    contract::assert_stream_contract(&events);
    let Some(AssistantMessageEvent::Error { reason, error }) = events.last() else {
        panic!("expected an error event: {events:?}")
    };
    assert_eq!(*reason, StopReason::Error);
    let said = error.error_message.clone().unwrap_or_default();
    assert!(
        said.contains("no response") && said.contains("idle timeout"),
        "{said}"
    );
    silent.abort();
}

#[tokio::test]
async fn cancellation_mid_stream_gives_aborted_with_partial_content() {
    let server = MockServer::start(
        Scenario::new().push(ScriptedResponse::text("w1 w2 w3 w4 w5 w6 w7 w8 w9").delay(50)),
    )
    .await
    .unwrap();
    let m = model(Api::AnthropicMessages, &server);
    let options = StreamOptions::default();
    let cancel = options.cancel.clone();
    let mut s = stream(&m, &context(), options);
    let mut seen_text = false;
    let mut last = None;
    while let Some(e) = s.next().await {
        if matches!(e, AssistantMessageEvent::TextDelta { .. }) && !seen_text {
            seen_text = true;
            cancel.cancel();
        }
        last = Some(e);
    }
    let Some(AssistantMessageEvent::Error { reason, error }) = last else {
        panic!("expected an error event")
    };
    assert_eq!(reason, StopReason::Aborted);
    assert_eq!(error.stop_reason, StopReason::Aborted);
    assert!(!error.text().is_empty());
}

/// The request watches its token through a waker of its own (`CancelWatch`):
/// a cancellation from another task while the stream waits on a silent server
/// must wake it and end it at once, not at the idle timeout.
#[tokio::test]
async fn cancelling_from_another_task_while_the_server_is_silent_ends_the_stream_at_once() {
    let server =
        MockServer::start(Scenario::new().push(ScriptedResponse::text("a b c d").stall_after(2)))
            .await
            .unwrap();
    let m = model(Api::OpenAiCompletions, &server);
    let options = StreamOptions {
        retry: RetryPolicy::none(),
        idle_timeout: Some(Duration::from_secs(60)),
        ..Default::default()
    };
    let cancel = options.cancel.clone();
    let mut s = stream(&m, &context(), options);
    let mut events = Vec::new();
    while let Some(e) = s.next().await {
        let text = matches!(e, AssistantMessageEvent::TextDelta { .. });
        events.push(e);
        if text {
            break;
        }
    }
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let rest: Vec<_> = tokio::time::timeout(Duration::from_secs(20), s.collect())
        .await
        .expect("the cancellation must end the stream");
    assert!(started.elapsed() < Duration::from_secs(10));
    canceller.await.unwrap();
    events.extend(rest);
    contract::assert_stream_contract(&events);
    let Some(AssistantMessageEvent::Error { reason, .. }) = events.last() else {
        panic!("expected an error event: {:?}", events.last())
    };
    assert_eq!(*reason, StopReason::Aborted);
}
