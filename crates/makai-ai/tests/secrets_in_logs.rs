//! Keys, tokens, secrets and signatures never reach the logs, at any level:
//! every event and span of makai and its dependencies (hyper, aws-sigv4, ...) is
//! captured at TRACE while calls succeed, fail, retry and refresh credentials,
//! and none may contain a secret. Error texts are checked too.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use common::contract;

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use makai_ai::{
    Api, Context, EnvOverrides, Model, RetryPolicy, StreamOptions, UserMessage, stream,
};
use makai_mockllm::sigv4::AwsKey;
use makai_mockllm::{AwsRules, AzureRules, MockServer, Scenario, ScriptedResponse, TokenEndpoint};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// Records every field of every event and span.
struct Capture {
    text: Arc<Mutex<String>>,
    next: AtomicU64,
}

struct Fields<'a>(&'a mut String);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, "{}={value:?} ", field.name());
    }
}

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Some(tracing::level_filters::LevelFilter::TRACE)
    }
    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let mut t = self.text.lock().unwrap();
        attrs.record(&mut Fields(&mut t));
        t.push('\n');
        Id::from_u64(self.next.fetch_add(1, Ordering::Relaxed) + 1)
    }
    fn record(&self, _: &Id, values: &Record<'_>) {
        let mut t = self.text.lock().unwrap();
        values.record(&mut Fields(&mut t));
        t.push('\n');
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut t = self.text.lock().unwrap();
        let _ = write!(t, "{} ", event.metadata().target());
        event.record(&mut Fields(&mut t));
        t.push('\n');
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

const SECRET_KEY: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
const SESSION_TOKEN: &str = "FQoGZXIvYXdzEXAMPLESESSIONTOKEN0123456789";
const AZURE_KEY: &str = "azure-secret-key-0123456789abcdef";
const ANTHROPIC_KEY: &str = "sk-ant-api03-secret-key-value";

fn context() -> Context {
    Context {
        messages: vec![UserMessage::text("hi").into()],
        ..Default::default()
    }
}

fn fast() -> RetryPolicy {
    RetryPolicy {
        max_retries: 1,
        initial_delay: Duration::from_millis(5),
        max_delay: Duration::from_secs(1),
    }
}

/// Runs the calls; returns every error text and every log line.
async fn scenarios() -> String {
    let mut errors = String::new();
    let home = tempfile::tempdir().unwrap();

    // Bedrock: a signed call with temporary credentials, then a refused signature.
    let server = MockServer::start(Scenario::new().push(ScriptedResponse::text("ok")))
        .await
        .unwrap();
    server.require_aws(AwsRules {
        region: "us-east-1".into(),
        service: "bedrock".into(),
        keys: vec![AwsKey::new("AKIDLOGTEST", SECRET_KEY).with_session_token(SESSION_TOKEN)],
        ..Default::default()
    });
    let mut env = EnvOverrides::default();
    env.set("AWS_ACCESS_KEY_ID", "AKIDLOGTEST")
        .set("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
        .set("AWS_SESSION_TOKEN", SESSION_TOKEN)
        .set("AWS_REGION", "us-east-1")
        .set("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", server.url())
        .set(
            "AWS_CONFIG_FILE",
            home.path().join("c").display().to_string(),
        )
        .set(
            "AWS_SHARED_CREDENTIALS_FILE",
            home.path().join("k").display().to_string(),
        );
    let bedrock = Model::custom(
        Api::BedrockConverseStream,
        "amazon-bedrock",
        "anthropic.claude-x",
        "https://bedrock-runtime.us-east-1.amazonaws.com",
    );
    let msg = contract::finish(stream(
        &bedrock,
        &context(),
        StreamOptions {
            env: env.clone(),
            retry: fast(),
            ..Default::default()
        },
    ))
    .await;
    assert_eq!(msg.text(), "ok", "{:?}", msg.error_message);
    server.expire_aws_key("AKIDLOGTEST");
    let msg = contract::finish(stream(
        &bedrock,
        &context(),
        StreamOptions {
            env,
            retry: fast(),
            ..Default::default()
        },
    ))
    .await;
    errors.push_str(&msg.error_message.unwrap_or_default());

    // Vertex: a service account's token, expired and refreshed.
    let server = MockServer::start(
        Scenario::new()
            .push(ScriptedResponse::text("a"))
            .push(ScriptedResponse::text("b")),
    )
    .await
    .unwrap();
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/google");
    server.serve_tokens(TokenEndpoint {
        client_email: Some("log@test.iam.gserviceaccount.com".into()),
        public_key_der: Some(
            std::fs::read(fixtures.join("test-service-account-public.der")).unwrap(),
        ),
        ..Default::default()
    });
    let key = std::fs::read_to_string(fixtures.join("test-service-account-key.pem")).unwrap();
    let sa = home.path().join("sa.json");
    std::fs::write(&sa, serde_json::json!({"type": "service_account", "client_email": "log@test.iam.gserviceaccount.com", "private_key": key, "token_uri": server.token_url()}).to_string()).unwrap();
    let mut env = EnvOverrides::default();
    env.set("GOOGLE_APPLICATION_CREDENTIALS", sa.display().to_string())
        .set("GOOGLE_CLOUD_PROJECT", "p")
        .set("GOOGLE_CLOUD_LOCATION", "us-east5")
        .set("GOOGLE_CLOUD_API_KEY", "");
    let mut vertex = Model::custom(Api::GoogleVertex, "google-vertex", "gemini-2.5-flash", "x");
    vertex.base_url = server.url();
    let options = StreamOptions {
        env,
        retry: fast(),
        ..Default::default()
    };
    contract::finish(stream(&vertex, &context(), options.clone())).await;
    server.expire_tokens();
    let msg = contract::finish(stream(&vertex, &context(), options)).await;
    assert_eq!(msg.text(), "b", "{:?}", msg.error_message);

    // Azure: a refused key.
    let server = MockServer::start(Scenario::new()).await.unwrap();
    server.require_azure(AzureRules {
        api_version: "v1".into(),
        api_key: Some("other".into()),
        ..Default::default()
    });
    let mut env = EnvOverrides::default();
    env.set("AZURE_OPENAI_BASE_URL", server.url())
        .set("AZURE_OPENAI_API_KEY", AZURE_KEY);
    let azure = Model::custom(Api::AzureOpenAiResponses, "azure", "gpt-5.4", "");
    let msg = contract::finish(stream(
        &azure,
        &context(),
        StreamOptions {
            env,
            retry: fast(),
            ..Default::default()
        },
    ))
    .await;
    errors.push_str(&msg.error_message.unwrap_or_default());

    // Anthropic: a key, a 429 retried, then a 401.
    let server = MockServer::start(
        Scenario::new()
            .push(
                ScriptedResponse::new()
                    .with_status(429)
                    .with_header("retry-after", "0"),
            )
            .push(ScriptedResponse::new().with_status(401)),
    )
    .await
    .unwrap();
    let anthropic = Model::custom(
        Api::AnthropicMessages,
        "anthropic",
        "claude-x",
        server.base_url_v1(),
    );
    let options = StreamOptions {
        api_key: Some(ANTHROPIC_KEY.into()),
        retry: fast(),
        ..Default::default()
    };
    let msg = contract::finish(stream(&anthropic, &context(), options)).await;
    errors.push_str(&msg.error_message.unwrap_or_default());
    errors
}

#[test]
fn no_secret_in_any_log_line_or_error() {
    let text = Arc::new(Mutex::new(String::new()));
    let capture = Capture {
        text: text.clone(),
        next: AtomicU64::new(0),
    };
    let errors = tracing::subscriber::with_default(capture, || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(scenarios())
    });
    let logs = text.lock().unwrap().clone();
    assert!(
        logs.lines().count() > 50,
        "the capture saw the calls:\n{logs}"
    );
    assert!(logs.contains("retrying"), "the retries were logged");
    for secret in [
        SECRET_KEY,
        SESSION_TOKEN,
        AZURE_KEY,
        ANTHROPIC_KEY,
        "ya29.mock-token-1",
        "ya29.mock-token-2",
        "PRIVATE KEY",
    ] {
        assert!(!logs.contains(secret), "a log line holds {secret}");
        assert!(
            !errors.contains(secret),
            "an error holds {secret}: {errors}"
        );
    }
    // A signature is a secret too (it authorises the request for minutes).
    assert!(!logs.contains("Signature="), "a log line holds a signature");
    assert!(
        errors.contains("HTTP 403") && errors.contains("HTTP 401"),
        "{errors}"
    );
}
