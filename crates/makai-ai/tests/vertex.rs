//! Google Vertex AI end to end over loopback: Application Default Credentials
//! (a service-account key signed into a JWT and exchanged at the token endpoint
//! the scripted server serves, or gcloud's user credentials), tokens cached and
//! refreshed, Gemini and Claude on Vertex, and the errors for missing settings.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use common::contract;

use std::path::Path;
use std::time::Duration;

use makai_ai::{
    Api, AssistantMessageEvent, Context, EnvOverrides, Model, ModelCost, RetryPolicy, StopReason,
    StreamOptions, UserMessage, stream,
};
use makai_mockllm::{MockServer, Scenario, ScriptedResponse, TokenEndpoint, Usage};

const EMAIL: &str = "makai-test@makai-test-project.iam.gserviceaccount.com";

fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/google")
}

fn model(api: Api, id: &str) -> Model {
    let mut m = Model::custom(
        api,
        "google-vertex",
        id,
        "https://{location}-aiplatform.googleapis.com",
    );
    m.cost = ModelCost {
        input: 0.3,
        output: 2.5,
        cache_read: 0.03,
        cache_write: 0.0,
        tiers: Vec::new(),
    };
    m
}

fn context() -> Context {
    Context {
        messages: vec![UserMessage::text("hi").into()],
        ..Default::default()
    }
}

/// A service-account key file naming the server's token endpoint.
fn service_account(dir: &Path, server: &MockServer) -> std::path::PathBuf {
    let key = std::fs::read_to_string(fixtures().join("test-service-account-key.pem")).unwrap();
    let file = serde_json::json!({
        "type": "service_account",
        "project_id": "makai-test-project",
        "private_key_id": "test-key-1",
        "private_key": key,
        "client_email": EMAIL,
        "client_id": "1234567890",
        "token_uri": server.token_url(),
    });
    let path = dir.join("sa.json");
    std::fs::write(&path, file.to_string()).unwrap();
    path
}

fn tokens() -> TokenEndpoint {
    TokenEndpoint {
        client_email: Some(EMAIL.into()),
        public_key_der: Some(
            std::fs::read(fixtures().join("test-service-account-public.der")).unwrap(),
        ),
        ..Default::default()
    }
}

/// The environment of a Vertex user pointed at `server` (as a private endpoint would be).
fn env(credentials: &Path, base: &str) -> EnvOverrides {
    let mut env = EnvOverrides::default();
    env.set(
        "GOOGLE_APPLICATION_CREDENTIALS",
        credentials.display().to_string(),
    )
    .set("GOOGLE_CLOUD_PROJECT", "makai-test-project")
    .set("GOOGLE_CLOUD_LOCATION", "us-east5")
    .set("GOOGLE_CLOUD_API_KEY", "")
    .set("MAKAI_TEST_BASE", base);
    env
}

fn options(env: EnvOverrides) -> StreamOptions {
    StreamOptions {
        env,
        retry: RetryPolicy {
            max_retries: 1,
            initial_delay: Duration::from_millis(10),
            max_delay: Duration::from_secs(1),
        },
        ..Default::default()
    }
}

/// `model` with its base URL on the scripted server.
fn at(mut m: Model, server: &MockServer) -> Model {
    m.base_url = server.url();
    m
}

#[tokio::test]
async fn gemini_on_vertex_with_a_service_account_token_cached_across_calls() {
    let server = MockServer::start(
        Scenario::new()
            .push(
                ScriptedResponse::text("Hello from Vertex")
                    .usage(Usage::new(10, 5).with_cache(100, 0)),
            )
            .push(ScriptedResponse::text("again")),
    )
    .await
    .unwrap();
    server.serve_tokens(tokens());
    let dir = tempfile::tempdir().unwrap();
    let sa = service_account(dir.path(), &server);
    let m = at(model(Api::GoogleVertex, "gemini-2.5-flash"), &server);
    let first = contract::finish(stream(&m, &context(), options(env(&sa, &server.url())))).await;
    assert_eq!(
        first.stop_reason,
        StopReason::Stop,
        "{:?}",
        first.error_message
    );
    assert_eq!(first.text(), "Hello from Vertex");
    assert_eq!(first.api, "google-vertex");
    assert_eq!((first.usage.input, first.usage.cache_read), (10, 100));
    let want = (10.0 * 0.3 + 5.0 * 2.5 + 100.0 * 0.03) / 1e6;
    assert!((first.usage.cost.total - want).abs() < 1e-12);
    let second = contract::finish(stream(&m, &context(), options(env(&sa, &server.url())))).await;
    assert_eq!(second.text(), "again");
    assert_eq!(
        server.tokens_issued(),
        1,
        "the token is cached between calls"
    );
    let req = &server
        .requests()
        .into_iter()
        .find(|r| r.path.contains("publishers"))
        .unwrap();
    assert_eq!(
        req.path,
        "/v1/projects/makai-test-project/locations/us-east5/publishers/google/models/gemini-2.5-flash:streamGenerateContent"
    );
    assert_eq!(req.query.as_deref(), Some("alt=sse"));
    assert_eq!(
        req.header("authorization"),
        Some("Bearer ya29.mock-token-1")
    );
    assert!(req.header("x-goog-api-key").is_none());
    server.assert_request_invariants();
}

#[tokio::test]
async fn an_expired_token_is_refreshed_once_then_a_clear_error() {
    let server = MockServer::start(
        Scenario::new()
            .push(ScriptedResponse::text("first"))
            .push(ScriptedResponse::text("after refresh")),
    )
    .await
    .unwrap();
    server.serve_tokens(TokenEndpoint {
        lifetime: Duration::from_secs(3600),
        ..tokens()
    });
    let dir = tempfile::tempdir().unwrap();
    let sa = service_account(dir.path(), &server);
    // A distinct key file: its own cache entry (the cache is process-wide).
    let m = at(model(Api::GoogleVertex, "gemini-2.5-pro"), &server);
    let first = contract::finish(stream(&m, &context(), options(env(&sa, "a")))).await;
    assert_eq!(first.text(), "first");
    server.expire_tokens();
    let mut events = stream(&m, &context(), options(env(&sa, "a")));
    let mut retries = 0;
    let mut last = None;
    while let Some(e) = futures::StreamExt::next(&mut events).await {
        retries += usize::from(matches!(e, AssistantMessageEvent::Retry { .. }));
        last = Some(e);
    }
    let Some(AssistantMessageEvent::Done { message, .. }) = last else {
        panic!("{last:?}")
    };
    assert_eq!(message.text(), "after refresh");
    assert_eq!(retries, 1);
    assert_eq!(server.tokens_issued(), 2);

    // The token endpoint now refuses the key: refreshed once, then the error.
    server.expire_tokens();
    server.serve_tokens(TokenEndpoint {
        client_email: Some("someone-else@x".into()),
        ..tokens()
    });
    let msg = contract::finish(stream(&m, &context(), options(env(&sa, "a")))).await;
    assert_eq!(msg.stop_reason, StopReason::Error);
    let e = msg.error_message.unwrap();
    assert!(
        e.contains("HTTP 401")
            && e.contains("refreshing the credentials failed")
            && e.contains("Invalid issuer"),
        "{e}"
    );
    assert!(!e.contains("ya29."), "{e}");
}

#[tokio::test]
async fn claude_on_vertex_uses_stream_raw_predict_and_the_anthropic_stream() {
    let server = MockServer::start(
        Scenario::new().push(
            ScriptedResponse::new()
                .with_thinking_signed("Hmm.", "sig-v")
                .with_text("Claude here")
                .usage(Usage::new(7, 3)),
        ),
    )
    .await
    .unwrap();
    server.serve_tokens(tokens());
    let dir = tempfile::tempdir().unwrap();
    let sa = service_account(dir.path(), &server);
    let mut m = at(
        model(Api::AnthropicVertex, "claude-sonnet-4-5@20250929"),
        &server,
    );
    m.cost = ModelCost {
        input: 3.0,
        output: 15.0,
        cache_read: 0.3,
        cache_write: 3.75,
        tiers: Vec::new(),
    };
    let msg = contract::finish(stream(&m, &context(), options(env(&sa, "b")))).await;
    assert_eq!(msg.stop_reason, StopReason::Stop, "{:?}", msg.error_message);
    assert_eq!(msg.text(), "Claude here");
    assert_eq!(msg.thinking(), "Hmm.");
    assert!((msg.usage.cost.total - (7.0 * 3.0 + 3.0 * 15.0) / 1e6).abs() < 1e-12);
    let req = server
        .requests()
        .into_iter()
        .find(|r| r.path.contains("publishers"))
        .unwrap();
    assert_eq!(
        req.path,
        "/v1/projects/makai-test-project/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"
    );
    assert_eq!(req.body["anthropic_version"], "vertex-2023-10-16");
    assert!(req.body.get("model").is_none());
    assert!(
        req.header("authorization")
            .unwrap()
            .starts_with("Bearer ya29.mock-token-")
    );
    server.assert_request_invariants();
}

#[tokio::test]
async fn gcloud_user_credentials_are_exchanged_with_their_refresh_token() {
    let server = MockServer::start(Scenario::new().push(ScriptedResponse::text("as a user")))
        .await
        .unwrap();
    server.serve_tokens(TokenEndpoint {
        user: Some((
            "client-1.apps.googleusercontent.com".into(),
            "user-secret".into(),
            "1//refresh-token".into(),
        )),
        ..Default::default()
    });
    let dir = tempfile::tempdir().unwrap();
    // gcloud's well-known file, found through CLOUDSDK_CONFIG.
    std::fs::write(
        dir.path().join("application_default_credentials.json"),
        serde_json::json!({
            "type": "authorized_user",
            "client_id": "client-1.apps.googleusercontent.com",
            "client_secret": "user-secret",
            "refresh_token": "1//refresh-token",
            "token_uri": server.token_url(),
        })
        .to_string(),
    )
    .unwrap();
    let mut e = env(Path::new(""), "c");
    e.set("GOOGLE_APPLICATION_CREDENTIALS", "")
        .set("CLOUDSDK_CONFIG", dir.path().display().to_string());
    let m = at(model(Api::GoogleVertex, "gemini-2.5-flash-lite"), &server);
    let msg = contract::finish(stream(&m, &context(), options(e))).await;
    assert_eq!(msg.stop_reason, StopReason::Stop, "{:?}", msg.error_message);
    assert_eq!(msg.text(), "as a user");
}

#[tokio::test]
async fn missing_project_location_or_credentials_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let m = model(Api::GoogleVertex, "gemini-2.5-flash");
    let mut e = EnvOverrides::default();
    e.set("GOOGLE_APPLICATION_CREDENTIALS", "")
        .set("GOOGLE_CLOUD_API_KEY", "")
        .set("CLOUDSDK_CONFIG", dir.path().display().to_string())
        .set("GOOGLE_CLOUD_PROJECT", "p")
        .set("GOOGLE_CLOUD_LOCATION", "us-central1");
    let err = contract::finish(stream(&m, &context(), options(e.clone())))
        .await
        .error_message
        .unwrap();
    assert!(
        err.contains("no Google Cloud credentials")
            && err.contains("gcloud auth application-default login"),
        "{err}"
    );

    let server = MockServer::start(Scenario::new()).await.unwrap();
    server.serve_tokens(tokens());
    let sa = service_account(dir.path(), &server);
    let mut e = env(&sa, "d");
    e.set("GOOGLE_CLOUD_PROJECT", "").set("GCLOUD_PROJECT", "");
    let err = contract::finish(stream(&m, &context(), options(e)))
        .await
        .error_message
        .unwrap();
    assert!(err.contains("GOOGLE_CLOUD_PROJECT"), "{err}");
}

#[tokio::test]
async fn an_api_key_uses_the_express_endpoint_header() {
    let server = MockServer::start(Scenario::new().push(ScriptedResponse::text("express")))
        .await
        .unwrap();
    let m = at(model(Api::GoogleVertex, "gemini-2.5-flash"), &server);
    let mut e = EnvOverrides::default();
    e.set("GOOGLE_CLOUD_API_KEY", "AIza-test-key")
        .set("GOOGLE_CLOUD_LOCATION", "");
    let msg = contract::finish(stream(&m, &context(), options(e))).await;
    assert_eq!(msg.text(), "express", "{:?}", msg.error_message);
    let req = &server.requests()[0];
    assert_eq!(
        req.path,
        "/v1/publishers/google/models/gemini-2.5-flash:streamGenerateContent"
    );
    assert_eq!(req.header("x-goog-api-key"), Some("AIza-test-key"));
    assert!(req.header("authorization").is_none());
}

#[test]
fn the_service_account_jwt_is_signed_and_holds_no_key() {
    let key = std::fs::read_to_string(fixtures().join("test-service-account-key.pem")).unwrap();
    let jwt = makai_ai::credentials::google::service_account_jwt(
        EMAIL,
        &key,
        Some("kid-1"),
        "https://oauth2.googleapis.com/token",
        std::time::SystemTime::now(),
    )
    .unwrap();
    let parts: Vec<&str> = jwt.split('.').collect();
    assert_eq!(parts.len(), 3);
    let public = std::fs::read(fixtures().join("test-service-account-public.der")).unwrap();
    let verifier = aws_lc_rs::signature::UnparsedPublicKey::new(
        &aws_lc_rs::signature::RSA_PKCS1_2048_8192_SHA256,
        public,
    );
    use base64::Engine;
    let sig = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(parts[2])
        .unwrap();
    verifier
        .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &sig)
        .unwrap();
    assert!(!jwt.contains("PRIVATE"));
    let err = makai_ai::credentials::google::service_account_jwt(
        EMAIL,
        "not a key",
        None,
        "x",
        std::time::SystemTime::now(),
    )
    .unwrap_err();
    assert!(err.contains("not a PEM private key"), "{err}");
}
