//! `/llama`: pi's manager of a llama.cpp router's models
//! ([`makai_ai::catalog::llama_cpp::Router`], the router `LLAMA_BASE_URL`
//! names, asked with the provider's key: [`crate::models::llama_cpp_router`]). It lists the router's models as the router has them now, loaded
//! first; choosing a loaded one unloads it (after a yes), an unloaded one
//! loads it (asking first whether to unload the others when some are
//! loaded), and "Download model…" puts `/llama download ` in the editor for
//! a Hugging Face `owner/repository[:quant]` the router then downloads.
//! A load or download goes on in the background with its progress in the
//! status line; `/llama` while it runs offers to stop it. After each change
//! the session's `llama.cpp` models are listed again, so `/model` shows
//! what the router answers with now, and the list opens again.
//!
//! Selector values: `pick\tID`, `load\tID`, `replace\tID`, `unload\tID`,
//! `download`, `stop`, `retry`, `close`.

use std::sync::{Arc, Mutex};

use makai_ai::CancellationToken;
use makai_ai::catalog::llama_cpp::{self, LlamaCppError, Router, RouterEntry, Wait};

use super::event_loop::{Ctx, UiMsg, UiTx};
use super::selectors::{SelectItem, Selector, SelectorKind};
use super::transcript::Level;
use crate::app::AppSession;

/// The load or download in progress, if any (shared with its task).
#[derive(Clone, Default)]
pub struct LlamaJobs(Arc<Mutex<Option<Job>>>);

/// A load or download in progress.
#[derive(Clone)]
struct Job {
    /// "loading" or "downloading".
    doing: &'static str,
    model: String,
    cancel: CancellationToken,
}

impl LlamaJobs {
    fn get(&self) -> Option<Job> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set(&self, job: Option<Job>) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = job;
    }
}

/// What `/llama` says without a router to manage.
const NOT_CONFIGURED: &str = "/llama manages the models of a llama.cpp router (`llama serve` without a model): \
     set LLAMA_BASE_URL to it (and LLAMA_API_KEY if it was started with --api-key), then start makai again";

/// The router `/llama` manages ([`crate::models::llama_cpp_router`]), or
/// the notice that says why there is none.
async fn router() -> Result<Router, UiMsg> {
    match crate::models::llama_cpp_router(makai_coding::makai_home().as_deref()).await {
        None => Err(UiMsg::Notice(Level::Warning, NOT_CONFIGURED.to_string())),
        Some(Err(e)) => Err(UiMsg::Notice(Level::Error, e.to_string())),
        Some(Ok(router)) => Ok(router),
    }
}

/// `/llama [download MODEL]`.
pub fn open(ctx: &mut Ctx<'_>, arg: Option<&str>) {
    if let Some(job) = ctx.st.llama.get() {
        let items = vec![
            SelectItem::new(format!("Stop {}", job.doing), job.model.clone(), "stop"),
            SelectItem::new(format!("Keep {}", job.doing), "", "close"),
        ];
        ctx.st.selector = Some(Selector::new(
            format!("{} {}", capitalized(job.doing), job.model),
            SelectorKind::Llama,
            items,
        ));
        return;
    }
    match arg.map(str::trim) {
        None | Some("") => {
            ctx.st.set_status(Level::Info, "Asking the llama.cpp router…");
            ctx.spawn(async move {
                match router().await {
                    Ok(router) => vec![list_selector(&router).await],
                    Err(msg) => vec![msg],
                }
            });
        }
        Some(rest) => match rest.strip_prefix("download").map(str::trim) {
            Some(model) if is_hugging_face_model(model) => {
                start(ctx, Action::Download, model.to_string());
            }
            _ => ctx.st.notice(
                Level::Error,
                "Usage: /llama, or /llama download owner/repository[:quant] (a Hugging Face GGUF repository)",
            ),
        },
    }
}

/// Applies a `/llama` selector choice.
pub fn on_choice(ctx: &mut Ctx<'_>, value: &str) {
    let (action, model) = value.split_once('\t').unwrap_or((value, ""));
    let model = model.to_string();
    match action {
        "pick" => ctx.spawn(async move {
            match router().await {
                Ok(router) => picked(&router, model).await,
                Err(msg) => vec![msg],
            }
        }),
        "load" => start(ctx, Action::Load, model),
        "replace" => {
            let tx = ctx.tx.clone();
            let jobs = ctx.st.llama.clone();
            let app = ctx.app.clone();
            ctx.spawn(async move {
                let router = match router().await {
                    Ok(router) => router,
                    Err(msg) => return vec![msg],
                };
                let loaded: Vec<String> = match router.list().await {
                    Ok(list) => list
                        .into_iter()
                        .filter(|e| e.is_loaded() && e.id != model)
                        .map(|e| e.id)
                        .collect(),
                    Err(e) => return vec![UiMsg::Notice(Level::Error, e.to_string())],
                };
                for other in &loaded {
                    let _ = tx.send(UiMsg::Status(Level::Info, format!("Unloading {other}…")));
                    let unloaded = router.unload_and_wait(other).await;
                    if let Err(e) = unloaded {
                        return vec![UiMsg::Notice(Level::Error, e.to_string())];
                    }
                }
                run_job(&app, &tx, &jobs, router, Action::Load, model, loaded).await
            });
        }
        "unload" => {
            let app = ctx.app.clone();
            ctx.st
                .set_status(Level::Info, format!("Unloading {model}…"));
            ctx.spawn(async move {
                let router = match router().await {
                    Ok(router) => router,
                    Err(msg) => return vec![msg],
                };
                let unloaded = router.unload_and_wait(&model).await;
                let mut out = match unloaded {
                    Ok(()) => vec![UiMsg::Notice(Level::Info, format!("Unloaded {model}"))],
                    Err(e) => vec![UiMsg::Notice(Level::Error, e.to_string())],
                };
                out.extend(refresh_models(&app, &router).await);
                out.push(list_selector(&router).await);
                out
            });
        }
        "download" => {
            ctx.st.editor.set_text("/llama download ");
            ctx.st.set_status(
                Level::Info,
                "Type a Hugging Face owner/repository[:quant] and press Enter",
            );
        }
        "stop" => {
            if let Some(job) = ctx.st.llama.get() {
                job.cancel.cancel();
                ctx.st.set_status(
                    Level::Info,
                    format!("Stopping {} {}…", job.doing, job.model),
                );
            }
        }
        "retry" => open(ctx, None),
        _ => {}
    }
}

/// What a job does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    Load,
    Download,
}

/// Starts a load or download of `model` on a task.
fn start(ctx: &mut Ctx<'_>, action: Action, model: String) {
    let tx = ctx.tx.clone();
    let jobs = ctx.st.llama.clone();
    let app = ctx.app.clone();
    ctx.spawn(async move {
        match router().await {
            Ok(router) => run_job(&app, &tx, &jobs, router, action, model, Vec::new()).await,
            Err(msg) => vec![msg],
        }
    });
}

/// Loads or downloads `model` and waits for it, with its progress in the
/// status line; `restore` are the models unloaded for it, loaded again when
/// it fails or is stopped.
async fn run_job(
    app: &AppSession,
    tx: &UiTx,
    jobs: &LlamaJobs,
    router: Router,
    action: Action,
    model: String,
    restore: Vec<String>,
) -> Vec<UiMsg> {
    let cancel = CancellationToken::new();
    let doing = match action {
        Action::Load => "loading",
        Action::Download => "downloading",
    };
    jobs.set(Some(Job {
        doing,
        model: model.clone(),
        cancel: cancel.clone(),
    }));
    let _ = tx.send(UiMsg::Status(
        Level::Info,
        format!("{} {model}… (/llama stops it)", capitalized(doing)),
    ));
    let asked = match action {
        Action::Load => router.load(&model).await,
        Action::Download => router.download(&model).await,
    };
    let until = match action {
        Action::Load => Wait::Loaded,
        Action::Download => Wait::Downloaded,
    };
    let waited = match asked {
        Ok(()) => {
            router
                .wait(&model, until, &cancel, |entry| {
                    if let Some(p) = entry.download {
                        let _ = tx.send(UiMsg::Status(
                            Level::Info,
                            format!(
                                "Downloading {model}: {} / {} (/llama stops it)",
                                bytes(p.done),
                                bytes(p.total)
                            ),
                        ));
                    }
                })
                .await
        }
        Err(e) => Err(e),
    };
    jobs.set(None);
    let mut out = Vec::new();
    match waited {
        Ok(()) => out.push(UiMsg::Notice(
            Level::Info,
            match action {
                Action::Load => format!("Loaded {model}: /model selects it"),
                Action::Download => format!("Downloaded {model}: choose it in /llama to load it"),
            },
        )),
        Err(e) => {
            if matches!(e, LlamaCppError::Cancelled) {
                // The router stops a load or a download by unloading it.
                let _ = router.unload(&model).await;
                out.push(UiMsg::Notice(
                    Level::Info,
                    format!("Stopped {doing} {model}"),
                ));
            } else {
                out.push(UiMsg::Notice(Level::Error, e.to_string()));
            }
            for other in &restore {
                let _ = tx.send(UiMsg::Status(
                    Level::Info,
                    format!("Loading {other} again…"),
                ));
                let again = router.load_and_wait(other).await;
                if let Err(e) = again {
                    out.push(UiMsg::Notice(
                        Level::Error,
                        format!("{other} could not be loaded again: {e}"),
                    ));
                }
            }
        }
    }
    out.extend(refresh_models(app, &router).await);
    out.push(list_selector(&router).await);
    out
}

/// A model row was chosen: unload (after a yes), load (asking about the
/// others), or say why neither.
async fn picked(router: &Router, model: String) -> Vec<UiMsg> {
    let list = match router.list().await {
        Ok(list) => list,
        Err(e) => return vec![unavailable(router, &e)],
    };
    let Some(entry) = list.iter().find(|e| e.id == model) else {
        return vec![
            UiMsg::Notice(
                Level::Warning,
                format!("{model} is no longer on the router"),
            ),
            list_selector(router).await,
        ];
    };
    if entry.is_loaded() {
        let items = vec![
            SelectItem::new("Yes, unload it", "", format!("unload\t{model}")),
            SelectItem::new("No", "", "close"),
        ];
        return vec![UiMsg::Selector(Selector::new(
            format!("Unload {model}?"),
            SelectorKind::Llama,
            items,
        ))];
    }
    if entry.status != "unloaded" {
        return vec![UiMsg::Notice(
            Level::Warning,
            format!("{model} is {}", entry.status),
        )];
    }
    let others = list
        .iter()
        .filter(|e| e.is_loaded() && e.id != model)
        .count();
    if others == 0 {
        return vec![UiMsg::Selector(Selector::new(
            format!("Load {model}?"),
            SelectorKind::Llama,
            vec![
                SelectItem::new("Load", "", format!("load\t{model}")),
                SelectItem::new("Cancel", "", "close"),
            ],
        ))];
    }
    let title = if others == 1 {
        "1 model is loaded".to_string()
    } else {
        format!("{others} models are loaded")
    };
    vec![UiMsg::Selector(Selector::new(
        title,
        SelectorKind::Llama,
        vec![
            SelectItem::new(
                "Unload all and load",
                model.clone(),
                format!("replace\t{model}"),
            ),
            SelectItem::new(
                "Keep loaded and load",
                model.clone(),
                format!("load\t{model}"),
            ),
            SelectItem::new("Cancel", "", "close"),
        ],
    ))]
}

/// The router's models as a selector, or why they cannot be listed.
async fn list_selector(router: &Router) -> UiMsg {
    match router.list().await {
        Ok(list) => UiMsg::Selector(models_selector(router.url(), list)),
        Err(e) => unavailable(router, &e),
    }
}

fn models_selector(url: &str, mut list: Vec<RouterEntry>) -> Selector {
    list.sort_by(|a, b| {
        b.is_loaded()
            .cmp(&a.is_loaded())
            .then_with(|| a.id.cmp(&b.id))
    });
    let mut items: Vec<SelectItem> = list
        .iter()
        .map(|e| SelectItem::new(e.id.clone(), describe(e), format!("pick\t{}", e.id)))
        .collect();
    items.push(SelectItem::new(
        "Download model…",
        "Hugging Face owner/repository[:quant]",
        "download",
    ));
    Selector::new(
        format!("llama.cpp models · {url} (Enter loads, unloads or downloads)"),
        SelectorKind::Llama,
        items,
    )
}

/// pi's row description: `loaded · 33k context`, a status other than
/// unloaded, or a failed load.
fn describe(e: &RouterEntry) -> String {
    let mut parts: Vec<String> = Vec::new();
    if e.is_loaded() {
        parts.push("loaded".into());
        if let Some(n) = e.context {
            parts.push(if n >= 1000 {
                format!("{}k context", (n + 500) / 1000)
            } else {
                format!("{n} context")
            });
        }
    } else if e.status != "unloaded" {
        parts.push(e.status.clone());
    } else if e.failed {
        parts.push(match e.exit_code {
            Some(c) => format!("last load failed (exit code {c})"),
            None => "last load failed".into(),
        });
    }
    if e.decides {
        parts.push("decision model".into());
    }
    parts.join(" · ")
}

/// The router could not be asked: Retry or Close.
fn unavailable(router: &Router, e: &LlamaCppError) -> UiMsg {
    UiMsg::Selector(Selector::new(
        format!("llama.cpp unavailable · {e}"),
        SelectorKind::Llama,
        vec![
            SelectItem::new("Retry", router.url(), "retry"),
            SelectItem::new("Close", "", "close"),
        ],
    ))
}

/// Lists the router's answering models again as the session's `llama.cpp`
/// models; a failure is a notice and the old list stays.
async fn refresh_models(app: &AppSession, router: &Router) -> Vec<UiMsg> {
    match router.models().await {
        Ok(models) => {
            app.set_provider_models(llama_cpp::PROVIDER, models);
            Vec::new()
        }
        Err(e) => vec![UiMsg::Notice(
            Level::Warning,
            format!("{e}; /model still shows the models listed before"),
        )],
    }
}

/// `owner/repository` or `owner/repository:quant`, without spaces.
fn is_hugging_face_model(text: &str) -> bool {
    let (repo, quant) = match text.split_once(':') {
        Some((r, q)) => (r, Some(q)),
        None => (text, None),
    };
    let Some((owner, name)) = repo.split_once('/') else {
        return false;
    };
    let ok = |s: &str| !s.is_empty() && !s.contains(char::is_whitespace) && !s.contains('/');
    ok(owner) && ok(name) && quant.is_none_or(|q| ok(q) && !q.contains(':'))
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Bytes as pi shows them (`1.50 GiB`, `12.0 MiB`).
fn bytes(n: u64) -> String {
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = "KiB";
    for next in ["MiB", "GiB", "TiB"] {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = next;
    }
    if value >= 10.0 {
        format!("{value:.1} {unit}")
    } else {
        format!("{value:.2} {unit}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hugging_face_names_are_owner_repository_and_an_optional_quant() {
        for ok in [
            "ggml-org/gemma-3-4b-it-GGUF",
            "ggml-org/gemma-3-4b-it-GGUF:Q4_K_M",
        ] {
            assert!(is_hugging_face_model(ok), "{ok}");
        }
        for bad in ["", "gemma", "a/b/c", "a/b:q:r", "a /b", "/b", "a/"] {
            assert!(!is_hugging_face_model(bad), "{bad}");
        }
    }

    #[test]
    fn rows_are_described_and_sorted_as_pi_shows_them() {
        let entry = |id: &str, status: &str| RouterEntry {
            id: id.into(),
            status: status.into(),
            ..RouterEntry::default()
        };
        let mut big = entry("b-loaded", "loaded");
        big.context = Some(32_768);
        let mut failed = entry("c-failed", "unloaded");
        failed.failed = true;
        failed.exit_code = Some(1);
        let sel = models_selector(
            "http://h:1",
            vec![
                entry("a-cold", "unloaded"),
                failed,
                big,
                entry("d-busy", "downloading"),
            ],
        );
        let rows: Vec<(&str, &str)> = sel
            .items
            .iter()
            .map(|i| (i.label.as_str(), i.detail.as_str()))
            .collect();
        assert_eq!(
            rows,
            [
                ("b-loaded", "loaded · 33k context"),
                ("a-cold", ""),
                ("c-failed", "last load failed (exit code 1)"),
                ("d-busy", "downloading"),
                ("Download model…", "Hugging Face owner/repository[:quant]"),
            ]
        );
        assert_eq!(bytes(1536), "1.50 KiB");
        assert_eq!(bytes(12 * 1024 * 1024), "12.0 MiB");
    }
}
