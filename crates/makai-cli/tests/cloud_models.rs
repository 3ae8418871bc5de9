//! A catalog model of a cloud provider run by the `makai` binary: Amazon
//! Bedrock through its endpoint variable and a Bedrock API key, against the
//! scripted server; the reply's cost comes from the catalog's price and shows
//! in `get_session_stats` and in the session file's usage.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use makai_mockllm::{AwsRules, Scenario, ScriptedResponse, Usage};
use serde_json::{Value, json};

const MODEL: &str = "amazon-bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0";

fn wait_idle(rpc: &mut Rpc) -> Value {
    rpc.wait_event("agent_end")
}

#[test]
fn a_bedrock_catalog_model_costs_its_catalog_price_in_the_stats_and_the_session() {
    let env = Env::new();
    let mock = Mock::start(Scenario::new().push(
        ScriptedResponse::text("from bedrock").usage(Usage::new(1_000, 200).with_cache(4_000, 100)),
    ));
    mock.server.require_aws(AwsRules {
        api_keys: vec!["bedrock-key-1".into()],
        ..Default::default()
    });
    let url = mock.server.url();
    let mut rpc = Rpc::start_with(
        &env,
        &s(&["--model", MODEL]),
        &[
            ("AWS_BEARER_TOKEN_BEDROCK", "bedrock-key-1"),
            ("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", url.as_str()),
            ("AWS_REGION", "us-east-1"),
        ],
    );
    let state = rpc.ok(json!({"type": "get_state"}));
    assert_eq!(state["model"]["provider"], "amazon-bedrock");
    let price = state["model"]["cost"].clone();
    assert!(price["input"].as_f64().unwrap() > 0.0, "{state}");
    rpc.send(json!({"type": "prompt", "message": "hi"}));
    let end = wait_idle(&mut rpc);
    assert_eq!(
        end["messages"][1]["content"][0]["text"], "from bedrock",
        "{end}"
    );
    let p = |k: &str| price[k].as_f64().unwrap();
    let want = (1_000.0 * p("input")
        + 200.0 * p("output")
        + 4_000.0 * p("cacheRead")
        + 100.0 * p("cacheWrite"))
        / 1e6;
    let stats = rpc.ok(json!({"type": "get_session_stats"}));
    assert_eq!(stats["tokens"]["input"], 1_000);
    assert_eq!(stats["tokens"]["cacheRead"], 4_000);
    let cost = stats["cost"].as_f64().unwrap();
    assert!(
        (cost - want).abs() < 1e-12,
        "stats cost {cost}, catalog price gives {want}"
    );
    let usage = &end["messages"][1]["usage"];
    assert!(
        (usage["cost"]["total"].as_f64().unwrap() - want).abs() < 1e-12,
        "{usage}"
    );
    let req = &mock.requests()[0];
    assert_eq!(
        req.path,
        "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
    );
    assert_eq!(req.header("authorization"), Some("Bearer bedrock-key-1"));
    assert_eq!(rpc.finish(), 0);
    // The session file holds the same usage.
    let files = env.session_files();
    let text = std::fs::read_to_string(&files[0]).unwrap();
    let assistant = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["message"]["role"] == "assistant")
        .unwrap();
    assert!(
        (assistant["message"]["usage"]["cost"]["total"]
            .as_f64()
            .unwrap()
            - want)
            .abs()
            < 1e-12
    );
}

#[test]
fn list_models_shows_the_cloud_providers() {
    let env = Env::new();
    let out = env.run(&s(&["--list-models", "bedrock"]), "");
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(text.contains(MODEL), "{text}");
    assert!(
        !text.contains("anthropic/claude-opus-4-5 "),
        "the pattern filters"
    );
    for pattern in [
        "google-vertex/gemini-2.5-pro",
        "azure/gpt-5.4",
        "openai-codex/",
        "github-copilot/",
    ] {
        let out = env.run(&s(&["--list-models", pattern]), "");
        assert!(
            stdout(&out).contains(pattern),
            "{pattern}: {}",
            stdout(&out)
        );
    }
}

#[test]
fn available_models_list_cloud_and_subscription_providers_only_when_configured() {
    let env = Env::new();
    let fake_home = tempfile::tempdir().unwrap();
    let home = fake_home.path().display().to_string();
    let mock = Mock::start(Scenario::new());
    let providers = |vars: &[(&str, &str)]| {
        let mut all = vec![("HOME", home.as_str())];
        all.extend_from_slice(vars);
        let mut rpc = Rpc::start_with(&env, &mock.args(), &all);
        let models = rpc.ok(json!({"type": "get_available_models"}));
        let set: std::collections::BTreeSet<String> = models["models"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["provider"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(rpc.finish(), 0);
        set
    };
    let none = providers(&[]);
    for p in [
        "amazon-bedrock",
        "google-vertex",
        "azure",
        "github-copilot",
        "openai-codex",
    ] {
        assert!(
            !none.contains(p),
            "{p} listed without credentials: {none:?}"
        );
    }
    let some = providers(&[
        ("AWS_BEARER_TOKEN_BEDROCK", "k"),
        ("AZURE_OPENAI_API_KEY", "k"),
    ]);
    assert!(
        some.contains("amazon-bedrock") && some.contains("azure"),
        "{some:?}"
    );
    assert!(!some.contains("google-vertex"), "{some:?}");
    // An AWS profile file is enough for Bedrock.
    std::fs::create_dir_all(fake_home.path().join(".aws")).unwrap();
    std::fs::write(
        fake_home.path().join(".aws/config"),
        "[default]\nregion = us-east-1\n",
    )
    .unwrap();
    assert!(providers(&[]).contains("amazon-bedrock"));
}
