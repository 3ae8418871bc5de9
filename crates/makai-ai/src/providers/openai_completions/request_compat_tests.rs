//! Request bodies under `models.json` compat settings (pi 1.5.1's) and long
//! prompt-cache retention.

use super::*;

/// `models.json` compat keys of pi 1.5.1, read as pi writes them.
fn with_compat(mut m: Model, compat: Value) -> Model {
    m.compat = Some(serde_json::from_value(compat).unwrap_or_else(|e| panic!("compat: {e}")));
    m
}

#[test]
fn pi_1_5_1_compat_tools_with_tool_history_and_non_null_assistant_content() {
    let base = model("https://litellm.example.com/v1");
    let history = Context {
        messages: tool_round(&base),
        ..Default::default()
    };
    // Defaults: no tools offered, no `tools` field; no `content` beside calls.
    let b = body(&base, &history, &opts());
    assert!(b.get("tools").is_none(), "{b}");
    assert!(b["messages"][1].get("content").is_none(), "{b}");
    let m = with_compat(
        base.clone(),
        json!({"requiresToolsWithToolHistory": true, "requiresNonNullAssistantContent": true}),
    );
    let b = body(&m, &history, &opts());
    assert_eq!(b["tools"], json!([]));
    assert_eq!(b["messages"][1]["content"], "");
    assert_eq!(b["messages"][1]["tool_calls"][0]["id"], "call_1");
    // Without tool history the flag sends nothing.
    let plain = Context {
        messages: vec![user("hi")],
        ..Default::default()
    };
    assert!(body(&m, &plain, &opts()).get("tools").is_none());
}

#[test]
fn pi_1_5_1_compat_prompt_cache_key_mode() {
    let c = Context {
        messages: vec![user("hi")],
        ..Default::default()
    };
    let mut o = opts();
    o.session_id = Some("session-9".into());
    let proxy = model("https://proxy.example.com/v1");
    assert!(body(&proxy, &c, &o).get("prompt_cache_key").is_none());
    let on = with_compat(proxy, json!({"promptCacheKeyMode": "enabled"}));
    assert_eq!(body(&on, &c, &o)["prompt_cache_key"], "session-9");
    assert_eq!(body(&openai(), &c, &o)["prompt_cache_key"], "session-9");
    let off = with_compat(openai(), json!({"promptCacheKeyMode": "disabled"}));
    assert!(body(&off, &c, &o).get("prompt_cache_key").is_none());
    let auto = with_compat(openai(), json!({"promptCacheKeyMode": "auto"}));
    assert_eq!(body(&auto, &c, &o)["prompt_cache_key"], "session-9");
}

/// Long retention over Chat Completions: `prompt_cache_retention: "24h"` to
/// OpenAI, and to a proxy `models.json` says takes it (with the cache key,
/// pi's `promptCacheKeyMode: auto`); never with short retention.
#[test]
fn long_retention_asks_openai_and_willing_proxies_for_24_hours() {
    let long = StreamOptions {
        session_id: Some("s".into()),
        cache_retention: CacheRetention::Long,
        ..Default::default()
    };
    let c = Context {
        messages: vec![user("hi")],
        ..Default::default()
    };
    let b = body(&openai(), &c, &long);
    assert_eq!(b["prompt_cache_retention"], "24h");
    assert_eq!(b["prompt_cache_key"], "s");
    let short = StreamOptions {
        cache_retention: CacheRetention::Short,
        ..long.clone()
    };
    assert!(
        body(&openai(), &c, &short)
            .get("prompt_cache_retention")
            .is_none()
    );
    let b = body(&local(), &c, &long);
    assert!(b.get("prompt_cache_retention").is_none() && b.get("prompt_cache_key").is_none());
    let mut proxy = local();
    proxy.compat = Some(crate::model::CompatFlags {
        supports_long_cache_retention: Some(true),
        ..Default::default()
    });
    let b = body(&proxy, &c, &long);
    assert_eq!(b["prompt_cache_retention"], "24h");
    assert_eq!(b["prompt_cache_key"], "s");
    proxy.compat = Some(crate::model::CompatFlags {
        supports_long_cache_retention: Some(true),
        prompt_cache_key_mode: Some(crate::model::PromptCacheKeyMode::Disabled),
        ..Default::default()
    });
    let b = body(&proxy, &c, &long);
    assert_eq!(b["prompt_cache_retention"], "24h");
    assert!(b.get("prompt_cache_key").is_none());
}
