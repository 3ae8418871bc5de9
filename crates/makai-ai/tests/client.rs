//! `InProcessClient`: the in-process door to a model, and its one key resolver.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use makai_ai::credentials::KeyProvider;
use makai_ai::{
    Api, ApiKey, Context, InProcessClient, Model, ProtocolClient, RetryPolicy, StopReason,
    StreamOptions, UserMessage,
};
use makai_mockllm::{MockServer, Scenario, ScriptedResponse};

/// Hands out a new key per request, counting the requests it was asked for.
struct RotatingKeys {
    asked: AtomicUsize,
    fail: bool,
}

#[async_trait]
impl KeyProvider for RotatingKeys {
    async fn api_key(&self, provider: &str) -> Result<Option<ApiKey>, String> {
        let n = self.asked.fetch_add(1, Ordering::SeqCst);
        if self.fail {
            return Err(format!("no login for {provider}: run `makai auth login`"));
        }
        Ok(Some(ApiKey::new(format!("sk-{provider}-{n}"))))
    }
}

fn context() -> Context {
    Context {
        messages: vec![UserMessage::text("hi").into()],
        ..Default::default()
    }
}

fn options() -> StreamOptions {
    StreamOptions {
        retry: RetryPolicy::none(),
        ..Default::default()
    }
}

#[tokio::test]
async fn the_key_provider_is_asked_once_per_request_without_a_key() {
    let server = MockServer::start(
        Scenario::new()
            .push(ScriptedResponse::text("one"))
            .push(ScriptedResponse::text("two"))
            .push(ScriptedResponse::text("three")),
    )
    .await
    .unwrap();
    let model = Model::custom(Api::OpenAiCompletions, "mock", "m", server.base_url_v1());
    let keys = Arc::new(RotatingKeys {
        asked: AtomicUsize::new(0),
        fail: false,
    });
    let client = InProcessClient::with_keys(keys.clone());
    for expected in ["one", "two"] {
        let reply = client.complete(&model, &context(), options()).await;
        assert_eq!(reply.text(), expected, "{:?}", reply.error_message);
    }
    // A key in the options wins; the provider is not asked.
    let mut explicit = options();
    explicit.api_key = Some(ApiKey::new("sk-explicit"));
    let reply = client.complete(&model, &context(), explicit).await;
    assert_eq!(reply.text(), "three");
    assert_eq!(keys.asked.load(Ordering::SeqCst), 2);
    let auth: Vec<_> = server
        .requests()
        .iter()
        .map(|r| r.header("authorization").unwrap().to_string())
        .collect();
    assert_eq!(
        auth,
        ["Bearer sk-mock-0", "Bearer sk-mock-1", "Bearer sk-explicit"]
    );
    server.assert_request_invariants();
}

#[tokio::test]
async fn a_refused_key_fails_the_call_with_its_reason_and_sends_nothing() {
    let server = MockServer::start(Scenario::new()).await.unwrap();
    let model = Model::custom(Api::AnthropicMessages, "mock", "m", server.base_url_v1());
    let client = InProcessClient::with_keys(Arc::new(RotatingKeys {
        asked: AtomicUsize::new(0),
        fail: true,
    }));
    let reply = client.complete(&model, &context(), options()).await;
    assert_eq!(reply.stop_reason, StopReason::Error);
    assert_eq!(
        reply.error_message.as_deref(),
        Some("no login for mock: run `makai auth login`")
    );
    assert!(server.requests().is_empty());
}
