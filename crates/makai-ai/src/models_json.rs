//! `models.json` in pi's format (pi 1.5.2's `docs/models-configuration.md`),
//! comments and trailing commas allowed as pi allows them.
//!
//! ```json
//! {
//!   "providers": {
//!     "ollama": {
//!       "baseUrl": "http://localhost:11434/v1",
//!       "api": "openai-completions",
//!       "apiKey": "ollama",
//!       "models": [{ "id": "qwen2.5-coder:7b" }]
//!     },
//!     "anthropic": { "baseUrl": "https://proxy.example.com" },
//!     "openai": { "modelOverrides": { "gpt-4o": { "contextWindow": 64000 } } }
//!   }
//! }
//! ```
//!
//! A provider id that is not built in adds a provider (its models need `api`
//! and `baseUrl`, on the model or the provider). A built-in provider id changes
//! that provider: `baseUrl`, `headers` and `compat` apply to its built-in models
//! too, `models` adds or replaces models, `modelOverrides` changes fields of
//! existing ones (objects such as `cost` merge field by field).
//!
//! `apiKey` and header values are a literal, `$NAME` / `${NAME}` environment
//! interpolation (`$$` and `$!` give `$` and `!`), a leading `!command` whose
//! output is the value, or (as pi 0.x read it) the name of a set environment
//! variable. API keys are resolved for each request ([`ConfigValue::resolve`]);
//! header values when the file is loaded. `thinkingLevelMap` replaces a
//! model's map (an override's keys change those levels only), `promptCache`
//! a model's cache lifetimes (an override's tiers change those tiers only).
//! Fields makai does not use (`inputLimits`, `samplingParams`, `authHeader`,
//! `oauth`, ...) are accepted and ignored.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::model::{Api, CompatFlags, Modality, Model, ModelCost, PromptCacheLifetimes};
use crate::options::ApiKey;

/// A configured secret or header value: resolved when used, never printed.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct ConfigValue(String);

impl std::fmt::Debug for ConfigValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.kind() {
            ValueKind::Command(_) => f.write_str("ConfigValue(!command)"),
            _ => f.write_str("ConfigValue(<redacted>)"),
        }
    }
}

enum ValueKind<'a> {
    Command(&'a str),
    Interpolated,
    EnvName(&'a str),
    Literal,
}

impl ConfigValue {
    /// Wraps a value as written in `models.json`.
    pub fn new(raw: impl Into<String>) -> Self {
        ConfigValue(raw.into())
    }

    fn kind(&self) -> ValueKind<'_> {
        let raw = self.0.trim();
        if let Some(cmd) = raw.strip_prefix('!') {
            ValueKind::Command(cmd)
        } else if raw.contains('$') {
            ValueKind::Interpolated
        } else if is_env_name(raw) && std::env::var_os(raw).is_some() {
            ValueKind::EnvName(raw)
        } else {
            ValueKind::Literal
        }
    }

    /// The value now: the command's trimmed output, the interpolated text,
    /// the variable's value or the literal. Errors say which kind failed and
    /// never contain the value.
    pub async fn resolve(&self) -> Result<String, String> {
        match self.kind() {
            ValueKind::Command(cmd) => crate::shell_command::run_shell_command(cmd, None)
                .await
                .map(|out| String::from_utf8_lossy(&out).trim().to_string())
                .map_err(|e| format!("the models.json command {e}")),
            _ => self.resolve_now(),
        }
    }

    /// Like [`ConfigValue::resolve`], blocking on a command (for load time).
    pub fn resolve_blocking(&self) -> Result<String, String> {
        match self.kind() {
            ValueKind::Command(cmd) => {
                let out = std::process::Command::new("sh")
                    .arg("-c")
                    .arg(cmd)
                    .stdin(std::process::Stdio::null())
                    .output()
                    .map_err(|e| format!("cannot run the models.json command: {e}"))?;
                command_output(out)
            }
            _ => self.resolve_now(),
        }
    }

    fn resolve_now(&self) -> Result<String, String> {
        match self.kind() {
            ValueKind::Command(_) | ValueKind::Literal => Ok(self.0.trim().to_string()),
            ValueKind::EnvName(name) => std::env::var(name)
                .map_err(|_| format!("environment variable {name} is not valid Unicode")),
            ValueKind::Interpolated => interpolate(self.0.trim()),
        }
    }

    /// [`ConfigValue::resolve`] as an API key (`None` when empty).
    pub async fn resolve_key(&self) -> Result<Option<ApiKey>, String> {
        let v = self.resolve().await?;
        Ok((!v.is_empty()).then(|| ApiKey::new(v)))
    }
}

fn command_output(out: std::process::Output) -> Result<String, String> {
    if !out.status.success() {
        return Err(format!(
            "the models.json command failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn is_env_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_uppercase() || c == '_')
        && chars.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// `$NAME`, `${NAME}`, `$$` -> `$`, `$!` -> `!`; a `$` before anything else stays.
fn interpolate(raw: &str) -> Result<String, String> {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let tail = &rest[at + 1..];
        let (name, used) = if let Some(inner) = tail.strip_prefix('{') {
            match inner.find('}') {
                Some(end) => (&inner[..end], end + 2),
                None => ("", 0),
            }
        } else if tail.starts_with('$') || tail.starts_with('!') {
            out.push_str(&tail[..1]);
            rest = &tail[1..];
            continue;
        } else {
            let n = tail
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(tail.len());
            (&tail[..n], n)
        };
        if name.is_empty() {
            out.push('$');
            rest = tail;
            continue;
        }
        let value = std::env::var(name).map_err(|_| {
            format!("environment variable {name} (named in models.json) is not set")
        })?;
        out.push_str(&value);
        rest = &tail[used..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The parsed file.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelsJson {
    /// Providers by id.
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderConfig>,
}

/// One provider section.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderConfig {
    /// Display name (unused by makai).
    pub name: Option<String>,
    /// Base URL for the provider's models.
    pub base_url: Option<String>,
    /// The API key (see the module docs for the forms).
    pub api_key: Option<ConfigValue>,
    /// The wire API of its models.
    pub api: Option<String>,
    /// Request headers (values resolved like `apiKey`).
    #[serde(default)]
    pub headers: BTreeMap<String, ConfigValue>,
    /// Compatibility overrides.
    pub compat: Option<CompatConfig>,
    /// Models added or replaced.
    #[serde(default)]
    pub models: Vec<ModelConfig>,
    /// Changes to existing models, by id.
    #[serde(default)]
    pub model_overrides: BTreeMap<String, ModelOverride>,
}

/// One `models` entry.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelConfig {
    /// Model id sent to the API (required).
    pub id: String,
    /// Display name.
    pub name: Option<String>,
    /// Overrides the provider's `api`.
    pub api: Option<String>,
    /// Overrides the provider's `baseUrl`.
    pub base_url: Option<String>,
    /// Supports thinking.
    pub reasoning: Option<bool>,
    /// `["text"]` or `["text", "image"]`.
    pub input: Option<Vec<Modality>>,
    /// Prices per million tokens.
    pub cost: Option<CostConfig>,
    /// Context window (default 128000).
    pub context_window: Option<u64>,
    /// Maximum output tokens (default 16384).
    pub max_tokens: Option<u64>,
    /// Request headers.
    #[serde(default)]
    pub headers: BTreeMap<String, ConfigValue>,
    /// Compatibility overrides (over the provider's, field by field).
    pub compat: Option<CompatConfig>,
    /// The thinking levels offered and what each is sent as ([`Model::thinking_level_map`]).
    pub thinking_level_map: Option<crate::model::ThinkingLevelMap>,
    /// Prompt cache lifetimes ([`Model::prompt_cache`]).
    pub prompt_cache: Option<PromptCacheLifetimes>,
}

/// A `modelOverrides` entry: every field optional.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelOverride {
    /// Display name.
    pub name: Option<String>,
    /// Supports thinking.
    pub reasoning: Option<bool>,
    /// Input modalities.
    pub input: Option<Vec<Modality>>,
    /// Prices, merged field by field.
    pub cost: Option<CostConfig>,
    /// Context window.
    pub context_window: Option<u64>,
    /// Maximum output tokens.
    pub max_tokens: Option<u64>,
    /// Request headers, added.
    #[serde(default)]
    pub headers: BTreeMap<String, ConfigValue>,
    /// Compatibility overrides.
    pub compat: Option<CompatConfig>,
    /// Thinking levels changed, key by key (`null` turns a level off).
    pub thinking_level_map: Option<BTreeMap<String, Option<String>>>,
    /// Prompt cache lifetimes changed, tier by tier.
    pub prompt_cache: Option<PromptCacheLifetimes>,
}

/// Prices in a `models.json` entry (any field may be left out in an override).
#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CostConfig {
    /// Uncached input.
    pub input: Option<f64>,
    /// Output.
    pub output: Option<f64>,
    /// Cache reads.
    pub cache_read: Option<f64>,
    /// Cache writes.
    pub cache_write: Option<f64>,
}

impl CostConfig {
    fn merge_into(self, cost: &mut ModelCost) {
        cost.input = self.input.unwrap_or(cost.input);
        cost.output = self.output.unwrap_or(cost.output);
        cost.cache_read = self.cache_read.unwrap_or(cost.cache_read);
        cost.cache_write = self.cache_write.unwrap_or(cost.cache_write);
    }
}

/// pi's `compat` object: makai's flags plus pi's spelling of the token field.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompatConfig {
    /// The flags makai shares with pi.
    #[serde(flatten)]
    pub flags: CompatFlags,
    /// `"max_completion_tokens"` or `"max_tokens"`.
    pub max_tokens_field: Option<String>,
}

impl CompatConfig {
    fn into_flags(self) -> CompatFlags {
        let mut flags = self.flags;
        if let Some(field) = self.max_tokens_field {
            flags.max_tokens_field_is_completion = Some(field == "max_completion_tokens");
        }
        flags
    }
}

/// Lays `over` onto `base` field by field (set fields of `over` win).
fn merge_compat(base: Option<CompatFlags>, over: Option<CompatFlags>) -> Option<CompatFlags> {
    let Some(over) = over else { return base };
    let Some(mut merged) = base else {
        return Some(over);
    };
    macro_rules! take {
        ($($f:ident),*) => { $( if over.$f.is_some() { merged.$f = over.$f; } )* };
    }
    take!(
        supports_usage_in_streaming,
        max_tokens_field_is_completion,
        supports_developer_role,
        supports_reasoning_effort,
        supports_store,
        requires_tool_result_name,
        requires_assistant_after_tool_result,
        requires_thinking_as_text,
        max_tool_call_id_len,
        supports_reasoning_content,
        supports_named_tool_choice,
        supports_tools,
        requires_tools_with_tool_history,
        requires_non_null_assistant_content,
        prompt_cache_key_mode
    );
    Some(merged)
}

/// Parses the text of a `models.json` file (JSON with comments and trailing commas).
pub fn parse(text: &str) -> Result<ModelsJson, String> {
    json5::from_str(text).map_err(|e| format!("invalid models.json: {e}"))
}

fn parse_api(api: &str, what: &str) -> Result<Api, String> {
    serde_json::from_value(serde_json::Value::String(api.to_string())).map_err(|_| {
        format!(
            "{what} has api \"{api}\", which makai does not speak (anthropic-messages, \
             openai-completions, openai-responses, google-generative-ai)"
        )
    })
}

fn resolve_headers(
    headers: &BTreeMap<String, ConfigValue>,
    what: &str,
) -> Result<BTreeMap<String, String>, String> {
    headers
        .iter()
        .map(|(k, v)| {
            v.resolve_blocking()
                .map(|v| (k.clone(), v))
                .map_err(|e| format!("header {k} of {what}: {e}"))
        })
        .collect()
}

/// What a file changes in a model list, applied by [`apply`].
#[derive(Debug, Default)]
pub struct Applied {
    /// Models added or replaced.
    pub added: usize,
    /// The providers' `apiKey`s.
    pub keys: BTreeMap<String, ConfigValue>,
}

/// Applies a parsed file to `models` (see the module docs). Errors name the
/// provider or model and the problem.
pub fn apply(file: ModelsJson, models: &mut Vec<Model>) -> Result<Applied, String> {
    let mut applied = Applied::default();
    for (provider, section) in file.providers {
        let what = format!("provider '{provider}'");
        let headers = resolve_headers(&section.headers, &what)?;
        let compat = section.compat.map(CompatConfig::into_flags);
        let api = section
            .api
            .as_deref()
            .map(|a| parse_api(a, &what))
            .transpose()?;
        // Provider-wide changes to the models it already has.
        for m in models.iter_mut().filter(|m| m.provider == provider) {
            if let Some(url) = &section.base_url {
                m.base_url = url.clone();
            }
            m.headers.extend(headers.clone());
            m.compat = merge_compat(m.compat.take(), compat.clone());
            if let Some(o) = section.model_overrides.get(&m.id) {
                apply_override(m, o, &what)?;
            }
        }
        for mc in section.models {
            let what = format!("model '{}' of provider '{provider}'", mc.id);
            let api = match mc.api.as_deref() {
                Some(a) => parse_api(a, &what)?,
                None => api.ok_or_else(|| {
                    format!("{what} has no \"api\" (set it on the model or the provider)")
                })?,
            };
            let base_url = mc
                .base_url
                .clone()
                .or_else(|| section.base_url.clone())
                .ok_or_else(|| format!("{what} has no \"baseUrl\""))?;
            let mut model = Model::custom(api, provider.clone(), mc.id.clone(), base_url);
            if let Some(name) = mc.name {
                model.name = name;
            }
            model.reasoning = mc.reasoning.unwrap_or(false);
            if let Some(input) = mc.input {
                model.input = input;
            }
            if let Some(cost) = mc.cost {
                cost.merge_into(&mut model.cost);
            }
            if let Some(c) = mc.context_window {
                model.context_window = c;
            }
            if let Some(t) = mc.max_tokens {
                model.max_tokens = t;
            }
            model.headers = headers.clone();
            model.headers.extend(resolve_headers(&mc.headers, &what)?);
            model.compat = merge_compat(compat.clone(), mc.compat.map(CompatConfig::into_flags));
            model.thinking_level_map = mc.thinking_level_map;
            model.prompt_cache = mc.prompt_cache;
            models.retain(|m| !(m.provider == model.provider && m.id == model.id));
            models.push(model);
            applied.added += 1;
        }
        if let Some(key) = section.api_key {
            applied.keys.insert(provider, key);
        }
    }
    Ok(applied)
}

fn apply_override(m: &mut Model, o: &ModelOverride, what: &str) -> Result<(), String> {
    if let Some(n) = &o.name {
        m.name = n.clone();
    }
    if let Some(r) = o.reasoning {
        m.reasoning = r;
    }
    if let Some(i) = &o.input {
        m.input = i.clone();
    }
    if let Some(c) = o.cost {
        c.merge_into(&mut m.cost);
    }
    if let Some(c) = o.context_window {
        m.context_window = c;
    }
    if let Some(t) = o.max_tokens {
        m.max_tokens = t;
    }
    m.headers.extend(resolve_headers(
        &o.headers,
        &format!("{what}, model {}", m.id),
    )?);
    m.compat = merge_compat(
        m.compat.take(),
        o.compat.clone().map(CompatConfig::into_flags),
    );
    if let Some(levels) = &o.thinking_level_map {
        let map = m.thinking_level_map.get_or_insert_with(Default::default);
        for (level, value) in levels {
            map.insert(level.clone(), value.clone());
        }
    }
    if let Some(tiers) = o.prompt_cache {
        let lifetimes = m.prompt_cache.get_or_insert_with(Default::default);
        lifetimes.short = tiers.short.or(lifetimes.short);
        lifetimes.long = tiers.long.or(lifetimes.long);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_resolve_in_every_form_pi_documents() {
        // SAFETY of the test: a variable name only this test uses.
        unsafe { std::env::set_var("MAKAI_TEST_MJ_KEY", "from-env") };
        let v = |s: &str| ConfigValue::new(s).resolve_blocking().unwrap();
        assert_eq!(v("literal-key"), "literal-key");
        assert_eq!(v("MAKAI_TEST_MJ_KEY"), "from-env");
        assert_eq!(v("$MAKAI_TEST_MJ_KEY"), "from-env");
        assert_eq!(v("Bearer ${MAKAI_TEST_MJ_KEY}!"), "Bearer from-env!");
        assert_eq!(v("a$$b$!c"), "a$b!c");
        assert_eq!(v("!printf 'cmd-key\\n'"), "cmd-key");
        assert_eq!(v("UNSET_LOOKING_NAME_ZZ"), "UNSET_LOOKING_NAME_ZZ");
        let err = ConfigValue::new("$MAKAI_TEST_MJ_MISSING")
            .resolve_blocking()
            .unwrap_err();
        assert!(
            err.contains("MAKAI_TEST_MJ_MISSING (named in models.json) is not set"),
            "{err}"
        );
        let err = ConfigValue::new("!exit 3").resolve_blocking().unwrap_err();
        assert!(err.contains("command failed"), "{err}");
        assert_eq!(
            format!("{:?}", ConfigValue::new("sk-secret")),
            "ConfigValue(<redacted>)"
        );
    }
}
