//! Connections of `stream()` through real HTTP on loopback: kept-alive
//! connections reused and lost, preconnects, broken framing, and several
//! events delivered by one read.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use crate::http_behaviour::{context, fast_retry, model};
use common::contract;

use std::time::{Duration, Instant};

use futures::StreamExt;
use makai_ai::{
    Api, AssistantMessage, AssistantMessageEvent, Model, RetryPolicy, StopReason, StreamOptions,
    stream,
};
use makai_mockllm::{MockServer, Scenario};

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
