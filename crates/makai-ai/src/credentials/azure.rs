//! Azure OpenAI / Azure AI Foundry credentials and endpoint settings.
//!
//! Credentials: `AZURE_OPENAI_API_KEY` (sent as `api-key`), else
//! `AZURE_OPENAI_AD_TOKEN` (an Entra ID access token, sent as a bearer token),
//! else an Entra ID service principal (`AZURE_TENANT_ID`, `AZURE_CLIENT_ID`,
//! `AZURE_CLIENT_SECRET`: the client-credentials grant at
//! `AZURE_AUTHORITY_HOST`, default `https://login.microsoftonline.com`), whose
//! tokens are cached until 5 minutes before they expire.

use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use serde::Deserialize;

use crate::credentials::cache::{self, Cache};
use crate::credentials::{Credential, Env};
use crate::options::ApiKey;

/// The scope of Azure OpenAI / Cognitive Services tokens.
pub const COGNITIVE_SERVICES_SCOPE: &str = "https://cognitiveservices.azure.com/.default";
/// The API version sent when `AZURE_OPENAI_API_VERSION` is unset (the v1 API).
pub const DEFAULT_API_VERSION: &str = "v1";

static CACHE: OnceLock<Cache<ApiKey>> = OnceLock::new();

/// The message for missing credentials.
pub fn no_credentials_message() -> String {
    "no Azure OpenAI credentials found: set AZURE_OPENAI_API_KEY (a resource key), \
     AZURE_OPENAI_AD_TOKEN (an Entra ID token), or AZURE_TENANT_ID, AZURE_CLIENT_ID and \
     AZURE_CLIENT_SECRET (a service principal)"
        .to_string()
}

/// The credential from the environment (see the module docs); `Ok(None)` when
/// none is configured. `fresh` skips the token cache.
pub async fn credential(env: &Env<'_>, fresh: bool) -> Result<Option<Credential>, String> {
    if let Some(key) = env.get("AZURE_OPENAI_API_KEY") {
        return Ok(Some(Credential::ApiKey(ApiKey::new(key))));
    }
    if let Some(token) = env.get("AZURE_OPENAI_AD_TOKEN") {
        return Ok(Some(Credential::Bearer(ApiKey::new(token))));
    }
    let (Some(tenant), Some(client), Some(secret)) = (
        env.get("AZURE_TENANT_ID"),
        env.get("AZURE_CLIENT_ID"),
        env.get("AZURE_CLIENT_SECRET"),
    ) else {
        return Ok(None);
    };
    let authority = env
        .get("AZURE_AUTHORITY_HOST")
        .unwrap_or_else(|| "https://login.microsoftonline.com".to_string());
    let url = format!(
        "{}/{tenant}/oauth2/v2.0/token",
        authority.trim_end_matches('/')
    );
    let key = format!("entra:{url}:{client}");
    let token = cache::global(&CACHE)
        .get_or_fetch(&key, fresh, || client_credentials(url, client, secret))
        .await?;
    Ok(Some(Credential::Bearer(token)))
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    expires_in: Option<u64>,
}

async fn client_credentials(
    url: String,
    client: String,
    secret: String,
) -> Result<(ApiKey, Option<SystemTime>), String> {
    let response = crate::http_client()
        .post(&url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(crate::credentials::form_body(&[
            ("grant_type", "client_credentials"),
            ("client_id", client.as_str()),
            ("client_secret", secret.as_str()),
            ("scope", COGNITIVE_SERVICES_SCOPE),
        ]))
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .map_err(|e| format!("could not reach the Entra ID token endpoint {url}: {e}"))?;
    let status = response.status();
    let body = response.text().await.unwrap_or_default();
    if !status.is_success() {
        let reason = serde_json::from_str::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(str::to_string))
            .unwrap_or_else(|| format!("HTTP {status}"));
        return Err(format!(
            "the Entra ID token endpoint {url} refused the service principal ({reason}); \
             check AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET"
        ));
    }
    let token: TokenResponse = serde_json::from_str(&body).map_err(|e| {
        format!("the Entra ID token endpoint {url} sent an unexpected answer ({e})")
    })?;
    let expires = token
        .expires_in
        .map(|s| SystemTime::now() + Duration::from_secs(s));
    Ok((ApiKey::new(token.access_token), expires))
}
