//! Scripted faults over real HTTP: disconnects, garbage, stalls, in-stream
//! errors, missing terminals, delays and verbatim replay.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use futures::StreamExt;
use makai_mockllm::{ErrorKind, MockServer, Scenario, ScriptedResponse};
use serde_json::json;

async fn server(responses: Vec<ScriptedResponse>) -> MockServer {
    MockServer::start(Scenario::new().extend(responses))
        .await
        .unwrap()
}

fn chat_body() -> serde_json::Value {
    json!({"model": "m", "stream": true, "messages": []})
}

/// Reads a streaming body until it ends or fails: (bytes, chunks, error?).
async fn read_all(resp: reqwest::Response) -> (Vec<u8>, usize, Option<reqwest::Error>) {
    let mut stream = resp.bytes_stream();
    let mut out = Vec::new();
    let mut chunks = 0;
    while let Some(item) = stream.next().await {
        match item {
            Ok(b) => {
                chunks += 1;
                out.extend_from_slice(&b);
            }
            Err(e) => return (out, chunks, Some(e)),
        }
    }
    (out, chunks, None)
}

#[tokio::test]
async fn disconnect_gives_body_error() {
    let s = server(vec![
        ScriptedResponse::text("a b c d e f").disconnect_after(3),
    ])
    .await;
    let resp = client()
        .post(format!("{}/chat/completions", s.base_url_v1()))
        .json(&chat_body())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let (bytes, _, err) = read_all(resp).await;
    let err = err.expect("the body must fail, not end cleanly");
    assert!(err.is_body() || err.is_decode(), "{err:?}");
    let events = parse_sse(std::str::from_utf8(&bytes).unwrap());
    assert_eq!(events.len(), 3);
}

#[tokio::test]
async fn garbage_after_events() {
    let s = server(vec![ScriptedResponse::text("a b c").garbage_after(2)]).await;
    let resp = client()
        .post(format!("{}/messages", s.base_url_v1()))
        .json(&chat_body())
        .send()
        .await
        .unwrap();
    let (bytes, _, err) = read_all(resp).await;
    assert!(err.is_none(), "garbage ends cleanly");
    assert!(
        std::str::from_utf8(&bytes).is_err(),
        "contains invalid UTF-8"
    );
    let cut = bytes
        .windows(15)
        .position(|w| w == b"data: {not json")
        .expect("garbage present");
    let events = parse_sse(std::str::from_utf8(&bytes[..cut]).unwrap());
    assert_eq!(events.len(), 2);
    assert_eq!(events[0].name.as_deref(), Some("message_start"));
}

#[tokio::test]
async fn stall_keeps_connection_open_until_client_or_server_leaves() {
    let s = server(vec![
        ScriptedResponse::text("a b c d").stall_after(2),
        ScriptedResponse::text("after"),
        ScriptedResponse::text("x y").stall_after(1),
    ])
    .await;
    let url = format!("{}/chat/completions", s.base_url_v1());
    let resp = client().post(&url).json(&chat_body()).send().await.unwrap();
    let mut stream = resp.bytes_stream();
    let mut got = Vec::new();
    while parse_sse_lenient(&got) < 2 {
        got.extend_from_slice(&stream.next().await.unwrap().unwrap());
    }
    let waited = tokio::time::timeout(Duration::from_millis(300), stream.next()).await;
    assert!(waited.is_err(), "nothing more arrives while stalled");
    drop(stream); // the client leaves; the server keeps serving
    let (_, _, text) = post(&url, &chat_body()).await;
    assert_eq!(assemble_chat(&parse_sse(&text)).text, "after");

    // Dropping the server ends a stalled stream promptly.
    let resp = client().post(&url).json(&chat_body()).send().await.unwrap();
    let mut stream = resp.bytes_stream();
    stream.next().await.unwrap().unwrap();
    drop(s);
    let end = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match stream.next().await {
                Some(Ok(_)) => continue,
                Some(Err(_)) => return true,
                None => return false,
            }
        }
    })
    .await
    .expect("stalled stream ends when the server is dropped");
    assert!(end, "ended with a body error");
}

/// Counts complete events in a partial body.
fn parse_sse_lenient(bytes: &[u8]) -> usize {
    String::from_utf8_lossy(bytes).matches("\n\n").count()
}

#[tokio::test]
async fn in_stream_error_events_per_api() {
    let resp =
        || ScriptedResponse::text("one two three four").error_after(2, ErrorKind::Overloaded);
    let s = server(vec![resp(), resp(), resp(), resp()]).await;

    let (_, _, text) = post(
        &format!("{}/chat/completions", s.base_url_v1()),
        &chat_body(),
    )
    .await;
    let events = parse_sse(&text);
    assert_eq!(events.len(), 3);
    let err = events[2].json();
    assert_eq!(err["error"]["type"], "server_error");
    assert!(err["error"]["message"].is_string());

    let (_, _, text) = post(&format!("{}/messages", s.base_url_v1()), &chat_body()).await;
    let events = parse_sse(&text);
    assert_eq!(events.len(), 3);
    assert_eq!(events[2].name.as_deref(), Some("error"));
    assert_eq!(
        events[2].json(),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    );

    let (_, _, text) = post(&format!("{}/responses", s.base_url_v1()), &chat_body()).await;
    let events = parse_sse(&text);
    assert_eq!(events.len(), 3);
    assert_eq!(events[2].name.as_deref(), Some("response.failed"));
    let failed = events[2].json();
    assert_eq!(failed["sequence_number"], 2);
    assert_eq!(failed["response"]["status"], "failed");
    assert!(failed["response"]["error"]["message"].is_string());

    let url = format!("{}/v1beta/models/g:streamGenerateContent?alt=sse", s.url());
    let (_, _, text) = post(&url, &json!({})).await;
    let events = parse_sse(&text);
    assert_eq!(events.len(), 3);
    assert_eq!(events[2].json()["error"]["code"], 503);
    assert_eq!(events[2].json()["error"]["status"], "UNAVAILABLE");
}

#[tokio::test]
async fn omit_terminal_and_end_after() {
    let resp = || ScriptedResponse::text("one two").omit_terminal();
    let s = server(vec![
        resp(),
        resp(),
        resp(),
        resp(),
        ScriptedResponse::text("a b c d").end_after(2),
    ])
    .await;
    let (_, _, text) = post(
        &format!("{}/chat/completions", s.base_url_v1()),
        &chat_body(),
    )
    .await;
    let a = assemble_chat(&parse_sse(&text));
    assert_eq!((a.text.as_str(), a.terminated), ("one two", false));
    assert_eq!(a.stop.as_deref(), Some("stop"));

    let (_, _, text) = post(&format!("{}/messages", s.base_url_v1()), &chat_body()).await;
    let a = assemble_anthropic(&parse_sse(&text));
    assert_eq!((a.text.as_str(), a.terminated), ("one two", false));

    let (_, _, text) = post(&format!("{}/responses", s.base_url_v1()), &chat_body()).await;
    let a = assemble_responses(&parse_sse(&text));
    assert_eq!((a.text.as_str(), a.terminated), ("one two", false));

    let url = format!("{}/v1beta/models/g:streamGenerateContent?alt=sse", s.url());
    let (_, _, text) = post(&url, &json!({})).await;
    let a = assemble_gemini(&parse_sse(&text));
    assert_eq!((a.text.as_str(), a.terminated), ("one two", false));

    let (_, _, text) = post(
        &format!("{}/chat/completions", s.base_url_v1()),
        &chat_body(),
    )
    .await;
    let events = parse_sse(&text);
    assert_eq!(events.len(), 2, "role chunk + first word, then a clean end");
    assert_eq!(assemble_chat(&events).text, "a ");
}

#[tokio::test]
async fn delay_per_event() {
    let s = server(vec![ScriptedResponse::text("a b c").delay(60)]).await;
    let start = Instant::now();
    let resp = client()
        .post(format!("{}/chat/completions", s.base_url_v1()))
        .json(&chat_body())
        .send()
        .await
        .unwrap();
    let (bytes, chunks, err) = read_all(resp).await;
    assert!(err.is_none());
    // role + 3 words + finish + [DONE] = 6 events, 60 ms before each.
    assert_eq!(parse_sse(std::str::from_utf8(&bytes).unwrap()).len(), 6);
    assert!(
        start.elapsed() >= Duration::from_millis(300),
        "{:?}",
        start.elapsed()
    );
    assert!(chunks >= 3, "events arrive separately ({chunks} chunks)");
}

#[tokio::test]
async fn replay_bytes_and_file_are_byte_identical() {
    let mut transcript = b"event: message_start\ndata: {\"type\":\"message_start\"}\n\n".to_vec();
    transcript.extend_from_slice(b"data: \xff\xfe odd bytes \r\n\r\n: comment\n\n");
    transcript.extend((0u8..=255).cycle().take(3000));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.sse");
    std::fs::write(&file, &transcript).unwrap();
    let s = server(vec![
        ScriptedResponse::replay(transcript.clone()),
        ScriptedResponse::new()
            .replay_bytes(transcript.clone())
            .chunk_size(7)
            .delay(1),
        ScriptedResponse::new().replay_file(&file).chunk_size(1000),
        ScriptedResponse::new().replay_file(dir.path().join("missing.sse")),
    ])
    .await;
    let url = format!("{}/messages", s.base_url_v1());
    for expect_chunks in [1, 10, 2] {
        let resp = client().post(&url).json(&chat_body()).send().await.unwrap();
        assert_eq!(resp.headers()["content-type"], "text/event-stream");
        let (bytes, chunks, err) = read_all(resp).await;
        assert!(err.is_none());
        assert_eq!(bytes, transcript, "byte-for-byte identical");
        assert!(chunks >= expect_chunks, "{chunks} < {expect_chunks}");
    }
    let (status, _, text) = post(&url, &chat_body()).await;
    assert_eq!(status, 500);
    assert!(text.contains("cannot read replay file"), "{text}");
}
