//! Amazon Bedrock end to end over loopback: the scripted server speaks
//! ConverseStream's binary event stream and recomputes every SigV4 signature;
//! credentials come from the AWS chain (environment, profiles,
//! `credential_process`) or a Bedrock API key; faults: expired credentials,
//! throttling inside the stream, a corrupt frame, a 403 naming the permission.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use common::contract;

use makai_ai::{
    Api, AssistantMessageEvent, Context, EnvOverrides, Model, ModelCost, RetryPolicy, StopReason,
    StreamOptions, ToolDefinition, UserMessage, stream,
};
use makai_mockllm::sigv4::AwsKey;
use makai_mockllm::{AwsRules, ErrorKind, MockServer, Scenario, ScriptedResponse, Usage};
use serde_json::json;

const KEY_ID: &str = "AKIAMAKAITEST0001";
const SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

fn model() -> Model {
    let mut m = Model::custom(
        Api::BedrockConverseStream,
        "amazon-bedrock",
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        "https://bedrock-runtime.us-east-1.amazonaws.com",
    );
    m.cost = ModelCost {
        input: 3.0,
        output: 15.0,
        cache_read: 0.3,
        cache_write: 3.75,
        tiers: Vec::new(),
    };
    m
}

fn context() -> Context {
    Context {
        system_prompt: Some("Be brief.".into()),
        messages: vec![UserMessage::text("Read a.txt").into()],
        tools: vec![ToolDefinition {
            name: "read".into(),
            description: "Read a file".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }],
    }
}

/// An environment that points the AWS chain at nothing on this machine.
fn base_env(server: &MockServer, home: &std::path::Path) -> EnvOverrides {
    let mut env = EnvOverrides::default();
    env.set("HOME", home.display().to_string())
        .set("AWS_CONFIG_FILE", home.join("config").display().to_string())
        .set(
            "AWS_SHARED_CREDENTIALS_FILE",
            home.join("credentials").display().to_string(),
        )
        .set("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", server.url())
        .set("AWS_REGION", "eu-west-3");
    for unset in [
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_BEARER_TOKEN_BEDROCK",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    ] {
        env.set(unset, "");
    }
    env
}

fn rules(keys: Vec<AwsKey>) -> AwsRules {
    AwsRules {
        region: "eu-west-3".into(),
        service: "bedrock".into(),
        keys,
        ..Default::default()
    }
}

fn options(env: EnvOverrides) -> StreamOptions {
    StreamOptions {
        env,
        retry: RetryPolicy {
            max_retries: 2,
            initial_delay: std::time::Duration::from_millis(10),
            max_delay: std::time::Duration::from_secs(1),
        },
        ..Default::default()
    }
}

#[tokio::test]
async fn signed_stream_with_reasoning_text_tool_call_usage_and_cost() {
    let server = MockServer::start(
        Scenario::new().push(
            ScriptedResponse::new()
                .with_thinking_signed("I should read it.", "sig-1")
                .with_text("Reading a.txt.")
                .with_tool_call("tooluse_1", "read", r#"{"path":"a.txt"}"#)
                .usage(Usage::new(120, 40).with_cache(1000, 200)),
        ),
    )
    .await
    .unwrap();
    server.require_aws(rules(vec![
        AwsKey::new(KEY_ID, SECRET).with_session_token("session-tok"),
    ]));
    let home = tempfile::tempdir().unwrap();
    let mut env = base_env(&server, home.path());
    env.set("AWS_ACCESS_KEY_ID", KEY_ID)
        .set("AWS_SECRET_ACCESS_KEY", SECRET)
        .set("AWS_SESSION_TOKEN", "session-tok");
    let mut events = stream(&model(), &context(), options(env));
    let mut seen = Vec::new();
    while let Some(e) = futures::StreamExt::next(&mut events).await {
        seen.push(e);
    }
    contract::assert_stream_contract(&seen);
    let msg = match seen.last().unwrap() {
        AssistantMessageEvent::Done { message, .. } => message.clone(),
        other => panic!("expected done, got {other:?}"),
    };
    assert_eq!(msg.stop_reason, StopReason::ToolUse);
    assert_eq!(msg.api, "bedrock-converse-stream");
    assert_eq!(msg.thinking(), "I should read it.");
    assert_eq!(msg.text(), "Reading a.txt.");
    assert_eq!(msg.tool_calls().next().unwrap().arguments["path"], "a.txt");
    assert_eq!(
        (
            msg.usage.input,
            msg.usage.output,
            msg.usage.cache_read,
            msg.usage.cache_write
        ),
        (120, 40, 1000, 200)
    );
    let want = (120.0 * 3.0 + 40.0 * 15.0 + 1000.0 * 0.3 + 200.0 * 3.75) / 1e6;
    assert!(
        (msg.usage.cost.total - want).abs() < 1e-12,
        "{:?}",
        msg.usage.cost
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let req = &requests[0];
    assert_eq!(
        req.path,
        "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
    );
    assert!(
        req.header("authorization")
            .unwrap()
            .starts_with("AWS4-HMAC-SHA256 Credential=AKIAMAKAITEST0001/")
    );
    assert!(
        req.header("authorization")
            .unwrap()
            .contains("/eu-west-3/bedrock/aws4_request")
    );
    assert_eq!(req.header("x-amz-security-token"), Some("session-tok"));
    assert_eq!(req.body["system"][0]["text"], "Be brief.");
    server.assert_request_invariants();
}

#[tokio::test]
async fn bedrock_api_key_is_a_bearer_token() {
    let server = MockServer::start(Scenario::new().push(ScriptedResponse::text("hi")))
        .await
        .unwrap();
    server.require_aws(AwsRules {
        api_keys: vec!["bedrock-api-key-123".into()],
        ..rules(vec![])
    });
    let home = tempfile::tempdir().unwrap();
    let mut env = base_env(&server, home.path());
    env.set("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key-123");
    let msg = contract::finish(stream(&model(), &context(), options(env))).await;
    assert_eq!(msg.stop_reason, StopReason::Stop, "{:?}", msg.error_message);
    assert_eq!(msg.text(), "hi");
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some("Bearer bedrock-api-key-123")
    );
}

#[tokio::test]
async fn profile_credentials_from_the_shared_files() {
    let server = MockServer::start(Scenario::new().push(ScriptedResponse::text("from profile")))
        .await
        .unwrap();
    server.require_aws(rules(vec![AwsKey::new("AKIAPROFILE", "profile-secret")]));
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config"),
        "[default]\nregion = us-east-1\n[profile work]\nregion = eu-west-3\n",
    )
    .unwrap();
    std::fs::write(
        home.path().join("credentials"),
        "[default]\naws_access_key_id = AKIAWRONG\naws_secret_access_key = wrong\n[work]\nAWS_ACCESS_KEY_ID = AKIAPROFILE\naws_secret_access_key = profile-secret\n",
    )
    .unwrap();
    let mut env = base_env(&server, home.path());
    env.set("AWS_PROFILE", "work").set("AWS_REGION", "");
    let msg = contract::finish(stream(&model(), &context(), options(env))).await;
    assert_eq!(msg.stop_reason, StopReason::Stop, "{:?}", msg.error_message);
    assert_eq!(msg.text(), "from profile");
    // The region came from the profile.
    assert!(
        server.requests()[0]
            .header("authorization")
            .unwrap()
            .contains("/eu-west-3/bedrock/")
    );
}

#[tokio::test]
async fn unknown_profile_and_empty_chain_are_clear_errors() {
    let server = MockServer::start(Scenario::new()).await.unwrap();
    let home = tempfile::tempdir().unwrap();
    let mut env = base_env(&server, home.path());
    let msg = contract::finish(stream(&model(), &context(), options(env.clone()))).await;
    let e = msg.error_message.unwrap();
    assert!(
        e.contains("no AWS credentials found") && e.contains("AWS_PROFILE"),
        "{e}"
    );
    env.set("AWS_PROFILE", "nope");
    let e = contract::finish(stream(&model(), &context(), options(env)))
        .await
        .error_message
        .unwrap();
    assert!(
        e.contains("AWS profile 'nope'") && e.contains("not defined"),
        "{e}"
    );
    assert!(server.requests().is_empty());
}

/// A `credential_process` that hands out key 1, then key 2 (counting its runs in a file).
fn rotating_process(home: &std::path::Path) -> String {
    let script = home.join("creds.sh");
    let count = home.join("count");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nn=$(cat {c} 2>/dev/null || echo 0)\nn=$((n+1))\necho $n > {c}\n\
             printf '{{\"Version\":1,\"AccessKeyId\":\"AKIAROTATE%s\",\"SecretAccessKey\":\"rotating-secret-%s\",\"SessionToken\":\"rotating-token-%s\",\"Expiration\":\"2999-01-01T00:00:00Z\"}}' $n $n $n\n",
            c = count.display()
        ),
    )
    .unwrap();
    format!("sh {}", script.display())
}

#[tokio::test]
async fn expired_credentials_are_refreshed_once_then_a_clear_error() {
    let server = MockServer::start(
        Scenario::new()
            .push(ScriptedResponse::text("after refresh"))
            .push(ScriptedResponse::text("never sent")),
    )
    .await
    .unwrap();
    server.require_aws(rules(vec![
        AwsKey::new("AKIAROTATE1", "rotating-secret-1").with_session_token("rotating-token-1"),
        AwsKey::new("AKIAROTATE2", "rotating-secret-2").with_session_token("rotating-token-2"),
    ]));
    server.expire_aws_key("AKIAROTATE1");
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config"),
        format!(
            "[profile rot]\ncredential_process = {}\n",
            rotating_process(home.path())
        ),
    )
    .unwrap();
    let mut env = base_env(&server, home.path());
    env.set("AWS_PROFILE", "rot");
    let mut events = stream(&model(), &context(), options(env.clone()));
    let mut retries = 0;
    let mut last = None;
    while let Some(e) = futures::StreamExt::next(&mut events).await {
        if matches!(e, AssistantMessageEvent::Retry { .. }) {
            retries += 1;
        }
        last = Some(e);
    }
    let Some(AssistantMessageEvent::Done { message, .. }) = last else {
        panic!("{last:?}")
    };
    assert_eq!(message.text(), "after refresh");
    assert_eq!(retries, 1);
    let keys: Vec<String> = server
        .requests()
        .iter()
        .map(|r| {
            r.header("authorization")
                .unwrap()
                .split('/')
                .next()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        keys,
        [
            "AWS4-HMAC-SHA256 Credential=AKIAROTATE1",
            "AWS4-HMAC-SHA256 Credential=AKIAROTATE2"
        ]
    );

    // Now every key the source hands out is expired: refreshed once, then the error.
    server.expire_aws_key("AKIAROTATE2");
    server.expire_aws_key("AKIAROTATE3");
    let msg = contract::finish(stream(&model(), &context(), options(env))).await;
    assert_eq!(msg.stop_reason, StopReason::Error);
    let e = msg.error_message.unwrap();
    assert!(
        e.contains("HTTP 403") && e.contains("expired") && e.contains("refreshed once"),
        "{e}"
    );
    assert!(
        !e.contains("rotating-secret") && !e.contains("rotating-token"),
        "{e}"
    );
}

#[tokio::test]
async fn throttling_inside_the_stream_is_retried_like_a_429() {
    let server = MockServer::start(
        Scenario::new()
            .push(
                ScriptedResponse::text("partial answer that is voided")
                    .error_after(2, ErrorKind::RateLimit),
            )
            .push(ScriptedResponse::text("second try")),
    )
    .await
    .unwrap();
    server.require_aws(rules(vec![AwsKey::new(KEY_ID, SECRET)]));
    let home = tempfile::tempdir().unwrap();
    let mut env = base_env(&server, home.path());
    env.set("AWS_ACCESS_KEY_ID", KEY_ID)
        .set("AWS_SECRET_ACCESS_KEY", SECRET);
    let mut events = stream(&model(), &context(), options(env));
    let mut retry_message = None;
    let mut last = None;
    while let Some(e) = futures::StreamExt::next(&mut events).await {
        if let AssistantMessageEvent::Retry { error_message, .. } = &e {
            retry_message = Some(error_message.clone());
        }
        last = Some(e);
    }
    let retry = retry_message.expect("a retry");
    assert!(retry.contains("throttlingException"), "{retry}");
    let Some(AssistantMessageEvent::Done { message, .. }) = last else {
        panic!()
    };
    assert_eq!(message.text(), "second try");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_crc_mismatch_is_a_clear_error_and_not_retried() {
    // A valid stream from the scripted server, with one payload byte flipped.
    let probe = MockServer::start(Scenario::new().push(ScriptedResponse::text("hello world")))
        .await
        .unwrap();
    let home = tempfile::tempdir().unwrap();
    let mut env = base_env(&probe, home.path());
    env.set("AWS_BEARER_TOKEN_BEDROCK", "k");
    let url = format!("{}/model/m/converse-stream", probe.url());
    let mut bytes = reqwest::Client::new()
        .post(&url)
        .body("{}")
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap()
        .to_vec();
    let first = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize;
    bytes[first + 30] ^= 0x20;
    let server = MockServer::start(
        Scenario::new()
            .push(ScriptedResponse::replay(bytes))
            .push(ScriptedResponse::text("must not be used")),
    )
    .await
    .unwrap();
    let mut env = base_env(&server, home.path());
    env.set("AWS_BEARER_TOKEN_BEDROCK", "k");
    let msg = contract::finish(stream(&model(), &context(), options(env))).await;
    assert_eq!(msg.stop_reason, StopReason::Error);
    let e = msg.error_message.unwrap();
    assert!(
        e.contains("corrupt AWS event-stream frame") && e.contains("checksum"),
        "{e}"
    );
    assert_eq!(server.requests().len(), 1, "a corrupt frame is not retried");
}

#[tokio::test]
async fn a_403_names_the_missing_permission() {
    let body = r#"{"message":"User: arn:aws:iam::123456789012:user/dev is not authorized to perform: bedrock:InvokeModelWithResponseStream on resource: arn:aws:bedrock:eu-west-3::foundation-model/anthropic.claude because no identity-based policy allows the bedrock:InvokeModelWithResponseStream action"}"#;
    let server = MockServer::start(
        Scenario::new().push(
            ScriptedResponse::new()
                .with_status(403)
                .with_header(
                    "x-amzn-ErrorType",
                    "AccessDeniedException:http://internal.amazon.com/coral/com.amazon.bedrock/",
                )
                .with_body(body),
        ),
    )
    .await
    .unwrap();
    let home = tempfile::tempdir().unwrap();
    let mut env = base_env(&server, home.path());
    env.set("AWS_ACCESS_KEY_ID", KEY_ID)
        .set("AWS_SECRET_ACCESS_KEY", SECRET);
    let msg = contract::finish(stream(&model(), &context(), options(env))).await;
    let e = msg.error_message.unwrap();
    assert!(
        e.contains("HTTP 403")
            && e.contains("bedrock:InvokeModelWithResponseStream")
            && e.contains("AccessDeniedException"),
        "{e}"
    );
    assert!(!e.contains(SECRET));
    assert_eq!(
        server.requests().len(),
        1,
        "a permission error is not retried"
    );
}

#[tokio::test]
async fn a_wrong_secret_is_refused_by_the_servers_signature_check() {
    let server = MockServer::start(Scenario::new().push(ScriptedResponse::text("unused")))
        .await
        .unwrap();
    server.require_aws(rules(vec![AwsKey::new(KEY_ID, SECRET)]));
    let home = tempfile::tempdir().unwrap();
    let mut env = base_env(&server, home.path());
    env.set("AWS_ACCESS_KEY_ID", KEY_ID)
        .set("AWS_SECRET_ACCESS_KEY", "not-the-right-secret-key");
    let msg = contract::finish(stream(&model(), &context(), options(env))).await;
    let e = msg.error_message.unwrap();
    assert!(e.contains("signature we calculated does not match"), "{e}");
    assert!(!e.contains("not-the-right-secret-key"), "{e}");
    assert_eq!(
        server.remaining(),
        1,
        "refused requests use no scripted response"
    );
}
