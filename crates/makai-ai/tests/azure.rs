//! Azure OpenAI / Azure AI Foundry over loopback: the resource URL normalised
//! to `/openai/v1`, deployments, the `api-version` query and the `api-key`
//! header checked by the scripted server, Entra ID tokens (static, or a service
//! principal's from a token endpoint), for Responses and Chat Completions.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use common::contract;

use makai_ai::{
    Api, Context, EnvOverrides, Model, ModelCost, RetryPolicy, StopReason, StreamOptions,
    UserMessage, stream,
};
use makai_mockllm::{AzureRules, MockServer, Scenario, ScriptedResponse, TokenEndpoint, Usage};

fn context() -> Context {
    Context {
        messages: vec![UserMessage::text("hi").into()],
        ..Default::default()
    }
}

fn base_env(server: &MockServer) -> EnvOverrides {
    let mut env = EnvOverrides::default();
    env.set("AZURE_OPENAI_BASE_URL", server.url())
        .set("AZURE_OPENAI_RESOURCE_NAME", "")
        .set("AZURE_OPENAI_API_KEY", "")
        .set("AZURE_OPENAI_AD_TOKEN", "")
        .set("AZURE_TENANT_ID", "")
        .set("AZURE_CLIENT_ID", "")
        .set("AZURE_CLIENT_SECRET", "")
        .set("AZURE_OPENAI_API_VERSION", "")
        .set("AZURE_OPENAI_DEPLOYMENT_NAME_MAP", "");
    env
}

fn options(env: EnvOverrides) -> StreamOptions {
    StreamOptions {
        env,
        retry: RetryPolicy::none(),
        ..Default::default()
    }
}

fn responses_model() -> Model {
    let mut m = Model::custom(Api::AzureOpenAiResponses, "azure", "gpt-5.4", "");
    m.cost = ModelCost {
        input: 2.5,
        output: 15.0,
        cache_read: 0.25,
        cache_write: 0.0,
        tiers: Vec::new(),
    };
    m.reasoning = true;
    m
}

#[tokio::test]
async fn responses_with_api_key_deployment_and_api_version() {
    let server = MockServer::start(
        Scenario::new()
            .push(ScriptedResponse::text("from Azure").usage(Usage::new(20, 10).with_cache(80, 0))),
    )
    .await
    .unwrap();
    server.require_azure(AzureRules {
        api_version: "2025-04-01-preview".into(),
        api_key: Some("azure-key-123".into()),
        ..Default::default()
    });
    let mut env = base_env(&server);
    env.set("AZURE_OPENAI_API_KEY", "azure-key-123")
        .set("AZURE_OPENAI_API_VERSION", "2025-04-01-preview")
        .set(
            "AZURE_OPENAI_DEPLOYMENT_NAME_MAP",
            "gpt-4o=other,gpt-5.4=prod-gpt54",
        );
    let msg = contract::finish(stream(&responses_model(), &context(), options(env))).await;
    assert_eq!(msg.stop_reason, StopReason::Stop, "{:?}", msg.error_message);
    assert_eq!(msg.text(), "from Azure");
    assert_eq!(
        msg.model, "gpt-5.4",
        "the message names the model, not the deployment"
    );
    let want = (20.0 * 2.5 + 10.0 * 15.0 + 80.0 * 0.25) / 1e6;
    assert!(
        (msg.usage.cost.total - want).abs() < 1e-12,
        "{:?}",
        msg.usage
    );
    let req = &server.requests()[0];
    assert_eq!(req.path, "/openai/v1/responses");
    assert_eq!(req.query.as_deref(), Some("api-version=2025-04-01-preview"));
    assert_eq!(req.header("api-key"), Some("azure-key-123"));
    assert!(
        req.header("authorization").is_none(),
        "the key is not also sent as a bearer token"
    );
    assert_eq!(req.body["model"], "prod-gpt54");
}

#[tokio::test]
async fn chat_completions_on_foundry_with_an_entra_token() {
    let server = MockServer::start(Scenario::new().push(ScriptedResponse::text("foundry")))
        .await
        .unwrap();
    server.require_azure(AzureRules {
        api_version: "v1".into(),
        bearer: Some("entra-token-xyz".into()),
        ..Default::default()
    });
    let mut env = base_env(&server);
    env.set("AZURE_OPENAI_AD_TOKEN", "entra-token-xyz");
    let m = Model::custom(Api::OpenAiCompletions, "azure", "deepseek-v4-pro", "");
    let msg = contract::finish(stream(&m, &context(), options(env))).await;
    assert_eq!(msg.stop_reason, StopReason::Stop, "{:?}", msg.error_message);
    let req = &server.requests()[0];
    assert_eq!(req.path, "/openai/v1/chat/completions");
    assert_eq!(req.query.as_deref(), Some("api-version=v1"));
    assert_eq!(req.header("authorization"), Some("Bearer entra-token-xyz"));
    server.assert_request_invariants();
}

#[tokio::test]
async fn a_service_principal_gets_its_token_from_the_token_endpoint() {
    let server = MockServer::start(Scenario::new().push(ScriptedResponse::text("as a principal")))
        .await
        .unwrap();
    server.serve_tokens(TokenEndpoint {
        client: Some(("app-id".into(), "app-secret".into())),
        ..Default::default()
    });
    server.require_azure(AzureRules {
        api_version: "v1".into(),
        accept_issued_tokens: true,
        ..Default::default()
    });
    let mut env = base_env(&server);
    env.set("AZURE_TENANT_ID", "tenant-1")
        .set("AZURE_CLIENT_ID", "app-id")
        .set("AZURE_CLIENT_SECRET", "app-secret")
        .set("AZURE_AUTHORITY_HOST", server.url());
    let msg = contract::finish(stream(&responses_model(), &context(), options(env.clone()))).await;
    assert_eq!(msg.text(), "as a principal", "{:?}", msg.error_message);
    let token_request = &server.requests()[0];
    assert_eq!(token_request.path, "/tenant-1/oauth2/v2.0/token");
    assert!(
        token_request
            .raw_body
            .contains("scope=https%3A%2F%2Fcognitiveservices.azure.com%2F.default")
    );
    assert!(
        server.requests()[1]
            .header("authorization")
            .unwrap()
            .starts_with("Bearer ya29.mock-token-")
    );

    // A wrong secret: the endpoint's refusal, without the secret.
    env.set("AZURE_CLIENT_ID", "app-id-2")
        .set("AZURE_CLIENT_SECRET", "wrong-secret-value");
    let e = contract::finish(stream(&responses_model(), &context(), options(env)))
        .await
        .error_message
        .unwrap();
    assert!(
        e.contains("Entra ID token endpoint") && e.contains("invalid_client"),
        "{e}"
    );
    assert!(!e.contains("wrong-secret-value"), "{e}");
}

#[tokio::test]
async fn missing_endpoint_and_refused_key_are_clear_errors() {
    let server = MockServer::start(Scenario::new().push(ScriptedResponse::text("unused")))
        .await
        .unwrap();
    server.require_azure(AzureRules {
        api_version: "v1".into(),
        api_key: Some("right".into()),
        ..Default::default()
    });
    let mut env = base_env(&server);
    env.set("AZURE_OPENAI_API_KEY", "wrong-key-value");
    let msg = contract::finish(stream(&responses_model(), &context(), options(env.clone()))).await;
    let e = msg.error_message.unwrap();
    assert!(
        e.contains("HTTP 401") && e.contains("invalid subscription key"),
        "{e}"
    );
    assert!(!e.contains("wrong-key-value"), "{e}");
    env.set("AZURE_OPENAI_BASE_URL", "");
    let e = contract::finish(stream(&responses_model(), &context(), options(env)))
        .await
        .error_message
        .unwrap();
    assert!(
        e.contains("AZURE_OPENAI_BASE_URL") && e.contains("AZURE_OPENAI_RESOURCE_NAME"),
        "{e}"
    );
}
