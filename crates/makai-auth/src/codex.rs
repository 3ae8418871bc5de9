//! The ChatGPT login (OpenAI Codex, Plus/Pro subscriptions): OAuth
//! authorization code with PKCE against OpenAI's auth server, a local callback
//! on `/auth/callback` or a pasted code, form-encoded token exchange and refresh.
//! The access token is a JWT naming the ChatGPT account, stored as `accountId`
//! as pi stores it.
//!
//! Endpoints can be pointed elsewhere (tests use a fake server on 127.0.0.1):
//! `MAKAI_CODEX_AUTH_URL` (the auth server, default `https://auth.openai.com`),
//! `MAKAI_CODEX_CLIENT_ID`, `MAKAI_CODEX_CALLBACK_PORT` (0 picks a free port).

use std::time::Duration;

use serde::Deserialize;

use super::oauth::{EXPIRY_MARGIN_MS, Pkce};
use super::store::Credential;
use crate::AuthError;

/// The public client id of the Codex CLI.
const DEFAULT_CLIENT_ID: &str = "app_EMoamEEZ73f0CkXaXp7hrann";
const DEFAULT_AUTH_URL: &str = "https://auth.openai.com";
/// The redirect port registered for the client.
const DEFAULT_CALLBACK_PORT: u16 = 1455;
/// The redirect path registered for the client.
pub const CALLBACK_PATH: &str = "/auth/callback";
const SCOPE: &str = "openid profile email offline_access";

/// Where the ChatGPT login talks to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodexConfig {
    /// The OAuth client id.
    pub client_id: String,
    /// The auth server (`/oauth/authorize`, `/oauth/token` under it).
    pub auth_url: String,
    /// Port of the local callback server (0: any free port).
    pub callback_port: u16,
}

impl CodexConfig {
    /// OpenAI's endpoints, overridable by the `MAKAI_CODEX_*` variables.
    pub fn from_env() -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        CodexConfig {
            client_id: var("MAKAI_CODEX_CLIENT_ID").unwrap_or_else(|| DEFAULT_CLIENT_ID.into()),
            auth_url: var("MAKAI_CODEX_AUTH_URL").unwrap_or_else(|| DEFAULT_AUTH_URL.into()),
            callback_port: var("MAKAI_CODEX_CALLBACK_PORT")
                .and_then(|p| p.parse().ok())
                .unwrap_or(DEFAULT_CALLBACK_PORT),
        }
    }

    fn token_url(&self) -> String {
        format!("{}/oauth/token", self.auth_url.trim_end_matches('/'))
    }
}

/// The authorization page URL the user opens.
pub fn authorize_url(
    config: &CodexConfig,
    pkce: &Pkce,
    state: &str,
    redirect_uri: &str,
) -> Result<String, AuthError> {
    let base = format!("{}/oauth/authorize", config.auth_url.trim_end_matches('/'));
    let mut url = url::Url::parse(&base).map_err(|e| {
        AuthError::config(format!(
            "the ChatGPT authorize URL '{base}' is invalid: {e}"
        ))
    })?;
    url.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", &config.client_id)
        .append_pair("redirect_uri", redirect_uri)
        .append_pair("scope", SCOPE)
        .append_pair("code_challenge", &pkce.challenge)
        .append_pair("code_challenge_method", "S256")
        .append_pair("state", state)
        .append_pair("id_token_add_organizations", "true")
        .append_pair("codex_cli_simplified_flow", "true")
        .append_pair("originator", "makai");
    Ok(url.into())
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    refresh_token: Option<String>,
    expires_in: Option<i64>,
}

async fn post_form(
    config: &CodexConfig,
    pairs: &[(&str, &str)],
) -> Result<TokenResponse, AuthError> {
    let url = config.token_url();
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish();
    let response = makai_ai::http_client()
        .post(&url)
        .header("content-type", "application/x-www-form-urlencoded")
        .header("accept", "application/json")
        .timeout(Duration::from_secs(30))
        .body(body)
        .send()
        .await
        .map_err(|e| {
            AuthError::failed(format!(
                "could not reach the ChatGPT token endpoint {url}: {e}"
            ))
        })?;
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    if !status.is_success() {
        // The error body of a token endpoint holds no secret of ours; keep it short.
        let snippet: String = text.chars().take(300).collect();
        return Err(AuthError::failed(format!(
            "the ChatGPT token endpoint {url} answered HTTP {status}: {snippet}"
        )));
    }
    serde_json::from_str(&text).map_err(|e| {
        AuthError::failed(format!(
            "the ChatGPT token endpoint {url} sent an unexpected answer ({e})"
        ))
    })
}

fn credential_from(
    tokens: TokenResponse,
    old_refresh: Option<&str>,
) -> Result<Credential, AuthError> {
    let account =
        makai_ai::credentials::codex_account_id(&tokens.access_token).ok_or_else(|| {
            AuthError::failed(
                "the ChatGPT access token names no account (is this a ChatGPT Plus/Pro login?)",
            )
        })?;
    let refresh = tokens
        .refresh_token
        .or_else(|| old_refresh.map(str::to_string))
        .ok_or_else(|| AuthError::failed("the ChatGPT token endpoint sent no refresh token"))?;
    Ok(Credential::OAuth {
        refresh,
        access: tokens.access_token,
        expires: makai_ai::now_ms() + tokens.expires_in.unwrap_or(3600) * 1000 - EXPIRY_MARGIN_MS,
        account_id: Some(account),
    })
}

/// Exchanges an authorization code for tokens.
pub async fn exchange_code(
    config: &CodexConfig,
    code: &str,
    verifier: &str,
    redirect_uri: &str,
) -> Result<Credential, AuthError> {
    let tokens = post_form(
        config,
        &[
            ("grant_type", "authorization_code"),
            ("client_id", &config.client_id),
            ("code", code),
            ("code_verifier", verifier),
            ("redirect_uri", redirect_uri),
        ],
    )
    .await?;
    credential_from(tokens, None)
}

/// Gets a new access token with a refresh token.
pub async fn refresh(config: &CodexConfig, refresh_token: &str) -> Result<Credential, AuthError> {
    let tokens = post_form(
        config,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
            ("client_id", &config.client_id),
        ],
    )
    .await
    .map_err(|e| {
        AuthError::failed(format!(
            "{e}. Your ChatGPT login may have expired: run `makai auth login openai-codex` again"
        ))
    })?;
    credential_from(tokens, Some(refresh_token))
}
