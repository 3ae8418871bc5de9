//! How often the CLI reads a model stream: every `streamReadIntervalMs`
//! (8 ms unless the settings say otherwise, 0 to read as data arrives). The
//! model call of each run carries it in its options, and the answer arrives
//! whole through the real HTTP client either way.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use common::*;
use makai_ai::{AssistantMessageEventStream, Context, Model, ProtocolClient, StreamOptions};
use makai_mockllm::{Scenario, ScriptedResponse};
use serde_json::json;

/// Records the read interval of each call it passes on.
struct Recording {
    inner: Arc<dyn ProtocolClient>,
    seen: Arc<Mutex<Vec<Option<Duration>>>>,
}

#[async_trait]
impl ProtocolClient for Recording {
    async fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: StreamOptions,
    ) -> AssistantMessageEventStream {
        self.seen.lock().unwrap().push(options.read_interval);
        self.inner.stream(model, context, options).await
    }
}

const ANSWER: &str = "one two three four five six seven eight nine ten";

/// Runs one prompt with `interval` as `streamReadIntervalMs` (unset when
/// `None`); returns the read interval of its model call.
async fn read_interval_of_a_run(interval: Option<u64>) -> Option<Duration> {
    let env = Env::new();
    // No background title: a second call.
    let mut settings = json!({"autoTitle": false});
    if let Some(ms) = interval {
        settings["streamReadIntervalMs"] = json!(ms);
    }
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
async fn a_run_reads_its_stream_every_8_ms_by_default() {
    assert_eq!(
        read_interval_of_a_run(None).await,
        Some(Duration::from_millis(8))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_setting_sets_the_read_interval_and_0_reads_as_data_arrives() {
    assert_eq!(
        read_interval_of_a_run(Some(20)).await,
        Some(Duration::from_millis(20))
    );
    assert_eq!(read_interval_of_a_run(Some(0)).await, None);
}
