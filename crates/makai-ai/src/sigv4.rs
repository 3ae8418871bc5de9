//! AWS Signature Version 4 for one HTTP request, through the `aws-sigv4` crate.
//!
//! [`sign`] is pure: the time is a parameter, so the signer is checked against
//! AWS's published test vectors (`tests/sigv4_vectors.rs`). Paths are
//! double-encoded and normalised as every AWS service but S3 expects; no
//! payload-hash header is sent (Bedrock does not ask for one).
//!
//! `aws-sigv4` traces the canonical request it signs, which holds the session
//! token of temporary credentials: signing runs with logging switched off on
//! its thread, so no log level ever shows a secret.

use std::time::SystemTime;

use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign as aws_sign};
use aws_sigv4::sign::v4;

use crate::credentials::AwsCredentials;

/// Where a signature is valid: the region and the service's signing name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SigningScope {
    /// The region, e.g. `us-east-1`.
    pub region: String,
    /// The signing name, e.g. `bedrock`.
    pub service: String,
}

/// The headers that sign a request (`authorization`, `x-amz-date`, and
/// `x-amz-security-token` for temporary credentials), to add to the request as
/// it is sent. `headers` are the request's headers (all are signed); `url` is
/// the full URL, already percent-encoded as it will be sent.
///
/// The error text names what was wrong and holds no secret.
pub fn sign(
    method: &str,
    url: &str,
    headers: &[(String, String)],
    body: &[u8],
    credentials: &AwsCredentials,
    scope: &SigningScope,
    time: SystemTime,
) -> Result<Vec<(String, String)>, String> {
    let identity = aws_credential_types::Credentials::new(
        credentials.access_key_id.clone(),
        credentials.secret_access_key.expose().to_string(),
        credentials
            .session_token
            .as_ref()
            .map(|t| t.expose().to_string()),
        credentials.expires,
        "makai",
    )
    .into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(&scope.region)
        .name(&scope.service)
        .time(time)
        .settings(SigningSettings::default())
        .build()
        .map_err(|e| format!("cannot sign the request: {e}"))?
        .into();
    let signable = SignableRequest::new(
        method,
        url,
        headers.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        SignableBody::Bytes(body),
    )
    .map_err(|e| format!("cannot sign the request to {}: {e}", strip_query(url)))?;
    let signed =
        tracing::subscriber::with_default(tracing::subscriber::NoSubscriber::default(), || {
            aws_sign(signable, &params)
        });
    let (instructions, _signature) = signed
        .map_err(|e| format!("cannot sign the request to {}: {e}", strip_query(url)))?
        .into_parts();
    let (signed, _params) = instructions.into_parts();
    Ok(signed
        .into_iter()
        .map(|h| (h.name().to_string(), h.value().to_string()))
        .collect())
}

fn strip_query(url: &str) -> &str {
    url.split('?').next().unwrap_or(url)
}
