//! The router's HTTP API: its model list (`GET /models`, `GET /props`),
//! loading (`POST /models/load`), unloading (`POST /models/unload`) and
//! downloading (`POST /models`) a model, and waiting, by polling the list,
//! until a model is where it was asked to be.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{LlamaCppError, Model, answers_now, normalize_server_url, to_model};

/// How long one request may take unless [`Router::with_timeout`] says (pi's).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(15);

/// One model in the router's list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RouterEntry {
    /// Its id, as requests name it.
    pub id: String,
    /// `unloaded`, `loading`, `loaded`, `downloading` or `sleeping`.
    pub status: String,
    /// Its last load failed.
    pub failed: bool,
    /// The exit code of a failed load.
    pub exit_code: Option<i64>,
    /// Its context window: what the router reports, else its `-c` argument.
    pub context: Option<u64>,
    /// It takes images.
    pub images: bool,
    /// A decision model (a classifier, not a chat model).
    pub decides: bool,
    /// Of a download in progress: bytes done and in all.
    pub download: Option<DownloadProgress>,
}

/// How far a download is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DownloadProgress {
    /// Bytes downloaded.
    pub done: u64,
    /// Bytes in all.
    pub total: u64,
}

impl RouterEntry {
    /// Loaded, or sleeping (woken by the next request).
    pub fn is_loaded(&self) -> bool {
        matches!(self.status.as_str(), "loaded" | "sleeping")
    }
}

/// What [`Router::wait`] waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// The model is loaded.
    Loaded,
    /// The model is unloaded (or gone from the list).
    Unloaded,
    /// The model's download ended: it is in the list and not downloading.
    Downloaded,
}

/// A llama.cpp server in router mode.
#[derive(Clone)]
pub struct Router {
    server: String,
    key: Option<String>,
    timeout: Duration,
}

impl std::fmt::Debug for Router {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Router")
            .field("server", &self.server)
            .field("key", &self.key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// The router's answer to `GET /models`, entry by entry.
#[derive(Deserialize)]
struct WireEntry {
    id: String,
    status: WireStatus,
    #[serde(default)]
    architecture: Option<WireArchitecture>,
    #[serde(default)]
    meta: Option<WireMeta>,
}

#[derive(Deserialize)]
struct WireStatus {
    value: String,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    failed: Option<bool>,
    #[serde(default)]
    exit_code: Option<i64>,
    #[serde(default)]
    progress: Option<Value>,
}

#[derive(Default, Deserialize)]
struct WireArchitecture {
    #[serde(default)]
    input_modalities: Vec<String>,
    #[serde(default)]
    output_modalities: Vec<String>,
}

#[derive(Default, Deserialize)]
struct WireMeta {
    #[serde(default)]
    n_ctx: Option<u64>,
    #[serde(default)]
    n_ctx_train: Option<u64>,
}

impl From<WireEntry> for RouterEntry {
    fn from(w: WireEntry) -> Self {
        let arch = w.architecture.unwrap_or_default();
        let meta = w.meta.unwrap_or_default();
        // `n_ctx` 0 is a server started with `-c 0`: the trained context.
        let context = meta
            .n_ctx
            .filter(|&n| n > 0)
            .or(meta.n_ctx_train.filter(|&n| n > 0))
            .or_else(|| context_argument(&w.status.args));
        RouterEntry {
            id: w.id,
            status: w.status.value,
            failed: w.status.failed == Some(true),
            exit_code: w.status.exit_code,
            context,
            images: arch.input_modalities.iter().any(|m| m == "image"),
            decides: arch.output_modalities.iter().any(|m| m == "decisions"),
            download: w.status.progress.as_ref().and_then(download_progress),
        }
    }
}

/// The `-c`/`--ctx-size` a model's server was started with.
fn context_argument(args: &[String]) -> Option<u64> {
    args.windows(2)
        .find(|w| matches!(w[0].as_str(), "-c" | "--ctx-size" | "-ctx"))
        .and_then(|w| w[1].parse().ok())
        .filter(|&n| n > 0)
}

/// The sum of a download's files (`{"file": {"done": n, "total": n}}`).
fn download_progress(progress: &Value) -> Option<DownloadProgress> {
    let files = progress.get("progress").unwrap_or(progress).as_object()?;
    let mut sum = DownloadProgress::default();
    for file in files.values() {
        if let (Some(done), Some(total)) = (
            file.get("done").and_then(Value::as_u64),
            file.get("total").and_then(Value::as_u64),
        ) {
            sum.done += done;
            sum.total += total;
        }
    }
    (sum.total > 0).then_some(sum)
}

impl Router {
    /// The router at `server_url` (normalized as pi does), asked with
    /// `api_key` when given.
    pub fn new(server_url: &str, api_key: Option<&str>) -> Result<Router, LlamaCppError> {
        Ok(Router {
            server: normalize_server_url(server_url)?,
            key: api_key.filter(|k| !k.is_empty()).map(str::to_string),
            timeout: DEFAULT_TIMEOUT,
        })
    }

    /// Each request may take at most `timeout`.
    pub fn with_timeout(mut self, timeout: Duration) -> Router {
        self.timeout = timeout;
        self
    }

    /// The router's URL.
    pub fn url(&self) -> &str {
        &self.server
    }

    /// Every model the router has, as it lists them.
    pub async fn list(&self) -> Result<Vec<RouterEntry>, LlamaCppError> {
        let list = self.request("GET", "/models", None).await?;
        let data = list
            .get("data")
            .and_then(Value::as_array)
            .ok_or_else(|| self.not_a_router("its /models answer has no `data` list"))?;
        data.iter()
            .map(|entry| {
                WireEntry::deserialize(entry)
                    .map(RouterEntry::from)
                    .map_err(|_| {
                        self.not_a_router(
                            "it is not running in router mode (its models have no `status`); \
                             start it without --model, -m or -hf",
                        )
                    })
            })
            .collect()
    }

    /// Whether a request loads an unloaded model (`models_autoload`); false
    /// for a router without `/props`.
    pub async fn autoload(&self) -> bool {
        match self.request("GET", "/props", None).await {
            Ok(props) => props
                .get("models_autoload")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            Err(e) => {
                tracing::debug!("llama.cpp /props: {e}");
                false
            }
        }
    }

    /// The models a request is answered by now, as models of the provider
    /// (see the module docs).
    pub async fn models(&self) -> Result<Vec<Model>, LlamaCppError> {
        let entries = self.list().await?;
        let autoload = self.autoload().await;
        Ok(entries
            .iter()
            .filter(|m| answers_now(m, autoload))
            .map(|m| to_model(m, &self.server))
            .collect())
    }

    /// Asks the router to load `model` (see [`Router::wait`]).
    pub async fn load(&self, model: &str) -> Result<(), LlamaCppError> {
        self.request("POST", "/models/load", Some(json!({ "model": model })))
            .await
            .map(drop)
    }

    /// Asks the router to unload `model` (also what stops a load or a
    /// download).
    pub async fn unload(&self, model: &str) -> Result<(), LlamaCppError> {
        self.request("POST", "/models/unload", Some(json!({ "model": model })))
            .await
            .map(drop)
    }

    /// Unloads `model` and waits until the router says it is unloaded.
    pub async fn unload_and_wait(&self, model: &str) -> Result<(), LlamaCppError> {
        self.unload(model).await?;
        self.wait(model, Wait::Unloaded, &CancellationToken::new(), |_| {})
            .await
    }

    /// Loads `model` and waits until the router says it is loaded.
    pub async fn load_and_wait(&self, model: &str) -> Result<(), LlamaCppError> {
        self.load(model).await?;
        self.wait(model, Wait::Loaded, &CancellationToken::new(), |_| {})
            .await
    }

    /// Asks the router to download `model` (`owner/repository[:quant]`
    /// of Hugging Face); the router does the download.
    pub async fn download(&self, model: &str) -> Result<(), LlamaCppError> {
        self.request("POST", "/models", Some(json!({ "model": model })))
            .await
            .map(drop)
    }

    /// Polls the list until `model` is as `until` says; `seen` gets the
    /// model's entry at each poll (a download's progress). Cancelled by
    /// `cancel` ([`LlamaCppError::Cancelled`]); a load that fails is
    /// [`LlamaCppError::LoadFailed`].
    pub async fn wait(
        &self,
        model: &str,
        until: Wait,
        cancel: &CancellationToken,
        mut seen: impl FnMut(&RouterEntry),
    ) -> Result<(), LlamaCppError> {
        let interval = match until {
            Wait::Loaded => Duration::from_millis(250),
            Wait::Unloaded => Duration::from_millis(100),
            Wait::Downloaded => Duration::from_millis(500),
        };
        let mut polls = 0u32;
        let mut saw_download = false;
        loop {
            let entries = tokio::select! {
                _ = cancel.cancelled() => return Err(LlamaCppError::Cancelled),
                listed = self.list() => listed?,
            };
            polls += 1;
            let entry = entries.iter().find(|e| e.id == model);
            if let Some(e) = entry {
                seen(e);
            }
            let done = match (until, entry) {
                (Wait::Loaded, Some(e)) if e.status == "loaded" => true,
                (Wait::Loaded, Some(e)) if e.failed => {
                    return Err(LlamaCppError::LoadFailed {
                        model: model.to_string(),
                        exit_code: e.exit_code,
                    });
                }
                (Wait::Loaded, _) => false,
                (Wait::Unloaded, None) => true,
                (Wait::Unloaded, Some(e)) => e.status == "unloaded",
                (Wait::Downloaded, Some(e)) if e.status == "downloading" => {
                    saw_download = true;
                    false
                }
                (Wait::Downloaded, Some(e)) if e.failed => {
                    return Err(LlamaCppError::DownloadFailed {
                        model: model.to_string(),
                        message: "the router marked it failed".into(),
                    });
                }
                // The entry appears once the download started; a download
                // too quick to be seen is done after two polls.
                (Wait::Downloaded, Some(_)) => saw_download || polls >= 2,
                (Wait::Downloaded, None) => false,
            };
            if done {
                return Ok(());
            }
            tokio::select! {
                _ = cancel.cancelled() => return Err(LlamaCppError::Cancelled),
                _ = tokio::time::sleep(interval) => {}
            }
        }
    }

    fn not_a_router(&self, reason: &str) -> LlamaCppError {
        LlamaCppError::NotARouter {
            url: self.server.clone(),
            reason: reason.to_string(),
        }
    }

    async fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, LlamaCppError> {
        let url = format!("{}{path}", self.server);
        let client = crate::stream::http_client();
        let mut request = match body {
            Some(body) => client.post(url).json(&body),
            None if method == "GET" => client.get(url),
            None => client.post(url),
        }
        .timeout(self.timeout);
        if let Some(key) = &self.key {
            request = request.bearer_auth(key);
        }
        let unreachable = |e: reqwest::Error| LlamaCppError::Unreachable {
            url: self.server.clone(),
            reason: if e.is_timeout() {
                format!("no answer within {} s", self.timeout.as_secs_f64())
            } else {
                crate::stream::error_chain(&e)
            },
        };
        let response = request.send().await.map_err(unreachable)?;
        let status = response.status();
        let bytes = response.bytes().await.map_err(unreachable)?;
        let json: Option<Value> = serde_json::from_slice(&bytes).ok();
        if !status.is_success() {
            let message = json
                .as_ref()
                .and_then(|j| j.pointer("/error/message"))
                .and_then(Value::as_str)
                .unwrap_or("(no message)")
                .to_string();
            return Err(LlamaCppError::Status {
                url: self.server.clone(),
                status: status.as_u16(),
                message,
            });
        }
        // Load, unload and download answer `{"success": true}` or nothing.
        Ok(json.unwrap_or(Value::Null))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_reads_the_context_images_and_progress_the_router_reports() {
        let wire: WireEntry = serde_json::from_value(json!({
            "id": "org/repo:Q4_K_M",
            "status": {"value": "downloading", "args": ["--port", "1", "-c", "8192"],
                       "progress": {"a.gguf": {"done": 10, "total": 40}, "b.gguf": {"done": 5, "total": 60}}},
            "architecture": {"input_modalities": ["text", "image"]}
        }))
        .unwrap();
        let e = RouterEntry::from(wire);
        assert_eq!(e.context, Some(8192));
        assert!(e.images && !e.decides && !e.is_loaded());
        assert_eq!(
            e.download,
            Some(DownloadProgress {
                done: 15,
                total: 100
            })
        );
        let wire: WireEntry = serde_json::from_value(json!({
            "id": "m", "status": {"value": "sleeping"}, "meta": {"n_ctx": 0, "n_ctx_train": 4096}
        }))
        .unwrap();
        let e = RouterEntry::from(wire);
        assert_eq!(e.context, Some(4096));
        assert!(e.is_loaded() && e.download.is_none());
    }

    #[test]
    fn the_key_stays_out_of_debug_output() {
        let r = Router::new("http://127.0.0.1:9931", Some("sekrit")).unwrap();
        assert!(!format!("{r:?}").contains("sekrit"));
    }
}
