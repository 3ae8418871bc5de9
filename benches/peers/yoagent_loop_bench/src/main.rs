//! The standard agent-loop workload (crates/makai-agent/examples/loop_bench) run
//! with yoagent, for side-by-side figures in one run (scripts/bench-peers.sh).
//!
//! ```text
//! MOCK_URL=http://127.0.0.1:18080/v1 API=openai-completions RUNS=200 CONCURRENCY=1 \
//!     target/release/yoagent-loop-bench
//! ```
//!
//! Same inputs, same checks and the same output line as the makai bench, with
//! peer=yoagent. Runs on Tokio's multi-thread runtime (`#[tokio::main]`, as
//! yoagent's examples do); each run is one `Agent` prompted once, its events
//! drained from the receiver `prompt` returns.

use std::process::ExitCode;
use std::time::Instant;

use yoagent::provider::ModelConfig;
use yoagent::types::{
    AgentEvent, AgentMessage, AgentTool, Content, Message, StreamDelta, ToolContext, ToolError,
    ToolResult,
};
use yoagent::Agent;

struct Echo;

#[async_trait::async_trait]
impl AgentTool for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn label(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "Returns its text argument."
    }
    fn parameters_schema(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "object",
            "properties": {"text": {"type": "string", "description": "The text to return."}},
            "required": ["text"]
        })
    }
    async fn execute(
        &self,
        params: serde_json::Value,
        _ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let text = params
            .get("text")
            .and_then(|t| t.as_str())
            .ok_or_else(|| ToolError::InvalidArgs("text is missing".into()))?;
        Ok(ToolResult {
            content: vec![Content::Text { text: text.to_string() }],
            details: serde_json::Value::Null,
        })
    }
}

fn env_num(name: &str, default: usize) -> Result<usize, String> {
    match std::env::var(name) {
        Ok(v) => v.trim().parse().map_err(|_| format!("{name}={v:?} is not a whole number")),
        Err(_) => Ok(default),
    }
}

struct Settings {
    url: String,
    api: String,
    runs: usize,
    concurrency: usize,
    tokens: usize,
    tool_rounds: usize,
    /// The final answer's text, built once (as pi's harness does).
    expected_text: String,
}

fn settings() -> Result<Settings, String> {
    let url = std::env::var("MOCK_URL")
        .map_err(|_| "set MOCK_URL to a server that follows the bench script".to_string())?;
    let api = std::env::var("API").unwrap_or_else(|_| "openai-completions".into());
    if api != "openai-completions" && api != "anthropic-messages" {
        return Err(format!("API={api} is not benchmarked"));
    }
    let s = Settings {
        url,
        api,
        runs: env_num("RUNS", 200)?,
        concurrency: env_num("CONCURRENCY", 1)?.max(1),
        tokens: env_num("TOKENS", 200)?,
        tool_rounds: env_num("TOOL_ROUNDS", 5)?,
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

fn model(s: &Settings) -> ModelConfig {
    if s.api == "anthropic-messages" {
        let mut m = ModelConfig::anthropic("mock-model", "mock-model");
        m.base_url = s.url.clone();
        m.cost = None;
        m
    } else {
        ModelConfig::local(s.url.clone(), "mock-model")
    }
}

#[derive(Default)]
struct RunStats {
    events: u64,
    text_deltas: u64,
    failure: Option<String>,
}

fn final_text(messages: &[AgentMessage]) -> String {
    messages
        .iter()
        .rev()
        .find_map(|m| match m {
            AgentMessage::Llm(Message::Assistant { content, .. }) => Some(
                content
                    .iter()
                    .filter_map(|c| match c {
                        Content::Text { text } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect::<String>(),
            ),
            _ => None,
        })
        .unwrap_or_default()
}

async fn one_run(s: &Settings) -> RunStats {
    let mut agent = Agent::from_config(model(s))
        .with_api_key("bench-key")
        .with_tools(vec![Box::new(Echo)]);
    let mut rx = agent.prompt("Run the benchmark script.").await;
    let mut stats = RunStats::default();
    let (mut tool_ok, mut tool_err) = (0usize, 0usize);
    let mut text = None;
    while let Some(e) = rx.recv().await {
        stats.events += 1;
        match e {
            // yoagent turns the first chunk's empty `content` (the role chunk)
            // into an empty text delta; the other peers send none for it.
            AgentEvent::MessageUpdate { delta: StreamDelta::Text { delta }, .. }
                if !delta.is_empty() =>
            {
                stats.text_deltas += 1
            }
            AgentEvent::ToolExecutionEnd { is_error, .. } => {
                if is_error {
                    tool_err += 1
                } else {
                    tool_ok += 1
                }
            }
            AgentEvent::AgentEnd { messages, .. } => text = Some(final_text(&messages)),
            _ => {}
        }
    }
    let expected_deltas = (s.tokens * (s.tool_rounds + 1)) as u64;
    stats.failure = match text {
        None => Some("no agent_end event".into()),
        Some(t) if t != s.expected_text => Some(format!(
            "final text mismatch: ...{}",
            t.chars().rev().take(40).collect::<String>()
        )),
        Some(_) if tool_ok != s.tool_rounds || tool_err != 0 => Some(format!(
            "tool executions: {tool_ok} ok, {tool_err} errors"
        )),
        Some(_) if stats.text_deltas != expected_deltas => {
            Some(format!("saw {} text deltas", stats.text_deltas))
        }
        Some(_) => None,
    };
    agent.finish().await;
    stats
}

#[tokio::main]
async fn main() -> ExitCode {
    let s = match settings() {
        Ok(s) => std::sync::Arc::new(s),
        Err(e) => {
            eprintln!("yoagent_loop_bench: {e}");
            return ExitCode::from(2);
        }
    };
    let started = Instant::now();
    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut workers = Vec::new();
    for _ in 0..s.concurrency.min(s.runs) {
        let (s, next) = (s.clone(), next.clone());
        workers.push(tokio::spawn(async move {
            let mut out = Vec::new();
            while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < s.runs {
                out.push(one_run(&s).await);
            }
            out
        }));
    }
    let mut results = Vec::new();
    for w in workers {
        match w.await {
            Ok(r) => results.extend(r),
            Err(e) => {
                eprintln!("yoagent_loop_bench: a worker failed: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let wall = started.elapsed().as_secs_f64();
    let events: u64 = results.iter().map(|r| r.events).sum();
    let deltas: u64 = results.iter().map(|r| r.text_deltas).sum();
    let failures: Vec<&String> = results.iter().filter_map(|r| r.failure.as_ref()).collect();
    println!(
        "peer=yoagent api={} runs={} concurrency={} events={events} text_deltas={deltas} tool_rounds={} wall_s={wall:.3} verified={}",
        s.api,
        s.runs,
        s.concurrency,
        s.tool_rounds,
        if failures.is_empty() { "ok" } else { "FAILED" }
    );
    if let Some(first) = failures.first() {
        eprintln!(
            "yoagent_loop_bench: {} of {} runs failed; first: {first}",
            failures.len(),
            s.runs
        );
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
