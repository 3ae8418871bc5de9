//! Model descriptions: which API speaks to it, where, what it accepts and what it costs.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::options::ThinkingLevel;

/// The wire APIs makai speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Api {
    /// Anthropic Messages (`/v1/messages`).
    #[serde(rename = "anthropic-messages")]
    AnthropicMessages,
    /// OpenAI Chat Completions and every OpenAI-compatible server.
    #[serde(rename = "openai-completions")]
    OpenAiCompletions,
    /// OpenAI Responses (`/v1/responses`).
    #[serde(rename = "openai-responses")]
    OpenAiResponses,
    /// Google Gemini (`streamGenerateContent?alt=sse`).
    #[serde(rename = "google-generative-ai")]
    GoogleGenerativeAi,
    /// Gemini on Google Vertex AI (project/location endpoints, OAuth2 bearer tokens).
    #[serde(rename = "google-vertex")]
    GoogleVertex,
    /// Claude on Google Vertex AI (`:streamRawPredict`, the Anthropic event stream).
    #[serde(rename = "anthropic-vertex")]
    AnthropicVertex,
    /// Amazon Bedrock ConverseStream (AWS event-stream framing, SigV4 or a Bedrock API key).
    #[serde(rename = "bedrock-converse-stream")]
    BedrockConverseStream,
    /// OpenAI Responses on Azure OpenAI / Azure AI Foundry (deployments, `api-version`).
    #[serde(rename = "azure-openai-responses")]
    AzureOpenAiResponses,
    /// The Codex Responses endpoint of a ChatGPT subscription.
    #[serde(rename = "openai-codex-responses")]
    OpenAiCodexResponses,
}

impl Api {
    /// The stable wire name, as in pi.
    pub fn as_str(self) -> &'static str {
        match self {
            Api::AnthropicMessages => "anthropic-messages",
            Api::OpenAiCompletions => "openai-completions",
            Api::OpenAiResponses => "openai-responses",
            Api::GoogleGenerativeAi => "google-generative-ai",
            Api::GoogleVertex => "google-vertex",
            Api::AnthropicVertex => "anthropic-vertex",
            Api::BedrockConverseStream => "bedrock-converse-stream",
            Api::AzureOpenAiResponses => "azure-openai-responses",
            Api::OpenAiCodexResponses => "openai-codex-responses",
        }
    }

    /// Every API, in a stable order.
    pub const ALL: [Api; 9] = [
        Api::AnthropicMessages,
        Api::OpenAiCompletions,
        Api::OpenAiResponses,
        Api::GoogleGenerativeAi,
        Api::GoogleVertex,
        Api::AnthropicVertex,
        Api::BedrockConverseStream,
        Api::AzureOpenAiResponses,
        Api::OpenAiCodexResponses,
    ];
}

impl std::fmt::Display for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Api {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Api::ALL
            .into_iter()
            .find(|a| a.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown API '{s}' (expected one of: {})",
                    Api::ALL.map(|a| a.as_str()).join(", ")
                )
            })
    }
}

/// Input modalities a model accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Modality {
    /// Text.
    Text,
    /// Images.
    Image,
}

/// Prices in dollars per million tokens above an input size (pi's `cost.tiers`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CostTier {
    /// The tier applies when a request's input (uncached, cache reads and cache
    /// writes together) is strictly above this many tokens.
    pub input_tokens_above: u64,
    /// Uncached input.
    #[serde(default)]
    pub input: f64,
    /// Output.
    #[serde(default)]
    pub output: f64,
    /// Cache reads.
    #[serde(default)]
    pub cache_read: f64,
    /// Cache writes.
    #[serde(default)]
    pub cache_write: f64,
}

/// Prices in dollars per million tokens.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelCost {
    /// Uncached input.
    #[serde(default)]
    pub input: f64,
    /// Output.
    #[serde(default)]
    pub output: f64,
    /// Cache reads.
    #[serde(default)]
    pub cache_read: f64,
    /// Cache writes.
    #[serde(default)]
    pub cache_write: f64,
    /// Higher prices for large requests; the tier with the highest threshold
    /// below the request's input applies to the whole request.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tiers: Vec<CostTier>,
}

impl ModelCost {
    /// The prices that apply to a request with `input_tokens` of input (cache
    /// reads and writes included): the tier with the highest threshold it
    /// strictly exceeds, else the base prices.
    pub fn for_input(&self, input_tokens: u64) -> ModelCost {
        match self
            .tiers
            .iter()
            .filter(|t| input_tokens > t.input_tokens_above)
            .max_by_key(|t| t.input_tokens_above)
        {
            Some(t) => ModelCost {
                input: t.input,
                output: t.output,
                cache_read: t.cache_read,
                cache_write: t.cache_write,
                tiers: Vec::new(),
            },
            None => ModelCost {
                tiers: Vec::new(),
                ..self.clone()
            },
        }
    }
}

/// Per-model switches for OpenAI-compatible servers that differ from OpenAI.
/// Every field is optional; unset fields are guessed from the base URL.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompatFlags {
    /// Send `stream_options: {include_usage: true}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supports_usage_in_streaming: Option<bool>,
    /// Send the limit as `max_completion_tokens` (true) or `max_tokens` (false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens_field_is_completion: Option<bool>,
    /// Accept a `developer` role for the system prompt on reasoning models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supports_developer_role: Option<bool>,
    /// Send `reasoning_effort`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supports_reasoning_effort: Option<bool>,
    /// Send `store: false`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supports_store: Option<bool>,
    /// The server requires a `name` on tool result messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requires_tool_result_name: Option<bool>,
    /// The server rejects a user message right after a tool result; insert an assistant turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requires_assistant_after_tool_result: Option<bool>,
    /// Thinking must be replayed as plain text, not a reasoning field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requires_thinking_as_text: Option<bool>,
    /// Maximum length of tool call ids the server accepts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tool_call_id_len: Option<usize>,
    /// The server accepts the reasoning of earlier turns sent back on assistant
    /// messages (as `reasoning_content`, or the field it streamed the reasoning in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supports_reasoning_content: Option<bool>,
    /// The server honours a named `tool_choice` (`{"type": "function", ...}`).
    /// When false, a named choice is sent as `"required"` with only that
    /// tool's definition (the same forced call). A makai addition to pi's
    /// flags; default false for servers on this machine (llama.cpp ignores
    /// the object form), true elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supports_named_tool_choice: Option<bool>,
    /// The model can call tools (function calling). `false` for a model
    /// without it: makai then runs it without tools (unless `--tools` asks)
    /// and puts an overview of the working directory in its context instead.
    /// A makai addition to pi's flags, read for every API; unset means true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supports_tools: Option<bool>,
    /// pi 1.5.1's `requiresToolsWithToolHistory`: send `"tools": []` when no
    /// tool is offered but the history has tool calls (older LiteLLM in front
    /// of Anthropic). Default false: the field is left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requires_tools_with_tool_history: Option<bool>,
    /// pi 1.5.1's `requiresNonNullAssistantContent`: an assistant message of
    /// tool calls alone carries `"content": ""` (default: no `content`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requires_non_null_assistant_content: Option<bool>,
    /// pi 1.5.1's `promptCacheKeyMode`: send the session id as
    /// `prompt_cache_key` where the host is known to take it (`auto`, the
    /// default), always, or never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_cache_key_mode: Option<PromptCacheKeyMode>,
    /// pi's `supportsLongCacheRetention`: whether the endpoint takes long
    /// prompt-cache retention (Anthropic's `ttl: "1h"`, OpenAI's
    /// `prompt_cache_retention` / `prompt_cache_options`); see
    /// [`Model::cache_retention`] for the defaults. Where it does not, long
    /// retention is asked as short.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supports_long_cache_retention: Option<bool>,
}

/// See [`CompatFlags::prompt_cache_key_mode`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PromptCacheKeyMode {
    /// As the host is known to take it.
    Auto,
    /// Always sent.
    Enabled,
    /// Never sent.
    Disabled,
}

/// One level's entry of a [`ThinkingLevelMap`]: the level's name and the
/// value sent for it (`None`: not offered).
type LevelEntry = (Cow<'static, str>, Option<Cow<'static, str>>);

/// pi's `thinkingLevelMap` of a model: for each thinking level it names, the
/// value sent to the provider, or `None` (JSON `null`) where the model does
/// not offer the level. In JSON an object (`{"off": "none", "xhigh": null}`).
///
/// The built-in catalog's maps are static (853 models have one: making them
/// at start-up cost a short run a third more instructions); one read from
/// JSON or changed by `models.json` owns its entries.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThinkingLevelMap(Cow<'static, [LevelEntry]>);

impl ThinkingLevelMap {
    /// A map of static entries (the built-in catalog), in level-name order.
    pub const fn from_static(entries: &'static [LevelEntry]) -> Self {
        ThinkingLevelMap(Cow::Borrowed(entries))
    }

    /// The entry of `level`: `None` when the map does not name it,
    /// `Some(None)` when it names it as not offered.
    pub fn get(&self, level: &str) -> Option<Option<&str>> {
        self.0
            .iter()
            .find(|(name, _)| name == level)
            .map(|(_, value)| value.as_deref())
    }

    /// The levels the map names.
    pub fn levels(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(name, _)| name.as_ref())
    }

    /// Sets `level`'s entry (a `models.json` override, key by key).
    pub fn insert(&mut self, level: String, value: Option<String>) {
        let entries = self.0.to_mut();
        let value = value.map(Cow::Owned);
        match entries.iter_mut().find(|(name, _)| *name == level) {
            Some(entry) => entry.1 = value,
            None => {
                entries.push((Cow::Owned(level), value));
                entries.sort_by(|a, b| a.0.cmp(&b.0));
            }
        }
    }
}

impl FromIterator<(String, Option<String>)> for ThinkingLevelMap {
    fn from_iter<I: IntoIterator<Item = (String, Option<String>)>>(iter: I) -> Self {
        let mut map = ThinkingLevelMap::default();
        for (level, value) in iter {
            map.insert(level, value);
        }
        map
    }
}

impl Serialize for ThinkingLevelMap {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (level, value) in self.0.iter() {
            map.serialize_entry(level, value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for ThinkingLevelMap {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let entries = BTreeMap::<String, Option<String>>::deserialize(deserializer)?;
        Ok(entries.into_iter().collect())
    }
}

impl Model {
    /// False when the model's description says it cannot call tools
    /// ([`CompatFlags::supports_tools`]).
    pub fn can_call_tools(&self) -> bool {
        self.compat.as_ref().and_then(|c| c.supports_tools) != Some(false)
    }
}

/// A model and everything needed to call it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Model {
    /// The id sent to the API.
    pub id: String,
    /// A human-readable name.
    pub name: String,
    /// The wire API.
    pub api: Api,
    /// The provider name (`anthropic`, `openai`, `google`, `ollama`, ...).
    pub provider: String,
    /// Base URL as pi and each provider's SDK write it: `https://api.anthropic.com`
    /// (the client adds `/v1/messages`), `https://api.openai.com/v1`,
    /// `https://generativelanguage.googleapis.com/v1beta`.
    pub base_url: String,
    /// True when the model can reason ("thinking").
    #[serde(default)]
    pub reasoning: bool,
    /// Accepted input modalities.
    #[serde(default = "text_only")]
    pub input: Vec<Modality>,
    /// Prices per million tokens.
    #[serde(default)]
    pub cost: ModelCost,
    /// Context window in tokens.
    #[serde(default = "default_context_window")]
    pub context_window: u64,
    /// Maximum output tokens.
    #[serde(default = "default_max_tokens")]
    pub max_tokens: u64,
    /// Headers added to every request.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Compatibility switches for OpenAI-compatible servers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compat: Option<CompatFlags>,
    /// pi's `thinkingLevelMap`: the value sent to the provider for a thinking
    /// level (`"high"`), or `None` (JSON `null`) where the model does not offer
    /// it. Levels up to `high` that are missing use the provider's defaults;
    /// `xhigh` and `max` are offered only with a value here. See
    /// [`Model::thinking_levels`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_level_map: Option<ThinkingLevelMap>,
    /// pi's `promptCache`: how long the provider keeps a prompt cache entry,
    /// per retention tier ([`Model::prompt_cache_lifetime`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_cache: Option<PromptCacheLifetimes>,
}

/// pi's `promptCache`: the provider's best-effort lifetime of a prompt cache
/// entry, in seconds, for the `short` and `long` retention tiers (the
/// conservative end of a published range). A tier without one is never kept
/// warm.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptCacheLifetimes {
    /// Seconds an entry written with short retention lives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short: Option<u64>,
    /// Seconds an entry written with long retention lives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub long: Option<u64>,
}

fn text_only() -> Vec<Modality> {
    vec![Modality::Text]
}
fn default_context_window() -> u64 {
    128_000
}
fn default_max_tokens() -> u64 {
    16_384
}

impl Model {
    /// A model for an ad-hoc endpoint with sensible defaults (text input, no prices).
    pub fn custom(
        api: Api,
        provider: impl Into<String>,
        id: impl Into<String>,
        base_url: impl Into<String>,
    ) -> Self {
        let id = id.into();
        Model {
            name: id.clone(),
            id,
            api,
            provider: provider.into(),
            base_url: base_url.into(),
            reasoning: false,
            input: text_only(),
            cost: ModelCost::default(),
            context_window: default_context_window(),
            max_tokens: default_max_tokens(),
            headers: BTreeMap::new(),
            compat: None,
            thinking_level_map: None,
            prompt_cache: None,
        }
    }

    /// How long a prompt cache entry written with `retention` lives at the
    /// provider ([`Model::prompt_cache`]); `None` when caching is off or the
    /// model declares no lifetime for that tier.
    pub fn prompt_cache_lifetime(
        &self,
        retention: crate::options::CacheRetention,
    ) -> Option<std::time::Duration> {
        use crate::options::CacheRetention;
        let lifetimes = self.prompt_cache?;
        let seconds = match retention {
            CacheRetention::None => None,
            CacheRetention::Short => lifetimes.short,
            CacheRetention::Long => lifetimes.long,
        }?;
        Some(std::time::Duration::from_secs(seconds))
    }

    /// The retention requests to this model ask for when `asked` is wanted:
    /// long retention only where the endpoint takes it (pi's
    /// `supportsLongCacheRetention`; by default every endpoint but
    /// Fireworks's), else short.
    pub fn cache_retention(
        &self,
        asked: crate::options::CacheRetention,
    ) -> crate::options::CacheRetention {
        use crate::options::CacheRetention;
        let takes_long = self
            .compat
            .as_ref()
            .and_then(|c| c.supports_long_cache_retention)
            .unwrap_or(self.provider != "fireworks");
        match asked {
            CacheRetention::Long if !takes_long => CacheRetention::Short,
            other => other,
        }
    }

    /// pi's `supportsLongCacheRetention` as `models.json` sets it (`None`:
    /// not set; OpenAI's long-retention fields then go to `api.openai.com`
    /// only).
    pub fn long_cache_retention_set(&self) -> Option<bool> {
        self.compat
            .as_ref()
            .and_then(|c| c.supports_long_cache_retention)
    }

    /// True when the request `options` describe can be sent again with a
    /// one-token output cap and stay the request it was (what cache warming
    /// does). False when it asks a Claude model over Anthropic Messages to
    /// think within a token budget (`budget_tokens`): the replay could still
    /// think up to the whole budget.
    pub fn replays_with_one_output_token(&self, options: &crate::StreamOptions) -> bool {
        if self.api != Api::AnthropicMessages {
            return true;
        }
        let one = crate::StreamOptions {
            max_tokens: Some(1),
            ..options.clone()
        };
        let plan = crate::providers::anthropic::thinking_plan(self, &one, false);
        plan.thinking
            .as_ref()
            .and_then(|t| t.get("type"))
            .and_then(serde_json::Value::as_str)
            != Some("enabled")
    }

    /// True when the model accepts image input.
    pub fn accepts_images(&self) -> bool {
        self.input.contains(&Modality::Image)
    }
}

impl Model {
    /// The thinking levels the model offers, in increasing order (`off`
    /// alone when it does not reason). With a [`Model::thinking_level_map`],
    /// as pi 1.5 reads it: a level up to `high` unless the map says `null`,
    /// `xhigh` and `max` only with a value. Without one: `off` to `high`, and
    /// `xhigh` for GPT-5 and Codex models.
    pub fn thinking_levels(&self) -> Vec<ThinkingLevel> {
        if !self.reasoning {
            return vec![ThinkingLevel::Off];
        }
        match &self.thinking_level_map {
            Some(map) => ThinkingLevel::ALL
                .into_iter()
                .filter(|l| match map.get(l.as_str()) {
                    Some(value) => value.is_some(),
                    None => *l <= ThinkingLevel::High,
                })
                .collect(),
            None => {
                let id = self.id.to_ascii_lowercase();
                let top = if id.contains("gpt-5") || id.contains("codex") {
                    ThinkingLevel::Xhigh
                } else {
                    ThinkingLevel::High
                };
                ThinkingLevel::ALL
                    .into_iter()
                    .filter(|l| *l <= top)
                    .collect()
            }
        }
    }

    /// `level` if the model offers it, else the highest level below it that
    /// it offers, else its lowest (a model that always reasons has no `off`).
    pub fn clamp_thinking(&self, level: ThinkingLevel) -> ThinkingLevel {
        let levels = self.thinking_levels();
        levels
            .iter()
            .copied()
            .filter(|l| *l <= level)
            .max()
            .or_else(|| levels.first().copied())
            .unwrap_or(ThinkingLevel::Off)
    }

    /// What the model's [`Model::thinking_level_map`] sends to the provider
    /// for `level` (`None`: the provider's own mapping applies).
    pub fn thinking_value(&self, level: ThinkingLevel) -> Option<&str> {
        self.thinking_level_map.as_ref()?.get(level.as_str())?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thinking_level_map_reads_and_writes_pi_s_object_and_takes_overrides() {
        let mut map: ThinkingLevelMap =
            serde_json::from_str(r#"{"xhigh": "max", "off": null, "high": "high"}"#).unwrap();
        assert_eq!(map.get("off"), Some(None));
        assert_eq!(map.get("xhigh"), Some(Some("max")));
        assert_eq!(map.get("low"), None);
        assert_eq!(map.levels().collect::<Vec<_>>(), ["high", "off", "xhigh"]);
        map.insert("off".into(), Some("none".into()));
        map.insert("low".into(), None);
        assert_eq!(
            serde_json::to_string(&map).unwrap(),
            r#"{"high":"high","low":null,"off":"none","xhigh":"max"}"#
        );
        // A static map (the built-in catalog's) equals the same map read.
        static ENTRIES: &[LevelEntry] = &[
            (Cow::Borrowed("high"), Some(Cow::Borrowed("high"))),
            (Cow::Borrowed("low"), None),
            (Cow::Borrowed("off"), Some(Cow::Borrowed("none"))),
            (Cow::Borrowed("xhigh"), Some(Cow::Borrowed("max"))),
        ];
        assert_eq!(ThinkingLevelMap::from_static(ENTRIES), map);
    }
}
