//! Model and thinking-level selection of an [`AppSession`].

use makai_ai::catalog::ModelRegistry;
use makai_ai::{Model, ThinkingLevel};

use super::AppSession;
use crate::error::CliError;

impl AppSession {
    /// The model for the next run.
    pub fn model(&self) -> Model {
        self.inner.agent.model()
    }

    /// The thinking level for the next run.
    pub fn thinking_level(&self) -> ThinkingLevel {
        self.inner.agent.thinking_level()
    }

    /// The catalog (held while the guard lives: never across an await).
    pub fn registry(&self) -> std::sync::RwLockReadGuard<'_, ModelRegistry> {
        self.inner
            .registry
            .read()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Makes `models` the catalog's models of `provider` (a llama.cpp
    /// router's, after `/llama` loaded or unloaded one).
    pub fn set_provider_models(&self, provider: &str, models: Vec<Model>) {
        self.inner
            .registry
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .replace_provider(provider, models);
    }

    /// Models whose provider has a credential (a key, a login, configured cloud
    /// credentials) or needs none, plus the current one.
    pub async fn available_models(&self) -> Vec<Model> {
        let current = self.model();
        let catalog = self.registry().models().to_vec();
        let mut out = with_credentials(&catalog, &self.inner.keys).await;
        // The model the session started with (a `--base-url` model is in no
        // catalog) stays selectable after switching away from it.
        let started = &self.inner.start_model;
        if !out.iter().any(|m| same_model(m, started)) {
            out.insert(0, started.clone());
        }
        if !out.iter().any(|m| same_model(m, &current)) {
            out.insert(0, current);
        }
        out
    }

    /// The available model `provider`/`model_id` (pi's `set_model` lookup).
    pub async fn find_model(&self, provider: &str, model_id: &str) -> Result<Model, CliError> {
        let current = self.model();
        if current.provider == provider && current.id == model_id {
            return Ok(current);
        }
        self.available_models()
            .await
            .into_iter()
            .find(|m| m.provider == provider && m.id == model_id)
            .ok_or_else(|| CliError::failed(format!("Model not found: {provider}/{model_id}")))
    }

    /// Switches the model; the thinking level is clamped to what it supports.
    pub fn set_model(&self, model: Model) {
        let level = self.thinking_level();
        self.inner.agent.set_model(model.clone());
        self.inner
            .record_change(|s| s.append_model_change(model.provider.clone(), model.id.clone()));
        self.set_thinking_level(level);
        self.configure_agent();
        self.preconnect();
    }

    /// Opens the current model's connection in the background, for the next
    /// prompt not to wait for its TLS handshake (see `Agent::preconnect`).
    /// Does nothing outside a Tokio runtime, or offline ([`crate::offline`]).
    pub fn preconnect(&self) {
        if crate::offline::is_offline() {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let agent = self.inner.agent.clone();
            runtime.spawn(async move { agent.preconnect().await });
        }
    }

    /// Limits the models [`AppSession::cycle_model`] goes through to those
    /// matching any pattern (`provider/id`, `id`, `*` wildcards, or a
    /// case-insensitive part of the id); an empty list lifts the limit. A
    /// pattern's `:level` suffix pins the thinking level of the models it
    /// matches: cycling to one of them switches to that level.
    pub fn set_scoped_models(&self, patterns: Vec<String>) {
        super::lock(&self.inner.state).scoped_models = patterns;
    }

    /// The `/scoped-models` patterns.
    pub fn scoped_models(&self) -> Vec<String> {
        super::lock(&self.inner.state).scoped_models.clone()
    }

    /// Switches to the next available model (within the scoped models, when
    /// set); `None` when there is no other.
    pub async fn cycle_model(&self) -> Option<(Model, ThinkingLevel)> {
        self.cycle_model_by(true).await
    }

    /// Switches to the next (`forward`) or previous available model (within
    /// the scoped models, when set); `None` when there is no other.
    pub async fn cycle_model_by(&self, forward: bool) -> Option<(Model, ThinkingLevel)> {
        let scope = self.scoped_models();
        let mut models = self.available_models().await;
        if !scope.is_empty() {
            let current = self.model();
            models.retain(|m| same_model(m, &current) || scope.iter().any(|p| model_matches(m, p)));
            // The cycle follows the patterns' order (pi's `/scoped-models`
            // reorders it); models a pattern matches together keep theirs.
            let rank = |m: &Model| scope.iter().position(|p| model_matches(m, p));
            models.sort_by_key(|m| rank(m).unwrap_or(usize::MAX));
        }
        if models.len() <= 1 {
            return None;
        }
        let current = self.model();
        let i = models
            .iter()
            .position(|m| same_model(m, &current))
            .unwrap_or(0);
        let step = if forward { 1 } else { models.len() - 1 };
        let next = models[(i + step) % models.len()].clone();
        self.set_model(next.clone());
        if let Some(level) = pinned_thinking(&next, &scope) {
            self.set_thinking_level(level);
        }
        Some((next, self.thinking_level()))
    }

    /// The thinking levels the current model offers (`off` only without reasoning).
    pub fn available_thinking_levels(&self) -> Vec<ThinkingLevel> {
        self.model().thinking_levels()
    }

    /// Sets the thinking level (clamped to the model); recorded when it changes.
    pub fn set_thinking_level(&self, level: ThinkingLevel) {
        let effective = self.model().clamp_thinking(level);
        if effective != self.thinking_level() {
            self.inner.agent.set_thinking_level(effective);
            self.inner
                .record_change(|s| s.append_thinking_level(effective));
            self.inner.emit(super::OutEvent::Session(
                makai_rpc::SessionEvent::ThinkingLevelChanged { level: effective },
            ));
        }
    }

    /// The next thinking level; `None` when the model does not reason.
    pub fn cycle_thinking_level(&self) -> Option<ThinkingLevel> {
        if !self.model().reasoning {
            return None;
        }
        let levels = self.available_thinking_levels();
        let i = levels
            .iter()
            .position(|l| *l == self.thinking_level())
            .unwrap_or(0);
        let next = levels[(i + 1) % levels.len()];
        self.set_thinking_level(next);
        Some(next)
    }
}

pub(crate) fn same_model(a: &Model, b: &Model) -> bool {
    a.provider == b.provider && a.id == b.id
}

/// True when `pattern` names the model: `provider/id` or `id` exactly, a
/// `*` wildcard pattern over either, or a case-insensitive part of the id.
/// A thinking-level suffix (`:high`) is not part of the name.
pub fn model_matches(m: &Model, pattern: &str) -> bool {
    let full = format!("{}/{}", m.provider, m.id);
    let (p, _) = crate::models::split_thinking(pattern.trim());
    let p = p.as_str();
    if p.contains('*') {
        return [full.as_str(), m.id.as_str()]
            .iter()
            .any(|name| wildcard(&p.to_ascii_lowercase(), &name.to_ascii_lowercase()));
    }
    full == p || m.id == p || m.id.to_ascii_lowercase().contains(&p.to_ascii_lowercase())
}

/// The thinking level the first pattern of `scope` naming the model pins
/// with its `:level` suffix (pi's scoped model `thinkingLevel`); `None` when
/// that pattern pins none, or none names the model.
pub fn pinned_thinking(m: &Model, scope: &[String]) -> Option<ThinkingLevel> {
    let pattern = scope.iter().find(|p| model_matches(m, p))?;
    crate::models::split_thinking(pattern.trim()).1
}

/// True when tool `name` matches one of the `--exclude-tools` patterns
/// (exact, or `*` globs).
pub fn tool_excluded(name: &str, patterns: &[String]) -> bool {
    patterns
        .iter()
        .any(|p| p == name || (p.contains('*') && wildcard(p, name)))
}

/// `*` matches any run of characters.
fn wildcard(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let Some((first, rest)) = parts.split_first() else {
        return true;
    };
    let Some(mut remaining) = text.strip_prefix(first) else {
        return false;
    };
    for (i, part) in rest.iter().enumerate() {
        if i + 1 == rest.len() {
            return remaining.ends_with(part);
        }
        match remaining.find(part) {
            Some(at) => remaining = &remaining[at + part.len()..],
            None => return false,
        }
    }
    remaining.is_empty()
}

/// The models of `models` whose provider has a credential (a key, a login,
/// configured cloud credentials) or needs none.
pub(crate) async fn with_credentials(
    models: &[Model],
    keys: &makai_auth::KeyResolver,
) -> Vec<Model> {
    let mut out = Vec::new();
    let mut with_key: std::collections::HashMap<String, bool> = Default::default();
    for m in models {
        let ok = match with_key.get(&m.provider) {
            Some(ok) => *ok,
            None => {
                let ok = !makai_ai::credentials::needs_credential(m)
                    || makai_ai::credentials::ambient_configured(
                        m,
                        &makai_ai::credentials::Env::process(),
                    )
                    || keys.source(&m.provider).await.ok().flatten().is_some();
                with_key.insert(m.provider.clone(), ok);
                ok
            }
        };
        if ok {
            out.push(m.clone());
        }
    }
    out
}

/// The catalog a `codemode` script lists through `models`.
pub(crate) struct CatalogModels {
    /// The catalog's models.
    pub models: Vec<Model>,
    /// The keys that make them usable.
    pub keys: makai_auth::KeyResolver,
}

#[async_trait::async_trait]
impl makai_coding::tools::codemode::ModelCatalog for CatalogModels {
    fn models(&self) -> Vec<Model> {
        self.models.clone()
    }

    async fn available(&self) -> Vec<Model> {
        with_credentials(&self.models, &self.keys).await
    }
}

#[cfg(test)]
mod scope_tests {
    use super::*;

    fn sonnet() -> Model {
        Model::custom(
            makai_ai::Api::AnthropicMessages,
            "anthropic",
            "claude-sonnet-4-5",
            "https://api.anthropic.com",
        )
    }

    #[test]
    fn scoped_model_patterns_match_like_pi_model_patterns() {
        let m = sonnet();
        for yes in [
            "anthropic/*",
            "*sonnet*",
            "claude-sonnet-4-5",
            "anthropic/claude-sonnet-4-5",
            "Sonnet",
        ] {
            assert!(model_matches(&m, yes), "{yes}");
        }
        for no in ["openai/*", "*opus*", "gpt", "anthropic/claude"] {
            assert!(!model_matches(&m, no), "{no}");
        }
    }

    #[test]
    fn a_pattern_s_thinking_suffix_pins_the_level_of_the_models_it_names() {
        let m = sonnet();
        assert!(model_matches(&m, "anthropic/*:high"));
        assert!(model_matches(&m, "claude-sonnet-4-5:low"));
        let scope = |list: &[&str]| list.iter().map(|p| p.to_string()).collect::<Vec<_>>();
        assert_eq!(
            pinned_thinking(&m, &scope(&["openai/*:low", "anthropic/*:high"])),
            Some(ThinkingLevel::High)
        );
        // The first pattern naming the model decides, pinned or not.
        assert_eq!(
            pinned_thinking(&m, &scope(&["sonnet", "anthropic/*:high"])),
            None
        );
        assert_eq!(pinned_thinking(&m, &scope(&["openai/*:low"])), None);
        // A suffix that is no level is part of the name (`llama3:8b`).
        assert!(!model_matches(&m, "claude-sonnet-4-5:8b"));
    }
}
