//! Turns pi's model catalog (`shared/reference/pi-1.5.2/model-catalog/*.json`)
//! into makai's built-in catalog (`src/catalog/builtin.json`, one model per
//! line in makai's `Model` JSON, which is pi's) and its report (`docs/catalog.md`:
//! counts per provider and every entry left out, with the reason).
//!
//! Used by the `gen_catalog` example (writes the files) and by
//! `tests/catalog_generated.rs` (checks the checked-in files are its output).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value, json};

/// The APIs makai speaks, by pi's name.
const SPOKEN: [&str; 9] = [
    "anthropic-messages",
    "openai-completions",
    "openai-responses",
    "google-generative-ai",
    "google-vertex",
    "bedrock-converse-stream",
    "azure-openai-responses",
    "openai-codex-responses",
    // Mistral's own Conversations client in pi; makai uses Mistral's
    // OpenAI-compatible Chat Completions endpoint (see `map_api`).
    "mistral-conversations",
];

/// Providers listed first (and so found first by a bare model id), in this order.
const FIRST_PROVIDERS: [&str; 3] = ["anthropic", "openai", "google"];

/// The model a provider's list starts with (its default), where pi's order
/// would start with something else.
const DEFAULTS: [(&str, &str); 3] = [
    ("anthropic", "claude-opus-4-5"),
    ("openai", "gpt-5.1"),
    ("google", "gemini-2.5-pro"),
];

/// What the generator produced.
pub struct Generated {
    /// `builtin.json`.
    pub catalog: String,
    /// `docs/catalog.md`.
    pub report: String,
}

/// Why an entry is left out, or `None` when makai can call it.
fn exclusion(entry: &Value, api: &str) -> Option<String> {
    match entry.get("type").and_then(Value::as_str) {
        Some("image") => {
            return Some("image-generation model (`openrouter-images`): makai streams chat".into());
        }
        Some("classifier") => {
            return Some(format!("classifier model (`{api}`): not a chat model"));
        }
        _ => {}
    }
    if !SPOKEN.contains(&api) {
        return Some(match api {
            "pi-messages" => {
                "Radius's own gateway protocol (`pi-messages`), not a public wire API".into()
            }
            other => format!("wire API `{other}` is not one makai speaks"),
        });
    }
    None
}

/// (makai API, base URL) for a spoken pi API.
fn map_api(api: &str, base_url: &str) -> (&'static str, String) {
    match api {
        "mistral-conversations" => (
            "openai-completions",
            format!(
                "{}/v1",
                base_url.trim_end_matches('/').trim_end_matches("/v1")
            ),
        ),
        // pi's base URLs are the Anthropic SDK's; makai adds `/v1/messages`
        // as the SDK does.
        "anthropic-messages" => ("anthropic-messages", base_url.to_string()),
        "openai-completions" => ("openai-completions", base_url.to_string()),
        "openai-responses" => ("openai-responses", base_url.to_string()),
        "google-generative-ai" => ("google-generative-ai", base_url.to_string()),
        "google-vertex" => ("google-vertex", base_url.to_string()),
        "bedrock-converse-stream" => ("bedrock-converse-stream", base_url.to_string()),
        "azure-openai-responses" => ("azure-openai-responses", base_url.to_string()),
        _ => ("openai-codex-responses", base_url.to_string()),
    }
}

fn rates(v: &Value) -> Map<String, Value> {
    let mut m = Map::new();
    for k in ["input", "output", "cacheRead", "cacheWrite"] {
        m.insert(k.into(), v.get(k).cloned().unwrap_or(json!(0)));
    }
    m
}

/// pi's compat flags that makai's `CompatFlags` models.
fn compat(v: Option<&Value>) -> Option<Value> {
    let v = v?.as_object()?;
    let mut out = Map::new();
    for (pi, makai) in [
        ("supportsUsageInStreaming", "supportsUsageInStreaming"),
        ("supportsDeveloperRole", "supportsDeveloperRole"),
        ("supportsReasoningEffort", "supportsReasoningEffort"),
        ("supportsStore", "supportsStore"),
    ] {
        if let Some(b) = v.get(pi).and_then(Value::as_bool) {
            out.insert(makai.into(), json!(b));
        }
    }
    match v.get("maxTokensField").and_then(Value::as_str) {
        Some("max_completion_tokens") => {
            out.insert("maxTokensFieldIsCompletion".into(), json!(true));
        }
        Some("max_tokens") => {
            out.insert("maxTokensFieldIsCompletion".into(), json!(false));
        }
        _ => {}
    }
    if v.get("requiresReasoningContentOnAssistantMessages")
        .and_then(Value::as_bool)
        == Some(true)
    {
        out.insert("supportsReasoningContent".into(), json!(true));
    }
    (!out.is_empty()).then_some(Value::Object(out))
}

fn model(entry: &Value, api: &str) -> Result<Value, String> {
    let s = |k: &str| entry.get(k).and_then(Value::as_str).map(str::to_string);
    let id = s("id").ok_or("an entry without id")?;
    let (api, base_url) = map_api(api, &s("baseUrl").unwrap_or_default());
    let mut m = Map::new();
    m.insert("id".into(), json!(id));
    m.insert(
        "name".into(),
        json!(s("name").unwrap_or_else(|| id.clone())),
    );
    m.insert("api".into(), json!(api));
    m.insert(
        "provider".into(),
        json!(s("provider").ok_or("an entry without provider")?),
    );
    m.insert("baseUrl".into(), json!(base_url));
    m.insert(
        "reasoning".into(),
        json!(
            entry
                .get("reasoning")
                .and_then(Value::as_bool)
                .unwrap_or(false)
        ),
    );
    let input: Vec<&str> = entry
        .get("input")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .filter(|i| matches!(*i, "text" | "image"))
                .collect()
        })
        .unwrap_or_else(|| vec!["text"]);
    m.insert("input".into(), json!(input));
    let cost = entry.get("cost").cloned().unwrap_or(json!({}));
    let mut c = rates(&cost);
    if let Some(tiers) = cost
        .get("tiers")
        .and_then(Value::as_array)
        .filter(|t| !t.is_empty())
    {
        let tiers: Vec<Value> = tiers
            .iter()
            .map(|t| {
                let mut r = Map::new();
                r.insert(
                    "inputTokensAbove".into(),
                    t.get("inputTokensAbove").cloned().unwrap_or(json!(0)),
                );
                r.extend(rates(t));
                Value::Object(r)
            })
            .collect();
        c.insert("tiers".into(), json!(tiers));
    }
    m.insert("cost".into(), Value::Object(c));
    m.insert(
        "contextWindow".into(),
        entry
            .get("contextWindow")
            .cloned()
            .unwrap_or(json!(128_000)),
    );
    m.insert(
        "maxTokens".into(),
        entry.get("maxTokens").cloned().unwrap_or(json!(16_384)),
    );
    if let Some(h) = entry
        .get("headers")
        .filter(|h| h.as_object().is_some_and(|o| !o.is_empty()))
    {
        m.insert("headers".into(), h.clone());
    }
    if let Some(c) = compat(entry.get("compat")) {
        m.insert("compat".into(), c);
    }
    // Which thinking levels the model offers and what each is sent as.
    if let Some(map) = entry
        .get("thinkingLevelMap")
        .filter(|v| v.as_object().is_some_and(|o| !o.is_empty()))
    {
        m.insert("thinkingLevelMap".into(), map.clone());
    }
    // How long the provider keeps a prompt cache entry (cache warming).
    if let Some(lifetimes) = entry
        .get("promptCache")
        .filter(|v| v.as_object().is_some_and(|o| !o.is_empty()))
    {
        m.insert("promptCache".into(), lifetimes.clone());
    }
    Ok(Value::Object(m))
}

fn provider_rank(p: &str) -> (usize, String) {
    (
        FIRST_PROVIDERS
            .iter()
            .position(|f| *f == p)
            .unwrap_or(FIRST_PROVIDERS.len()),
        p.to_string(),
    )
}

/// Generates the catalog from the folder of pi's `*.json` files.
pub fn generate(dir: &Path) -> Result<Generated, String> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut kept: BTreeMap<(usize, String), Vec<Value>> = BTreeMap::new();
    let mut left_out: Vec<(String, String, String, String)> = Vec::new();
    let mut total = 0usize;
    let mut per_source: BTreeMap<(String, String), usize> = BTreeMap::new();
    for file in files {
        let text =
            std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        let doc: Value =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", file.display()))?;
        let apis = doc
            .as_object()
            .ok_or(format!("{}: not an object", file.display()))?;
        for (api, entries) in apis {
            let entries = entries
                .as_object()
                .ok_or(format!("{}: {api} is not an object", file.display()))?;
            for entry in entries.values() {
                total += 1;
                let provider = entry
                    .get("provider")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
                    .to_string();
                let id = entry
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
                    .to_string();
                if let Some(reason) = exclusion(entry, api) {
                    left_out.push((provider, id, api.clone(), reason));
                    continue;
                }
                *per_source
                    .entry((provider.clone(), api.clone()))
                    .or_default() += 1;
                kept.entry(provider_rank(&provider))
                    .or_default()
                    .push(model(entry, api)?);
            }
        }
    }
    let mut catalog = String::from("[\n");
    let mut lines = Vec::new();
    let mut kept_count = 0;
    for ((_, provider), mut models) in kept {
        if let Some((_, default)) = DEFAULTS.iter().find(|(p, _)| *p == provider)
            && let Some(pos) = models.iter().position(|m| m["id"] == *default)
        {
            let first = models.remove(pos);
            models.insert(0, first);
        }
        kept_count += models.len();
        lines.extend(models.iter().map(Value::to_string));
    }
    catalog.push_str(&lines.join(",\n"));
    catalog.push_str("\n]\n");

    let mut report = String::new();
    report.push_str("# The built-in model catalog\n\n");
    report.push_str("Generated by `cargo run -p makai-ai --example gen_catalog` from pi 1.5.2's\n");
    report.push_str(
        "model catalog (`shared/reference/pi-1.5.2/model-catalog/*.json`, MIT, model facts);\n",
    );
    report.push_str(
        "do not edit by hand. `crates/makai-ai/src/catalog/builtin.json` is the catalog;\n",
    );
    report.push_str(
        "`tests/catalog_generated.rs` checks that both files are the generator's output.\n\n",
    );
    report.push_str(&format!(
        "{total} entries: {kept_count} built in, {} left out.\n\n",
        left_out.len()
    ));
    report.push_str(
        "Anthropic-Messages base URLs are pi's (the Anthropic SDK's): makai adds `/v1/messages` as the SDK does.\n",
    );
    report.push_str("Mistral's entries (pi's `mistral-conversations` client) are called through\n");
    report.push_str(
        "Mistral's OpenAI-compatible Chat Completions endpoint (`https://api.mistral.ai/v1`).\n\n",
    );
    report.push_str("## Built in, per provider and pi API\n\n| provider | pi API | models |\n| --- | --- | --- |\n");
    for ((provider, api), n) in &per_source {
        report.push_str(&format!("| {provider} | {api} | {n} |\n"));
    }
    report.push_str("\n## Left out\n\n");
    let mut by_reason: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (provider, id, _, reason) in &left_out {
        by_reason
            .entry(reason)
            .or_default()
            .push(format!("{provider}/{id}"));
    }
    for (reason, entries) in by_reason {
        report.push_str(&format!("### {reason} ({})\n\n", entries.len()));
        for e in entries {
            report.push_str(&format!("- {e}\n"));
        }
        report.push('\n');
    }
    Ok(Generated { catalog, report })
}
