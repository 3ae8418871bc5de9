//! Behaviour of `stream()` through real HTTP on loopback: retries, errors,
//! faults, cancellation, credentials. Every provider goes through the same driver;
//! these tests use each wire API where the behaviour could differ.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use common::contract;

use std::time::{Duration, Instant};

use futures::StreamExt;
use makai_ai::{
    Api, ApiKey, AssistantMessage, AssistantMessageEvent, Context, Model, RetryPolicy, StopReason,
    StreamOptions, UserMessage, stream,
};
use makai_mockllm::{ErrorKind, MockServer, Scenario, ScriptedResponse};

fn model(api: Api, server: &MockServer) -> Model {
    let base = match api {
        Api::GoogleGenerativeAi => format!("{}/v1beta", server.url()),
        Api::GoogleVertex | Api::AnthropicVertex => {
            format!("{}/v1/projects/p/locations/us-east5", server.url())
        }
        Api::BedrockConverseStream | Api::AzureOpenAiResponses => server.url(),
        Api::OpenAiCodexResponses => format!("{}/backend-api", server.url()),
        _ => server.base_url_v1(),
    };
    Model::custom(api, "mock", "mock-model", base)
}

fn context() -> Context {
    Context {
        messages: vec![UserMessage::text("hi").into()],
        ..Default::default()
    }
}

fn fast_retry(max_retries: u32) -> RetryPolicy {
    RetryPolicy {
        max_retries,
        initial_delay: Duration::from_millis(10),
        max_delay: Duration::from_secs(5),
    }
}

async fn run(
    api: Api,
    scenario: Scenario,
    options: StreamOptions,
) -> (Vec<AssistantMessageEvent>, AssistantMessage, MockServer) {
    let server = MockServer::start(scenario).await.unwrap();
    let m = model(api, &server);
    let mut s = stream(&m, &context(), options);
    let mut events = Vec::new();
    while let Some(e) = s.next().await {
        events.push(e);
    }
    contract::assert_stream_contract(&events);
    let last = events.last().cloned();
    let message = match last {
        Some(AssistantMessageEvent::Done { message, .. }) => message,
        Some(AssistantMessageEvent::Error { error, .. }) => error,
        other => panic!("stream did not end with a terminal event: {other:?}"),
    };
    server.assert_request_invariants();
    (events, *message, server)
}

fn terminal_count(events: &[AssistantMessageEvent]) -> usize {
    events.iter().filter(|e| e.is_terminal()).count()
}

#[tokio::test]
async fn text_streams_in_order_for_every_api() {
    for api in Api::ALL {
        let scenario =
            Scenario::new().push(ScriptedResponse::text("Hello there, world").with_thinking("hmm"));
        let (events, message, _server) = run(api, scenario, StreamOptions::default()).await;
        assert_eq!(
            message.stop_reason,
            StopReason::Stop,
            "{api}: {:?}",
            message.error_message
        );
        assert_eq!(message.text(), "Hello there, world", "{api}");
        assert_eq!(message.thinking(), "hmm", "{api}");
        assert!(matches!(events[0], AssistantMessageEvent::Start), "{api}");
        assert_eq!(terminal_count(&events), 1, "{api}");
        let deltas: String = events
            .iter()
            .filter_map(|e| match e {
                AssistantMessageEvent::TextDelta { delta, .. } => Some(delta.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(deltas, "Hello there, world", "{api}");
    }
}

#[tokio::test]
async fn tool_call_arguments_are_assembled_for_every_api() {
    for api in Api::ALL {
        let args = r#"{"path": "src/main.rs", "lines": [1, 2, 3], "note": "unicode ÷ ok"}"#;
        let scenario =
            Scenario::new().push(ScriptedResponse::tool_call("call_1", "read", args).chunk_size(3));
        let (_events, message, _server) = run(api, scenario, StreamOptions::default()).await;
        assert_eq!(
            message.stop_reason,
            StopReason::ToolUse,
            "{api}: {:?}",
            message.error_message
        );
        let call = message.tool_calls().next().expect("a tool call");
        assert_eq!(call.name, "read");
        assert!(
            call.arguments_complete(),
            "{api}: {:?}",
            call.arguments_error
        );
        assert_eq!(
            serde_json::Value::Object(call.arguments.clone()),
            serde_json::from_str::<serde_json::Value>(args).unwrap()
        );
    }
}

#[tokio::test]
async fn rate_limit_is_retried_honouring_retry_after() {
    let scenario = Scenario::new()
        .push(
            ScriptedResponse::new()
                .with_status(429)
                .with_header("retry-after-ms", "200")
                .with_body(
                    r#"{"error":{"message":"Rate limit reached","type":"rate_limit_exceeded"}}"#,
                ),
        )
        .push(ScriptedResponse::text("after retry"));
    let started = Instant::now();
    let options = StreamOptions {
        retry: fast_retry(3),
        ..Default::default()
    };
    let (events, message, server) = run(Api::OpenAiCompletions, scenario, options).await;
    assert_eq!(message.text(), "after retry");
    assert!(
        started.elapsed() >= Duration::from_millis(200),
        "retry-after-ms was not honoured"
    );
    assert_eq!(server.requests().len(), 2);
    let retry = events.iter().find_map(|e| match e {
        AssistantMessageEvent::Retry {
            attempt,
            delay_ms,
            error_message,
        } => Some((*attempt, *delay_ms, error_message.clone())),
        _ => None,
    });
    let (attempt, delay_ms, error) = retry.expect("a retry event");
    assert_eq!((attempt, delay_ms), (1, 200));
    assert!(
        error.contains("429") && error.contains("Rate limit reached"),
        "{error}"
    );
}

#[tokio::test]
async fn retry_hint_in_body_is_honoured() {
    let scenario = Scenario::new()
        .push(ScriptedResponse::new().with_status(429).with_body(
            r#"{"error":{"message":"Rate limit reached for gpt. Please try again in 0.3s."}}"#,
        ))
        .push(ScriptedResponse::text("ok"));
    let options = StreamOptions {
        retry: fast_retry(2),
        ..Default::default()
    };
    let (events, message, _server) = run(Api::OpenAiCompletions, scenario, options).await;
    assert_eq!(message.text(), "ok");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AssistantMessageEvent::Retry { delay_ms: 300, .. }))
    );
}

#[tokio::test]
async fn server_asking_to_wait_too_long_fails_at_once_stating_the_delay() {
    let scenario = Scenario::new()
        .push(
            ScriptedResponse::new()
                .with_status(429)
                .with_header("retry-after", "120"),
        )
        .push(ScriptedResponse::text("never"));
    let options = StreamOptions {
        retry: RetryPolicy {
            max_retries: 3,
            initial_delay: Duration::from_millis(10),
            max_delay: Duration::from_secs(60),
        },
        ..Default::default()
    };
    let started = Instant::now();
    let (_events, message, server) = run(Api::AnthropicMessages, scenario, options).await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(message.stop_reason, StopReason::Error);
    let err = message.error_message.unwrap();
    assert!(
        err.contains("120") && err.contains("maximum retry delay"),
        "{err}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn server_errors_are_retried_then_reported_with_status() {
    for status in [500u16, 502, 503, 504, 529] {
        let scenario =
            Scenario::new().extend((0..3).map(|_| ScriptedResponse::new().with_status(status)));
        let options = StreamOptions {
            retry: fast_retry(2),
            ..Default::default()
        };
        let (events, message, server) = run(Api::AnthropicMessages, scenario, options).await;
        assert_eq!(server.requests().len(), 3, "status {status}");
        assert_eq!(
            events
                .iter()
                .filter(|e| matches!(e, AssistantMessageEvent::Retry { .. }))
                .count(),
            2
        );
        assert_eq!(message.stop_reason, StopReason::Error);
        assert!(message.error_message.unwrap().contains(&status.to_string()));
    }
}

#[tokio::test]
async fn client_errors_are_not_retried_and_carry_the_provider_message() {
    for status in [400u16, 401, 403, 404] {
        let scenario = Scenario::new()
            .push(ScriptedResponse::new().with_status(status).with_body(
                r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
            ))
            .push(ScriptedResponse::text("never"));
        let options = StreamOptions {
            retry: fast_retry(3),
            ..Default::default()
        };
        let (_events, message, server) = run(Api::AnthropicMessages, scenario, options).await;
        assert_eq!(
            server.requests().len(),
            1,
            "status {status} must not be retried"
        );
        let err = message.error_message.unwrap();
        assert!(
            err.contains(&format!("HTTP {status}")) && err.contains("invalid x-api-key"),
            "{err}"
        );
    }
}

#[tokio::test]
async fn overloaded_error_mid_stream_keeps_partial_text_without_retries() {
    let scenario = Scenario::new().push(
        ScriptedResponse::text("one two three four five six").error_after(4, ErrorKind::Overloaded),
    );
    let options = StreamOptions {
        retry: RetryPolicy::none(),
        ..Default::default()
    };
    let (_events, message, _server) = run(Api::AnthropicMessages, scenario, options).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert!(!message.text().is_empty(), "partial text must be kept");
    assert!(
        message
            .error_message
            .unwrap()
            .to_lowercase()
            .contains("overloaded")
    );
}

#[tokio::test]
async fn overloaded_error_mid_stream_is_retried_and_text_is_never_delivered_twice() {
    let scenario = Scenario::new()
        .push(
            ScriptedResponse::text("alpha beta gamma delta").error_after(4, ErrorKind::Overloaded),
        )
        .push(ScriptedResponse::text("alpha beta gamma delta"));
    let options = StreamOptions {
        retry: fast_retry(2),
        ..Default::default()
    };
    let (events, message, _server) = run(Api::AnthropicMessages, scenario, options).await;
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert_eq!(message.text(), "alpha beta gamma delta");
    // A consumer that resets at `retry` sees exactly the final text.
    let mut acc = makai_ai::MessageAccumulator::default();
    for e in &events {
        acc.apply(e);
    }
    assert_eq!(acc.message().text(), "alpha beta gamma delta");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AssistantMessageEvent::Retry { .. }))
    );
}

#[tokio::test]
async fn dropped_connection_mid_stream_is_an_error_with_partial_content() {
    for api in Api::ALL {
        let scenario =
            Scenario::new().push(ScriptedResponse::text("a b c d e f g h").disconnect_after(4));
        let options = StreamOptions {
            retry: RetryPolicy::none(),
            ..Default::default()
        };
        let (events, message, _server) = run(api, scenario, options).await;
        assert_eq!(message.stop_reason, StopReason::Error, "{api}");
        let err = message.error_message.clone().unwrap();
        assert!(
            err.contains("mid-stream") || err.contains("ended before"),
            "{api}: {err}"
        );
        assert_eq!(terminal_count(&events), 1);
    }
}

#[tokio::test]
async fn stream_ending_without_terminal_event_is_an_error() {
    // Events before the cut: enough for some text, never the finish.
    for (api, events) in [
        (Api::AnthropicMessages, 5),
        (Api::OpenAiCompletions, 3),
        (Api::OpenAiResponses, 6),
    ] {
        let scenario =
            Scenario::new().push(ScriptedResponse::text("partial answer here").end_after(events));
        let options = StreamOptions {
            retry: RetryPolicy::none(),
            ..Default::default()
        };
        let (_events, message, _server) = run(api, scenario, options).await;
        assert_eq!(message.stop_reason, StopReason::Error, "{api}");
        assert!(!message.text().is_empty(), "{api}: partial content kept");
    }
}

#[tokio::test]
async fn garbage_bytes_give_a_clear_error() {
    for api in Api::ALL {
        let scenario =
            Scenario::new().push(ScriptedResponse::text("some text here").garbage_after(2));
        let options = StreamOptions {
            retry: RetryPolicy::none(),
            ..Default::default()
        };
        let (_events, message, _server) = run(api, scenario, options).await;
        assert_eq!(message.stop_reason, StopReason::Error, "{api}");
        let err = message.error_message.unwrap();
        assert!(
            err.contains("JSON") || err.contains("UTF-8") || err.contains("malformed"),
            "{api}: {err}"
        );
    }
}

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

#[tokio::test]
async fn missing_key_for_a_hosted_provider_is_a_clear_error_naming_the_variable() {
    // SAFETY of the test: the variable is only removed, never read concurrently by other tests for "groq".
    let mut m = Model::custom(
        Api::OpenAiCompletions,
        "groq",
        "llama",
        "https://api.groq.com/openai/v1",
    );
    m.name = "x".into();
    if std::env::var("GROQ_API_KEY").is_ok() {
        return; // a real key is configured on this machine; nothing to check
    }
    let message = contract::finish(stream(&m, &context(), StreamOptions::default())).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert!(message.error_message.unwrap().contains("GROQ_API_KEY"));
}

#[tokio::test]
async fn api_key_never_appears_in_errors() {
    let secret = "sk-test-very-secret-key-123";
    let scenario = Scenario::new().push(ScriptedResponse::new().with_status(401).with_body(
        format!(r#"{{"error":{{"message":"Incorrect API key provided: {secret}"}}}}"#),
    ));
    let options = StreamOptions {
        api_key: Some(ApiKey::new(secret)),
        retry: RetryPolicy::none(),
        ..Default::default()
    };
    let (events, message, server) = run(Api::OpenAiCompletions, scenario, options).await;
    let err = message.error_message.unwrap();
    assert!(!err.contains(secret), "{err}");
    assert!(err.contains("<redacted>"));
    assert!(!format!("{events:?}").contains(secret));
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(format!("Bearer {secret}").as_str())
    );
}

#[tokio::test]
async fn connection_refused_is_retried_then_reported() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let m = Model::custom(
        Api::OpenAiCompletions,
        "mock",
        "m",
        format!("http://127.0.0.1:{port}/v1"),
    );
    let options = StreamOptions {
        retry: fast_retry(1),
        ..Default::default()
    };
    let mut s = stream(&m, &context(), options);
    let mut retries = 0;
    let mut last = None;
    while let Some(e) = s.next().await {
        if matches!(e, AssistantMessageEvent::Retry { .. }) {
            retries += 1;
        }
        last = Some(e);
    }
    assert_eq!(retries, 1);
    let Some(AssistantMessageEvent::Error { error, .. }) = last else {
        panic!()
    };
    assert!(error.error_message.unwrap().contains("connection"));
}

#[tokio::test]
async fn dropping_a_stream_never_cancels_the_callers_token() {
    let server =
        MockServer::start(Scenario::new().push(ScriptedResponse::text("one two three").delay(20)))
            .await
            .unwrap();
    let m = model(Api::OpenAiCompletions, &server);
    let options = StreamOptions::default();
    let caller_token = options.cancel.clone();
    let mut s = stream(&m, &context(), options);
    let _first = s.next().await;
    drop(s);
    assert!(
        !caller_token.is_cancelled(),
        "the caller's token must survive the stream"
    );
}

/// Model requests do not follow redirects: a 3xx answer is reported with its
/// status, once, and the redirect target is never asked.
#[tokio::test]
async fn a_redirect_is_reported_not_followed() {
    let scenario = Scenario::new()
        .push(
            ScriptedResponse::new()
                .with_status(307)
                .with_body("moved to another region"),
        )
        .push(ScriptedResponse::text("never"));
    let options = StreamOptions {
        retry: fast_retry(2),
        ..Default::default()
    };
    let (_events, message, server) = run(Api::OpenAiCompletions, scenario, options).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    let error = message.error_message.unwrap_or_default();
    assert!(error.contains("307"), "{error}");
    assert_eq!(server.requests().len(), 1);
}

/// Response heads of several KiB (rate-limit and tracing headers behind a CDN)
/// are read; one larger than the client's 8 KiB cap (also nginx's default limit
/// for upstream heads) fails with an error that says so, without retries.
#[tokio::test]
async fn large_response_heads_are_read_and_oversized_ones_are_a_clear_error() {
    let mut big = ScriptedResponse::text("fine");
    for i in 0..40 {
        big = big.with_header(format!("x-trace-{i}"), "t".repeat(120));
    }
    let (_, message, _) = run(
        Api::OpenAiCompletions,
        Scenario::new().push(big),
        StreamOptions::default(),
    )
    .await;
    assert_eq!(message.text(), "fine");

    let mut oversized = ScriptedResponse::text("never read");
    for i in 0..80 {
        oversized = oversized.with_header(format!("x-trace-{i}"), "t".repeat(120));
    }
    let options = StreamOptions {
        retry: fast_retry(2),
        ..Default::default()
    };
    let (events, message, server) = run(
        Api::OpenAiCompletions,
        Scenario::new().push(oversized),
        options,
    )
    .await;
    assert_eq!(message.stop_reason, StopReason::Error);
    let error = message.error_message.unwrap_or_default();
    assert!(error.contains("too large"), "{error}");
    assert_eq!(terminal_count(&events), 1);
    assert_eq!(
        server.requests().len(),
        1,
        "an oversized head is not retried"
    );
}

/// The 8 KiB buffer cap bounds what is read at once, not what is sent: a request
/// body of a long conversation (here 300 KB with multi-byte text) reaches the
/// server whole, for every API.
#[tokio::test]
async fn large_request_bodies_are_sent_whole() {
    let long = "wörd \"quoted\"\n".repeat(20_000);
    for api in [
        Api::OpenAiCompletions,
        Api::AnthropicMessages,
        Api::OpenAiResponses,
        Api::GoogleGenerativeAi,
    ] {
        let server = MockServer::start(Scenario::new().push(ScriptedResponse::text("got it")))
            .await
            .unwrap();
        let m = model(api, &server);
        let context = Context {
            messages: vec![UserMessage::text(long.clone()).into()],
            ..Default::default()
        };
        let message = makai_ai::complete(&m, &context, StreamOptions::default()).await;
        assert_eq!(
            message.text(),
            "got it",
            "{api:?}: {:?}",
            message.error_message
        );
        let requests = server.requests();
        assert_eq!(requests.len(), 1);
        assert!(requests[0].raw_body.len() > long.len(), "{api:?}");
        // The whole text, as a JSON string, is in the body.
        let escaped = serde_json::to_string(&long).unwrap();
        assert!(
            requests[0].raw_body.contains(escaped.trim_matches('"')),
            "{api:?}: the text arrived intact"
        );
    }
}

/// A keep-alive server that answers `answers` requests on each connection
/// with a chunked SSE stream (openai-completions), each event in its own write
/// and the body's end in a last one, then closes the connection when the next
/// request has arrived, as a server whose keep-alive timeout ran out just then;
/// counts the connections it accepted.
async fn keep_alive_sse_server(
    answers: usize,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut read = [0u8; 4096];
                let mut answered = 0;
                loop {
                    // One request: its head, then `content-length` bytes.
                    let (head_end, length) = loop {
                        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
                            let length = head
                                .lines()
                                .find_map(|l| l.strip_prefix("content-length:"))
                                .and_then(|v| v.trim().parse::<usize>().ok())
                                .unwrap_or(0);
                            break (end + 4, length);
                        }
                        let n = socket.read(&mut read).await?;
                        if n == 0 {
                            return std::io::Result::Ok(());
                        }
                        buf.extend_from_slice(&read[..n]);
                    };
                    while buf.len() < head_end + length {
                        let n = socket.read(&mut read).await?;
                        if n == 0 {
                            return Ok(());
                        }
                        buf.extend_from_slice(&read[..n]);
                    }
                    buf.drain(..head_end + length);
                    if answered == answers {
                        return Ok(());
                    }
                    answered += 1;
                    socket
                        .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
                        .await?;
                    for event in [
                        r#"data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"content":"hello"},"finish_reason":null}]}"#,
                        r#"data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
                        "data: [DONE]",
                    ] {
                        let data = format!("{event}\n\n");
                        socket
                            .write_all(format!("{:x}\r\n{data}\r\n", data.len()).as_bytes())
                            .await?;
                    }
                    socket.write_all(b"0\r\n\r\n").await?;
                }
            });
        }
    });
    (format!("http://{addr}/v1"), accepted)
}

/// Regression: the stream marked its body complete only after handing the
/// last events over, and a consumer that drops the stream once it has the
/// terminal event (the agent loop does) dropped it at that hand-off: every
/// request closed its connection and opened a new one.
#[tokio::test]
async fn a_stream_dropped_at_its_terminal_event_leaves_its_connection_for_the_next_request() {
    let (base, accepted) = keep_alive_sse_server(usize::MAX).await;
    let m = Model::custom(Api::OpenAiCompletions, "mock", "mock-model", base);
    for _ in 0..3 {
        let mut s = stream(&m, &context(), StreamOptions::default());
        let mut text = String::new();
        while let Some(event) = s.next().await {
            if let AssistantMessageEvent::Done { message, .. } = &event {
                text = message.text();
                break;
            }
            assert!(!event.is_terminal(), "{event:?}");
        }
        drop(s);
        assert_eq!(text, "hello");
        // The body's end (a separate write) has arrived by the next request.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 1);
}

/// Regression: a pooled connection that the server closed as the next request
/// arrived failed that request; the stream retried it after the retry delay
/// (half a second or more by default) and told the user of a retry (`Retry`, which the
/// agent shows as `auto_retry_start`). The request now goes out again at once
/// on a new connection, and the stream sees nothing of it.
#[tokio::test]
async fn a_server_closing_a_kept_alive_connection_as_the_request_arrives_costs_no_retry() {
    let (base, accepted) = keep_alive_sse_server(1).await;
    let m = Model::custom(Api::OpenAiCompletions, "mock", "mock-model", base);
    for _ in 0..3 {
        // No retries at all: a request that failed would be an error here.
        let options = StreamOptions {
            retry: fast_retry(0),
            ..Default::default()
        };
        let events = stream_hello(&m, options).await;
        let retries = events
            .iter()
            .filter(|e| matches!(e, AssistantMessageEvent::Retry { .. }))
            .count();
        assert_eq!(retries, 0, "{events:?}");
        // The body's end (a separate write) has arrived by the next request.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Each connection answered one request, and was closed under the next.
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 3);
}

/// Streams `m`'s answer to `context()` with `options`, checks the event
/// contract and that it is the text "hello", and returns the events.
async fn stream_hello(m: &Model, options: StreamOptions) -> Vec<AssistantMessageEvent> {
    let events: Vec<_> = stream(m, &context(), options).collect().await;
    contract::assert_stream_contract(&events);
    match events.last() {
        Some(AssistantMessageEvent::Done { message, .. }) => assert_eq!(message.text(), "hello"),
        other => panic!("the stream failed: {other:?}"),
    }
    events
}

/// Waits (at most 5 s) until `count` reads `n`: the server counts a
/// connection when it accepts it, a moment after the client connected.
async fn wait_for_count(count: &std::sync::atomic::AtomicUsize, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while count.load(std::sync::atomic::Ordering::SeqCst) != n && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(count.load(std::sync::atomic::Ordering::SeqCst), n);
}

/// Regression: a request with a connect timeout of its own got an HTTP client
/// of its own, with an empty pool (and the TLS settings loaded anew): every
/// such request opened a new connection, and a preconnect with that timeout
/// was lost.
#[tokio::test]
async fn requests_with_a_connect_timeout_of_their_own_share_connections() {
    let (base, accepted) = keep_alive_sse_server(usize::MAX).await;
    let m = Model::custom(Api::OpenAiCompletions, "mock", "mock-model", base);
    let options = || StreamOptions {
        connect_timeout: Some(Duration::from_millis(2_345)),
        ..Default::default()
    };
    makai_ai::preconnect(&m, &options()).await.unwrap();
    wait_for_count(&accepted, 1).await;
    for _ in 0..2 {
        stream_hello(&m, options()).await;
        // The body's end (a separate write) has arrived by the next request.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 1);
}

/// Every API's request can be built for it: an empty conversation is
/// refused by some request builders (Anthropic's).
#[tokio::test]
async fn preconnect_reaches_the_server_of_every_api() {
    for api in [
        Api::AnthropicMessages,
        Api::OpenAiCompletions,
        Api::OpenAiResponses,
        Api::GoogleGenerativeAi,
        Api::BedrockConverseStream,
    ] {
        let server = MockServer::start(Scenario::new()).await.unwrap();
        makai_ai::preconnect(&model(api, &server), &StreamOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{api:?}: {e}"));
        let deadline = Instant::now() + Duration::from_secs(5);
        while server.connections() == 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(server.connections(), 1, "{api:?}");
        assert_eq!(server.served(), 0, "{api:?}");
    }
}

#[tokio::test]
async fn preconnect_opens_the_connection_the_first_request_takes() {
    let (base, accepted) = keep_alive_sse_server(usize::MAX).await;
    let m = Model::custom(Api::OpenAiCompletions, "mock", "mock-model", base);
    makai_ai::preconnect(&m, &StreamOptions::default())
        .await
        .unwrap();
    wait_for_count(&accepted, 1).await;
    // An idle connection is there: a second call opens none.
    makai_ai::preconnect(&m, &StreamOptions::default())
        .await
        .unwrap();
    stream_hello(&m, StreamOptions::default()).await;
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[tokio::test]
async fn preconnect_to_a_server_that_is_down_says_which_and_why() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let m = Model::custom(
        Api::OpenAiCompletions,
        "mock",
        "mock-model",
        format!("http://{addr}/v1"),
    );
    let error = makai_ai::preconnect(&m, &StreamOptions::default())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with(&format!(
            "connection to http://{addr}/v1/chat/completions failed: "
        )),
        "{error}"
    );
    assert!(error.contains("refused"), "{error}");
}

/// One openai-completions chunk with the text "partial".
const PARTIAL: &str = r#"{"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"content":"partial"},"finish_reason":null}]}"#;

/// Answers one request with `response` (raw bytes), then closes.
async fn raw_server(response: Vec<u8>) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await?;
        let mut seen = Vec::new();
        let mut read = [0u8; 4096];
        while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = socket.read(&mut read).await?;
            if n == 0 {
                return Ok(());
            }
            seen.extend_from_slice(&read[..n]);
        }
        socket.write_all(&response).await?;
        socket.shutdown().await
    });
    format!("http://{addr}/v1")
}

/// Streams openai-completions from a server that answers with `response`,
/// without retries; the error message and the text the error kept.
async fn stream_to_error(response: String) -> (String, String) {
    let base = raw_server(response.into_bytes()).await;
    let m = Model::custom(Api::OpenAiCompletions, "mock", "mock-model", base);
    let options = StreamOptions {
        retry: RetryPolicy::none(),
        ..Default::default()
    };
    let mut s = stream(&m, &context(), options);
    let mut events = Vec::new();
    while let Some(e) = s.next().await {
        events.push(e);
    }
    contract::assert_stream_contract(&events);
    let Some(AssistantMessageEvent::Error { error, .. }) = events.last() else {
        panic!("expected an error: {:?}", events.last());
    };
    let message = error.error_message.clone().unwrap_or_default();
    (message, error.text())
}

/// A chunked body whose framing breaks mid-stream (a chunk-size line that is
/// not hex) ends the stream with an error that names the fault, and the text
/// already streamed is kept.
#[tokio::test]
async fn broken_chunked_framing_mid_stream_is_a_clear_error_with_partial_content() {
    let event = format!("data: {PARTIAL}\n\n");
    let response = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n\
         {:x}\r\n{event}\r\nzz\r\nnot a chunk\r\n",
        event.len()
    );
    let (message, text) = stream_to_error(response).await;
    assert!(
        message.contains("malformed response body") && message.contains("not a hex number"),
        "{message}"
    );
    assert_eq!(text, "partial");
}

/// A `content-length` body the server cuts short is an error that says the
/// connection closed early, not a silently shorter answer.
#[tokio::test]
async fn a_length_body_cut_short_is_a_clear_error() {
    let response = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 4000\r\n\r\n\
         data: {PARTIAL}\n\n"
    );
    let (message, text) = stream_to_error(response).await;
    assert!(
        message.contains("closed the connection before the response was complete"),
        "{message}"
    );
    assert_eq!(text, "partial");
}

/// An openai-completions answer of 40 text deltas and a tool call whose
/// arguments come in two deltas, each event in a chunk of its own, the whole
/// response in one write: one read delivers every chunk.
fn many_chunks_in_one_write() -> Vec<u8> {
    let chunk = |delta: &str, finish: &str| {
        format!(
            r#"{{"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[{{"index":0,"delta":{delta},"finish_reason":{finish}}}]}}"#
        )
    };
    let mut events: Vec<String> = (0..40)
        .map(|i| chunk(&format!(r#"{{"content":"w{i} "}}"#), "null"))
        .collect();
    events.push(chunk(
        r#"{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"read","arguments":""}}]}"#,
        "null",
    ));
    events.push(chunk(
        r#"{"tool_calls":[{"index":0,"function":{"arguments":"{\"pa"}}]}"#,
        "null",
    ));
    events.push(chunk(
        r#"{"tool_calls":[{"index":0,"function":{"arguments":"th\":\"a.txt\"}"}}]}"#,
        "null",
    ));
    events.push(chunk("{}", r#""tool_calls""#));
    events.push("[DONE]".to_string());
    let mut response =
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
            .to_vec();
    for event in events {
        let data = format!("data: {event}\n\n");
        response.extend_from_slice(format!("{:x}\r\n{data}\r\n", data.len()).as_bytes());
    }
    response.extend_from_slice(b"0\r\n\r\n");
    response
}

/// The `(text deltas, tool-call deltas)` of a stream of
/// [`many_chunks_in_one_write`], with its final message.
async fn deltas_of_many_chunks(merge_deltas: bool) -> (Vec<String>, Vec<String>, AssistantMessage) {
    let base = raw_server(many_chunks_in_one_write()).await;
    let m = Model::custom(Api::OpenAiCompletions, "mock", "mock-model", base);
    let options = StreamOptions {
        retry: RetryPolicy::none(),
        merge_deltas,
        ..Default::default()
    };
    let (events, message) = contract::collect(stream(&m, &context(), options)).await;
    assert_eq!(message.stop_reason, StopReason::ToolUse, "{message:?}");
    let (mut text, mut args) = (Vec::new(), Vec::new());
    for event in &events {
        match event {
            AssistantMessageEvent::TextDelta { delta, .. } => text.push(delta.to_string()),
            AssistantMessageEvent::ToolcallDelta { delta, .. } => args.push(delta.to_string()),
            _ => {}
        }
    }
    (text, args, message)
}

/// With `merge_deltas`, the chunks one read delivered reach the consumer as
/// one delta per block; the text, the arguments and the message are the
/// same as with one event per delta.
#[tokio::test]
async fn merged_deltas_hand_over_one_delta_per_block_per_read() {
    let (text, args, message) = deltas_of_many_chunks(true).await;
    let (each_text, each_args, each_message) = deltas_of_many_chunks(false).await;
    assert_eq!(each_text.len(), 40, "one event per delta without merging");
    assert_eq!(each_args.len(), 2);
    // One write: one read on loopback. (A second read would add one event.)
    assert!(text.len() <= 2, "{} text deltas: {text:?}", text.len());
    assert!(args.len() <= 2, "{args:?}");
    assert_eq!(text.concat(), each_text.concat());
    assert_eq!(args.concat(), r#"{"path":"a.txt"}"#);
    assert_eq!(message.content, each_message.content);
    let call = message.tool_calls().next().unwrap();
    assert_eq!(call.arguments["path"], "a.txt");
}
