//! One door to a model: every model call of a session (a tool round, a
//! background title, an automatic and a manual compaction) goes through the
//! session's `ProtocolClient`, so a layer around it sees exactly the requests
//! the model server received.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use common::*;
use makai_ai::{AssistantMessageEventStream, Context, Model, ProtocolClient, StreamOptions};
use makai_mockllm::{Scenario, ScriptedResponse};
use serde_json::json;

/// Counts the calls it passes on.
struct Counting {
    inner: Arc<dyn ProtocolClient>,
    calls: Arc<AtomicUsize>,
}

#[async_trait]
impl ProtocolClient for Counting {
    async fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: StreamOptions,
    ) -> AssistantMessageEventStream {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.inner.stream(model, context, options).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_layer_around_the_client_sees_every_model_call_of_a_session() {
    let env = Env::new();
    // Budget 1,024 tokens; keep only the last turn when compacting.
    env.settings(json!({"compaction": {"reserveTokens": 127_000, "keepRecentTokens": 40}}));
    let server = makai_mockllm::MockServer::start(
        Scenario::new()
            .push(ScriptedResponse::tool_call("c1", "ls", "{}"))
            .push(ScriptedResponse::text("Listed the files."))
            .push(ScriptedResponse::text("Title: Listing files"))
            .push(ScriptedResponse::text("AUTO SUMMARY"))
            .push(ScriptedResponse::text("long answer"))
            .push(ScriptedResponse::text("MANUAL SUMMARY")),
    )
    .await
    .unwrap();
    let args = run_args(&env, &server.base_url_v1(), &[]);
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let app = build_layered(
        &env,
        &args,
        Box::new(move |inner| {
            Arc::new(Counting {
                inner,
                calls: counter,
            })
        }),
    )
    .await;

    // A tool round.
    app.prompt("list the files".into(), Vec::new())
        .await
        .unwrap()
        .await
        .unwrap();
    app.wait_settled(Duration::from_secs(10)).await;
    // The background title.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while app.session_name().is_none() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(app.session_name().as_deref(), Some("Listing files"));
    // A prompt over the budget: an automatic compaction, then the call.
    let outcome = app
        .prompt(format!("explain {}", "word ".repeat(1500)), Vec::new())
        .await
        .unwrap()
        .await
        .unwrap();
    assert_eq!(outcome.messages.last().unwrap().text(), "long answer");
    app.wait_settled(Duration::from_secs(10)).await;
    // A manual compaction.
    let info = app.compact(None).await.unwrap();
    assert_eq!(info.summary, "MANUAL SUMMARY");

    let received = server.requests();
    assert_eq!(received.len(), 6, "the scripted answers were all used");
    assert_eq!(
        calls.load(Ordering::SeqCst),
        received.len(),
        "the layer saw every request the server received"
    );
    let auto = received[3].body["messages"].to_string();
    assert!(auto.contains("list the files"), "{auto}");
    server.assert_request_invariants();
}
