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

pub(crate) fn model(api: Api, server: &MockServer) -> Model {
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

pub(crate) fn context() -> Context {
    Context {
        messages: vec![UserMessage::text("hi").into()],
        ..Default::default()
    }
}

pub(crate) fn fast_retry(max_retries: u32) -> RetryPolicy {
    RetryPolicy {
        max_retries,
        initial_delay: Duration::from_millis(10),
        max_delay: Duration::from_secs(5),
    }
}

pub(crate) async fn run(
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
