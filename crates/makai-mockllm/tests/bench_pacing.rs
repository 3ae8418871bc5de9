//! The bench script's pacing: replayed in one write, or streamed an event per
//! write with an optional pace, the same bytes either way.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use futures::StreamExt;
use makai_mockllm::{BenchPacing, MockServer, Scenario, bench_responder};
use serde_json::{Value, json};

async fn bench_server(pacing: BenchPacing) -> MockServer {
    let s = MockServer::start(Scenario::from_responder(bench_responder(4, 1, pacing)))
        .await
        .unwrap();
    // Hand-written bodies that only carry what the bench responder reads.
    s.skip_invariant_check();
    s
}

/// The body of one request, frame by frame, and how long it took.
async fn frames(server: &MockServer, path: &str, body: &Value) -> (Vec<Vec<u8>>, Duration) {
    let started = Instant::now();
    let resp = client()
        .post(format!("{}{path}", server.base_url_v1()))
        .json(body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let mut stream = resp.bytes_stream();
    let mut out = Vec::new();
    while let Some(frame) = stream.next().await {
        out.push(frame.unwrap().to_vec());
    }
    (out, started.elapsed())
}

fn requests() -> [(&'static str, Value); 2] {
    let messages = json!([{"role": "user", "content": "go"}]);
    [
        (
            "/chat/completions",
            json!({"model": "m", "stream": true, "messages": messages}),
        ),
        (
            "/messages",
            json!({"model": "m", "stream": true, "max_tokens": 10, "messages": messages}),
        ),
    ]
}

#[tokio::test]
async fn streamed_bench_sends_the_replayed_bytes_one_event_per_frame() {
    let replay = bench_server(BenchPacing::Replay).await;
    let stream = bench_server(BenchPacing::Stream {
        delay: Duration::ZERO,
    })
    .await;
    for (path, body) in requests() {
        let (whole, _) = frames(&replay, path, &body).await;
        let (events, _) = frames(&stream, path, &body).await;
        assert_eq!(whole.concat(), events.concat(), "{path}: same bytes");
        let blank_lines = events.concat().windows(2).filter(|w| w == b"\n\n").count();
        assert_eq!(events.len(), blank_lines, "{path}: one frame per event");
        for event in &events {
            assert!(event.ends_with(b"\n\n"), "{path}: {event:?}");
        }
    }
}

#[tokio::test]
async fn paced_bench_keeps_the_pace_of_each_event() {
    let delay = Duration::from_millis(20);
    let server = bench_server(BenchPacing::Stream { delay }).await;
    for (path, body) in requests() {
        let (events, took) = frames(&server, path, &body).await;
        assert!(events.len() >= 8, "{path}: {} events", events.len());
        // Every event waits its turn, the first one included.
        let least = delay * events.len() as u32;
        assert!(took >= least, "{path}: {took:?} < {least:?}");
    }
}
