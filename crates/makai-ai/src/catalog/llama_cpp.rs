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

use std::time::Duration;

use serde::Deserialize;

use crate::model::{Api, CompatFlags, Modality, Model, ModelCost};

/// The provider's id.
pub const PROVIDER: &str = "llama.cpp";
/// The environment variable naming the router.
pub const BASE_URL_ENV: &str = "LLAMA_BASE_URL";
/// The environment variable holding the router's key (`--api-key`).
pub const API_KEY_ENV: &str = "LLAMA_API_KEY";
/// A model's context window when the router does not report one (pi's).
const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;

/// Why the router's models could not be listed.
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
}

/// One model in the router's list.
#[derive(Clone, Debug, Deserialize)]
struct RouterModel {
    id: String,
    status: RouterStatus,
    #[serde(default)]
    architecture: Option<Architecture>,
    #[serde(default)]
    meta: Option<Meta>,
}

#[derive(Clone, Debug, Deserialize)]
struct RouterStatus {
    /// `unloaded`, `loading`, `loaded`, `downloading` or `sleeping`.
    value: String,
    #[serde(default)]
    failed: Option<bool>,
}

#[derive(Clone, Debug, Default, Deserialize)]
struct Architecture {
    #[serde(default)]
    input_modalities: Vec<String>,
    #[serde(default)]
    output_modalities: Vec<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
struct Meta {
    #[serde(default)]
    n_ctx: Option<u64>,
    #[serde(default)]
    n_ctx_train: Option<u64>,
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

/// The router's models that can answer now (see the module docs), as
/// models of the `llama.cpp` provider. `server_url` is normalized first.
pub async fn router_models(
    server_url: &str,
    api_key: Option<&str>,
    timeout: Duration,
) -> Result<Vec<Model>, LlamaCppError> {
    let server = normalize_server_url(server_url)?;
    let list = get_json(&server, "/models", api_key, timeout).await?;
    let data = list
        .get("data")
        .and_then(serde_json::Value::as_array)
        .ok_or_else(|| LlamaCppError::NotARouter {
            url: server.clone(),
            reason: "its /models answer has no `data` list".into(),
        })?;
    let mut entries = Vec::with_capacity(data.len());
    for entry in data {
        let model = RouterModel::deserialize(entry).map_err(|_| LlamaCppError::NotARouter {
            url: server.clone(),
            reason: "it is not running in router mode (its models have no `status`); start it \
                     without --model, -m or -hf"
                .into(),
        })?;
        entries.push(model);
    }
    // Older routers have no /props: then only what is awake is listed.
    let autoload = match get_json(&server, "/props", api_key, timeout).await {
        Ok(props) => props
            .get("models_autoload")
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false),
        Err(e) => {
            tracing::debug!("llama.cpp /props: {e}");
            false
        }
    };
    Ok(entries
        .into_iter()
        .filter(|m| answers_now(m, autoload))
        .map(|m| to_model(&m, &server))
        .collect())
}

/// Whether a request naming `m` is answered (see the module docs).
fn answers_now(m: &RouterModel, autoload: bool) -> bool {
    let decides = m
        .architecture
        .as_ref()
        .is_some_and(|a| a.output_modalities.iter().any(|o| o == "decisions"));
    if decides || m.status.failed == Some(true) {
        return false;
    }
    match m.status.value.as_str() {
        "loaded" | "sleeping" => true,
        "unloaded" | "loading" => autoload,
        _ => false,
    }
}

fn to_model(m: &RouterModel, server: &str) -> Model {
    let meta = m.meta.clone().unwrap_or_default();
    let context_window = meta
        .n_ctx
        .or(meta.n_ctx_train)
        .filter(|&n| n > 0)
        .unwrap_or(DEFAULT_CONTEXT_WINDOW);
    let mut model = Model::custom(
        Api::OpenAiCompletions,
        PROVIDER,
        &m.id,
        inference_url(server),
    );
    if m.architecture
        .as_ref()
        .is_some_and(|a| a.input_modalities.iter().any(|i| i == "image"))
    {
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

async fn get_json(
    server: &str,
    path: &str,
    api_key: Option<&str>,
    timeout: Duration,
) -> Result<serde_json::Value, LlamaCppError> {
    let mut request = crate::stream::http_client()
        .get(format!("{server}{path}"))
        .timeout(timeout);
    if let Some(key) = api_key.filter(|k| !k.is_empty()) {
        request = request.bearer_auth(key);
    }
    let unreachable = |e: reqwest::Error| LlamaCppError::Unreachable {
        url: server.to_string(),
        reason: if e.is_timeout() {
            format!("no answer within {} s", timeout.as_secs_f64())
        } else {
            crate::stream::error_chain(&e)
        },
    };
    let response = request.send().await.map_err(unreachable)?;
    let status = response.status();
    let body = response.bytes().await.map_err(unreachable)?;
    let json: Option<serde_json::Value> = serde_json::from_slice(&body).ok();
    if !status.is_success() {
        let message = json
            .as_ref()
            .and_then(|j| j.pointer("/error/message"))
            .and_then(serde_json::Value::as_str)
            .unwrap_or("(no message)")
            .to_string();
        return Err(LlamaCppError::Status {
            url: server.to_string(),
            status: status.as_u16(),
            message,
        });
    }
    json.ok_or_else(|| LlamaCppError::NotARouter {
        url: server.to_string(),
        reason: format!("its {path} answer is not JSON"),
    })
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

    fn entry(value: &str) -> RouterModel {
        RouterModel {
            id: "m".into(),
            status: RouterStatus {
                value: value.into(),
                failed: None,
            },
            architecture: None,
            meta: None,
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
        failed.status.failed = Some(true);
        assert!(!answers_now(&failed, true));
        let mut decision = entry("loaded");
        decision.architecture = Some(Architecture {
            input_modalities: vec!["text".into()],
            output_modalities: vec!["decisions".into()],
        });
        assert!(!answers_now(&decision, true));
    }
}
