//! Where API keys come from: the options, else a [`KeyProvider`] (the
//! application's credential store, given to [`crate::InProcessClient`]), else
//! the provider's usual environment variable.

use async_trait::async_trait;

use crate::model::Model;
use crate::options::ApiKey;

/// The one resolver of API keys for the requests of an [`crate::InProcessClient`]
/// that carry none: an application's credential store (flags, `auth.json`,
/// OAuth tokens refreshed before they expire).
///
/// Called once per request, just before it is sent, so a long run never
/// sends an expired token.
#[async_trait]
pub trait KeyProvider: Send + Sync {
    /// The key for `provider`; `Ok(None)` falls back to the provider's
    /// environment variable. `Err` fails the request with that text (it must
    /// say what to do and never contain a secret).
    async fn api_key(&self, provider: &str) -> Result<Option<ApiKey>, String>;
}

/// The environment variable conventionally holding `provider`'s key.
pub fn env_var_for_provider(provider: &str) -> Option<&'static str> {
    Some(match provider {
        "anthropic" => "ANTHROPIC_API_KEY",
        "openai" => "OPENAI_API_KEY",
        "google" | "gemini" => "GEMINI_API_KEY",
        "groq" => "GROQ_API_KEY",
        "openrouter" => "OPENROUTER_API_KEY",
        "deepseek" => "DEEPSEEK_API_KEY",
        "mistral" => "MISTRAL_API_KEY",
        "xai" => "XAI_API_KEY",
        "cerebras" => "CEREBRAS_API_KEY",
        "together" => "TOGETHER_API_KEY",
        "fireworks" => "FIREWORKS_API_KEY",
        _ => return None,
    })
}

/// True when the provider cannot be called without a key (hosted APIs). Local
/// and custom OpenAI-compatible servers may run without one.
pub fn requires_api_key(model: &Model) -> bool {
    env_var_for_provider(&model.provider).is_some() && !is_loopback_url(&model.base_url)
}

fn is_loopback_url(url: &str) -> bool {
    let rest = url.split("://").nth(1).unwrap_or(url);
    rest.starts_with("127.") || rest.starts_with("localhost") || rest.starts_with("[::1]")
}

/// The key to use: the explicit one, else the environment variable of the
/// model's provider (`GOOGLE_API_KEY` is also read for Google).
pub fn resolve_api_key(model: &Model, explicit: Option<&ApiKey>) -> Option<ApiKey> {
    if let Some(k) = explicit {
        return Some(k.clone());
    }
    let var = env_var_for_provider(&model.provider)?;
    let from_env = |name: &str| {
        std::env::var(name)
            .ok()
            .filter(|v| !v.trim().is_empty())
            .map(ApiKey::new)
    };
    from_env(var).or_else(|| {
        if var == "GEMINI_API_KEY" {
            from_env("GOOGLE_API_KEY")
        } else {
            None
        }
    })
}
