//! The standard agent-loop benchmark.
//!
//! ```text
//! cargo run --profile release-lto -p makai-agent --example loop_bench
//! MOCK_URL=http://127.0.0.1:18080/v1 API=anthropic-messages RUNS=200 CONCURRENCY=50 \
//!     cargo run --profile release-lto -p makai-agent --example loop_bench
//! ```
//!
//! (`--release` works too; `release-lto` is the release profile with whole-program
//! optimisation, the build to measure: see BENCHMARKS.md.)
//!
//! Each run is one `Agent` prompted once against a server that follows the bench
//! script (makai-mockllm's `bench_responder`): every response streams TOKENS text
//! tokens, rounds 0..TOOL_ROUNDS call the tool `echo` with `{"text": "echo-<round>"}`,
//! and the last round ends with `[final]` when every tool result came back right.
//! With `MOCK_URL` unset the example starts that server itself, as a child process
//! (the `makai-mockllm` binary, built first if missing), so that the measured
//! process is the agent's alone. That server streams each SSE event in its own
//! write, as providers do (`PACING=stream`, the default; `DELAY_US` sets the time
//! between events), or replays each response in one write (`PACING=replay`: the
//! decoding cost alone, with a few large reads per response).
//!
//! Every run is verified (final text, tool executions, text deltas seen by a
//! subscriber); the example prints one line and exits non-zero on any failure.
//! The counting subscriber opts out of delta merging so every delta is counted.
//! `RUNTIME` picks the Tokio runtime: `current-thread` (the default: the agents
//! and their requests share one thread, as an event-loop library's would) or
//! `multi-thread`, the `makai` CLI's session runtime: Tokio's multi-thread
//! runtime with `WORKERS` workers (default 1, as the CLI has; 2 is `makai
//! serve`'s on two cores, with cross-thread wake-ups), the runs in a task on a
//! worker as the CLI runs its command; the printed line names both.
//! `READ_INTERVAL_US` sets `StreamOptions::read_interval` (unset: every read
//! as data arrives, the library's default).
//! `MERGE_DELTAS=1` sets `StreamOptions::merge_deltas` (the `makai` binary's
//! setting): the deltas one read delivers arrive as one event.
//! `SUBSCRIBER=inline` counts with `Agent::subscribe_inline` (called on the
//! run's task) instead of an event stream read by a task of its own.
//! `SNAPSHOTS=1` turns on the partial-message snapshots in `message_update` (off by
//! default, as in `AgentLoopConfig`).

use std::process::ExitCode;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use futures::StreamExt;
use makai_agent::makai_ai::{Api, Model, RetryPolicy};
use makai_agent::{
    Agent, AgentEvent, AgentLoopConfig, AgentMessage, InProcessClient, ToolOutput, ToolSet,
    TypedTool,
};

mod server;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// The text to return.
    text: String,
}

/// The Tokio runtime the bench runs on (`RUNTIME`).
#[derive(Clone, Copy)]
enum Runtime {
    /// Tokio's multi-thread runtime with this many workers, the runs in a
    /// task on one of them.
    MultiThread(usize),
    /// Everything on the main thread (the default).
    CurrentThread,
}

impl Runtime {
    fn name(self) -> String {
        match self {
            Runtime::MultiThread(workers) => format!("multi-thread workers={workers}"),
            Runtime::CurrentThread => "current-thread".to_string(),
        }
    }
}

/// How the child server writes its responses (`PACING`, `DELAY_US`).
#[derive(Clone, Copy)]
enum Pacing {
    /// `--bench-stream --bench-delay-us N`: one event per write, N µs apart.
    Stream { delay_us: u64 },
    /// Each response in one write.
    Replay,
}

struct Settings {
    runtime: Runtime,
    pacing: Pacing,
    api: Api,
    runs: usize,
    concurrency: usize,
    tokens: usize,
    tool_rounds: usize,
    /// Count with an inline subscriber instead of a stream on a task.
    inline: bool,
    /// `StreamOptions::merge_deltas`: the deltas of one read arrive as one
    /// event, so the run is verified by the text the deltas carry.
    merge_deltas: bool,
    /// The final answer's text, built once (as pi's harness does).
    expected_text: String,
}

fn env_num(name: &str, default: usize) -> Result<usize, String> {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .map_err(|_| format!("{name}={v:?} is not a whole number")),
        Err(_) => Ok(default),
    }
}

fn settings() -> Result<Settings, String> {
    let api = match std::env::var("API") {
        Ok(v) => Api::from_str(v.trim())?,
        Err(_) => Api::OpenAiCompletions,
    };
    if !matches!(api, Api::OpenAiCompletions | Api::AnthropicMessages) {
        return Err(format!(
            "API={api} is not benchmarked: use openai-completions or anthropic-messages"
        ));
    }
    let runtime = match std::env::var("RUNTIME").as_deref().map(str::trim) {
        Ok("multi-thread") => match env_num("WORKERS", 1)? {
            0 => return Err("WORKERS must be at least 1".into()),
            workers => Runtime::MultiThread(workers),
        },
        Err(_) | Ok("current-thread") => Runtime::CurrentThread,
        Ok(other) => {
            return Err(format!(
                "RUNTIME={other:?}: use current-thread (the default) or multi-thread"
            ));
        }
    };
    let inline = match std::env::var("SUBSCRIBER").as_deref().map(str::trim) {
        Err(_) | Ok("" | "stream") => false,
        Ok("inline") => true,
        Ok(other) => {
            return Err(format!(
                "SUBSCRIBER={other:?}: use stream (the default) or inline"
            ));
        }
    };
    let pacing = match std::env::var("PACING").as_deref().map(str::trim) {
        Err(_) | Ok("stream") => Pacing::Stream {
            delay_us: env_num("DELAY_US", 0)? as u64,
        },
        Ok("replay") => Pacing::Replay,
        Ok(other) => {
            return Err(format!(
                "PACING={other:?}: use stream (the default) or replay"
            ));
        }
    };
    let s = Settings {
        runtime,
        pacing,
        api,
        runs: env_num("RUNS", 200)?,
        concurrency: env_num("CONCURRENCY", 1)?.max(1),
        tokens: env_num("TOKENS", 200)?,
        tool_rounds: env_num("TOOL_ROUNDS", 5)?,
        inline,
        merge_deltas: std::env::var("MERGE_DELTAS").as_deref().map(str::trim) == Ok("1"),
        expected_text: String::new(),
    };
    if s.tokens == 0 {
        return Err("TOKENS must be at least 1".into());
    }
    let mut s = s;
    s.expected_text = (0..s.tokens - 1)
        .map(|i| format!("w{i} "))
        .chain(std::iter::once("[final]".to_string()))
        .collect();
    Ok(s)
}

/// What a run's subscriber counted.
#[derive(Clone, Default)]
struct Tally {
    events: u64,
    text_deltas: u64,
    text_bytes: u64,
    tool_ok: usize,
    tool_err: usize,
}

impl Tally {
    fn count(&mut self, e: &AgentEvent) {
        self.events += 1;
        match e {
            AgentEvent::MessageUpdate { .. } if e.text_delta().is_some() => {
                self.text_deltas += 1;
                self.text_bytes += e.text_delta().map_or(0, str::len) as u64;
            }
            AgentEvent::ToolExecutionEnd { is_error: true, .. } => self.tool_err += 1,
            AgentEvent::ToolExecutionEnd { .. } => self.tool_ok += 1,
            _ => {}
        }
    }
}

/// [`Tally`] for a callback that may be called from any thread.
#[derive(Default)]
struct AtomicTally {
    events: AtomicU64,
    text_deltas: AtomicU64,
    text_bytes: AtomicU64,
    tool_ok: AtomicUsize,
    tool_err: AtomicUsize,
}

impl AtomicTally {
    fn count(&self, e: &AgentEvent) {
        self.events.fetch_add(1, Ordering::Relaxed);
        match e {
            AgentEvent::MessageUpdate { .. } if e.text_delta().is_some() => {
                self.text_deltas.fetch_add(1, Ordering::Relaxed);
                let bytes = e.text_delta().map_or(0, str::len) as u64;
                self.text_bytes.fetch_add(bytes, Ordering::Relaxed);
            }
            AgentEvent::ToolExecutionEnd { is_error: true, .. } => {
                self.tool_err.fetch_add(1, Ordering::Relaxed);
            }
            AgentEvent::ToolExecutionEnd { .. } => {
                self.tool_ok.fetch_add(1, Ordering::Relaxed);
            }
            _ => {}
        }
    }

    fn get(&self) -> Tally {
        Tally {
            events: self.events.load(Ordering::Relaxed),
            text_deltas: self.text_deltas.load(Ordering::Relaxed),
            text_bytes: self.text_bytes.load(Ordering::Relaxed),
            tool_ok: self.tool_ok.load(Ordering::Relaxed),
            tool_err: self.tool_err.load(Ordering::Relaxed),
        }
    }
}

/// The bytes of text in the run's assistant messages: what its text deltas carried.
fn streamed_text_bytes(messages: &[AgentMessage]) -> u64 {
    messages
        .iter()
        .filter(|m| m.as_assistant().is_some())
        .map(|m| m.text().len() as u64)
        .sum()
}

/// What one run saw.
#[derive(Default)]
struct RunStats {
    events: u64,
    text_deltas: u64,
    text_bytes: u64,
    failure: Option<String>,
}

async fn one_run(agent_config: AgentLoopConfig, tools: ToolSet, s: &Settings) -> RunStats {
    let agent = Agent::new(agent_config).with_tools(tools);
    let (outcome, tally) = if s.inline {
        // Counted inline, on the run's task (`Agent::subscribe_inline`).
        let tally = Arc::new(AtomicTally::default());
        let counting = tally.clone();
        let _sub = agent.subscribe_inline(move |e| counting.count(e));
        let outcome = agent.prompt("Run the benchmark script.").await;
        (outcome, tally.get())
    } else {
        // Every delta is counted, so this subscriber opts out of delta merging.
        let mut events = agent.subscribe_stream_with(usize::MAX);
        let counter = tokio::spawn(async move {
            let mut t = Tally::default();
            while let Some(e) = events.next().await {
                t.count(&e);
                if matches!(e, AgentEvent::AgentEnd { .. }) {
                    break;
                }
            }
            t
        });
        let outcome = agent.prompt("Run the benchmark script.").await;
        (outcome, counter.await.unwrap_or_default())
    };
    let mut stats = RunStats {
        events: tally.events,
        text_deltas: tally.text_deltas,
        text_bytes: tally.text_bytes,
        failure: None,
    };
    let (tool_ok, tool_err) = (tally.tool_ok, tally.tool_err);
    let expected_deltas = (s.tokens * (s.tool_rounds + 1)) as u64;
    stats.failure = match outcome {
        Err(e) => Some(format!("the run failed to start or finish: {e}")),
        Ok(o) => {
            let last = o.messages.last().map(|m| m.text()).unwrap_or_default();
            if !o.end_reason.is_completed() {
                Some(format!("the run ended early: {}", o.end_reason.describe()))
            } else if last != s.expected_text {
                Some(format!(
                    "final text mismatch: got {:?}",
                    last.chars().rev().take(40).collect::<String>()
                ))
            } else if tool_ok != s.tool_rounds || tool_err != 0 {
                Some(format!(
                    "expected {} successful tool executions, saw {tool_ok} (and {tool_err} errors)",
                    s.tool_rounds
                ))
            } else if stats.text_bytes != streamed_text_bytes(&o.messages) {
                Some(format!(
                    "the text deltas carried {} bytes, the answers hold {}",
                    stats.text_bytes,
                    streamed_text_bytes(&o.messages)
                ))
            } else if stats.text_deltas != expected_deltas
                && !(s.merge_deltas && (1..expected_deltas).contains(&stats.text_deltas))
            {
                Some(format!(
                    "expected {expected_deltas} text deltas, the subscriber saw {}",
                    stats.text_deltas
                ))
            } else {
                None
            }
        }
    };
    stats
}

fn main() -> ExitCode {
    let s = match settings() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("loop_bench: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match s.runtime {
        Runtime::MultiThread(workers) => {
            let mut builder = tokio::runtime::Builder::new_multi_thread();
            builder.worker_threads(workers);
            builder
        }
        Runtime::CurrentThread => tokio::runtime::Builder::new_current_thread(),
    }
    .enable_all()
    .build();
    let rt = match runtime {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("loop_bench: cannot start the runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match s.runtime {
        // As the `makai` CLI runs its command: a task on a worker, which
        // drives the I/O driver itself (the main thread is no worker).
        Runtime::MultiThread(_) => rt.block_on(async move {
            tokio::spawn(bench(s)).await.unwrap_or_else(|e| {
                eprintln!("loop_bench: the bench's task ended: {e}");
                ExitCode::from(2)
            })
        }),
        Runtime::CurrentThread => rt.block_on(bench(s)),
    }
}

async fn bench(s: Settings) -> ExitCode {
    // Without MOCK_URL, serve the bench script from a child process.
    let mut _server = None;
    let base_url = match std::env::var("MOCK_URL") {
        Ok(url) => url,
        Err(_) => match server::start(s.tokens, s.tool_rounds, s.pacing) {
            Ok(child) => {
                let url = child.base_url.clone();
                _server = Some(child);
                url
            }
            Err(e) => {
                eprintln!("loop_bench: {e}");
                return ExitCode::from(2);
            }
        },
    };

    let model = Model::custom(s.api, "mock", "mock-model", base_url);
    let mut config = AgentLoopConfig::new(model, Arc::new(InProcessClient::new()));
    config.options.retry = RetryPolicy::none();
    match env_num("READ_INTERVAL_US", 0) {
        Ok(0) => {}
        Ok(us) => config.options.read_interval = Some(std::time::Duration::from_micros(us as u64)),
        Err(e) => {
            eprintln!("loop_bench: {e}");
            return ExitCode::from(2);
        }
    }
    config.options.merge_deltas = s.merge_deltas;
    if std::env::var("SNAPSHOTS").as_deref() == Ok("1") {
        config.partial_snapshots = true;
    }
    let echo = TypedTool::new(
        "echo",
        "Returns its text argument.",
        |a: EchoArgs, _ctx| async move { Ok(ToolOutput::text(a.text)) },
    )
    .read_only(true)
    .into_arc();
    let tools = ToolSet::new([echo]);

    let s = Arc::new(s);
    let started = Instant::now();
    let results: Vec<RunStats> = futures::stream::iter(0..s.runs)
        .map(|_| {
            let config = config.clone();
            let tools = tools.clone();
            let s = s.clone();
            async move { one_run(config, tools, &s).await }
        })
        .buffer_unordered(s.concurrency)
        .collect()
        .await;
    let wall = started.elapsed().as_secs_f64();

    let events: u64 = results.iter().map(|r| r.events).sum();
    let text_deltas: u64 = results.iter().map(|r| r.text_deltas).sum();
    let failures: Vec<&String> = results.iter().filter_map(|r| r.failure.as_ref()).collect();
    let verified = if failures.is_empty() { "ok" } else { "FAILED" };
    println!(
        "peer=makai api={} runs={} concurrency={} events={events} text_deltas={text_deltas} tool_rounds={} wall_s={wall:.3} verified={verified} runtime={}",
        s.api,
        s.runs,
        s.concurrency,
        s.tool_rounds,
        s.runtime.name()
    );
    if std::env::var_os("MOCK_URL").is_none() {
        match s.pacing {
            Pacing::Stream { delay_us } => {
                println!("server=child pacing=stream delay_us={delay_us}")
            }
            Pacing::Replay => println!("server=child pacing=replay"),
        }
    }
    if let Some(first) = failures.first() {
        eprintln!(
            "loop_bench: {} of {} runs failed verification; first: {first}",
            failures.len(),
            s.runs
        );
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
