//! The model catalog: built-in entries for current hosted models, plus custom
//! models for any OpenAI-compatible (or other) endpoint from a `models.json` file.
//!
//! `models.json` follows pi's format (see [`crate::models_json`]):
//!
//! ```json
//! {
//!   "providers": {
//!     "ollama": {
//!       "baseUrl": "http://127.0.0.1:11434/v1",
//!       "api": "openai-completions",
//!       "models": [{ "id": "qwen2.5-coder:7b", "contextWindow": 32768, "maxTokens": 8192 }]
//!     }
//!   }
//! }
//! ```
//!
//! Prices are dollars per million tokens; they are list prices at the time of
//! writing and every response's cost is computed from them.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use crate::error::ProviderError;
use crate::model::{Api, Modality, Model, ModelCost};
use crate::models_json::{self, ConfigValue};

struct Entry {
    provider: &'static str,
    api: Api,
    base_url: &'static str,
    id: &'static str,
    name: &'static str,
    reasoning: bool,
    images: bool,
    /// input, output, cache read, cache write ($ per million tokens)
    cost: [f64; 4],
    context_window: u64,
    max_tokens: u64,
}

/// Written as pi and the Anthropic SDKs write it; the client adds `/v1/messages`.
const ANTHROPIC: &str = "https://api.anthropic.com";
const OPENAI: &str = "https://api.openai.com/v1";
const GOOGLE: &str = "https://generativelanguage.googleapis.com/v1beta";

#[rustfmt::skip]
const ENTRIES: &[Entry] = &[
    Entry { provider: "anthropic", api: Api::AnthropicMessages, base_url: ANTHROPIC, id: "claude-opus-4-5", name: "Claude Opus 4.5", reasoning: true, images: true, cost: [5.0, 25.0, 0.5, 6.25], context_window: 200_000, max_tokens: 64_000 },
    Entry { provider: "anthropic", api: Api::AnthropicMessages, base_url: ANTHROPIC, id: "claude-sonnet-4-5", name: "Claude Sonnet 4.5", reasoning: true, images: true, cost: [3.0, 15.0, 0.3, 3.75], context_window: 200_000, max_tokens: 64_000 },
    Entry { provider: "anthropic", api: Api::AnthropicMessages, base_url: ANTHROPIC, id: "claude-haiku-4-5", name: "Claude Haiku 4.5", reasoning: true, images: true, cost: [1.0, 5.0, 0.1, 1.25], context_window: 200_000, max_tokens: 64_000 },
    Entry { provider: "anthropic", api: Api::AnthropicMessages, base_url: ANTHROPIC, id: "claude-opus-4-1", name: "Claude Opus 4.1", reasoning: true, images: true, cost: [15.0, 75.0, 1.5, 18.75], context_window: 200_000, max_tokens: 32_000 },
    Entry { provider: "anthropic", api: Api::AnthropicMessages, base_url: ANTHROPIC, id: "claude-sonnet-4-0", name: "Claude Sonnet 4", reasoning: true, images: true, cost: [3.0, 15.0, 0.3, 3.75], context_window: 200_000, max_tokens: 64_000 },
    Entry { provider: "openai", api: Api::OpenAiResponses, base_url: OPENAI, id: "gpt-5.1", name: "GPT-5.1", reasoning: true, images: true, cost: [1.25, 10.0, 0.125, 0.0], context_window: 400_000, max_tokens: 128_000 },
    Entry { provider: "openai", api: Api::OpenAiResponses, base_url: OPENAI, id: "gpt-5", name: "GPT-5", reasoning: true, images: true, cost: [1.25, 10.0, 0.125, 0.0], context_window: 400_000, max_tokens: 128_000 },
    Entry { provider: "openai", api: Api::OpenAiResponses, base_url: OPENAI, id: "gpt-5-mini", name: "GPT-5 mini", reasoning: true, images: true, cost: [0.25, 2.0, 0.025, 0.0], context_window: 400_000, max_tokens: 128_000 },
    Entry { provider: "openai", api: Api::OpenAiResponses, base_url: OPENAI, id: "gpt-5-nano", name: "GPT-5 nano", reasoning: true, images: true, cost: [0.05, 0.4, 0.005, 0.0], context_window: 400_000, max_tokens: 128_000 },
    Entry { provider: "openai", api: Api::OpenAiResponses, base_url: OPENAI, id: "o4-mini", name: "o4-mini", reasoning: true, images: true, cost: [1.1, 4.4, 0.275, 0.0], context_window: 200_000, max_tokens: 100_000 },
    Entry { provider: "openai", api: Api::OpenAiCompletions, base_url: OPENAI, id: "gpt-4.1", name: "GPT-4.1", reasoning: false, images: true, cost: [2.0, 8.0, 0.5, 0.0], context_window: 1_047_576, max_tokens: 32_768 },
    Entry { provider: "openai", api: Api::OpenAiCompletions, base_url: OPENAI, id: "gpt-4o", name: "GPT-4o", reasoning: false, images: true, cost: [2.5, 10.0, 1.25, 0.0], context_window: 128_000, max_tokens: 16_384 },
    Entry { provider: "google", api: Api::GoogleGenerativeAi, base_url: GOOGLE, id: "gemini-3-pro-preview", name: "Gemini 3 Pro (preview)", reasoning: true, images: true, cost: [2.0, 12.0, 0.2, 0.0], context_window: 1_048_576, max_tokens: 65_536 },
    Entry { provider: "google", api: Api::GoogleGenerativeAi, base_url: GOOGLE, id: "gemini-2.5-pro", name: "Gemini 2.5 Pro", reasoning: true, images: true, cost: [1.25, 10.0, 0.31, 0.0], context_window: 1_048_576, max_tokens: 65_536 },
    Entry { provider: "google", api: Api::GoogleGenerativeAi, base_url: GOOGLE, id: "gemini-2.5-flash", name: "Gemini 2.5 Flash", reasoning: true, images: true, cost: [0.3, 2.5, 0.075, 0.0], context_window: 1_048_576, max_tokens: 65_536 },
    Entry { provider: "google", api: Api::GoogleGenerativeAi, base_url: GOOGLE, id: "gemini-2.5-flash-lite", name: "Gemini 2.5 Flash-Lite", reasoning: true, images: true, cost: [0.1, 0.4, 0.025, 0.0], context_window: 1_048_576, max_tokens: 65_536 },
    Entry { provider: "deepseek", api: Api::OpenAiCompletions, base_url: "https://api.deepseek.com/v1", id: "deepseek-chat", name: "DeepSeek V3.2", reasoning: false, images: false, cost: [0.28, 0.42, 0.028, 0.0], context_window: 128_000, max_tokens: 8_192 },
    Entry { provider: "deepseek", api: Api::OpenAiCompletions, base_url: "https://api.deepseek.com/v1", id: "deepseek-reasoner", name: "DeepSeek V3.2 (thinking)", reasoning: true, images: false, cost: [0.28, 0.42, 0.028, 0.0], context_window: 128_000, max_tokens: 64_000 },
    Entry { provider: "groq", api: Api::OpenAiCompletions, base_url: "https://api.groq.com/openai/v1", id: "llama-3.3-70b-versatile", name: "Llama 3.3 70B (Groq)", reasoning: false, images: false, cost: [0.59, 0.79, 0.0, 0.0], context_window: 131_072, max_tokens: 32_768 },
    Entry { provider: "groq", api: Api::OpenAiCompletions, base_url: "https://api.groq.com/openai/v1", id: "openai/gpt-oss-120b", name: "gpt-oss-120b (Groq)", reasoning: true, images: false, cost: [0.15, 0.75, 0.0, 0.0], context_window: 131_072, max_tokens: 65_536 },
    Entry { provider: "xai", api: Api::OpenAiCompletions, base_url: "https://api.x.ai/v1", id: "grok-4", name: "Grok 4", reasoning: true, images: true, cost: [3.0, 15.0, 0.75, 0.0], context_window: 256_000, max_tokens: 64_000 },
    Entry { provider: "mistral", api: Api::OpenAiCompletions, base_url: "https://api.mistral.ai/v1", id: "mistral-large-latest", name: "Mistral Large", reasoning: false, images: true, cost: [0.5, 1.5, 0.0, 0.0], context_window: 128_000, max_tokens: 32_768 },
    Entry { provider: "mistral", api: Api::OpenAiCompletions, base_url: "https://api.mistral.ai/v1", id: "devstral-medium-latest", name: "Devstral Medium", reasoning: false, images: false, cost: [0.4, 2.0, 0.0, 0.0], context_window: 128_000, max_tokens: 32_768 },
    Entry { provider: "local", api: Api::OpenAiCompletions, base_url: "http://127.0.0.1:8080/v1", id: "qwen2.5-coder-0.5b-instruct-q4_k_m", name: "Qwen2.5-Coder 0.5B (local, llama-cpp-python)", reasoning: false, images: false, cost: [0.0, 0.0, 0.0, 0.0], context_window: 4_096, max_tokens: 1_024 },
    Entry { provider: "openrouter", api: Api::OpenAiCompletions, base_url: "https://openrouter.ai/api/v1", id: "anthropic/claude-sonnet-4.5", name: "Claude Sonnet 4.5 (OpenRouter)", reasoning: true, images: true, cost: [3.0, 15.0, 0.3, 3.75], context_window: 200_000, max_tokens: 64_000 },
];

/// Every built-in model.
pub fn builtin_models() -> &'static [Model] {
    static MODELS: OnceLock<Vec<Model>> = OnceLock::new();
    MODELS.get_or_init(|| ENTRIES.iter().map(entry_to_model).collect())
}

fn entry_to_model(e: &Entry) -> Model {
    let mut m = Model::custom(e.api, e.provider, e.id, e.base_url);
    m.name = e.name.to_string();
    m.reasoning = e.reasoning;
    if e.images {
        m.input = vec![Modality::Text, Modality::Image];
    }
    m.cost = ModelCost {
        input: e.cost[0],
        output: e.cost[1],
        cache_read: e.cost[2],
        cache_write: e.cost[3],
    };
    m.context_window = e.context_window;
    m.max_tokens = e.max_tokens;
    m
}

/// A set of models: the built-in ones plus any loaded from `models.json` files.
#[derive(Clone, Debug, Default)]
pub struct ModelRegistry {
    models: Vec<Model>,
    /// `apiKey` of `models.json` providers, by provider.
    keys: BTreeMap<String, ConfigValue>,
}

impl ModelRegistry {
    /// A registry holding the built-in models.
    pub fn builtin() -> Self {
        ModelRegistry {
            models: builtin_models().to_vec(),
            keys: BTreeMap::new(),
        }
    }

    /// An empty registry.
    pub fn empty() -> Self {
        ModelRegistry::default()
    }

    /// Every model, in catalog order.
    pub fn models(&self) -> &[Model] {
        &self.models
    }

    /// Adds a model, replacing one with the same provider and id.
    pub fn add(&mut self, model: Model) {
        self.models
            .retain(|m| !(m.provider == model.provider && m.id == model.id));
        self.models.push(model);
    }

    /// Applies a `models.json` file in pi's format (see [`crate::models_json`]):
    /// adds its models and changes existing ones. A missing file is not an error
    /// (returns 0); a file that cannot be parsed is, naming the file and the
    /// problem. Returns the number of models added or replaced.
    pub fn load_file(&mut self, path: &Path) -> Result<usize, ProviderError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(e) => {
                return Err(ProviderError::Catalog {
                    path: path.display().to_string(),
                    message: e.to_string(),
                });
            }
        };
        let applied = models_json::parse(&text)
            .and_then(|file| models_json::apply(file, &mut self.models))
            .map_err(|message| ProviderError::Catalog {
                path: path.display().to_string(),
                message,
            })?;
        self.keys.extend(applied.keys);
        Ok(applied.added)
    }

    /// The `apiKey` a `models.json` file configured for `provider`.
    pub fn provider_key(&self, provider: &str) -> Option<&ConfigValue> {
        self.keys.get(provider)
    }

    /// Every `apiKey` configured by `models.json` files, by provider.
    pub fn provider_keys(&self) -> &BTreeMap<String, ConfigValue> {
        &self.keys
    }

    /// Finds a model by `provider/id`, by id alone (first match), or by a
    /// case-insensitive substring of the id when that is unambiguous.
    pub fn find(&self, spec: &str) -> Option<&Model> {
        if let Some((provider, id)) = spec.split_once('/')
            && let Some(m) = self
                .models
                .iter()
                .find(|m| m.provider == provider && m.id == id)
        {
            return Some(m);
        }
        if let Some(m) = self.models.iter().find(|m| m.id == spec) {
            return Some(m);
        }
        let needle = spec.to_ascii_lowercase();
        let mut matches = self
            .models
            .iter()
            .filter(|m| m.id.to_ascii_lowercase().contains(&needle));
        let first = matches.next()?;
        matches.next().is_none().then_some(first)
    }

    /// The first model of `provider`.
    pub fn default_for_provider(&self, provider: &str) -> Option<&Model> {
        self.models.iter().find(|m| m.provider == provider)
    }
}

/// Parses the text of a `models.json` file into the models it defines (a
/// provider section without `models` defines none; see [`crate::models_json`]).
pub fn parse_models_json(text: &str) -> Result<Vec<Model>, String> {
    let mut models = Vec::new();
    models_json::apply(models_json::parse(text)?, &mut models)?;
    Ok(models)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_models_have_prices_and_limits() {
        let reg = ModelRegistry::builtin();
        let m = reg.find("anthropic/claude-sonnet-4-5").unwrap();
        assert_eq!(m.api, Api::AnthropicMessages);
        assert!(m.cost.output > 0.0 && m.context_window >= 200_000);
        assert!(
            reg.models()
                .iter()
                .all(|m| m.max_tokens > 0 && m.context_window > m.max_tokens / 2)
        );
    }

    #[test]
    fn loads_custom_models() {
        let text = r#"{"providers": {"ollama": {"baseUrl": "http://127.0.0.1:11434/v1", "api": "openai-completions",
            "models": [{"id": "qwen", "contextWindow": 32768, "cost": {"input": 1, "output": 2}}]}}}"#;
        let models = parse_models_json(text).unwrap();
        assert_eq!(models[0].provider, "ollama");
        assert_eq!(models[0].context_window, 32768);
        assert_eq!(models[0].cost.output, 2.0);
    }

    #[test]
    fn missing_api_is_a_clear_error() {
        let err = parse_models_json(
            r#"{"providers": {"x": {"baseUrl": "http://h", "models": [{"id": "m"}]}}}"#,
        )
        .unwrap_err();
        assert!(err.contains("has no \"api\""), "{err}");
    }

    #[test]
    fn missing_file_is_not_an_error() {
        let mut reg = ModelRegistry::empty();
        assert_eq!(
            reg.load_file(Path::new("/nonexistent/models.json"))
                .unwrap(),
            0
        );
    }
}
