//! What the server checks before answering a cloud provider's route, and the
//! Google OAuth token endpoint it serves.
//!
//! Nothing is checked until a test asks for it:
//! - [`AwsRules`]: Bedrock requests must carry a valid SigV4 signature (see
//!   [`crate::sigv4`]) for an accepted key, or an accepted Bedrock API key;
//!   keys can be marked expired (`ExpiredTokenException`).
//! - [`AzureRules`]: Azure OpenAI requests (`/openai/v1/...`) must name the
//!   `api-version` and carry the `api-key` (or the Entra bearer token).
//! - [`TokenEndpoint`]: `POST /token`, an OAuth2 token endpoint, exchanges a
//!   Google service account's signed JWT (RS256, checked with the configured
//!   public key: issuer, audience, scope, expiry), an authorized user's refresh
//!   token, or an Entra ID service principal's client secret for an access
//!   token; Vertex AI routes then require a bearer token it issued and has not
//!   expired (Azure routes too, with [`AzureRules::accept_issued_tokens`]).
//!
//! A refused request gets the provider's error (status and body) and does not
//! use up a scripted response.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use base64::Engine;
use serde_json::{Value, json};

use crate::record::RecordedRequest;
use crate::sigv4::{AwsKey, verify};

/// Bedrock authentication rules.
#[derive(Debug, Clone, Default)]
pub struct AwsRules {
    /// The region the signature must be scoped to.
    pub region: String,
    /// The signing name (`bedrock`).
    pub service: String,
    /// Accepted keys.
    pub keys: Vec<AwsKey>,
    /// Access key ids whose credentials have expired.
    pub expired: Vec<String>,
    /// Accepted Bedrock API keys (bearer tokens).
    pub api_keys: Vec<String>,
}

/// Azure OpenAI rules.
#[derive(Debug, Clone, Default)]
pub struct AzureRules {
    /// The `api-version` every request must name.
    pub api_version: String,
    /// The accepted `api-key`.
    pub api_key: Option<String>,
    /// The accepted Entra ID bearer token.
    pub bearer: Option<String>,
    /// Also accept bearer tokens issued by the token endpoint.
    pub accept_issued_tokens: bool,
}

/// The token endpoint's configuration.
#[derive(Debug, Clone, Default)]
pub struct TokenEndpoint {
    /// The service account's email (the JWT's issuer).
    pub client_email: Option<String>,
    /// The service account's RSA public key (PKCS#1 `RSAPublicKey`, DER).
    pub public_key_der: Option<Vec<u8>>,
    /// An authorized user: client id, client secret, refresh token.
    pub user: Option<(String, String, String)>,
    /// A service principal (client-credentials grant): client id, client secret.
    pub client: Option<(String, String)>,
    /// Lifetime of issued tokens.
    pub lifetime: Duration,
}

/// Issued Google access tokens.
#[derive(Debug, Default)]
pub(crate) struct Issued {
    /// token → expiry.
    tokens: HashMap<String, SystemTime>,
    count: u64,
}

/// All rules and state.
#[derive(Debug, Default)]
pub(crate) struct AuthState {
    pub(crate) aws: Option<AwsRules>,
    pub(crate) azure: Option<AzureRules>,
    pub(crate) google: Option<TokenEndpoint>,
    pub(crate) issued: Issued,
}

/// A refusal: status, JSON body, and extra headers.
pub(crate) struct Refusal {
    pub(crate) status: u16,
    pub(crate) body: Value,
    pub(crate) headers: Vec<(String, String)>,
}

fn bearer(req: &RecordedRequest) -> Option<&str> {
    req.header("authorization")
        .and_then(|v| v.strip_prefix("Bearer "))
}

impl AuthState {
    /// Checks a model request; `None` lets it through.
    pub(crate) fn check(&self, req: &RecordedRequest) -> Option<Refusal> {
        let path = req.path.as_str();
        if path.starts_with("/model/") {
            return self.aws.as_ref().and_then(|rules| check_aws(rules, req));
        }
        if path.starts_with("/openai/") {
            let issued = self.valid_issued(req);
            return self
                .azure
                .as_ref()
                .and_then(|rules| check_azure(rules, req, issued));
        }
        if path.contains("/publishers/") && self.google.is_some() {
            return self.check_google(req);
        }
        None
    }

    /// True when the request carries a live token this endpoint issued.
    fn valid_issued(&self, req: &RecordedRequest) -> bool {
        bearer(req)
            .and_then(|t| self.issued.tokens.get(t))
            .is_some_and(|expiry| *expiry > SystemTime::now())
    }

    fn check_google(&self, req: &RecordedRequest) -> Option<Refusal> {
        let valid = self.valid_issued(req);
        (!valid).then(|| Refusal {
            status: 401,
            body: json!({"error": {"code": 401, "message": "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.", "status": "UNAUTHENTICATED"}}),
            headers: Vec::new(),
        })
    }

    /// Marks every token issued so far as expired.
    pub(crate) fn expire_google_tokens(&mut self) {
        let past = SystemTime::UNIX_EPOCH;
        for expiry in self.issued.tokens.values_mut() {
            *expiry = past;
        }
    }

    /// How many access tokens the endpoint issued.
    pub(crate) fn issued_count(&self) -> u64 {
        self.issued.count
    }

    /// Answers `POST /token` (form-encoded).
    pub(crate) fn token_endpoint(
        &mut self,
        req: &RecordedRequest,
        token_url: &str,
    ) -> (u16, Value) {
        let Some(config) = self.google.clone() else {
            return (
                404,
                json!({"error": "not_found", "error_description": "mockllm: no token endpoint configured"}),
            );
        };
        let form: HashMap<String, String> = url::form_urlencoded::parse(req.raw_body.as_bytes())
            .into_owned()
            .collect();
        let grant = form.get("grant_type").map(String::as_str).unwrap_or("");
        let result = match grant {
            "urn:ietf:params:oauth:grant-type:jwt-bearer" => check_jwt(
                &config,
                form.get("assertion").map(String::as_str).unwrap_or(""),
                token_url,
            ),
            "client_credentials" => match &config.client {
                Some((id, secret))
                    if form.get("client_id") == Some(id)
                        && form.get("client_secret") == Some(secret) =>
                {
                    Ok(())
                }
                _ => Err(
                    "invalid_client: AADSTS7000215: Invalid client secret provided.".to_string(),
                ),
            },
            "refresh_token" => match &config.user {
                Some((id, secret, refresh))
                    if form.get("client_id") == Some(id)
                        && form.get("client_secret") == Some(secret)
                        && form.get("refresh_token") == Some(refresh) =>
                {
                    Ok(())
                }
                _ => Err("invalid_grant: Bad Request".to_string()),
            },
            other => Err(format!("unsupported_grant_type: {other}")),
        };
        if let Err(reason) = result {
            let (error, description) = reason
                .split_once(": ")
                .unwrap_or(("invalid_grant", &reason));
            return (
                400,
                json!({"error": error, "error_description": description}),
            );
        }
        self.issued.count += 1;
        let token = format!("ya29.mock-token-{}", self.issued.count);
        let lifetime = if config.lifetime.is_zero() {
            Duration::from_secs(3600)
        } else {
            config.lifetime
        };
        self.issued
            .tokens
            .insert(token.clone(), SystemTime::now() + lifetime);
        (
            200,
            json!({"access_token": token, "expires_in": lifetime.as_secs(), "token_type": "Bearer"}),
        )
    }
}

fn check_aws(rules: &AwsRules, req: &RecordedRequest) -> Option<Refusal> {
    let refuse = |status: u16, error_type: &str, message: String| Refusal {
        status,
        body: json!({"message": message}),
        headers: vec![(
            "x-amzn-ErrorType".to_string(),
            format!("{error_type}:http://internal.amazon.com/coral/com.amazon.coral.service/"),
        )],
    };
    if let Some(token) = bearer(req) {
        return (!rules.api_keys.iter().any(|k| k == token)).then(|| {
            refuse(
                403,
                "UnrecognizedClientException",
                "The security token included in the request is invalid.".to_string(),
            )
        });
    }
    match verify(
        req,
        &rules.keys,
        &rules.expired,
        &rules.region,
        &rules.service,
        Some(SystemTime::now()),
    ) {
        Ok(()) => None,
        Err(r) => Some(refuse(403, r.error_type, r.message)),
    }
}

fn check_azure(rules: &AzureRules, req: &RecordedRequest, issued: bool) -> Option<Refusal> {
    let version = req
        .query
        .as_deref()
        .and_then(|q| url::form_urlencoded::parse(q.as_bytes()).find(|(k, _)| k == "api-version"))
        .map(|(_, v)| v.into_owned());
    if version.as_deref() != Some(rules.api_version.as_str()) {
        return Some(Refusal {
            status: 400,
            body: json!({"error": {"code": "BadRequest", "message": format!("API version not supported (expected api-version={}, got {:?})", rules.api_version, version)}}),
            headers: Vec::new(),
        });
    }
    let key_ok = rules
        .api_key
        .as_deref()
        .is_some_and(|k| req.header("api-key") == Some(k));
    let bearer_ok = rules
        .bearer
        .as_deref()
        .is_some_and(|t| bearer(req) == Some(t))
        || (rules.accept_issued_tokens && issued);
    (!(key_ok || bearer_ok)).then(|| Refusal {
        status: 401,
        body: json!({"error": {"code": "401", "message": "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource."}}),
        headers: Vec::new(),
    })
}

fn b64(s: &str) -> Result<Vec<u8>, String> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(s)
        .map_err(|_| "invalid_grant: the assertion is not base64url".to_string())
}

/// Checks a service account's JWT assertion.
fn check_jwt(config: &TokenEndpoint, assertion: &str, token_url: &str) -> Result<(), String> {
    let parts: Vec<&str> = assertion.split('.').collect();
    let [header, claims, signature] = parts[..] else {
        return Err("invalid_grant: the assertion is not a JWT".to_string());
    };
    let header: Value = serde_json::from_slice(&b64(header)?)
        .map_err(|_| "invalid_grant: bad JWT header".to_string())?;
    if header["alg"] != "RS256" {
        return Err("invalid_grant: the JWT must be RS256".to_string());
    }
    let key = config
        .public_key_der
        .as_ref()
        .ok_or_else(|| "invalid_client: no service account configured".to_string())?;
    let public = aws_lc_rs::signature::UnparsedPublicKey::new(
        &aws_lc_rs::signature::RSA_PKCS1_2048_8192_SHA256,
        key,
    );
    let signed = format!("{}.{}", parts[0], parts[1]);
    public
        .verify(signed.as_bytes(), &b64(signature)?)
        .map_err(|_| "invalid_grant: Invalid JWT Signature.".to_string())?;
    let claims: Value = serde_json::from_slice(&b64(claims)?)
        .map_err(|_| "invalid_grant: bad JWT claims".to_string())?;
    if claims["iss"].as_str() != config.client_email.as_deref() {
        return Err("invalid_grant: Invalid issuer".to_string());
    }
    if claims["aud"].as_str() != Some(token_url) {
        return Err(format!(
            "invalid_grant: Invalid JWT audience (expected {token_url})"
        ));
    }
    if claims["scope"].as_str() != Some("https://www.googleapis.com/auth/cloud-platform") {
        return Err("invalid_scope: the scope must be cloud-platform".to_string());
    }
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (iat, exp) = (
        claims["iat"].as_u64().unwrap_or(0),
        claims["exp"].as_u64().unwrap_or(0),
    );
    if exp <= now || iat > now + 300 || exp.saturating_sub(iat) > 3600 {
        return Err("invalid_grant: Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.".to_string());
    }
    Ok(())
}
