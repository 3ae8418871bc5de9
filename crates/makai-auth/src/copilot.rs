//! The GitHub Copilot login: GitHub's OAuth device flow (a code the user types
//! at github.com/login/device), then the exchange of the GitHub token for a
//! short-lived Copilot API token (`/copilot_internal/v2/token`), repeated
//! before each expiry. The GitHub token is stored as the refresh token, the
//! Copilot token as the access token, as pi stores them.
//!
//! `COPILOT_GITHUB_TOKEN` (a GitHub token with Copilot access) skips the login:
//! it is exchanged the same way. Endpoints can be pointed elsewhere (GitHub
//! Enterprise, tests): `MAKAI_GITHUB_URL` (default `https://github.com`) and
//! `MAKAI_GITHUB_API_URL` (default `https://api.github.com`).

use std::time::Duration;

use serde::Deserialize;

use super::oauth::EXPIRY_MARGIN_MS;
use super::store::Credential;
use crate::AuthError;

/// The public client id of GitHub Copilot's editor integrations.
const CLIENT_ID: &str = "Iv1.b507a08c87ecfe98";
/// The headers Copilot's token endpoint and API expect from an editor.
pub const EDITOR_HEADERS: [(&str, &str); 4] = [
    ("User-Agent", "GitHubCopilotChat/0.35.0"),
    ("Editor-Version", "vscode/1.107.0"),
    ("Editor-Plugin-Version", "copilot-chat/0.35.0"),
    ("Copilot-Integration-Id", "vscode-chat"),
];

/// Where the Copilot login talks to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CopilotConfig {
    /// GitHub (device code and OAuth token endpoints).
    pub github_url: String,
    /// GitHub's API (the Copilot token exchange).
    pub api_url: String,
}

impl CopilotConfig {
    /// GitHub's endpoints, overridable by `MAKAI_GITHUB_URL` and `MAKAI_GITHUB_API_URL`.
    pub fn from_env() -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        CopilotConfig {
            github_url: var("MAKAI_GITHUB_URL").unwrap_or_else(|| "https://github.com".into()),
            api_url: var("MAKAI_GITHUB_API_URL").unwrap_or_else(|| "https://api.github.com".into()),
        }
    }
}

/// What the user must do to log in.
#[derive(Debug, Deserialize)]
pub struct DeviceCode {
    device_code: String,
    /// The code the user types.
    pub user_code: String,
    /// Where the user types it.
    pub verification_uri: String,
    /// Seconds between polls.
    #[serde(default = "five")]
    pub interval: u64,
    /// Seconds until the code expires.
    #[serde(default = "fifteen_minutes")]
    pub expires_in: u64,
}

fn five() -> u64 {
    5
}

fn fifteen_minutes() -> u64 {
    900
}

async fn post_form<T: for<'de> Deserialize<'de>>(
    url: &str,
    pairs: &[(&str, &str)],
) -> Result<T, AuthError> {
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish();
    let response = makai_ai::http_client()
        .post(url)
        .header("content-type", "application/x-www-form-urlencoded")
        .header("accept", "application/json")
        .header("user-agent", EDITOR_HEADERS[0].1)
        .timeout(Duration::from_secs(30))
        .body(body)
        .send()
        .await
        .map_err(|e| AuthError::failed(format!("could not reach GitHub at {url}: {e}")))?;
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    if !status.is_success() {
        let snippet: String = text.chars().take(300).collect();
        return Err(AuthError::failed(format!(
            "GitHub answered HTTP {status} at {url}: {snippet}"
        )));
    }
    serde_json::from_str(&text)
        .map_err(|e| AuthError::failed(format!("GitHub sent an unexpected answer at {url} ({e})")))
}

/// Starts the device flow.
pub async fn device_code(config: &CopilotConfig) -> Result<DeviceCode, AuthError> {
    let url = format!(
        "{}/login/device/code",
        config.github_url.trim_end_matches('/')
    );
    post_form(&url, &[("client_id", CLIENT_ID), ("scope", "read:user")]).await
}

#[derive(Deserialize)]
struct PollResponse {
    access_token: Option<String>,
    error: Option<String>,
    interval: Option<u64>,
}

/// Polls until the user has entered the code; returns the GitHub token.
pub async fn wait_for_authorization(
    config: &CopilotConfig,
    code: &DeviceCode,
) -> Result<String, AuthError> {
    let url = format!(
        "{}/login/oauth/access_token",
        config.github_url.trim_end_matches('/')
    );
    let mut interval = code.interval;
    let deadline = std::time::Instant::now() + Duration::from_secs(code.expires_in);
    loop {
        if std::time::Instant::now() > deadline {
            return Err(AuthError::failed(
                "the GitHub device code expired before it was entered; run `makai auth login github-copilot` again",
            ));
        }
        tokio::time::sleep(Duration::from_secs(interval)).await;
        let poll: PollResponse = post_form(
            &url,
            &[
                ("client_id", CLIENT_ID),
                ("device_code", &code.device_code),
                ("grant_type", "urn:ietf:params:oauth:grant-type:device_code"),
            ],
        )
        .await?;
        if let Some(token) = poll.access_token.filter(|t| !t.is_empty()) {
            return Ok(token);
        }
        match poll.error.as_deref() {
            Some("authorization_pending") | None => {}
            Some("slow_down") => interval = poll.interval.unwrap_or(interval + 5),
            Some("expired_token") => {
                return Err(AuthError::failed(
                    "the GitHub device code expired; run `makai auth login github-copilot` again",
                ));
            }
            Some("access_denied") => {
                return Err(AuthError::failed(
                    "the GitHub login was cancelled (access denied)",
                ));
            }
            Some(other) => {
                return Err(AuthError::failed(format!(
                    "the GitHub login failed: {other}"
                )));
            }
        }
    }
}

#[derive(Deserialize)]
struct CopilotToken {
    token: String,
    /// Unix seconds.
    expires_at: i64,
}

/// Exchanges a GitHub token for a Copilot API token (stored with the GitHub
/// token as its refresh token).
pub async fn exchange(config: &CopilotConfig, github_token: &str) -> Result<Credential, AuthError> {
    let url = format!(
        "{}/copilot_internal/v2/token",
        config.api_url.trim_end_matches('/')
    );
    let mut request = makai_ai::http_client()
        .get(&url)
        .header("authorization", format!("Bearer {github_token}"))
        .header("accept", "application/json")
        .timeout(Duration::from_secs(30));
    for (name, value) in EDITOR_HEADERS {
        request = request.header(name, value);
    }
    let response = request.send().await.map_err(|e| {
        AuthError::failed(format!(
            "could not reach GitHub's Copilot token endpoint {url}: {e}"
        ))
    })?;
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    if !status.is_success() {
        let message = makai_ai::error::error_message_from_body(&text);
        let hint = if status.as_u16() == 401 {
            "the GitHub token is no longer valid: run `makai auth login github-copilot` again"
        } else {
            "check that this GitHub account has a Copilot subscription"
        };
        return Err(AuthError::failed(format!(
            "GitHub's Copilot token endpoint answered HTTP {status} ({message}); {hint}"
        )));
    }
    let token: CopilotToken = serde_json::from_str(&text).map_err(|e| {
        AuthError::failed(format!(
            "GitHub's Copilot token endpoint sent an unexpected answer ({e})"
        ))
    })?;
    Ok(Credential::OAuth {
        refresh: github_token.to_string(),
        access: token.token,
        expires: token.expires_at * 1000 - EXPIRY_MARGIN_MS,
        account_id: None,
    })
}
