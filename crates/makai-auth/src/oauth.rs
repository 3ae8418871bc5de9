//! The Anthropic OAuth flow (Claude Pro/Max): authorization code with PKCE (S256),
//! a local callback server or a pasted code, token exchange and refresh.
//!
//! Endpoints can be pointed elsewhere (tests use a fake server on 127.0.0.1):
//! `MAKAI_OAUTH_AUTHORIZE_URL`, `MAKAI_OAUTH_TOKEN_URL`, `MAKAI_OAUTH_CLIENT_ID`
//! and `MAKAI_OAUTH_CALLBACK_PORT` (0 picks a free port). `MAKAI_NO_BROWSER=1`
//! stops `makai` from trying to open a browser.

use std::time::Duration;

use base64::Engine;
use serde::Deserialize;
use serde_json::json;
use sha2::Digest;
use tokio::sync::oneshot;

use super::store::Credential;
use crate::AuthError;

/// The public client id of the Claude Code OAuth application.
const DEFAULT_CLIENT_ID: &str = "9d1c250a-e61b-44d9-88ed-5944d1962f5e";
const DEFAULT_AUTHORIZE_URL: &str = "https://claude.ai/oauth/authorize";
const DEFAULT_TOKEN_URL: &str = "https://platform.claude.com/v1/oauth/token";
const DEFAULT_CALLBACK_PORT: u16 = 53692;
const CALLBACK_PATH: &str = "/callback";
const SCOPES: &str = "org:create_api_key user:profile user:inference";
/// Access tokens are treated as expired this long before they really are.
pub(crate) const EXPIRY_MARGIN_MS: i64 = 5 * 60 * 1000;

/// Where the OAuth flow talks to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OAuthConfig {
    /// The OAuth client id.
    pub client_id: String,
    /// The authorization page.
    pub authorize_url: String,
    /// The token endpoint.
    pub token_url: String,
    /// Port of the local callback server (0: any free port).
    pub callback_port: u16,
}

impl OAuthConfig {
    /// Anthropic's endpoints, overridable by the `MAKAI_OAUTH_*` variables.
    pub fn anthropic_from_env() -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        OAuthConfig {
            client_id: var("MAKAI_OAUTH_CLIENT_ID").unwrap_or_else(|| DEFAULT_CLIENT_ID.into()),
            authorize_url: var("MAKAI_OAUTH_AUTHORIZE_URL")
                .unwrap_or_else(|| DEFAULT_AUTHORIZE_URL.into()),
            token_url: var("MAKAI_OAUTH_TOKEN_URL").unwrap_or_else(|| DEFAULT_TOKEN_URL.into()),
            callback_port: var("MAKAI_OAUTH_CALLBACK_PORT")
                .and_then(|p| p.parse().ok())
                .unwrap_or(DEFAULT_CALLBACK_PORT),
        }
    }
}

/// A PKCE verifier and its S256 challenge.
#[derive(Clone)]
pub struct Pkce {
    /// The secret verifier (base64url of 32 random bytes).
    pub verifier: String,
    /// `base64url(sha256(verifier))`.
    pub challenge: String,
}

impl std::fmt::Debug for Pkce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pkce")
            .field("challenge", &self.challenge)
            .finish_non_exhaustive()
    }
}

pub(crate) fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// 32 bytes from the operating system's random source.
pub(crate) fn random_bytes() -> [u8; 32] {
    use std::io::Read;
    let mut out = [0u8; 32];
    let from_os = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut out));
    if from_os.is_err() {
        // uuid's v4 ids come from the OS generator as well.
        let a = uuid::Uuid::new_v4();
        let b = uuid::Uuid::new_v4();
        out[..16].copy_from_slice(a.as_bytes());
        out[16..].copy_from_slice(b.as_bytes());
    }
    out
}

impl Pkce {
    /// A fresh verifier and challenge.
    pub fn generate() -> Self {
        let verifier = b64url(&random_bytes());
        Pkce::from_verifier(verifier)
    }

    /// The challenge of a given verifier.
    pub fn from_verifier(verifier: String) -> Self {
        let challenge = b64url(&sha2::Sha256::digest(verifier.as_bytes()));
        Pkce {
            verifier,
            challenge,
        }
    }
}

/// The authorization page URL the user opens.
pub fn authorize_url(
    config: &OAuthConfig,
    pkce: &Pkce,
    state: &str,
    redirect_uri: &str,
) -> Result<String, AuthError> {
    let mut url = url::Url::parse(&config.authorize_url).map_err(|e| {
        AuthError::config(format!(
            "the OAuth authorize URL '{}' is invalid: {e}",
            config.authorize_url
        ))
    })?;
    url.query_pairs_mut()
        .append_pair("code", "true")
        .append_pair("client_id", &config.client_id)
        .append_pair("response_type", "code")
        .append_pair("redirect_uri", redirect_uri)
        .append_pair("scope", SCOPES)
        .append_pair("code_challenge", &pkce.challenge)
        .append_pair("code_challenge_method", "S256")
        .append_pair("state", state);
    Ok(url.into())
}

/// What the user pasted: a code, `code#state`, or the whole redirect URL.
pub fn parse_pasted_code(input: &str) -> (Option<String>, Option<String>) {
    let value = input.trim();
    if value.is_empty() {
        return (None, None);
    }
    if let Ok(url) = url::Url::parse(value) {
        let get = |k: &str| {
            url.query_pairs()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.into_owned())
        };
        return (get("code"), get("state"));
    }
    if let Some((code, state)) = value.split_once('#') {
        return (Some(code.to_string()), Some(state.to_string()));
    }
    (Some(value.to_string()), None)
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    refresh_token: Option<String>,
    expires_in: i64,
}

async fn post_token(
    config: &OAuthConfig,
    body: serde_json::Value,
) -> Result<TokenResponse, AuthError> {
    let response = makai_ai::http_client()
        .post(&config.token_url)
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .timeout(Duration::from_secs(30))
        .json(&body)
        .send()
        .await
        .map_err(|e| {
            AuthError::failed(format!(
                "could not reach the OAuth token endpoint {}: {e}",
                config.token_url
            ))
        })?;
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    if !status.is_success() {
        // The error body of a token endpoint holds no secret of ours; keep it short.
        let snippet: String = text.chars().take(300).collect();
        return Err(AuthError::failed(format!(
            "the OAuth token endpoint {} answered HTTP {status}: {snippet}",
            config.token_url
        )));
    }
    serde_json::from_str(&text).map_err(|e| {
        AuthError::failed(format!(
            "the OAuth token endpoint {} sent an unexpected answer ({e})",
            config.token_url
        ))
    })
}

fn credential_from(
    tokens: TokenResponse,
    old_refresh: Option<&str>,
) -> Result<Credential, AuthError> {
    let refresh = tokens
        .refresh_token
        .or_else(|| old_refresh.map(str::to_string))
        .ok_or_else(|| AuthError::failed("the OAuth token endpoint sent no refresh token"))?;
    Ok(Credential::OAuth {
        refresh,
        access: tokens.access_token,
        expires: makai_ai::now_ms() + tokens.expires_in * 1000 - EXPIRY_MARGIN_MS,
        account_id: None,
    })
}

/// Exchanges an authorization code for tokens.
pub async fn exchange_code(
    config: &OAuthConfig,
    code: &str,
    state: &str,
    verifier: &str,
    redirect_uri: &str,
) -> Result<Credential, AuthError> {
    let body = json!({
        "grant_type": "authorization_code",
        "client_id": config.client_id,
        "code": code,
        "state": state,
        "redirect_uri": redirect_uri,
        "code_verifier": verifier,
    });
    credential_from(post_token(config, body).await?, None)
}

/// Gets a new access token with a refresh token.
pub async fn refresh(config: &OAuthConfig, refresh_token: &str) -> Result<Credential, AuthError> {
    let body = json!({
        "grant_type": "refresh_token",
        "client_id": config.client_id,
        "refresh_token": refresh_token,
    });
    credential_from(post_token(config, body).await?, Some(refresh_token)).map_err(|e| {
        AuthError::failed(format!(
            "{e}. Your login may have expired: run `makai auth login anthropic` again"
        ))
    })
}

/// The local callback server of one login.
pub struct CallbackServer {
    /// The redirect URI to register in the authorize URL.
    pub redirect_uri: String,
    code: oneshot::Receiver<(String, String)>,
    shutdown: Option<oneshot::Sender<()>>,
}

impl CallbackServer {
    /// Starts listening on 127.0.0.1 for Anthropic's `/callback`; the callback checks `state`.
    pub async fn start(port: u16, state: String) -> Result<Self, AuthError> {
        Self::start_at(port, state, CALLBACK_PATH).await
    }

    /// Starts listening on 127.0.0.1 for `path`; the callback checks `state`.
    pub async fn start_at(port: u16, state: String, path: &str) -> Result<Self, AuthError> {
        use axum::extract::Query;
        use axum::response::Html;
        use std::collections::HashMap;
        use std::sync::{Arc, Mutex};

        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|e| {
                AuthError::failed(format!(
                    "cannot listen for the OAuth callback on 127.0.0.1:{port}: {e}. \
                     Close the program using that port or set MAKAI_OAUTH_CALLBACK_PORT"
                ))
            })?;
        let actual = listener
            .local_addr()
            .map_err(|e| AuthError::failed(format!("OAuth callback server: {e}")))?
            .port();
        let (code_tx, code_rx) = oneshot::channel();
        let code_tx = Arc::new(Mutex::new(Some(code_tx)));
        let handler = move |Query(q): Query<HashMap<String, String>>| {
            let code_tx = code_tx.clone();
            let state = state.clone();
            async move {
                if let Some(err) = q.get("error") {
                    return Html(page(&format!("Login did not complete: {}", escape(err))));
                }
                match (q.get("code"), q.get("state")) {
                    (Some(code), Some(s)) if *s == state => {
                        if let Some(tx) = code_tx.lock().ok().and_then(|mut g| g.take()) {
                            // The login stopped waiting: the code has no reader.
                            let _ = tx.send((code.clone(), s.clone()));
                        }
                        Html(page(
                            "Login complete. You can close this window and return to makai.",
                        ))
                    }
                    (Some(_), Some(_)) => Html(page("Login failed: the state does not match.")),
                    _ => Html(page("Login failed: the code or state is missing.")),
                }
            }
        };
        let app = axum::Router::new().route(path, axum::routing::get(handler));
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        tokio::spawn(async move {
            // The callback server ends with the login; its errors have no one to tell.
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    // A dropped sender stops the server too.
                    let _ = stop_rx.await;
                })
                .await;
        });
        Ok(CallbackServer {
            redirect_uri: format!("http://localhost:{actual}{path}"),
            code: code_rx,
            shutdown: Some(stop_tx),
        })
    }

    /// Waits for the browser to deliver `(code, state)`.
    pub async fn wait(&mut self) -> Option<(String, String)> {
        (&mut self.code).await.ok()
    }
}

impl Drop for CallbackServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            // The server already stopped.
            let _ = tx.send(());
        }
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn page(message: &str) -> String {
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>makai login</title></head>\
         <body style=\"font-family:sans-serif;margin:3em\"><h1>makai</h1><p>{message}</p></body></html>"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkce_challenge_is_s256_of_verifier() {
        // RFC 7636 appendix B.
        let p = Pkce::from_verifier("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk".into());
        assert_eq!(p.challenge, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
        let a = Pkce::generate();
        let b = Pkce::generate();
        assert_ne!(a.verifier, b.verifier);
        assert_eq!(a.verifier.len(), 43);
        assert!(!format!("{a:?}").contains(&a.verifier));
    }

    #[test]
    fn pasted_codes_in_every_form() {
        assert_eq!(
            parse_pasted_code("abc#xyz"),
            (Some("abc".into()), Some("xyz".into()))
        );
        assert_eq!(
            parse_pasted_code("http://localhost:1/callback?code=c1&state=s1"),
            (Some("c1".into()), Some("s1".into()))
        );
        assert_eq!(parse_pasted_code(" c2 \n"), (Some("c2".into()), None));
        assert_eq!(parse_pasted_code(""), (None, None));
    }

    #[test]
    fn authorize_url_carries_pkce_and_state() {
        let cfg = OAuthConfig {
            client_id: "cid".into(),
            authorize_url: "http://127.0.0.1:9/authorize".into(),
            token_url: "http://127.0.0.1:9/token".into(),
            callback_port: 0,
        };
        let p = Pkce::from_verifier("v".into());
        let u = authorize_url(&cfg, &p, "st", "http://localhost:5/callback").unwrap();
        let parsed = url::Url::parse(&u).unwrap();
        let q: std::collections::HashMap<_, _> = parsed.query_pairs().into_owned().collect();
        assert_eq!(q["code_challenge_method"], "S256");
        assert_eq!(q["code_challenge"], p.challenge);
        assert_eq!(q["state"], "st");
        assert_eq!(q["client_id"], "cid");
        assert_eq!(q["redirect_uri"], "http://localhost:5/callback");
    }
}
