//! Turns the built-in model catalog (`src/catalog/builtin.json`, written by
//! the `gen_catalog` example) into Rust data, so that start-up does not parse
//! 570 KB of JSON (it was two thirds of a short run's instructions).
//!
//! Each model becomes an `Entry` (see `src/catalog/builtin.rs`): its plain
//! fields, price tiers, `thinkingLevelMap` (853 models have one) and
//! `promptCache` as literals, its `compat` and `headers` as small JSON texts parsed at run
//! time. A model the literals cannot say exactly (a
//! field or an input list this script does not know) stops the build with
//! its id, rather than turning into a model that differs from the JSON.
//! The catalog's tests check that the entries give the models the JSON gives.

use std::error::Error;
use std::fmt::Write as _;
use std::path::PathBuf;

use serde_json::{Map, Value};

const SOURCE: &str = "src/catalog/builtin.json";

/// The fields an entry's literals say.
const PLAIN: &[&str] = &[
    "id",
    "name",
    "api",
    "provider",
    "baseUrl",
    "reasoning",
    "input",
    "cost",
    "contextWindow",
    "maxTokens",
    "compat",
    "headers",
    "thinkingLevelMap",
    "promptCache",
];

fn main() -> Result<(), Box<dyn Error>> {
    println!("cargo:rerun-if-changed={SOURCE}");
    let text = std::fs::read_to_string(SOURCE)?;
    let models: Vec<Map<String, Value>> = serde_json::from_str(&text)?;
    let mut out = String::from("&[\n");
    for model in &models {
        let entry = literals(model).ok_or_else(|| {
            format!(
                "{SOURCE}: model {} has a field or value build.rs cannot write as Rust; extend `literals`",
                serde_json::to_string(model.get("id").unwrap_or(&Value::Null)).unwrap_or_default()
            )
        })?;
        out.push_str(&entry);
    }
    out.push_str("]\n");
    let dest = PathBuf::from(std::env::var("OUT_DIR")?).join("builtin_catalog.rs");
    std::fs::write(dest, out)?;
    Ok(())
}

/// The entry of a model whose fields the literals can say exactly.
fn literals(m: &Map<String, Value>) -> Option<String> {
    if m.keys().any(|k| !PLAIN.contains(&k.as_str())) {
        return None;
    }
    let text = |k: &str| m.get(k)?.as_str().map(rust_str);
    let image = match m.get("input")?.as_array()?.as_slice() {
        [t] if t == "text" => false,
        [t, i] if t == "text" && i == "image" => true,
        _ => return None,
    };
    let cost = m.get("cost")?.as_object()?;
    let mut prices = String::new();
    for k in ["input", "output", "cacheRead", "cacheWrite"] {
        let price = match cost.get(k) {
            Some(v) => v.as_f64()?,
            None => 0.0,
        };
        write!(prices, "{price:?}, ").ok()?;
    }
    const PRICES: [&str; 4] = ["input", "output", "cacheRead", "cacheWrite"];
    if cost
        .keys()
        .any(|k| k != "tiers" && !PRICES.contains(&k.as_str()))
    {
        return None;
    }
    let mut tiers = String::new();
    for tier in cost
        .get("tiers")
        .map_or(Some(&[][..]), |t| t.as_array().map(Vec::as_slice))?
    {
        let tier = tier.as_object()?;
        if tier
            .keys()
            .any(|k| k != "inputTokensAbove" && !PRICES.contains(&k.as_str()))
        {
            return None;
        }
        write!(
            tiers,
            "CostTier {{ input_tokens_above: {}",
            tier.get("inputTokensAbove")?.as_u64()?
        )
        .ok()?;
        for (field, k) in ["input", "output", "cache_read", "cache_write"]
            .iter()
            .zip(PRICES)
        {
            let price = match tier.get(k) {
                Some(v) => v.as_f64()?,
                None => 0.0,
            };
            write!(tiers, ", {field}: {price:?}").ok()?;
        }
        tiers.push_str(" }, ");
    }
    let json = |k: &str| match m.get(k) {
        Some(v) => serde_json::to_string(v)
            .ok()
            .map(|j| format!("Some({})", rust_str(&j))),
        None => Some("None".to_string()),
    };
    Some(format!(
        "Entry {{ id: {}, name: {}, api: {}, provider: {}, base_url: {}, reasoning: {}, image: {image}, prices: [{prices}], tiers: &[{tiers}], context_window: {}, max_tokens: {}, compat: {}, headers: {}, thinking_level_map: {}, prompt_cache: {} }},\n",
        text("id")?,
        text("name")?,
        text("api")?,
        text("provider")?,
        text("baseUrl")?,
        match m.get("reasoning") {
            Some(v) => v.as_bool()?,
            None => false,
        },
        m.get("contextWindow")?.as_u64()?,
        m.get("maxTokens")?.as_u64()?,
        json("compat")?,
        json("headers")?,
        level_map(m.get("thinkingLevelMap"))?,
        cache_lifetimes(m.get("promptCache"))?,
    ))
}

/// A `promptCache` as a literal; `None` for anything but an object whose
/// fields are `short` and `long` in whole seconds.
fn cache_lifetimes(lifetimes: Option<&Value>) -> Option<String> {
    let Some(lifetimes) = lifetimes else {
        return Some("None".to_string());
    };
    let o = lifetimes.as_object()?;
    if o.keys().any(|k| k != "short" && k != "long") {
        return None;
    }
    let tier = |k: &str| match o.get(k) {
        Some(v) => v.as_u64().map(|s| format!("Some({s})")),
        None => Some("None".to_string()),
    };
    Some(format!(
        "Some(PromptCacheLifetimes {{ short: {}, long: {} }})",
        tier("short")?,
        tier("long")?
    ))
}

/// A `thinkingLevelMap` as a literal list of (level, value or `None`) pairs;
/// `None` for anything but an object of strings and nulls.
fn level_map(map: Option<&Value>) -> Option<String> {
    let Some(map) = map else {
        return Some("None".to_string());
    };
    // In level-name order, as a map read from JSON keeps them.
    let mut entries: Vec<(&String, &Value)> = map.as_object()?.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    let mut out = String::from("Some(ThinkingLevelMap::from_static(&[");
    for (level, value) in entries {
        let value = match value {
            Value::Null => "None".to_string(),
            Value::String(v) => format!("Some(Cow::Borrowed({}))", rust_str(v)),
            _ => return None,
        };
        write!(out, "(Cow::Borrowed({}), {value}), ", rust_str(level)).ok()?;
    }
    out.push_str("]))");
    Some(out)
}

/// `s` as a Rust string literal.
fn rust_str(s: &str) -> String {
    format!("{s:?}")
}
