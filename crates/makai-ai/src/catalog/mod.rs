//! The model catalog: the built-in entries (pi's catalog, generated), plus custom
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
//! Prices are dollars per million tokens (with pi's input-size tiers); every
//! response's cost is computed from them.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use crate::error::ProviderError;
use crate::model::{Api, Model};
use crate::models_json::{self, ConfigValue};

mod builtin;
pub mod llama_cpp;

/// makai's own entry: the small local model it can install and serve itself
/// (not in pi's catalog).
fn local_model() -> Model {
    let mut m = Model::custom(
        Api::OpenAiCompletions,
        "local",
        "qwen2.5-coder-0.5b-instruct-q4_k_m",
        "http://127.0.0.1:8080/v1",
    );
    m.name = "Qwen2.5-Coder 0.5B (local, llama.cpp)".to_string();
    m.context_window = 4_096;
    m.max_tokens = 1_024;
    m
}

/// Every built-in model: pi's catalog of the providers makai speaks (generated
/// into `builtin.json` by the `gen_catalog` example; the entries left out and
/// why are in `docs/catalog.md`; made into Rust data by the build script),
/// then makai's local model.
pub fn builtin_models() -> &'static [Model] {
    static MODELS: OnceLock<Vec<Model>> = OnceLock::new();
    MODELS.get_or_init(|| {
        let mut models = Vec::with_capacity(builtin::ENTRIES.len() + 1);
        for entry in builtin::ENTRIES {
            match entry.model() {
                Ok(m) => models.push(m),
                // Tested not to happen (`builtin_entries_are_the_json_catalog`);
                // never fatal at run time.
                Err(e) => tracing::error!(error = %e, "a built-in model does not parse"),
            }
        }
        models.push(local_model());
        models
    })
}

/// A set of models: the built-in ones plus any loaded from `models.json` files.
#[derive(Clone, Debug, Default)]
pub struct ModelRegistry {
    /// The built-in catalog, borrowed until a model is added or changed.
    models: Cow<'static, [Model]>,
    /// `apiKey` of `models.json` providers, by provider.
    keys: BTreeMap<String, ConfigValue>,
}

impl ModelRegistry {
    /// A registry holding the built-in models.
    pub fn builtin() -> Self {
        ModelRegistry {
            models: Cow::Borrowed(builtin_models()),
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
        let models = self.models.to_mut();
        models.retain(|m| !(m.provider == model.provider && m.id == model.id));
        models.push(model);
    }

    /// Makes `models` the models of `provider`: the ones it had are removed
    /// (a llama.cpp router's models, listed again after a load).
    pub fn replace_provider(&mut self, provider: &str, models: Vec<Model>) {
        let all = self.models.to_mut();
        all.retain(|m| m.provider != provider);
        all.extend(models);
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
            .and_then(|file| models_json::apply(file, self.models.to_mut()))
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

    /// Finds a model by `provider/id` (either may hold slashes: a
    /// llama.cpp provider named after its URL, an OpenRouter id), by id
    /// alone (first match), or by a case-insensitive substring of the id
    /// when that is unambiguous.
    pub fn find(&self, spec: &str) -> Option<&Model> {
        if let Some(m) = self.find_exact(spec) {
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

    /// The model whose `provider/id` is `spec`, at whichever of its
    /// slashes the provider ends.
    pub fn find_exact(&self, spec: &str) -> Option<&Model> {
        spec.match_indices('/').find_map(|(at, _)| {
            let (provider, id) = (&spec[..at], &spec[at + 1..]);
            self.models
                .iter()
                .find(|m| m.provider == provider && m.id == id)
        })
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

    /// The build script's entries give exactly the models `builtin.json`
    /// gives when parsed whole, in its order.
    #[test]
    fn builtin_entries_are_the_json_catalog() {
        let json: Vec<Model> = serde_json::from_str(include_str!("builtin.json")).unwrap();
        let built: Vec<Model> = builtin::ENTRIES
            .iter()
            .map(|e| e.model().unwrap())
            .collect();
        assert_eq!(built.len(), json.len());
        for (b, j) in built.iter().zip(&json) {
            assert_eq!(b, j);
        }
        assert_eq!(&builtin_models()[..json.len()], json.as_slice());
    }

    #[test]
    fn builtin_models_have_prices_and_limits() {
        let reg = ModelRegistry::builtin();
        let m = reg.find("anthropic/claude-sonnet-4-5").unwrap();
        assert_eq!(m.api, Api::AnthropicMessages);
        assert!(m.cost.output > 0.0 && m.context_window >= 200_000);
        assert!(
            reg.models()
                .iter()
                .all(|m| m.max_tokens > 0 && m.context_window > 0)
        );
        // Each provider's list starts with its default model.
        assert_eq!(
            reg.default_for_provider("anthropic").unwrap().id,
            "claude-opus-4-5"
        );
        assert_eq!(
            reg.default_for_provider("local").unwrap().base_url,
            "http://127.0.0.1:8080/v1"
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
