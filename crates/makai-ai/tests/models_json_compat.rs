//! `compat` in `models.json`: makai's own flags (`supportsNamedToolChoice`,
//! `supportsTools`) survive being laid over a model that has compat flags
//! already, as pi's flags do.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use makai_ai::models_json::{apply, parse};
use makai_ai::{Api, CompatFlags, Model};

#[test]
fn makai_compat_flags_in_model_overrides_are_kept_over_existing_flags() {
    let mut base = Model::custom(
        Api::OpenAiCompletions,
        "ollama",
        "tiny",
        "http://127.0.0.1:11434/v1",
    );
    base.compat = Some(CompatFlags {
        supports_store: Some(false),
        ..Default::default()
    });
    assert!(base.can_call_tools());
    let mut models = vec![base];
    let file = parse(
        r#"{ "providers": { "ollama": { "modelOverrides": { "tiny": {
            "compat": { "supportsTools": false, "supportsNamedToolChoice": true }
        } } } } }"#,
    )
    .unwrap();
    apply(file, &mut models).unwrap();
    let compat = models[0].compat.clone().unwrap();
    assert_eq!(compat.supports_store, Some(false), "{compat:?}");
    assert_eq!(compat.supports_tools, Some(false), "{compat:?}");
    assert_eq!(compat.supports_named_tool_choice, Some(true), "{compat:?}");
    assert!(!models[0].can_call_tools());
}

#[test]
fn prompt_cache_lifetimes_come_from_the_catalog_and_models_json_tier_by_tier() {
    use makai_ai::{CacheRetention, PromptCacheLifetimes};
    use std::time::Duration;

    // pi's catalog gives Anthropic's models five minutes and an hour.
    let mut models = makai_ai::catalog::builtin_models().to_vec();
    let sonnet = models
        .iter()
        .find(|m| m.provider == "anthropic" && m.id == "claude-sonnet-4-5")
        .expect("claude-sonnet-4-5 in the catalog");
    assert_eq!(
        sonnet.prompt_cache,
        Some(PromptCacheLifetimes {
            short: Some(300),
            long: Some(3600)
        })
    );
    assert_eq!(
        sonnet.prompt_cache_lifetime(CacheRetention::Short),
        Some(Duration::from_secs(300))
    );
    assert_eq!(sonnet.prompt_cache_lifetime(CacheRetention::None), None);

    // An override changes the tiers it names; a new model has its own.
    let file = parse(
        r#"{ "providers": {
            "anthropic": { "modelOverrides": { "claude-sonnet-4-5": { "promptCache": { "short": 600 } } } },
            "gw": { "baseUrl": "http://127.0.0.1:9", "api": "anthropic-messages",
                    "models": [ { "id": "claude-gw", "promptCache": { "long": 7200 } } ] }
        } }"#,
    )
    .unwrap();
    apply(file, &mut models).unwrap();
    let find = |id: &str| models.iter().find(|m| m.id == id).unwrap();
    assert_eq!(
        find("claude-sonnet-4-5").prompt_cache,
        Some(PromptCacheLifetimes {
            short: Some(600),
            long: Some(3600)
        })
    );
    let gw = find("claude-gw");
    assert_eq!(gw.prompt_cache_lifetime(CacheRetention::Short), None);
    assert_eq!(
        gw.prompt_cache_lifetime(CacheRetention::Long),
        Some(Duration::from_secs(7200))
    );
}
