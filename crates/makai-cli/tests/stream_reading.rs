//! How the CLI reads a model stream: every `streamReadIntervalMs` (16 ms
//! unless the settings say otherwise, 0 to read as data arrives), the deltas
//! of one read merged into one event unless `streamMergeDeltas` is false.
//! The model call of each run carries both in its options, and the answer
//! arrives whole through the real HTTP client either way.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use common::*;
use makai_ai::{AssistantMessageEventStream, Context, Model, ProtocolClient, StreamOptions};
use makai_mockllm::{Scenario, ScriptedResponse};
use serde_json::json;

/// How a call asked to read its stream.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Reading {
    interval: Option<Duration>,
    merge_deltas: bool,
}

/// Records how each call it passes on reads its stream.
struct Recording {
    inner: Arc<dyn ProtocolClient>,
    seen: Arc<Mutex<Vec<Reading>>>,
}

#[async_trait]
impl ProtocolClient for Recording {
    async fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: StreamOptions,
    ) -> AssistantMessageEventStream {
        self.seen.lock().unwrap().push(Reading {
            interval: options.read_interval,
            merge_deltas: options.merge_deltas,
        });
        self.inner.stream(model, context, options).await
    }
}

const ANSWER: &str = "one two three four five six seven eight nine ten";

/// Runs one prompt with `settings` (and `autoTitle` off: a background title
/// is a second call); returns how its model call reads its stream.
async fn reading_of_a_run(mut settings: serde_json::Value) -> Reading {
    let env = Env::new();
    settings["autoTitle"] = json!(false);
    env.settings(settings);
    let server =
        makai_mockllm::MockServer::start(Scenario::new().push(ScriptedResponse::text(ANSWER)))
            .await
            .unwrap();
    let args = run_args(&env, &server.base_url_v1(), &["--no-session"]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let app = build_layered(
        &env,
        &args,
        Box::new(move |inner| {
            Arc::new(Recording {
                inner,
                seen: record,
            })
        }),
    )
    .await;
    let outcome = app
        .prompt("count to ten".into(), Vec::new())
        .await
        .unwrap()
        .await
        .unwrap();
    assert_eq!(outcome.messages.last().unwrap().text(), ANSWER);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1, "one model call: {seen:?}");
    seen[0]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_reads_its_stream_every_16_ms_with_deltas_merged_by_default() {
    assert_eq!(
        reading_of_a_run(json!({})).await,
        Reading {
            interval: Some(Duration::from_millis(16)),
            merge_deltas: true
        }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_setting_sets_the_read_interval_and_0_reads_as_data_arrives() {
    let interval = |ms| async move {
        reading_of_a_run(json!({"streamReadIntervalMs": ms}))
            .await
            .interval
    };
    assert_eq!(interval(20).await, Some(Duration::from_millis(20)));
    assert_eq!(interval(0).await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_merge_deltas_false_hands_over_every_delta() {
    let reading = reading_of_a_run(json!({"streamMergeDeltas": false})).await;
    assert!(!reading.merge_deltas, "{reading:?}");
    assert_eq!(reading.interval, Some(Duration::from_millis(16)));
}
