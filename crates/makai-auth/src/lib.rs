//! makai-auth: credentials: `auth.json`, the logins, and resolving the key of a request.
//!
//! A request's key comes from, in order: `--api-key` (for the selected model's
//! provider), `auth.json` (an API key, or an OAuth access token refreshed when it
//! has expired: Anthropic, ChatGPT via Codex, GitHub Copilot), then the
//! provider's environment variable (`COPILOT_GITHUB_TOKEN` is exchanged for a
//! Copilot token first), then makai-ai's ambient sources (cloud credential chains).
//!
//! - [`oauth`]: the Anthropic login and the PKCE and callback pieces it shares;
//! - [`codex`]: the ChatGPT login; [`copilot`]: the GitHub Copilot device login
//!   and token exchange;
//! - [`store`]: the `auth.json` file;
//! - [`KeyResolver`]: a session's `KeyProvider` (one resolution per request).

pub mod codex;
pub mod copilot;
pub mod oauth;
pub mod store;

use std::path::PathBuf;
use std::sync::Arc;

use makai_ai::ApiKey;
use tokio::sync::Mutex;

pub use codex::CodexConfig;
pub use copilot::CopilotConfig;
pub use oauth::OAuthConfig;
pub use store::{AuthStore, Credential};

/// Why a credential could not be had.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// A file or setting cannot be used (auth.json, models.json's `apiKey`).
    #[error("{0}")]
    Config(String),
    /// A login or a token exchange failed.
    #[error("{0}")]
    Failed(String),
}

impl AuthError {
    /// A configuration error with this message.
    pub fn config(message: impl Into<String>) -> Self {
        AuthError::Config(message.into())
    }

    /// A failure with this message.
    pub fn failed(message: impl Into<String>) -> Self {
        AuthError::Failed(message.into())
    }
}

/// Resolves API keys for model calls; cheap to clone.
#[derive(Clone)]
pub struct KeyResolver {
    inner: Arc<ResolverInner>,
}

struct ResolverInner {
    auth_file: Option<PathBuf>,
    explicit: Option<(String, ApiKey)>,
    /// `apiKey`s of `models.json` providers, resolved per request.
    configured: std::collections::BTreeMap<String, makai_ai::models_json::ConfigValue>,
    store: Mutex<Option<AuthStore>>,
    oauth: OAuthConfig,
    codex: CodexConfig,
    copilot: CopilotConfig,
    /// The Copilot token exchanged for `COPILOT_GITHUB_TOKEN` (kept in memory only).
    copilot_env: Mutex<Option<Credential>>,
}

impl std::fmt::Debug for KeyResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyResolver")
            .field("auth_file", &self.inner.auth_file)
            .finish_non_exhaustive()
    }
}

/// The one key resolver of a session's model calls: the in-process client asks
/// it once per request that carries no key (the agent loop, compaction, titles).
#[async_trait::async_trait]
impl makai_ai::credentials::KeyProvider for KeyResolver {
    async fn api_key(&self, provider: &str) -> Result<Option<ApiKey>, String> {
        self.resolve_with(provider, false)
            .await
            .map(|found| found.map(|(key, _)| key))
            .map_err(|e| e.to_string())
    }

    /// After the provider rejected the key: OAuth tokens are refreshed now,
    /// whatever their recorded expiry.
    async fn refresh(&self, provider: &str) -> Result<Option<ApiKey>, String> {
        self.resolve_with(provider, true)
            .await
            .map(|found| found.map(|(key, _)| key))
            .map_err(|e| e.to_string())
    }
}

/// Where a key came from (for messages; never the key itself).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeySource {
    /// `--api-key`.
    Flag,
    /// An API key in auth.json.
    AuthFile,
    /// An OAuth login in auth.json.
    OAuth,
    /// The provider's `apiKey` in `models.json`.
    ModelsJson,
    /// The provider's environment variable.
    Environment,
}

impl KeyResolver {
    /// A resolver reading `<home>/auth.json`, with `explicit` used for `explicit_provider`.
    pub fn new(
        home: Option<PathBuf>,
        explicit_provider: Option<String>,
        explicit: Option<ApiKey>,
    ) -> Self {
        let explicit = match (explicit_provider, explicit) {
            (Some(p), Some(k)) => Some((p, k)),
            _ => None,
        };
        KeyResolver {
            inner: Arc::new(ResolverInner {
                auth_file: home.map(|h| AuthStore::file_in(&h)),
                explicit,
                configured: Default::default(),
                store: Mutex::new(None),
                oauth: OAuthConfig::anthropic_from_env(),
                codex: CodexConfig::from_env(),
                copilot: CopilotConfig::from_env(),
                copilot_env: Mutex::new(None),
            }),
        }
    }

    /// Where `provider`'s key would come from, without resolving it: no
    /// token refresh, no key handed out. For checks before a run; each model
    /// request resolves its key once, through the session's client.
    pub async fn source(&self, provider: &str) -> Result<Option<KeySource>, AuthError> {
        if self
            .inner
            .explicit
            .as_ref()
            .is_some_and(|(p, _)| p == provider)
        {
            return Ok(Some(KeySource::Flag));
        }
        if let Some(path) = &self.inner.auth_file {
            let mut guard = self.inner.store.lock().await;
            if guard.is_none() {
                *guard = Some(AuthStore::load(path.clone())?);
            }
            match guard.as_ref().and_then(|store| store.get(provider)) {
                Some(Credential::ApiKey { .. }) => return Ok(Some(KeySource::AuthFile)),
                Some(Credential::OAuth { .. }) => return Ok(Some(KeySource::OAuth)),
                None => {}
            }
        }
        if self.inner.configured.contains_key(provider) {
            return Ok(Some(KeySource::ModelsJson));
        }
        if provider == "github-copilot" {
            let set = std::env::var("COPILOT_GITHUB_TOKEN").is_ok_and(|v| !v.trim().is_empty());
            return Ok(set.then_some(KeySource::Environment));
        }
        let probe = makai_ai::Model::custom(makai_ai::Api::OpenAiCompletions, provider, "", "");
        Ok(makai_ai::credentials::resolve_api_key(&probe, None).map(|_| KeySource::Environment))
    }

    /// New tokens for an OAuth login of `provider`, from its refresh token.
    async fn refresh_oauth(&self, provider: &str, refresh: &str) -> Result<Credential, AuthError> {
        match provider {
            "openai-codex" => codex::refresh(&self.inner.codex, refresh).await,
            "github-copilot" => copilot::exchange(&self.inner.copilot, refresh).await,
            _ => oauth::refresh(&self.inner.oauth, refresh).await,
        }
    }

    /// A Copilot token for `COPILOT_GITHUB_TOKEN`, exchanged once and kept until it expires.
    async fn copilot_from_env(&self, force: bool) -> Result<Option<ApiKey>, AuthError> {
        let Some(github) = std::env::var("COPILOT_GITHUB_TOKEN")
            .ok()
            .filter(|v| !v.trim().is_empty())
        else {
            return Ok(None);
        };
        let mut cached = self.inner.copilot_env.lock().await;
        if let Some(Credential::OAuth {
            access, expires, ..
        }) = cached.as_ref()
            && !force
            && makai_ai::now_ms() < *expires
        {
            return Ok(Some(ApiKey::new(access.clone())));
        }
        let fresh = copilot::exchange(&self.inner.copilot, github.trim()).await?;
        let key = match &fresh {
            Credential::OAuth { access, .. } => ApiKey::new(access.clone()),
            Credential::ApiKey { key } => ApiKey::new(key.clone()),
        };
        *cached = Some(fresh);
        Ok(Some(key))
    }

    /// Adds the `apiKey`s of `models.json` providers (tried after auth.json and
    /// before the environment, as in pi). Call before cloning the resolver.
    pub fn with_configured_keys(
        mut self,
        keys: std::collections::BTreeMap<String, makai_ai::models_json::ConfigValue>,
    ) -> Self {
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => inner.configured = keys,
            None => tracing::warn!("models.json keys added to a shared key resolver; ignored"),
        }
        self
    }

    /// The key for `provider` and where it came from, refreshing an expired
    /// OAuth token (the refreshed tokens are saved). A failed refresh is an error.
    pub async fn resolve(&self, provider: &str) -> Result<Option<(ApiKey, KeySource)>, AuthError> {
        self.resolve_with(provider, false).await
    }

    /// [`KeyResolver::resolve`]; `force` refreshes an OAuth token even when it
    /// has not expired (the provider rejected it).
    async fn resolve_with(
        &self,
        provider: &str,
        force: bool,
    ) -> Result<Option<(ApiKey, KeySource)>, AuthError> {
        if let Some((p, key)) = &self.inner.explicit
            && p == provider
        {
            return Ok(Some((key.clone(), KeySource::Flag)));
        }
        if let Some(path) = &self.inner.auth_file {
            let mut guard = self.inner.store.lock().await;
            if guard.is_none() {
                *guard = Some(AuthStore::load(path.clone())?);
            }
            if let Some(store) = guard.as_mut() {
                match store.get(provider).cloned() {
                    Some(Credential::ApiKey { key }) => {
                        return Ok(Some((ApiKey::new(key), KeySource::AuthFile)));
                    }
                    Some(Credential::OAuth {
                        refresh,
                        access,
                        expires,
                        ..
                    }) => {
                        if !force && makai_ai::now_ms() < expires {
                            return Ok(Some((ApiKey::new(access), KeySource::OAuth)));
                        }
                        let fresh = self.refresh_oauth(provider, &refresh).await?;
                        let key = match &fresh {
                            Credential::OAuth { access, .. } => ApiKey::new(access.clone()),
                            Credential::ApiKey { key } => ApiKey::new(key.clone()),
                        };
                        store.set(provider, fresh);
                        store.save()?;
                        return Ok(Some((key, KeySource::OAuth)));
                    }
                    None => {}
                }
            }
        }
        if let Some(value) = self.inner.configured.get(provider) {
            let key = value.resolve_key().await.map_err(|e| {
                AuthError::config(format!(
                    "apiKey of provider '{provider}' in models.json: {e}"
                ))
            })?;
            if let Some(key) = key {
                return Ok(Some((key, KeySource::ModelsJson)));
            }
        }
        if provider == "github-copilot" {
            return Ok(self
                .copilot_from_env(force)
                .await?
                .map(|k| (k, KeySource::Environment)));
        }
        let probe = makai_ai::Model::custom(makai_ai::Api::OpenAiCompletions, provider, "", "");
        Ok(makai_ai::credentials::resolve_api_key(&probe, None)
            .map(|k| (k, KeySource::Environment)))
    }
}
