//! AWS Signature Version 4, verified on the server side: an implementation of
//! AWS's published algorithm written independently of the client's signer
//! (the `aws-sigv4` crate), so the two must agree for a request to pass. Both
//! are checked against AWS's signing test suite.
//!
//! Canonical request: method, the path with every segment URI-encoded again
//! (the double encoding of every service but S3), the query sorted by name,
//! the signed headers (`name:value`, values trimmed, inner runs of spaces
//! collapsed, repeated headers joined with `,`), the signed header names, and
//! the hex SHA-256 of the body. String to sign: `AWS4-HMAC-SHA256`, the
//! `x-amz-date`, the scope `date/region/service/aws4_request`, and the hex
//! SHA-256 of the canonical request. The key is derived by HMAC-SHA256 from
//! `AWS4` + secret through date, region, service and `aws4_request`.

use std::time::{Duration, SystemTime};

use aws_lc_rs::{digest, hmac};

use crate::record::RecordedRequest;

/// A key pair the server accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AwsKey {
    /// The access key id.
    pub access_key_id: String,
    /// The secret access key.
    pub secret_access_key: String,
    /// The session token that must come with it, for temporary credentials.
    pub session_token: Option<String>,
}

impl AwsKey {
    /// Permanent credentials.
    pub fn new(access_key_id: impl Into<String>, secret_access_key: impl Into<String>) -> Self {
        AwsKey {
            access_key_id: access_key_id.into(),
            secret_access_key: secret_access_key.into(),
            session_token: None,
        }
    }

    /// Temporary credentials with a session token.
    pub fn with_session_token(mut self, token: impl Into<String>) -> Self {
        self.session_token = Some(token.into());
        self
    }
}

/// Why a signature was refused: the AWS error type and its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// `IncompleteSignatureException`, `UnrecognizedClientException`,
    /// `InvalidSignatureException`, `ExpiredTokenException`.
    pub error_type: &'static str,
    /// The message, in AWS's words where it has some.
    pub message: String,
}

fn reject(error_type: &'static str, message: impl Into<String>) -> Rejection {
    Rejection {
        error_type,
        message: message.into(),
    }
}

fn sha256_hex(data: &[u8]) -> String {
    hex::encode(digest::digest(&digest::SHA256, data).as_ref())
}

fn hmac_sha256(key: &[u8], data: &[u8]) -> Vec<u8> {
    let key = hmac::Key::new(hmac::HMAC_SHA256, key);
    hmac::sign(&key, data).as_ref().to_vec()
}

/// URI-encodes everything but unreserved characters (and `/` when `keep_slash`).
fn uri_encode(s: &str, keep_slash: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        let unreserved = b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~');
        if unreserved || (keep_slash && b == b'/') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn decode_component(s: &str) -> String {
    url::form_urlencoded::parse(format!("k={s}").as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// `/a/./b/../c` → `/a/c`; empty → `/`; a trailing slash is kept.
fn normalize_path(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            s => out.push(s),
        }
    }
    let mut joined = format!("/{}", out.join("/"));
    if path.ends_with('/') && joined.len() > 1 {
        joined.push('/');
    }
    joined
}

fn canonical_query(query: Option<&str>) -> String {
    let Some(q) = query.filter(|q| !q.is_empty()) else {
        return String::new();
    };
    let mut pairs: Vec<(String, String)> = q
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (
                uri_encode(&decode_component(k), false),
                uri_encode(&decode_component(v), false),
            )
        })
        .collect();
    pairs.sort();
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

fn collapse(value: &str) -> String {
    value.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The parsed `Authorization` header.
struct Authorization<'a> {
    access_key_id: &'a str,
    date: &'a str,
    region: &'a str,
    service: &'a str,
    signed_headers: Vec<&'a str>,
    signature: &'a str,
}

fn parse_authorization(value: &str) -> Result<Authorization<'_>, Rejection> {
    let incomplete = |what: &str| {
        reject(
            "IncompleteSignatureException",
            format!("Authorization header requires '{what}' parameter."),
        )
    };
    let rest = value.strip_prefix("AWS4-HMAC-SHA256 ").ok_or_else(|| {
        reject(
            "IncompleteSignatureException",
            "Authorization header is not AWS4-HMAC-SHA256.",
        )
    })?;
    let mut credential = None;
    let mut signed = None;
    let mut signature = None;
    for part in rest.split(',') {
        let (k, v) = part.trim().split_once('=').unwrap_or(("", ""));
        match k {
            "Credential" => credential = Some(v),
            "SignedHeaders" => signed = Some(v),
            "Signature" => signature = Some(v),
            _ => {}
        }
    }
    let credential = credential.ok_or_else(|| incomplete("Credential"))?;
    let mut scope = credential.split('/');
    let (Some(access_key_id), Some(date), Some(region), Some(service), Some("aws4_request")) = (
        scope.next(),
        scope.next(),
        scope.next(),
        scope.next(),
        scope.next(),
    ) else {
        return Err(reject(
            "IncompleteSignatureException",
            format!("Credential should be scoped to a valid region, not '{credential}'."),
        ));
    };
    Ok(Authorization {
        access_key_id,
        date,
        region,
        service,
        signed_headers: signed
            .ok_or_else(|| incomplete("SignedHeaders"))?
            .split(';')
            .collect(),
        signature: signature.ok_or_else(|| incomplete("Signature"))?,
    })
}

/// The signature of `request` with `secret` for the scope in its Authorization header.
pub fn expected_signature(request: &RecordedRequest, secret: &str) -> Result<String, Rejection> {
    let auth_value = request.header("authorization").ok_or_else(|| {
        reject(
            "MissingAuthenticationTokenException",
            "Missing Authentication Token",
        )
    })?;
    let auth = parse_authorization(auth_value)?;
    let amz_date = request.header("x-amz-date").ok_or_else(|| {
        reject(
            "IncompleteSignatureException",
            "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header.",
        )
    })?;
    let canonical_uri = normalize_path(&request.path)
        .split('/')
        .map(|segment| uri_encode(segment, false))
        .collect::<Vec<_>>()
        .join("/");
    let mut headers = String::new();
    for name in &auth.signed_headers {
        let values: Vec<String> = request
            .headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| collapse(v))
            .collect();
        if values.is_empty() {
            return Err(reject(
                "InvalidSignatureException",
                format!(
                    "The request signature we calculated does not match the signature you provided: signed header '{name}' is missing."
                ),
            ));
        }
        headers.push_str(&format!("{name}:{}\n", values.join(",")));
    }
    let canonical = format!(
        "{}\n{}\n{}\n{}\n{}\n{}",
        request.method,
        canonical_uri,
        canonical_query(request.query.as_deref()),
        headers,
        auth.signed_headers.join(";"),
        sha256_hex(request.raw_body.as_bytes())
    );
    let scope = format!(
        "{}/{}/{}/aws4_request",
        auth.date, auth.region, auth.service
    );
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
        sha256_hex(canonical.as_bytes())
    );
    let k_date = hmac_sha256(format!("AWS4{secret}").as_bytes(), auth.date.as_bytes());
    let k_region = hmac_sha256(&k_date, auth.region.as_bytes());
    let k_service = hmac_sha256(&k_region, auth.service.as_bytes());
    let k_signing = hmac_sha256(&k_service, b"aws4_request");
    Ok(hex::encode(hmac_sha256(
        &k_signing,
        string_to_sign.as_bytes(),
    )))
}

/// `20150830T123600Z` as a time.
fn parse_amz_date(s: &str) -> Option<SystemTime> {
    if s.len() != 16 {
        return None;
    }
    let n = |a: usize, b: usize| s.get(a..b)?.parse::<i64>().ok();
    let (y, mo, d, h, mi, se) = (
        n(0, 4)?,
        n(4, 6)?,
        n(6, 8)?,
        n(9, 11)?,
        n(11, 13)?,
        n(13, 15)?,
    );
    // Days from the civil date (Howard Hinnant's algorithm).
    let y2 = if mo <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let doy = (153 * (mo + if mo > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + mi * 60 + se;
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).ok()?))
}

/// Verifies `request`'s SigV4 signature against the accepted `keys`, for
/// `region` and `service`. With `now`, the signing time must be within 15
/// minutes of it (as AWS requires). `expired` lists access key ids whose
/// credentials have expired.
pub fn verify(
    request: &RecordedRequest,
    keys: &[AwsKey],
    expired: &[String],
    region: &str,
    service: &str,
    now: Option<SystemTime>,
) -> Result<(), Rejection> {
    let auth_value = request.header("authorization").ok_or_else(|| {
        reject(
            "MissingAuthenticationTokenException",
            "Missing Authentication Token",
        )
    })?;
    let auth = parse_authorization(auth_value)?;
    if expired.iter().any(|k| k == auth.access_key_id) {
        return Err(reject(
            "ExpiredTokenException",
            "The security token included in the request is expired",
        ));
    }
    let key = keys
        .iter()
        .find(|k| k.access_key_id == auth.access_key_id)
        .ok_or_else(|| {
            reject(
                "UnrecognizedClientException",
                "The security token included in the request is invalid.",
            )
        })?;
    if auth.region != region || auth.service != service {
        return Err(reject(
            "InvalidSignatureException",
            format!(
                "Credential should be scoped to a valid region and service: got {}/{}, expected {region}/{service}.",
                auth.region, auth.service
            ),
        ));
    }
    if !auth.signed_headers.contains(&"host") {
        return Err(reject(
            "InvalidSignatureException",
            "The host header must be signed.",
        ));
    }
    if let Some(token) = &key.session_token
        && request.header("x-amz-security-token") != Some(token.as_str())
    {
        return Err(reject(
            "UnrecognizedClientException",
            "The security token included in the request is invalid.",
        ));
    }
    if let Some(now) = now {
        let signed_at = request
            .header("x-amz-date")
            .and_then(parse_amz_date)
            .ok_or_else(|| {
                reject(
                    "IncompleteSignatureException",
                    "X-Amz-Date is missing or malformed.",
                )
            })?;
        let skew = now
            .duration_since(signed_at)
            .unwrap_or_else(|e| e.duration());
        if skew > Duration::from_secs(15 * 60) {
            return Err(reject(
                "InvalidSignatureException",
                "Signature expired: the signing time is more than 15 minutes from the server's time.",
            ));
        }
    }
    let expected = expected_signature(request, &key.secret_access_key)?;
    if expected != auth.signature {
        return Err(reject(
            "InvalidSignatureException",
            "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.",
        ));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn amz_dates_parse() {
        let t = parse_amz_date("20150830T123600Z").unwrap();
        assert_eq!(
            t.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs(),
            1_440_938_160
        );
        assert!(parse_amz_date("2015").is_none());
    }

    #[test]
    fn paths_are_normalized_and_double_encoded() {
        assert_eq!(normalize_path("/a/./b/../c"), "/a/c");
        assert_eq!(normalize_path(""), "/");
        assert_eq!(uri_encode("us.claude-v1%3A0", false), "us.claude-v1%253A0");
    }
}
