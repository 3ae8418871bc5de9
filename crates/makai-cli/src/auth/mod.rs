//! Credentials: `auth.json`, the OAuth login, and resolving the key of a request.
//!
//! A request's key comes from, in order: `--api-key` (for the selected model's
//! provider), `auth.json` (an API key, or an OAuth access token refreshed when it
//! has expired), then the provider's environment variable.

pub mod oauth;
pub mod store;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use makai_ai::ApiKey;
use tokio::sync::Mutex;

use crate::cli::AuthCommand;
use crate::error::CliError;
pub use oauth::OAuthConfig;
pub use store::{AuthStore, Credential};

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
        self.resolve(provider)
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
        explicit: Option<String>,
    ) -> Self {
        let explicit = match (explicit_provider, explicit) {
            (Some(p), Some(k)) => Some((p, ApiKey::new(k))),
            _ => None,
        };
        KeyResolver {
            inner: Arc::new(ResolverInner {
                auth_file: home.map(|h| AuthStore::file_in(&h)),
                explicit,
                configured: Default::default(),
                store: Mutex::new(None),
                oauth: OAuthConfig::anthropic_from_env(),
            }),
        }
    }

    /// Where `provider`'s key would come from, without resolving it: no
    /// token refresh, no key handed out. For checks before a run; each model
    /// request resolves its key once, through the session's client.
    pub async fn source(&self, provider: &str) -> Result<Option<KeySource>, CliError> {
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
        let probe = makai_ai::Model::custom(makai_ai::Api::OpenAiCompletions, provider, "", "");
        Ok(makai_ai::credentials::resolve_api_key(&probe, None).map(|_| KeySource::Environment))
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
    pub async fn resolve(&self, provider: &str) -> Result<Option<(ApiKey, KeySource)>, CliError> {
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
                    }) => {
                        if makai_ai::now_ms() < expires {
                            return Ok(Some((ApiKey::new(access), KeySource::OAuth)));
                        }
                        let fresh = oauth::refresh(&self.inner.oauth, &refresh).await?;
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
                CliError::config(format!(
                    "apiKey of provider '{provider}' in models.json: {e}"
                ))
            })?;
            if let Some(key) = key {
                return Ok(Some((key, KeySource::ModelsJson)));
            }
        }
        let probe = makai_ai::Model::custom(makai_ai::Api::OpenAiCompletions, provider, "", "");
        Ok(makai_ai::credentials::resolve_api_key(&probe, None)
            .map(|k| (k, KeySource::Environment)))
    }
}

/// Runs `makai auth ...`; returns the exit code.
pub async fn run_command(command: AuthCommand, home: Option<PathBuf>) -> Result<i32, CliError> {
    let home = home.ok_or_else(|| {
        CliError::config("cannot find a home folder for auth.json; set MAKAI_HOME to a folder")
    })?;
    let path = AuthStore::file_in(&home);
    match command {
        AuthCommand::Login { provider } => {
            if provider != "anthropic" {
                let var = makai_ai::credentials::env_var_for_provider(&provider)
                    .map(|v| format!(" (set {v})"))
                    .unwrap_or_default();
                return Err(CliError::Usage(format!(
                    "`makai auth login` supports anthropic (Claude Pro/Max) only; provider '{provider}' uses an API key{var} or --api-key"
                )));
            }
            let config = OAuthConfig::anthropic_from_env();
            let credential = login(&config).await?;
            let mut store = AuthStore::load(&path)?;
            store.set(&provider, credential);
            store.save()?;
            eprintln!(
                "Logged in to {provider}. Credentials saved to {}.",
                path.display()
            );
            Ok(0)
        }
        AuthCommand::Status => {
            let store = AuthStore::load(&path)?;
            let now = makai_ai::now_ms();
            println!("Credentials file: {}", path.display());
            let mut any = false;
            for (provider, cred) in store.iter() {
                any = true;
                println!("  {provider}: {}", cred.describe(now));
            }
            if !any {
                println!("  (no stored credentials)");
            }
            let vars = [
                "ANTHROPIC_API_KEY",
                "OPENAI_API_KEY",
                "GEMINI_API_KEY",
                "GOOGLE_API_KEY",
                "GROQ_API_KEY",
                "OPENROUTER_API_KEY",
                "DEEPSEEK_API_KEY",
                "MISTRAL_API_KEY",
                "XAI_API_KEY",
            ];
            let set: Vec<&str> = vars
                .into_iter()
                .filter(|v| std::env::var(v).is_ok_and(|x| !x.trim().is_empty()))
                .collect();
            if set.is_empty() {
                println!("Environment: no provider key variables set");
            } else {
                println!("Environment: {} set", set.join(", "));
            }
            Ok(0)
        }
        AuthCommand::Logout { provider } => {
            let mut store = AuthStore::load(&path)?;
            let removed = match &provider {
                Some(p) => store.remove(p),
                None => {
                    let had = store.iter().next().is_some();
                    store.clear();
                    had
                }
            };
            if removed {
                store.save()?;
                eprintln!(
                    "Removed the credentials of {} from {}.",
                    provider.as_deref().unwrap_or("every provider"),
                    path.display()
                );
            } else {
                eprintln!(
                    "No stored credentials for {}.",
                    provider.as_deref().unwrap_or("any provider")
                );
            }
            Ok(0)
        }
    }
}

/// The interactive login: prints the URL, waits for the callback or a pasted code.
async fn login(config: &OAuthConfig) -> Result<Credential, CliError> {
    let pkce = oauth::Pkce::generate();
    let state = oauth::Pkce::generate().verifier;
    let mut server = oauth::CallbackServer::start(config.callback_port, state.clone()).await?;
    let redirect = server.redirect_uri.clone();
    let url = oauth::authorize_url(config, &pkce, &state, &redirect)?;
    eprintln!(
        "Open this URL in your browser to log in with your Claude Pro/Max account:\n\n  {url}\n"
    );
    eprintln!(
        "Waiting for the browser to come back to {redirect} ...\n\
         If the browser runs on another machine, paste the code (or the final URL) here and press Enter:"
    );
    if std::env::var_os("MAKAI_NO_BROWSER").is_none() && std::io::stderr().is_terminal() {
        let _ = std::process::Command::new("xdg-open")
            .arg(&url)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
    }
    let (line_tx, mut line_rx) = tokio::sync::mpsc::channel::<String>(1);
    std::thread::spawn(move || {
        let mut line = String::new();
        if std::io::stdin().read_line(&mut line).is_ok_and(|n| n > 0) {
            let _ = line_tx.blocking_send(line);
        }
    });
    let (code, got_state) = tokio::select! {
        got = server.wait() => got.ok_or_else(|| CliError::failed("the OAuth callback server stopped"))?,
        Some(line) = line_rx.recv() => {
            let (code, pasted_state) = oauth::parse_pasted_code(&line);
            let code = code.ok_or_else(|| CliError::failed("no code was pasted; run `makai auth login` again"))?;
            if let Some(s) = &pasted_state && *s != state {
                return Err(CliError::failed("the pasted code belongs to another login (state mismatch); run `makai auth login` again"));
            }
            (code, state.clone())
        }
        _ = tokio::time::sleep(std::time::Duration::from_secs(600)) => {
            return Err(CliError::failed("no login within 10 minutes; run `makai auth login` again"));
        }
    };
    drop(server);
    eprintln!("Exchanging the authorization code for tokens...");
    oauth::exchange_code(config, &code, &got_state, &pkce.verifier, &redirect).await
}
