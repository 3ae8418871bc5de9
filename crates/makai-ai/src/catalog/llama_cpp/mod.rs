//! pi's built-in `llama.cpp` provider: a llama.cpp server in router mode
//! (`llama serve` without a model) lists the GGUF models it can run
//! (`GET /models`), and the ones it can answer with now become models of
//! the `llama.cpp` provider, served over its OpenAI-compatible API (`/v1`).
//!
//! As in pi 1.5: loaded and sleeping models are listed (a sleeping one wakes
//! when a request names it); with the router's autoload on (`GET /props`:
//! `models_autoload`) its unloaded models too, since a request loads them.
//! Decision models (`architecture.output_modalities` has `decisions`) are
//! classifiers, not chat models, and are left out. The caller names the
//! router (pi's `LLAMA_BASE_URL`, [`BASE_URL_ENV`]) and its key, if it was
//! started with one (`LLAMA_API_KEY`, [`API_KEY_ENV`]).
//!
//! [`Router`] (`router.rs`) also loads, unloads and downloads models, as
//! pi's `/llama` does.

mod router;

use crate::model::{Api, CompatFlags, Modality, Model, ModelCost};

pub use router::{DownloadProgress, Router, RouterEntry, Wait};

/// The provider's id.
pub const PROVIDER: &str = "llama.cpp";
/// The environment variable naming the router.
pub const BASE_URL_ENV: &str = "LLAMA_BASE_URL";
/// The environment variable holding the router's key (`--api-key`).
pub const API_KEY_ENV: &str = "LLAMA_API_KEY";
/// A model's context window when the router does not report one (pi's).
const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;

/// What went wrong asking the router.
#[derive(Debug, thiserror::Error)]
pub enum LlamaCppError {
    /// The configured URL is not an http(s) URL.
    #[error("llama.cpp server URL {0:?} is not an http or https URL")]
    BadUrl(String),
    /// The request failed (connection refused, timeout, ...).
    #[error("llama.cpp server at {url} cannot be reached: {reason}")]
    Unreachable {
        /// The router's URL.
        url: String,
        /// What failed.
        reason: String,
    },
    /// The router answered with an error status.
    #[error("llama.cpp server at {url} answered HTTP {status}: {message}")]
    Status {
        /// The router's URL.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The error message of its body, if any.
        message: String,
    },
    /// The answer is not a router's model list.
    #[error("llama.cpp server at {url}: {reason}")]
    NotARouter {
        /// The router's URL.
        url: String,
        /// What was wrong with the answer.
        reason: String,
    },
    /// A model the router was asked to load stopped instead.
    #[error("{model} failed to load{}", exit_code.map(|c| format!(" (exit code {c})")).unwrap_or_default())]
    LoadFailed {
        /// The model.
        model: String,
        /// The exit code of its server process, when the router says.
        exit_code: Option<i64>,
    },
    /// A download the router was asked for failed.
    #[error("the download of {model} failed: {message}")]
    DownloadFailed {
        /// The model.
        model: String,
        /// The router's message.
        message: String,
    },
    /// The wait was cancelled.
    #[error("cancelled")]
    Cancelled,
}

/// The router's URL as pi keeps it: `http(s)://host[:port][/path]`, without
/// a trailing `/` or `/v1`, a query or a fragment.
pub fn normalize_server_url(url: &str) -> Result<String, LlamaCppError> {
    let trimmed = url.trim();
    let rest = trimmed
        .strip_prefix("http://")
        .or_else(|| trimmed.strip_prefix("https://"))
        .filter(|r| !r.is_empty() && !r.starts_with('/'))
        .ok_or_else(|| LlamaCppError::BadUrl(trimmed.to_string()))?;
    let scheme_len = trimmed.len() - rest.len();
    let end = rest.find(['?', '#']).unwrap_or(rest.len());
    let mut out = format!("{}{}", &trimmed[..scheme_len], &rest[..end]);
    while out.ends_with('/') {
        out.pop();
    }
    if let Some(stripped) = out.strip_suffix("/v1") {
        out.truncate(stripped.len());
    }
    while out.ends_with('/') {
        out.pop();
    }
    Ok(out)
}

/// The router's OpenAI-compatible API, where its models are asked.
pub fn inference_url(server_url: &str) -> String {
    format!("{server_url}/v1")
}

/// Whether a request naming `m` is answered (see the module docs).
fn answers_now(m: &RouterEntry, autoload: bool) -> bool {
    if m.decides || m.failed {
        return false;
    }
    match m.status.as_str() {
        "loaded" | "sleeping" => true,
        "unloaded" | "loading" => autoload,
        _ => false,
    }
}

/// `m` as a model of the provider, asked at `server`'s `/v1`.
fn to_model(m: &RouterEntry, server: &str) -> Model {
    let context_window = m.context.unwrap_or(DEFAULT_CONTEXT_WINDOW);
    let mut model = Model::custom(
        Api::OpenAiCompletions,
        PROVIDER,
        &m.id,
        inference_url(server),
    );
    if m.images {
        model.input = vec![Modality::Text, Modality::Image];
    }
    model.cost = ModelCost::default();
    model.context_window = context_window;
    model.max_tokens = context_window;
    model.compat = Some(CompatFlags {
        supports_store: Some(false),
        supports_developer_role: Some(false),
        supports_reasoning_effort: Some(false),
        supports_usage_in_streaming: Some(true),
        max_tokens_field_is_completion: Some(false),
        ..CompatFlags::default()
    });
    model
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_urls_are_kept_as_pi_keeps_them() {
        for (given, kept) in [
            ("http://127.0.0.1:9931", "http://127.0.0.1:9931"),
            (" http://127.0.0.1:9931/ ", "http://127.0.0.1:9931"),
            ("http://host:1/v1/", "http://host:1"),
            ("https://host/llama/v1?x=1#y", "https://host/llama"),
        ] {
            assert_eq!(normalize_server_url(given).unwrap(), kept, "{given}");
        }
        for bad in ["", "ftp://host", "127.0.0.1:9931", "http://", "http:///x"] {
            assert!(normalize_server_url(bad).is_err(), "{bad}");
        }
    }

    fn entry(value: &str) -> RouterEntry {
        RouterEntry {
            id: "m".into(),
            status: value.into(),
            ..RouterEntry::default()
        }
    }

    #[test]
    fn what_answers_now_depends_on_the_status_and_autoload() {
        for (value, off, on) in [
            ("loaded", true, true),
            ("sleeping", true, true),
            ("unloaded", false, true),
            ("loading", false, true),
            ("downloading", false, false),
        ] {
            assert_eq!(answers_now(&entry(value), false), off, "{value}");
            assert_eq!(answers_now(&entry(value), true), on, "{value}");
        }
        let mut failed = entry("unloaded");
        failed.failed = true;
        assert!(!answers_now(&failed, true));
        let mut decision = entry("loaded");
        decision.decides = true;
        assert!(!answers_now(&decision, true));
    }
}
