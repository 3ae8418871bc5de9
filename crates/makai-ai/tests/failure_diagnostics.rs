//! pi's `diagnostics` on an answer: a record of each attempt that failed
//! and was retried, and of the failure that ended the request, with the
//! HTTP status, the attempt, the wait and the provider's request id; never
//! a credential.

use crate::common;
use common::contract;

use makai_ai::{
    Api, AssistantMessage, Context, DiagnosticCode, Model, RetryPolicy, StopReason, StreamOptions,
    UserMessage, stream,
};
use makai_mockllm::{MockServer, Scenario, ScriptedResponse};

const KEY: &str = "sk-diagnostics-secret-0123456789";

async fn answer(responses: Vec<ScriptedResponse>) -> AssistantMessage {
    let mut scenario = Scenario::new();
    for r in responses {
        scenario = scenario.push(r);
    }
    let server = MockServer::start(scenario).await.unwrap();
    let model = Model::custom(Api::OpenAiCompletions, "mock", "m", server.base_url_v1());
    let options = StreamOptions {
        api_key: Some(KEY.to_string().into()),
        retry: RetryPolicy {
            max_retries: 2,
            initial_delay: std::time::Duration::from_millis(5),
            max_delay: std::time::Duration::from_millis(50),
        },
        ..Default::default()
    };
    let ctx = Context {
        system_prompt: None,
        messages: vec![UserMessage::text("hi").into()],
        tools: Vec::new(),
    };
    contract::finish(stream(&model, &ctx, options)).await
}

fn busy(status: u16) -> ScriptedResponse {
    ScriptedResponse::new()
        .with_status(status)
        .with_header("x-request-id", format!("req-{status}"))
        .with_body(format!("overloaded, key {KEY}"))
}

fn code(m: &AssistantMessage, i: usize) -> Option<u64> {
    match m.diagnostics[i]
        .error
        .as_ref()
        .and_then(|e| e.code.as_ref())
    {
        Some(DiagnosticCode::Number(n)) => n.as_u64(),
        _ => None,
    }
}

#[tokio::test]
async fn an_answer_after_retries_records_each_failed_attempt() {
    let m = answer(vec![busy(503), busy(529), ScriptedResponse::text("ok")]).await;
    assert_eq!(m.stop_reason, StopReason::Stop, "{:?}", m.error_message);
    assert_eq!(m.text(), "ok");
    assert_eq!(m.diagnostics.len(), 2, "{:?}", m.diagnostics);
    assert!(m.diagnostics.iter().all(|d| d.kind == "retry"));
    assert_eq!((code(&m, 0), code(&m, 1)), (Some(503), Some(529)));
    let details = |i: usize| m.diagnostics[i].details.clone().unwrap_or_default();
    assert_eq!(details(0)["attempt"], 1);
    assert_eq!(details(1)["attempt"], 2);
    assert_eq!(details(0)["requestId"], "req-503");
    assert!(details(0)["delayMs"].as_u64().is_some());
    assert!(m.diagnostics[0].timestamp > 0);
    let json = serde_json::to_string(&m).unwrap();
    assert!(!json.contains(KEY), "a credential in a diagnostic: {json}");
    assert!(
        json.contains("\"diagnostics\":[{\"type\":\"retry\""),
        "{json}"
    );
}

#[tokio::test]
async fn the_failure_that_ends_a_request_is_recorded_after_its_retries() {
    let m = answer(vec![busy(503), busy(503), busy(503)]).await;
    assert_eq!(m.stop_reason, StopReason::Error);
    let kinds: Vec<&str> = m.diagnostics.iter().map(|d| d.kind.as_str()).collect();
    assert_eq!(kinds, ["retry", "retry", "provider_error"]);
    let last = m.diagnostics[2].details.clone().unwrap_or_default();
    assert_eq!(last["attempt"], 3);
    assert!(last.get("delayMs").is_none(), "no attempt follows");
    // A refusal that is not retried: one record, its status.
    let refused = answer(vec![busy(400)]).await;
    assert_eq!(refused.stop_reason, StopReason::Error);
    assert_eq!(refused.diagnostics.len(), 1);
    assert_eq!(refused.diagnostics[0].kind, "provider_error");
    assert_eq!(code(&refused, 0), Some(400));
    assert_eq!(
        refused.diagnostics[0].details.clone().unwrap_or_default()["retryable"],
        false
    );
    let json = serde_json::to_string(&refused).unwrap();
    assert!(!json.contains(KEY), "{json}");
    // A spent quota comes as a 429 that no retry passes: not retried.
    let spent = answer(vec![
        ScriptedResponse::new().with_status(429).with_body(
            r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota"}}"#,
        ),
        ScriptedResponse::text("never asked"),
    ])
    .await;
    assert_eq!(spent.stop_reason, StopReason::Error);
    assert!(
        spent
            .error_message
            .as_deref()
            .is_some_and(|e| e.contains("exceeded your current quota")),
        "{:?}",
        spent.error_message
    );
    assert_eq!(spent.diagnostics.len(), 1);
    assert_eq!(code(&spent, 0), Some(429));
    // A response the provider ended with `finish_reason: "error"`
    // (Mistral's) is retried, its partial text dropped (pi 1.3).
    let ended_badly = ScriptedResponse::replay(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"half\"},\"finish_reason\":null}]}\n\n\
         data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"error\"}]}\n\n\
         data: [DONE]\n\n",
    );
    let recovered = answer(vec![ended_badly, ScriptedResponse::text("whole")]).await;
    assert_eq!(recovered.stop_reason, StopReason::Stop);
    assert_eq!(recovered.text(), "whole");
    assert_eq!(recovered.diagnostics.len(), 1);
    assert_eq!(recovered.diagnostics[0].kind, "retry");
    assert!(
        recovered.diagnostics[0]
            .error
            .as_ref()
            .is_some_and(|e| e.message.contains("finish_reason error")),
        "{:?}",
        recovered.diagnostics
    );
    // An answer with no failure has none, and writes none.
    let plain = answer(vec![ScriptedResponse::text("ok")]).await;
    assert!(plain.diagnostics.is_empty());
    assert!(
        !serde_json::to_string(&plain)
            .unwrap()
            .contains("diagnostics")
    );
}
