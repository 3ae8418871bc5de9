//! Google Application Default Credentials: OAuth2 access tokens for Vertex AI.
//!
//! The credentials file is `GOOGLE_APPLICATION_CREDENTIALS`, else gcloud's
//! `application_default_credentials.json` (in `CLOUDSDK_CONFIG`, else
//! `~/.config/gcloud`), which `gcloud auth application-default login` writes.
//! Two kinds are understood:
//! - `service_account`: a JWT (RS256, signed with the key's private key via
//!   aws-lc-rs) exchanged at the key's `token_uri` for an access token
//!   (`urn:ietf:params:oauth:grant-type:jwt-bearer`);
//! - `authorized_user`: gcloud's user credentials, a refresh token exchanged at
//!   the token endpoint.
//!
//! Tokens are cached per key until 5 minutes before they expire. The GCE
//! metadata server and workload identity federation (`external_account`) are
//! not supported; the error says so.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use base64::Engine;
use serde::Deserialize;

use crate::credentials::Env;
use crate::credentials::cache::{self, Cache};
use crate::options::ApiKey;

/// The OAuth2 scope Vertex AI needs.
pub const CLOUD_PLATFORM_SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";
const DEFAULT_TOKEN_URI: &str = "https://oauth2.googleapis.com/token";
const TIMEOUT: Duration = Duration::from_secs(30);

static CACHE: OnceLock<Cache<ApiKey>> = OnceLock::new();

/// One credentials file.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum CredentialsFile {
    ServiceAccount {
        client_email: String,
        private_key: String,
        private_key_id: Option<String>,
        token_uri: Option<String>,
    },
    AuthorizedUser {
        client_id: String,
        client_secret: String,
        refresh_token: String,
        token_uri: Option<String>,
    },
    #[serde(other)]
    Other,
}

/// The ADC file to use, if any exists.
pub fn credentials_path(env: &Env) -> Option<PathBuf> {
    if let Some(p) = env.get("GOOGLE_APPLICATION_CREDENTIALS") {
        return Some(PathBuf::from(p));
    }
    let dir = match env.get("CLOUDSDK_CONFIG") {
        Some(d) => PathBuf::from(d),
        None => env.home()?.join(".config/gcloud"),
    };
    let path = dir.join("application_default_credentials.json");
    path.exists().then_some(path)
}

/// The message for missing credentials.
pub fn no_credentials_message() -> String {
    "no Google Cloud credentials found: set GOOGLE_CLOUD_API_KEY, or \
     GOOGLE_APPLICATION_CREDENTIALS to a service-account key file, or run \
     `gcloud auth application-default login` (the GCE metadata server is not supported)"
        .to_string()
}

/// An access token from Application Default Credentials. `Ok(None)` when no
/// credentials file exists; `fresh` skips the cache.
pub async fn access_token(env: &Env<'_>, fresh: bool) -> Result<Option<ApiKey>, String> {
    let Some(path) = credentials_path(env) else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "cannot read the Google credentials file {}: {e}",
            path.display()
        )
    })?;
    // serde's message names line and column only, never values.
    let file: CredentialsFile = serde_json::from_str(&text).map_err(|e| {
        format!(
            "the Google credentials file {} is not valid ({e})",
            path.display()
        )
    })?;
    let key = cache_key(&path, &file);
    let token = cache::global(&CACHE)
        .get_or_fetch(&key, fresh, || fetch(&path, file))
        .await?;
    Ok(Some(token))
}

fn cache_key(path: &Path, file: &CredentialsFile) -> String {
    match file {
        CredentialsFile::ServiceAccount {
            client_email,
            token_uri,
            ..
        } => format!("sa:{client_email}:{}", token_uri.as_deref().unwrap_or("")),
        CredentialsFile::AuthorizedUser {
            client_id,
            token_uri,
            ..
        } => format!(
            "user:{}:{client_id}:{}",
            path.display(),
            token_uri.as_deref().unwrap_or("")
        ),
        CredentialsFile::Other => format!("other:{}", path.display()),
    }
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    expires_in: Option<u64>,
}

async fn fetch(path: &Path, file: CredentialsFile) -> Result<(ApiKey, Option<SystemTime>), String> {
    let (token_uri, form): (String, Vec<(&str, String)>) = match file {
        CredentialsFile::ServiceAccount {
            client_email,
            private_key,
            private_key_id,
            token_uri,
        } => {
            let uri = token_uri.unwrap_or_else(|| DEFAULT_TOKEN_URI.to_string());
            let assertion = service_account_jwt(
                &client_email,
                &private_key,
                private_key_id.as_deref(),
                &uri,
                SystemTime::now(),
            )
            .map_err(|e| format!("{e} (key file {})", path.display()))?;
            (
                uri,
                vec![
                    (
                        "grant_type",
                        "urn:ietf:params:oauth:grant-type:jwt-bearer".to_string(),
                    ),
                    ("assertion", assertion),
                ],
            )
        }
        CredentialsFile::AuthorizedUser {
            client_id,
            client_secret,
            refresh_token,
            token_uri,
        } => (
            token_uri.unwrap_or_else(|| DEFAULT_TOKEN_URI.to_string()),
            vec![
                ("grant_type", "refresh_token".to_string()),
                ("client_id", client_id),
                ("client_secret", client_secret),
                ("refresh_token", refresh_token),
            ],
        ),
        CredentialsFile::Other => {
            return Err(format!(
                "the Google credentials file {} is of a kind makai does not support \
                 (only service_account and authorized_user); {}",
                path.display(),
                no_credentials_message()
            ));
        }
    };
    let response = crate::http_client()
        .post(&token_uri)
        .header("accept", "application/json")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(crate::credentials::form_body(
            &form
                .iter()
                .map(|(k, v)| (*k, v.as_str()))
                .collect::<Vec<_>>(),
        ))
        .timeout(TIMEOUT)
        .send()
        .await
        .map_err(|e| format!("could not reach the Google token endpoint {token_uri}: {e}"))?;
    let status = response.status();
    let body = response.text().await.unwrap_or_default();
    if !status.is_success() {
        let reason = serde_json::from_str::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| {
                let e = v.get("error")?.as_str()?.to_string();
                let d = v
                    .get("error_description")
                    .and_then(|d| d.as_str())
                    .unwrap_or("");
                Some(format!("{e}: {d}"))
            })
            .unwrap_or_else(|| crate::error::error_message_from_body(&body));
        return Err(format!(
            "the Google token endpoint {token_uri} answered HTTP {status} ({reason}); \
             check the credentials in {} (for user credentials run \
             `gcloud auth application-default login` again)",
            path.display()
        ));
    }
    let token: TokenResponse = serde_json::from_str(&body).map_err(|e| {
        format!("the Google token endpoint {token_uri} sent an unexpected answer ({e})")
    })?;
    let expires = token
        .expires_in
        .map(|s| SystemTime::now() + Duration::from_secs(s));
    Ok((ApiKey::new(token.access_token), expires))
}

fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The signed JWT a service account exchanges for an access token (RFC 7523):
/// valid for an hour from `now`, for the cloud-platform scope.
pub fn service_account_jwt(
    client_email: &str,
    private_key_pem: &str,
    key_id: Option<&str>,
    audience: &str,
    now: SystemTime,
) -> Result<String, String> {
    use rustls_pki_types::PrivateKeyDer;
    use rustls_pki_types::pem::PemObject;
    let key = PrivateKeyDer::from_pem_slice(private_key_pem.as_bytes())
        .map_err(|_| "the service account's private_key is not a PEM private key".to_string())?;
    let der = match &key {
        PrivateKeyDer::Pkcs8(k) => k.secret_pkcs8_der(),
        _ => return Err("the service account's private_key is not a PKCS#8 key".to_string()),
    };
    let pair = aws_lc_rs::signature::RsaKeyPair::from_pkcs8(der)
        .map_err(|_| "the service account's private_key is not an RSA key".to_string())?;
    let iat = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_err(|_| "the clock is before 1970".to_string())?
        .as_secs();
    let mut header = serde_json::json!({"alg": "RS256", "typ": "JWT"});
    if let Some(kid) = key_id {
        header["kid"] = serde_json::Value::from(kid);
    }
    let claims = serde_json::json!({
        "iss": client_email,
        "scope": CLOUD_PLATFORM_SCOPE,
        "aud": audience,
        "iat": iat,
        "exp": iat + 3600,
    });
    let signing_input = format!(
        "{}.{}",
        b64url(header.to_string().as_bytes()),
        b64url(claims.to_string().as_bytes())
    );
    let rng = aws_lc_rs::rand::SystemRandom::new();
    let mut signature = vec![0u8; pair.public_modulus_len()];
    pair.sign(
        &aws_lc_rs::signature::RSA_PKCS1_SHA256,
        &rng,
        signing_input.as_bytes(),
        &mut signature,
    )
    .map_err(|_| "could not sign the service account's token request".to_string())?;
    Ok(format!("{signing_input}.{}", b64url(&signature)))
}
