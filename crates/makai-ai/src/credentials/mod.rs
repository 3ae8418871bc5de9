//! Where a request's credential comes from.
//!
//! In order: the key in the options, else a [`KeyProvider`] (the application's
//! credential store, given to [`crate::InProcessClient`]), else the provider's
//! own ambient source:
//! - most providers: their usual environment variable ([`env_var_for_provider`]);
//! - Amazon Bedrock: `AWS_BEARER_TOKEN_BEDROCK`, else the AWS credential chain
//!   ([`aws`]: environment, shared config and credentials files with profiles,
//!   `credential_process`, the SSO token cache, web identity, container credentials);
//! - Google Vertex AI: `GOOGLE_CLOUD_API_KEY`, else Application Default Credentials
//!   ([`google`]: a service-account key exchanged as a signed JWT, or gcloud's user
//!   credentials), tokens cached and refreshed before they expire;
//! - Azure OpenAI: `AZURE_OPENAI_API_KEY`, `AZURE_OPENAI_AD_TOKEN`, or an Entra ID
//!   client secret ([`azure`]).
//!
//! Environment lookups go through [`Env`], which reads
//! [`crate::StreamOptions::env`] before the process environment.

pub mod aws;
pub mod azure;
mod cache;
mod env;
pub mod google;
pub(crate) mod resolve;

use std::time::SystemTime;

use async_trait::async_trait;
use base64::Engine;

pub use env::Env;

use crate::model::{Api, Model};
use crate::options::ApiKey;

/// The one resolver of API keys for the requests of an [`crate::InProcessClient`]
/// that carry none: an application's credential store (flags, `auth.json`,
/// OAuth tokens refreshed before they expire).
///
/// Called once per request, just before it is sent, so a long run never
/// sends an expired token.
#[async_trait]
pub trait KeyProvider: Send + Sync {
    /// The key for `provider`; `Ok(None)` falls back to the provider's ambient
    /// source (its environment variable, a cloud credential chain). `Err` fails
    /// the request with that text (it must say what to do and never contain a
    /// secret).
    async fn api_key(&self, provider: &str) -> Result<Option<ApiKey>, String>;

    /// Called once after the provider rejected the key this provider gave
    /// (HTTP 401, or a 403 saying the token expired): the key for `provider`
    /// fetched anew, bypassing any cache (an OAuth token refreshed now). The
    /// default asks [`KeyProvider::api_key`] again.
    async fn refresh(&self, provider: &str) -> Result<Option<ApiKey>, String> {
        self.api_key(provider).await
    }
}

/// AWS credentials for SigV4 signing. `Debug` shows the access key id only.
#[derive(Clone, PartialEq, Eq)]
pub struct AwsCredentials {
    /// The access key id (not secret: it names the key).
    pub access_key_id: String,
    /// The secret access key.
    pub secret_access_key: ApiKey,
    /// The session token of temporary credentials.
    pub session_token: Option<ApiKey>,
    /// When temporary credentials expire.
    pub expires: Option<SystemTime>,
}

impl std::fmt::Debug for AwsCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AwsCredentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"<redacted>")
            .field(
                "session_token",
                &self.session_token.as_ref().map(|_| "<redacted>"),
            )
            .field("expires", &self.expires)
            .finish()
    }
}

/// What authenticates one request. `Debug` never shows a secret.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Credential {
    /// A key sent the provider's usual way (`x-api-key`, `api-key`,
    /// `x-goog-api-key`, `Authorization: Bearer` for OpenAI-style APIs and
    /// Bedrock API keys).
    ApiKey(ApiKey),
    /// An OAuth2 access token, sent as `Authorization: Bearer` (Vertex ADC
    /// tokens, Entra ID tokens).
    Bearer(ApiKey),
    /// AWS credentials: the request is signed with SigV4.
    Aws(AwsCredentials),
}

impl Credential {
    /// The key or token of a key-like credential (`None` for AWS credentials).
    pub fn key(&self) -> Option<&ApiKey> {
        match self {
            Credential::ApiKey(k) | Credential::Bearer(k) => Some(k),
            Credential::Aws(_) => None,
        }
    }

    /// Every secret string of the credential, for removing from error text.
    pub fn secrets(&self) -> Vec<&str> {
        match self {
            Credential::ApiKey(k) | Credential::Bearer(k) => vec![k.expose()],
            Credential::Aws(c) => {
                let mut v = vec![c.secret_access_key.expose()];
                if let Some(t) = &c.session_token {
                    v.push(t.expose());
                }
                v
            }
        }
    }
}

/// The environment variable conventionally holding `provider`'s key (pi's table).
pub fn env_var_for_provider(provider: &str) -> Option<&'static str> {
    Some(match provider {
        "anthropic" => "ANTHROPIC_API_KEY",
        "openai" => "OPENAI_API_KEY",
        "google" | "gemini" => "GEMINI_API_KEY",
        "google-vertex" => "GOOGLE_CLOUD_API_KEY",
        "amazon-bedrock" => "AWS_BEARER_TOKEN_BEDROCK",
        "azure" | "azure-openai-responses" => "AZURE_OPENAI_API_KEY",
        "groq" => "GROQ_API_KEY",
        "openrouter" => "OPENROUTER_API_KEY",
        "deepseek" => "DEEPSEEK_API_KEY",
        "mistral" => "MISTRAL_API_KEY",
        "xai" => "XAI_API_KEY",
        "cerebras" => "CEREBRAS_API_KEY",
        "together" => "TOGETHER_API_KEY",
        "fireworks" => "FIREWORKS_API_KEY",
        "ant-ling" => "ANT_LING_API_KEY",
        "nvidia" => "NVIDIA_API_KEY",
        "vercel-ai-gateway" => "AI_GATEWAY_API_KEY",
        "zai" => "ZAI_API_KEY",
        "zai-coding-cn" => "ZAI_CODING_CN_API_KEY",
        "opencode" | "opencode-go" => "OPENCODE_API_KEY",
        "huggingface" => "HF_TOKEN",
        "baseten" => "BASETEN_API_KEY",
        "kimi-coding" => "KIMI_API_KEY",
        "meta" => "META_API_KEY",
        "minimax" => "MINIMAX_API_KEY",
        "minimax-cn" => "MINIMAX_CN_API_KEY",
        "moonshotai" | "moonshotai-cn" => "MOONSHOT_API_KEY",
        "qwen-token-plan" | "qwen-token-plan-individual" => "QWEN_TOKEN_PLAN_API_KEY",
        "qwen-token-plan-cn" | "qwen-token-plan-individual-cn" => "QWEN_TOKEN_PLAN_CN_API_KEY",
        "xiaomi" => "XIAOMI_API_KEY",
        "xiaomi-token-plan-cn" => "XIAOMI_TOKEN_PLAN_CN_API_KEY",
        "xiaomi-token-plan-ams" => "XIAOMI_TOKEN_PLAN_AMS_API_KEY",
        "xiaomi-token-plan-sgp" => "XIAOMI_TOKEN_PLAN_SGP_API_KEY",
        "cloudflare-ai-gateway" | "cloudflare-workers-ai" => "CLOUDFLARE_API_KEY",
        crate::catalog::llama_cpp::PROVIDER => crate::catalog::llama_cpp::API_KEY_ENV,
        _ => return None,
    })
}

/// True for a provider whose servers may run with or without a key, where
/// one is sent only when given: a llama.cpp router (`LLAMA_API_KEY`, for
/// one started with `--api-key`).
fn key_is_optional(model: &Model) -> bool {
    model.provider == crate::catalog::llama_cpp::PROVIDER
}

/// True when the model's credential may come from a cloud credential chain
/// (AWS profiles, Google ADC, Entra ID) rather than one key: then a missing
/// key is not an error before the chain has been asked.
pub fn has_credential_chain(model: &Model) -> bool {
    matches!(
        model.api,
        Api::BedrockConverseStream
            | Api::GoogleVertex
            | Api::AnthropicVertex
            | Api::AzureOpenAiResponses
    ) || model.provider == "azure"
}

/// True when the provider cannot be called without a key (hosted APIs). Local
/// and custom OpenAI-compatible servers may run without one, and cloud providers
/// whose credentials come from a chain are checked when the chain is asked.
pub fn requires_api_key(model: &Model) -> bool {
    !key_is_optional(model)
        && env_var_for_provider(&model.provider).is_some()
        && !is_loopback_url(&model.base_url)
        && !has_credential_chain(model)
}

/// True when calling the model needs a credential of some kind: a key, a login
/// (ChatGPT, GitHub Copilot) or cloud credentials. A server on this machine
/// needs none.
pub fn needs_credential(model: &Model) -> bool {
    !key_is_optional(model)
        && !is_loopback_url(&model.base_url)
        && (env_var_for_provider(&model.provider).is_some()
            || has_credential_chain(model)
            || model.api == Api::OpenAiCodexResponses
            || model.provider == "github-copilot")
}

/// True when the provider's ambient source looks configured, without asking
/// it (no file is read but to see that it exists, nothing is fetched): its key
/// variable, or the settings of its cloud credential chain (AWS variables,
/// profile files; a Google credentials file; Azure variables).
pub fn ambient_configured(model: &Model, env: &Env) -> bool {
    if env_var_for_provider(&model.provider).is_some_and(|v| env.get(v).is_some()) {
        return true;
    }
    match model.api {
        Api::BedrockConverseStream => {
            env.first(&[
                "AWS_BEARER_TOKEN_BEDROCK",
                "AWS_ACCESS_KEY_ID",
                "AWS_PROFILE",
                "AWS_WEB_IDENTITY_TOKEN_FILE",
                "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                "AWS_CONTAINER_CREDENTIALS_FULL_URI",
            ])
            .is_some()
                || [
                    ("AWS_CONFIG_FILE", ".aws/config"),
                    ("AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials"),
                ]
                .iter()
                .any(|(var, default)| env.path_or_home(var, default).is_some_and(|p| p.exists()))
        }
        Api::GoogleVertex | Api::AnthropicVertex => {
            env.get("GOOGLE_CLOUD_API_KEY").is_some() || google::credentials_path(env).is_some()
        }
        _ if model.api == Api::AzureOpenAiResponses || model.provider == "azure" => {
            env.first(&["AZURE_OPENAI_API_KEY", "AZURE_OPENAI_AD_TOKEN"])
                .is_some()
                || (env.get("AZURE_TENANT_ID").is_some()
                    && env.get("AZURE_CLIENT_ID").is_some()
                    && env.get("AZURE_CLIENT_SECRET").is_some())
        }
        _ => false,
    }
}

pub(crate) fn is_loopback_url(url: &str) -> bool {
    let rest = url.split("://").nth(1).unwrap_or(url);
    rest.starts_with("127.") || rest.starts_with("localhost") || rest.starts_with("[::1]")
}

/// The key to use: the explicit one, else the environment variable of the
/// model's provider (`GOOGLE_API_KEY` is also read for Google).
pub fn resolve_api_key(model: &Model, explicit: Option<&ApiKey>) -> Option<ApiKey> {
    env_api_key(model, explicit, &Env::process())
}

/// [`resolve_api_key`] reading the environment through `env`.
pub(crate) fn env_api_key(model: &Model, explicit: Option<&ApiKey>, env: &Env) -> Option<ApiKey> {
    if let Some(k) = explicit {
        return Some(k.clone());
    }
    let var = env_var_for_provider(&model.provider)?;
    env.get(var).map(ApiKey::new).or_else(|| {
        if var == "GEMINI_API_KEY" {
            env.get("GOOGLE_API_KEY").map(ApiKey::new)
        } else {
            None
        }
    })
}

/// The ChatGPT account id in a Codex access token (a JWT: the
/// `chatgpt_account_id` of its `https://api.openai.com/auth` claim), if it has one.
/// The signature is not checked: the token is only read, the server checks it.
pub fn codex_account_id(token: &str) -> Option<String> {
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    claims
        .get("https://api.openai.com/auth")?
        .get("chatgpt_account_id")?
        .as_str()
        .map(str::to_string)
}

/// `pairs` as an `application/x-www-form-urlencoded` body.
pub(crate) fn form_body(pairs: &[(&str, &str)]) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_debug_shows_no_secret() {
        let aws = Credential::Aws(AwsCredentials {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: ApiKey::new("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"),
            session_token: Some(ApiKey::new("session-token-secret")),
            expires: None,
        });
        let text = format!("{aws:?}");
        assert!(text.contains("AKIDEXAMPLE"), "{text}");
        assert!(!text.contains("wJalr") && !text.contains("session-token-secret"));
        let bearer = Credential::Bearer(ApiKey::new("ya29.secret-token"));
        assert!(!format!("{bearer:?}").contains("ya29"));
        assert_eq!(aws.secrets().len(), 2);
    }
}
