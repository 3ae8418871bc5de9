//! Typed errors of the provider layer.
//!
//! Failures of a model call are not returned as `Err`: they end the stream with an
//! `error` event whose message carries the text of a [`ProviderError`]. The type
//! exists so that the text is consistent and so callers of the synchronous helpers
//! (request building, catalog loading) get a typed error.

use std::time::Duration;

/// What went wrong while talking to a provider.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// No API key was given and the provider's environment variable is unset.
    #[error("no API key for provider '{provider}': set {env_var} or pass an API key explicitly")]
    MissingApiKey {
        /// The provider.
        provider: String,
        /// The environment variable that would have been read.
        env_var: String,
    },
    /// The server answered with an HTTP error status.
    #[error("HTTP {status} from {provider}: {message}")]
    Http {
        /// The provider.
        provider: String,
        /// The HTTP status.
        status: u16,
        /// The provider's own message.
        message: String,
        /// How long the server asked us to wait, if it said.
        retry_after: Option<Duration>,
    },
    /// The connection failed or broke.
    #[error("connection to {url} failed: {message}")]
    Connection {
        /// The URL.
        url: String,
        /// What happened.
        message: String,
    },
    /// The stream broke the wire format or ended early.
    #[error("{0}")]
    Stream(String),
    /// The server asked to wait longer than the retry policy allows.
    #[error(
        "{message} (the server asked to retry after {requested:.1?}, longer than the maximum retry delay of {max:.1?})"
    )]
    RetryDelayTooLong {
        /// The last error.
        message: String,
        /// The delay the server asked for.
        requested: Duration,
        /// The configured maximum.
        max: Duration,
    },
    /// The request could not be built.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// A model catalog file could not be read.
    #[error("could not load models from {path}: {message}")]
    Catalog {
        /// The file.
        path: String,
        /// What was wrong.
        message: String,
    },
}

/// A failure of one attempt, as seen by the retry loop.
#[derive(Debug, Clone)]
pub(crate) struct Fault {
    pub message: String,
    pub retryable: bool,
    pub retry_after: Option<Duration>,
    /// The HTTP status of a refused request.
    pub status: Option<u16>,
    /// The provider's id of a refused request (`request-id`,
    /// `x-request-id`, `x-amzn-requestid`), for the provider's support.
    pub request_id: Option<String>,
}

impl Fault {
    pub fn fatal(message: impl Into<String>) -> Self {
        Fault {
            message: message.into(),
            retryable: false,
            retry_after: None,
            status: None,
            request_id: None,
        }
    }

    pub fn retryable(message: impl Into<String>) -> Self {
        Fault {
            message: message.into(),
            retryable: true,
            retry_after: None,
            status: None,
            request_id: None,
        }
    }
}

/// True for HTTP statuses worth retrying: 408, 429, 500, 502, 503, 504, 529.
pub fn is_retryable_status(status: u16) -> bool {
    matches!(status, 408 | 429 | 500 | 502 | 503 | 504 | 529)
}

/// True when an error body says the account's quota, credit or usage cap
/// is spent (OpenAI's `insufficient_quota`, a credit balance, Z.ai's code
/// 1308 usage limit): a 429 that no retry within minutes can pass (pi
/// stops retrying these too). A rate limit per minute is not one.
pub fn is_quota_exhausted(body: &str) -> bool {
    const SPENT: [&str; 9] = [
        "insufficient_quota",
        "exceeded your current quota",
        "credit balance",
        "credits have been exhausted",
        "payment required",
        "billing hard limit",
        "usage limit reached",
        "\"code\":\"1308\"",
        "\"code\":1308",
    ];
    const RATE: [&str; 4] = [
        "rate limit",
        "rate_limit",
        "per minute",
        "too many requests",
    ];
    let lower = body.to_lowercase().replace(": ", ":");
    SPENT.iter().any(|p| lower.contains(p)) && !RATE.iter().any(|p| lower.contains(p))
}

/// Finds a "try again in 1.8s" / "retry in 20s" / `"retryDelay": "20s"` hint in an error text.
pub fn retry_hint_in_text(text: &str) -> Option<Duration> {
    let lower = text.to_ascii_lowercase();
    for marker in [
        "try again in ",
        "retry in ",
        "retry after ",
        "\"retrydelay\": \"",
        "\"retrydelay\":\"",
    ] {
        if let Some(pos) = lower.find(marker) {
            let rest = &lower[pos + marker.len()..];
            if let Some(d) = parse_duration_prefix(rest) {
                return Some(d);
            }
        }
    }
    None
}

/// Parses `1.8s`, `250ms`, `2m`, `20 seconds` at the start of `s`.
fn parse_duration_prefix(s: &str) -> Option<Duration> {
    let num_len = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    if num_len == 0 {
        return None;
    }
    let value: f64 = s[..num_len].parse().ok()?;
    let unit = s[num_len..].trim_start();
    let secs = if unit.starts_with("ms") || unit.starts_with("millisecond") {
        value / 1000.0
    } else if unit.starts_with('m') && !unit.starts_with("ms") {
        value * 60.0
    } else {
        value
    };
    if !secs.is_finite() || secs < 0.0 {
        return None;
    }
    Some(Duration::from_secs_f64(secs.min(86_400.0)))
}

/// Reads `retry-after-ms` and `retry-after` (seconds) headers.
pub fn retry_after_from_headers(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms.min(86_400_000.0) / 1000.0));
    }
    let v = headers.get("retry-after").and_then(|v| v.to_str().ok())?;
    if let Ok(secs) = v.trim().parse::<f64>()
        && secs.is_finite()
        && secs >= 0.0
    {
        return Some(Duration::from_secs_f64(secs.min(86_400.0)));
    }
    None
}

/// Extracts the provider's own message from an error body (OpenAI, Anthropic and
/// Gemini shapes), falling back to the raw text, shortened.
pub fn error_message_from_body(body: &str) -> String {
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(body) {
        let v = if let Some(first) = v.as_array().and_then(|a| a.first()) {
            first.clone()
        } else {
            v
        };
        let candidates = [
            v.pointer("/error/message"),
            v.pointer("/message"),
            v.pointer("/error").filter(|e| e.is_string()),
            v.pointer("/detail"),
        ];
        for c in candidates.into_iter().flatten() {
            if let Some(s) = c.as_str()
                && !s.is_empty()
            {
                let kind = v.pointer("/error/type").and_then(|t| t.as_str());
                return match kind {
                    Some(k) if !s.contains(k) => format!("{s} ({k})"),
                    _ => s.to_string(),
                };
            }
        }
    }
    let trimmed = body.trim();
    if trimmed.is_empty() {
        return "(empty response body)".to_string();
    }
    let mut s: String = trimmed.chars().take(500).collect();
    if s.len() < trimmed.len() {
        s.push('…');
    }
    s
}

/// Removes every occurrence of `secret` from `text`.
pub fn redact(text: &str, secret: Option<&str>) -> String {
    match secret {
        Some(s) if s.len() >= 4 && text.contains(s) => text.replace(s, "<redacted>"),
        _ => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spent_quota_is_told_from_a_rate_limit() {
        for spent in [
            r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","code":"insufficient_quota"}}"#,
            r#"{"error":{"code":"1308","message":"Usage limit reached for 5 hour. Your limit will reset at 2026-11-29 18:00:00"}}"#,
            r#"{"error": {"code": 1308, "message": "limit"}}"#,
            "Your credit balance is too low to access the Anthropic API.",
        ] {
            assert!(is_quota_exhausted(spent), "{spent}");
        }
        for busy in [
            r#"{"error":{"message":"Rate limit reached for gpt-x in organization org on tokens per min (TPM)","type":"tokens","code":"rate_limit_exceeded"}}"#,
            "Too many requests, usage limit reached for this minute: per minute cap",
            "overloaded",
        ] {
            assert!(!is_quota_exhausted(busy), "{busy}");
        }
    }

    #[test]
    fn finds_retry_hints() {
        assert_eq!(
            retry_hint_in_text("Rate limit reached. Please try again in 1.8s."),
            Some(Duration::from_millis(1800))
        );
        assert_eq!(
            retry_hint_in_text("try again in 250ms"),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            retry_hint_in_text(r#"{"retryDelay": "20s"}"#),
            Some(Duration::from_secs(20))
        );
        assert_eq!(
            retry_hint_in_text("try again in 2m"),
            Some(Duration::from_secs(120))
        );
        assert_eq!(retry_hint_in_text("nothing here"), None);
    }

    #[test]
    fn extracts_provider_messages() {
        assert_eq!(
            error_message_from_body(
                r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#
            ),
            "invalid x-api-key (authentication_error)"
        );
        assert_eq!(
            error_message_from_body(r#"[{"error":{"code":400,"message":"bad"}}]"#),
            "bad"
        );
        assert_eq!(error_message_from_body("plain"), "plain");
    }

    #[test]
    fn redacts_secrets() {
        assert_eq!(
            redact("key sk-1234 bad", Some("sk-1234")),
            "key <redacted> bad"
        );
    }
}
