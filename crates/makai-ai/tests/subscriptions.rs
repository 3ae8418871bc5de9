//! Subscription providers through the in-process client and a key provider:
//! the ChatGPT Codex endpoint (its URL, headers and body) and GitHub Copilot
//! (bearer tokens on every API, its headers), and a token the provider
//! rejects refreshed once through the key provider.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use base64::Engine;
use makai_ai::credentials::KeyProvider;
use makai_ai::{
    Api, ApiKey, AssistantMessage, Context, InProcessClient, Model, ModelCost, ProtocolClient,
    RetryPolicy, StopReason, StreamOptions, UserContent, UserMessage,
};
use makai_mockllm::{MockServer, Scenario, ScriptedResponse, Usage};

/// Hands out `tokens[0]`, and the next one on each refresh.
struct Keys {
    tokens: Vec<String>,
    at: Mutex<usize>,
    refreshes: Mutex<usize>,
}

impl Keys {
    fn new(tokens: &[&str]) -> Arc<Self> {
        Arc::new(Keys {
            tokens: tokens.iter().map(|t| t.to_string()).collect(),
            at: Mutex::new(0),
            refreshes: Mutex::new(0),
        })
    }
}

#[async_trait]
impl KeyProvider for Keys {
    async fn api_key(&self, _provider: &str) -> Result<Option<ApiKey>, String> {
        Ok(Some(ApiKey::new(
            self.tokens[*self.at.lock().unwrap()].clone(),
        )))
    }
    async fn refresh(&self, provider: &str) -> Result<Option<ApiKey>, String> {
        *self.refreshes.lock().unwrap() += 1;
        {
            let mut at = self.at.lock().unwrap();
            *at = (*at + 1).min(self.tokens.len() - 1);
        }
        self.api_key(provider).await
    }
}

/// A Codex access token: a JWT whose claims name the ChatGPT account.
fn codex_token(account: &str) -> String {
    let b = |v: serde_json::Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
    };
    format!(
        "{}.{}.signature",
        b(serde_json::json!({"alg": "RS256"})),
        b(
            serde_json::json!({"https://api.openai.com/auth": {"chatgpt_account_id": account}, "exp": 4_000_000_000u64})
        )
    )
}

async fn complete(
    client: &InProcessClient,
    model: &Model,
    context: &Context,
    options: StreamOptions,
) -> AssistantMessage {
    client.complete(model, context, options).await
}

#[tokio::test]
async fn codex_endpoint_headers_and_body() {
    let server = MockServer::start(
        Scenario::new().push(ScriptedResponse::text("from ChatGPT").usage(Usage::new(30, 12))),
    )
    .await
    .unwrap();
    let token = codex_token("acct-123");
    let client = InProcessClient::with_keys(Keys::new(&[&token]));
    let mut m = Model::custom(
        Api::OpenAiCodexResponses,
        "openai-codex",
        "gpt-5.3-codex",
        format!("{}/backend-api", server.url()),
    );
    m.reasoning = true;
    m.cost = ModelCost {
        input: 1.75,
        output: 14.0,
        cache_read: 0.175,
        cache_write: 0.0,
        tiers: Vec::new(),
    };
    let context = Context {
        messages: vec![UserMessage::text("hi").into()],
        ..Default::default()
    };
    let options = StreamOptions {
        session_id: Some("session-42".into()),
        max_tokens: Some(1000),
        ..Default::default()
    };
    let msg = complete(&client, &m, &context, options).await;
    assert_eq!(msg.stop_reason, StopReason::Stop, "{:?}", msg.error_message);
    assert_eq!(msg.text(), "from ChatGPT");
    assert_eq!(msg.api, "openai-codex-responses");
    assert!((msg.usage.cost.total - (30.0 * 1.75 + 12.0 * 14.0) / 1e6).abs() < 1e-12);
    let req = &server.requests()[0];
    assert_eq!(req.path, "/backend-api/codex/responses");
    assert_eq!(
        req.header("authorization"),
        Some(format!("Bearer {token}").as_str())
    );
    assert_eq!(req.header("chatgpt-account-id"), Some("acct-123"));
    assert_eq!(req.header("openai-beta"), Some("responses=experimental"));
    assert_eq!(req.header("originator"), Some("makai"));
    assert_eq!(req.header("session_id"), Some("session-42"));
    assert_eq!(req.body["store"], false);
    assert!(
        req.body["instructions"]
            .as_str()
            .is_some_and(|s| !s.is_empty())
    );
    assert!(
        req.body.get("max_output_tokens").is_none(),
        "the Codex endpoint rejects max_output_tokens"
    );
    assert_eq!(req.body["prompt_cache_key"], "session-42");
}

#[tokio::test]
async fn a_rejected_subscription_token_is_refreshed_once_through_the_key_provider() {
    let server = MockServer::start(
        Scenario::new()
            .push(ScriptedResponse::new().with_status(401).with_body(r#"{"error":{"message":"Your authentication token has expired. Please try signing in again."}}"#))
            .push(ScriptedResponse::text("after refresh"))
            .push(ScriptedResponse::new().with_status(401).with_body(r#"{"error":{"message":"token expired"}}"#))
            .push(ScriptedResponse::new().with_status(401).with_body(r#"{"error":{"message":"token expired"}}"#)),
    )
    .await
    .unwrap();
    let (old, new) = (codex_token("acct-1"), codex_token("acct-2"));
    let keys = Keys::new(&[&old, &new]);
    let client = InProcessClient::with_keys(keys.clone());
    let m = Model::custom(
        Api::OpenAiCodexResponses,
        "openai-codex",
        "gpt-5.3-codex",
        format!("{}/backend-api", server.url()),
    );
    let context = Context {
        messages: vec![UserMessage::text("hi").into()],
        ..Default::default()
    };
    let options = StreamOptions {
        retry: RetryPolicy::none(),
        ..Default::default()
    };
    let msg = complete(&client, &m, &context, options.clone()).await;
    assert_eq!(msg.text(), "after refresh", "{:?}", msg.error_message);
    assert_eq!(*keys.refreshes.lock().unwrap(), 1);
    let auth: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.header("chatgpt-account-id").unwrap().to_string())
        .collect();
    assert_eq!(auth, ["acct-1", "acct-2"]);
    // The refreshed token is rejected too: one refresh, then the error.
    let msg = complete(&client, &m, &context, options).await;
    assert_eq!(msg.stop_reason, StopReason::Error);
    let e = msg.error_message.unwrap();
    assert!(e.contains("HTTP 401") && e.contains("token expired"), "{e}");
    assert!(!e.contains(&new), "{e}");
}

const COPILOT_TOKEN: &str = "tid=abc;exp=4000000000;sku=copilot_individual;proxy-ep=proxy.individual.githubcopilot.com;8kp=1:secret-part";

#[tokio::test]
async fn copilot_bearer_token_and_headers_on_every_api() {
    for api in [
        Api::OpenAiCompletions,
        Api::OpenAiResponses,
        Api::AnthropicMessages,
    ] {
        let server = MockServer::start(Scenario::new().push(ScriptedResponse::text("copilot")))
            .await
            .unwrap();
        let client = InProcessClient::with_keys(Keys::new(&[COPILOT_TOKEN]));
        let mut m = Model::custom(api, "github-copilot", "claude-sonnet-4.5", server.url());
        m.input = vec![makai_ai::Modality::Text, makai_ai::Modality::Image];
        m.headers
            .insert("Copilot-Integration-Id".into(), "vscode-chat".into());
        let mut first = UserMessage::text("what is in this picture?");
        first
            .content
            .push(UserContent::image("iVBORw0KGgo=", "image/png"));
        let context = Context {
            messages: vec![first.into()],
            ..Default::default()
        };
        let msg = complete(&client, &m, &context, StreamOptions::default()).await;
        assert_eq!(msg.text(), "copilot", "{api}: {:?}", msg.error_message);
        let req = &server.requests()[0];
        assert_eq!(
            req.header("authorization"),
            Some(format!("Bearer {COPILOT_TOKEN}").as_str()),
            "{api}"
        );
        assert!(req.header("x-api-key").is_none(), "{api}");
        assert_eq!(req.header("x-initiator"), Some("user"), "{api}");
        assert_eq!(
            req.header("openai-intent"),
            Some("conversation-edits"),
            "{api}"
        );
        assert_eq!(req.header("copilot-vision-request"), Some("true"), "{api}");
        assert_eq!(
            req.header("copilot-integration-id"),
            Some("vscode-chat"),
            "{api}"
        );
        server.assert_request_invariants();
    }
}

#[tokio::test]
async fn copilot_marks_follow_up_turns_as_agent_initiated() {
    let server = MockServer::start(Scenario::new().push(ScriptedResponse::text("ok")))
        .await
        .unwrap();
    let client = InProcessClient::with_keys(Keys::new(&[COPILOT_TOKEN]));
    let m = Model::custom(
        Api::OpenAiCompletions,
        "github-copilot",
        "gpt-5-mini",
        server.url(),
    );
    let mut args = serde_json::Map::new();
    args.insert("path".into(), "a".into());
    let call = makai_ai::ToolCall::new("call_1", "read", args);
    let assistant = AssistantMessage {
        content: vec![makai_ai::AssistantContent::ToolCall(call)],
        stop_reason: StopReason::ToolUse,
        ..Default::default()
    };
    let context = Context {
        messages: vec![
            UserMessage::text("read a").into(),
            assistant.into(),
            makai_ai::ToolResultMessage::text("call_1", "read", "contents", false).into(),
        ],
        ..Default::default()
    };
    let msg = complete(&client, &m, &context, StreamOptions::default()).await;
    assert_eq!(msg.text(), "ok", "{:?}", msg.error_message);
    let req = &server.requests()[0];
    assert_eq!(req.header("x-initiator"), Some("agent"));
    assert!(req.header("copilot-vision-request").is_none());
}
