//! pi's codemode sandbox: a script, the body of an async JavaScript
//! function, runs in QuickJS with no file system, network, process or
//! timers. It reaches the outside only through its host: `tools.<name>()`
//! and `models.*` become [`Host`] calls whose results settle the script's
//! promises. The other globals (`text`, `image`, `console`, `exit`,
//! `store`/`load`, `ALL_TOOLS`, `searchTools`, `describeTool`,
//! `describeNamespace`) are answered here.
//!
//! Each script runs on a thread of its own; at most
//! [`max_workers`] threads run at once in a process (`PI_CODEMODE_MAX_WORKERS`,
//! default 2), later scripts wait their turn for up to a minute. The VM has
//! 256 MB of memory; a deadline or an abort interrupts the script wherever
//! it is. Start reading at [`run`].

mod catalog;
mod declare;
mod engine;
mod image;
mod output;
mod search_text;
mod source;

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, OnceLock, mpsc as std_mpsc};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use futures::stream::{FuturesUnordered, StreamExt};
use serde_json::{Map, Value};
use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

pub use catalog::{CallableTool, Catalog, Namespace, ToolSummary, first_paragraph};
pub use declare::{function_declaration, js_name, tools_declaration, ts_type};
pub use engine::{
    MAX_OUTPUT_CALLS, MAX_OUTPUT_CHARS, MAX_STORE_CHARS, MAX_STORE_VALUE_CHARS, MEMORY_LIMIT,
};
pub use image::ScriptImage;
pub use output::{ConsoleLine, Failure, Item, Outcome, Part, Rendered, StoreWrites};
pub use source::{DEFAULT_MAX_OUTPUT_TOKENS, Script, ScriptOptions, SourceError};

use engine::{ABORTED, EngineInput, HostRequest, RequestKind, TIMED_OUT, ToEngine};

/// What a script reaches outside its sandbox.
pub trait Host: Send + Sync + 'static {
    /// `tools.<name>(args)`: the value the call resolves to, or the error
    /// text it rejects with. Dropping the future cancels the call.
    fn call_tool(&self, name: String, args: Value) -> BoxFuture<'static, Result<Value, String>>;

    /// `models.<method>(...args)`: as [`Host::call_tool`]. A `null` value
    /// resolves to `undefined`.
    fn call_models(
        &self,
        method: String,
        args: Vec<Value>,
    ) -> BoxFuture<'static, Result<Value, String>>;
}

/// The environment variable that sets [`max_workers`] (pi's).
pub const MAX_WORKERS_ENV: &str = "PI_CODEMODE_MAX_WORKERS";
/// How long a script waits for a worker before it fails without running.
pub const WORKER_WAIT: Duration = Duration::from_secs(60);

/// Scripts that may run at once in this process: `PI_CODEMODE_MAX_WORKERS`,
/// else 2.
pub fn max_workers() -> usize {
    std::env::var(MAX_WORKERS_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or(2)
}

fn workers() -> &'static Arc<Semaphore> {
    static WORKERS: OnceLock<Arc<Semaphore>> = OnceLock::new();
    WORKERS.get_or_init(|| Arc::new(Semaphore::new(max_workers())))
}

/// Interrupts a script still running when its caller goes away.
struct StopOnDrop(Arc<AtomicU8>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        let _ = self.0.compare_exchange(
            engine::RUNNING,
            ABORTED,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }
}

/// What a script runs with besides its source.
pub struct RunEnv {
    /// The tools and `models` it calls.
    pub host: Arc<dyn Host>,
    /// The tools it can call and find.
    pub catalog: Arc<Catalog>,
    /// The values `load()` reads.
    pub store: Map<String, Value>,
    /// Cancelled when the call is aborted.
    pub cancel: CancellationToken,
}

/// Runs `script` to its end: completed, failed, timed out or aborted.
/// Host calls still running when it ends are cancelled.
pub async fn run(script: &Script, env: RunEnv) -> Outcome {
    let started = Instant::now();
    let deadline = script.options.timeout.map(|t| started + t);
    let mut outcome = run_inner(script, env, deadline).await;
    outcome.wall_time = started.elapsed();
    outcome
}

async fn run_inner(script: &Script, env: RunEnv, deadline: Option<Instant>) -> Outcome {
    let fail = |failure: Failure| Outcome {
        failure: Some(failure),
        ..Outcome::default()
    };
    let wait_until = {
        let limit = Instant::now() + WORKER_WAIT;
        deadline.map_or(limit, |d| d.min(limit))
    };
    let permit = tokio::select! {
        p = workers().clone().acquire_owned() => match p {
            Ok(p) => p,
            Err(_) => return fail(Failure::Sandbox("the worker pool is closed".into())),
        },
        _ = tokio::time::sleep_until(wait_until.into()) => {
            return if deadline.is_some_and(|d| d <= wait_until) {
                fail(Failure::Timeout)
            } else {
                fail(Failure::NoWorker(format!(
                    "no codemode worker was free within {} s ({} run at once; {MAX_WORKERS_ENV} changes it)",
                    WORKER_WAIT.as_secs(),
                    max_workers()
                )))
            };
        }
        _ = env.cancel.cancelled() => return fail(Failure::Aborted),
    };

    let (req_tx, mut req_rx) = mpsc::unbounded_channel::<HostRequest>();
    let (reply_tx, reply_rx) = std_mpsc::channel::<ToEngine>();
    let (done_tx, done_rx) = oneshot::channel();
    let stop = Arc::new(AtomicU8::new(engine::RUNNING));
    // Dropped before the script ended (the caller stopped waiting): the
    // script is interrupted, so its thread ends and frees its worker.
    let _interrupt_if_dropped = StopOnDrop(stop.clone());
    let input = EngineInput {
        code: script.code.clone(),
        catalog: env.catalog.clone(),
        store: env.store,
        requests: req_tx,
        replies: reply_rx,
        stop: stop.clone(),
    };
    let spawned = std::thread::Builder::new()
        .name("makai-codemode".into())
        .stack_size(16 * 1024 * 1024)
        .spawn(move || {
            let result = engine::run_script(input);
            drop(permit);
            let _ = done_tx.send(result);
        });
    if let Err(e) = spawned {
        return fail(Failure::Sandbox(format!(
            "cannot start a worker thread: {e}"
        )));
    }

    let mut running: FuturesUnordered<BoxFuture<'static, (u64, Result<Value, String>)>> =
        FuturesUnordered::new();
    let mut stopped = false;
    let deadline_sleep = async {
        match deadline {
            Some(d) => tokio::time::sleep_until(d.into()).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(deadline_sleep);
    let stop_with = |why: u8, stopped: &mut bool| {
        if !*stopped {
            *stopped = true;
            stop.store(why, Ordering::Relaxed);
            let _ = reply_tx.send(ToEngine::Stop);
        }
    };
    loop {
        tokio::select! {
            request = req_rx.recv() => match request {
                Some(HostRequest { id, kind }) => {
                    let call = match kind {
                        RequestKind::Tool { name, args } => env.host.call_tool(name, args),
                        RequestKind::Models { method, args } => env.host.call_models(method, args),
                    };
                    running.push(Box::pin(async move { (id, call.await) }));
                }
                // The script's thread ended.
                None => break,
            },
            Some((id, result)) = running.next(), if !running.is_empty() => {
                let _ = reply_tx.send(ToEngine::Settled { id, result });
            }
            _ = &mut deadline_sleep, if !stopped => stop_with(TIMED_OUT, &mut stopped),
            _ = env.cancel.cancelled(), if !stopped => stop_with(ABORTED, &mut stopped),
        }
    }
    // Calls still running are cancelled with the script's end.
    drop(running);
    let Ok(result) = done_rx.await else {
        return fail(Failure::Sandbox(
            "the script's worker thread stopped unexpectedly".into(),
        ));
    };
    Outcome {
        items: result.items,
        console: result.console,
        failure: result.failure,
        store_writes: result.store_writes,
        wall_time: Duration::ZERO,
    }
}
