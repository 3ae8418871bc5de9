//! The built-in catalog: generated from pi's catalog by the checked-in
//! generator (the files in the repository are its output), every entry on a
//! wire API makai speaks, and every response's cost computed from the catalog's
//! prices end to end for each wire API (tiers included).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use common::contract;

#[path = "../examples/gen_catalog/generate.rs"]
mod generate;

use std::path::Path;

use makai_ai::catalog::{ModelRegistry, builtin_models};
use makai_ai::{Api, Context, Model, ModelCost, StopReason, StreamOptions, UserMessage, stream};
use makai_mockllm::{MockServer, Scenario, ScriptedResponse, Usage};

#[test]
fn the_checked_in_catalog_is_the_generators_output() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let source = manifest.join("../../../shared/reference/pi-1.5.2/model-catalog");
    assert!(
        source.is_dir(),
        "pi's catalog is expected beside the repository at {} (shared/)",
        source.display()
    );
    let generated = generate::generate(&source).unwrap();
    let catalog = std::fs::read_to_string(manifest.join("src/catalog/builtin.json")).unwrap();
    let report = std::fs::read_to_string(manifest.join("../../docs/catalog.md")).unwrap();
    assert!(
        catalog == generated.catalog && report == generated.report,
        "the catalog is stale: run `cargo run -p makai-ai --example gen_catalog`"
    );
    // Every one of pi's entries is either built in or listed as left out.
    let built_in = builtin_models()
        .iter()
        .filter(|m| m.provider != "local")
        .count();
    let left_out = report.lines().filter(|l| l.starts_with("- ")).count();
    assert_eq!(built_in + left_out, 1773, "pi 1.5.2 lists 1,773 entries");
    assert!(report.contains(&format!("{built_in} built in, {left_out} left out")));
}

#[test]
fn every_builtin_entry_is_on_a_wire_api_makai_speaks() {
    let models = builtin_models();
    assert!(models.len() > 1500);
    for m in models {
        assert!(Api::ALL.contains(&m.api), "{}/{}", m.provider, m.id);
        assert!(
            m.cost.input >= 0.0 && m.cost.output >= 0.0,
            "{}/{}",
            m.provider,
            m.id
        );
        assert!(!m.id.is_empty() && !m.provider.is_empty());
    }
    // pi's catalog has no Claude on Vertex AI: such models come from models.json.
    for api in Api::ALL.into_iter().filter(|a| *a != Api::AnthropicVertex) {
        assert!(
            models.iter().any(|m| m.api == api),
            "no built-in model on {api}"
        );
    }
    let reg = ModelRegistry::builtin();
    let m = reg
        .find("amazon-bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0")
        .or_else(|| {
            reg.models()
                .iter()
                .find(|m| m.provider == "amazon-bedrock" && m.id.contains("claude"))
        });
    assert!(m.is_some(), "Bedrock's Claude models are in the catalog");
    assert!(
        reg.models().iter().any(|m| !m.cost.tiers.is_empty()),
        "tiered prices are kept"
    );
}

#[test]
fn the_catalog_says_which_thinking_levels_each_model_offers_as_pi_does() {
    use makai_ai::ThinkingLevel as L;
    let reg = ModelRegistry::builtin();
    let levels = |name: &str| reg.find(name).expect(name).thinking_levels();
    // Adaptive Claude: `xhigh` and `max` are opt-in, and listed.
    assert_eq!(
        levels("anthropic/claude-opus-4-7"),
        [
            L::Off,
            L::Minimal,
            L::Low,
            L::Medium,
            L::High,
            L::Xhigh,
            L::Max
        ]
    );
    // No map: up to `high`.
    assert_eq!(
        levels("anthropic/claude-sonnet-4-5"),
        [L::Off, L::Minimal, L::Low, L::Medium, L::High]
    );
    // Kimi K3 always reasons: no `off`; `max` is its top.
    let k3 = reg.find("moonshotai/kimi-k3").expect("kimi-k3");
    assert_eq!(k3.thinking_levels(), [L::Low, L::High, L::Max]);
    assert_eq!(k3.clamp_thinking(L::Off), L::Low);
    assert_eq!(k3.clamp_thinking(L::Medium), L::Low);
    assert_eq!(k3.clamp_thinking(L::Xhigh), L::High);
    // GPT-6 Luna turns reasoning off with `none`.
    let luna = reg.find("openai/gpt-6-luna").expect("gpt-6-luna");
    assert_eq!(luna.thinking_value(L::Off), Some("none"));
    assert_eq!(luna.thinking_value(L::Max), Some("max"));
    assert_eq!(luna.clamp_thinking(L::Minimal), L::Off);
    // Every map in the catalog names only pi's levels.
    for m in reg.models() {
        for key in m.thinking_level_map.iter().flat_map(|map| map.levels()) {
            assert!(
                key.parse::<L>().is_ok(),
                "{}/{}: unknown level {key}",
                m.provider,
                m.id
            );
        }
    }
}

/// `model` pointed at the scripted server, prices kept.
fn at_server(mut m: Model, server: &MockServer) -> Model {
    m.base_url = match m.api {
        Api::GoogleGenerativeAi => format!("{}/v1beta", server.url()),
        Api::GoogleVertex | Api::AnthropicVertex => {
            format!("{}/v1/projects/p/locations/us-east5", server.url())
        }
        Api::BedrockConverseStream | Api::AzureOpenAiResponses => server.url(),
        Api::OpenAiCodexResponses => format!("{}/backend-api", server.url()),
        _ => server.base_url_v1(),
    };
    m
}

/// The cost from the catalog's prices, computed here independently of makai's code.
fn expected_cost(
    price: &ModelCost,
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
) -> f64 {
    let all_input = input + cache_read + cache_write;
    let mut rates = (
        price.input,
        price.output,
        price.cache_read,
        price.cache_write,
    );
    let mut best = None;
    for t in &price.tiers {
        if all_input > t.input_tokens_above && best.is_none_or(|b| t.input_tokens_above > b) {
            best = Some(t.input_tokens_above);
            rates = (t.input, t.output, t.cache_read, t.cache_write);
        }
    }
    (input as f64 * rates.0
        + output as f64 * rates.1
        + cache_read as f64 * rates.2
        + cache_write as f64 * rates.3)
        / 1_000_000.0
}

#[tokio::test]
async fn every_wire_api_reports_the_catalog_cost_of_its_response() {
    let models = builtin_models();
    for api in Api::ALL {
        // A priced model of this API, one with a tier where there is one (crossed
        // below). Claude on Vertex (not in pi's catalog) is priced as Anthropic's.
        let source = if api == Api::AnthropicVertex {
            Api::AnthropicMessages
        } else {
            api
        };
        let mut m = models
            .iter()
            .filter(|m| m.api == source && m.cost.output > 0.0)
            .max_by_key(|m| (m.cost.tiers.len(), (m.cost.cache_read * 1e6) as u64))
            .unwrap_or_else(|| panic!("no priced model for {api}"))
            .clone();
        m.api = api;
        let tier = m.cost.tiers.iter().map(|t| t.input_tokens_above).min();
        let input = tier.map_or(1_000, |t| t + 1_000);
        let usage = Usage::new(input, 500).with_cache(2_000, 300);
        let server =
            MockServer::start(Scenario::new().push(ScriptedResponse::text("priced").usage(usage)))
                .await
                .unwrap();
        let target = at_server(m.clone(), &server);
        let context = Context {
            messages: vec![UserMessage::text("hi").into()],
            ..Default::default()
        };
        let options = StreamOptions {
            api_key: Some(makai_ai::ApiKey::new(codex_like_key())),
            ..Default::default()
        };
        let msg = contract::finish(stream(&target, &context, options)).await;
        assert_eq!(
            msg.stop_reason,
            StopReason::Stop,
            "{api} {}: {:?}",
            m.id,
            msg.error_message
        );
        let u = msg.usage;
        assert_eq!(
            (u.input, u.output, u.cache_read),
            (input, 500, 2_000),
            "{api} {}",
            m.id
        );
        let want = expected_cost(&m.cost, u.input, u.output, u.cache_read, u.cache_write);
        assert!(want > 0.0);
        assert!(
            (u.cost.total - want).abs() < 1e-9 * want.max(1.0),
            "{api} {}: cost {} expected {want}",
            m.id,
            u.cost.total
        );
        if tier.is_some() {
            let base = (u.input as f64 * m.cost.input
                + 500.0 * m.cost.output
                + 2000.0 * m.cost.cache_read
                + u.cache_write as f64 * m.cost.cache_write)
                / 1e6;
            assert!(
                (u.cost.total - base).abs() > 1e-12,
                "{api} {}: the tier's prices apply",
                m.id
            );
        }
    }
}

/// A key every API accepts on the scripted server (a JWT naming a ChatGPT
/// account, for the Codex endpoint).
fn codex_like_key() -> String {
    use base64::Engine;
    let b = |v: serde_json::Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
    };
    format!(
        "{}.{}.sig",
        b(serde_json::json!({"alg": "none"})),
        b(serde_json::json!({"https://api.openai.com/auth": {"chatgpt_account_id": "acct"}}))
    )
}
