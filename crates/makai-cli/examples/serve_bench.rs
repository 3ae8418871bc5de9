//! `makai serve` and `makai --mode rpc` under streaming load: CPU per token
//! event and memory per session of the makai process alone.
//!
//! ```text
//! cargo build --profile release-lto -p makai-cli --bin makai
//! MAKAI_BIN=$CARGO_TARGET_DIR/release-lto/makai \
//!     cargo run --profile release-lto -p makai-cli --example serve_bench
//! ```
//!
//! A scripted server in this process streams every response as the bench
//! script does (makai-mockllm's `bench_responder`: `TOKENS` text deltas, one SSE
//! event per write, `DELAY_US` apart, default 200 at 1 ms). Then:
//!
//! - **serve**: one `makai serve` process; for each count in `SESSIONS`
//!   (default `50 500`), that many sessions stream `CALLS` model calls each
//!   (default 2) through the server at once, over at most 50 protocol
//!   connections (the server allows 64 per token; the protocol multiplexes
//!   streams). The server's resident memory is read once the connections are
//!   attached and idle. Printed: token events, the server's CPU time
//!   (user+sys from /proc) over the streaming, CPU per token event, token
//!   events per CPU-second, memory per idle attached connection, peak
//!   resident memory.
//! - **rpc**: `makai --mode rpc` with one session, `PROMPTS` prompts (default
//!   10) one after the other; the same figures for that process.
//!
//! `READ_INTERVAL_US` sets how often the model streams are read: the serve
//! clients' `StreamOptions::read_interval` (unset: as data arrives, the
//! library's default) and RPC mode's `streamReadIntervalMs` setting (unset:
//! the CLI's default, 16 ms).
//!
//! The clients and the scripted server run in this process, so the figures are
//! the makai process's own; Linux only (/proc).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures::StreamExt;
use makai_ai::{
    Api, AssistantMessageEvent, Context, Message, Model, ProtocolClient, StreamOptions, UserMessage,
};
use makai_mockllm::{BenchPacing, MockServer, Scenario, ServerOptions, bench_responder};
use makai_protocol::RemoteProtocolClient;

type Failure = Box<dyn std::error::Error>;

/// Connections the bench opens at most (the server's limit per token is 64).
const MAX_CONNECTIONS: usize = 50;

fn env_num(name: &str, default: u64) -> Result<u64, Failure> {
    match std::env::var(name) {
        Ok(v) => Ok(v
            .trim()
            .parse()
            .map_err(|_| format!("{name}={v:?} is not a whole number"))?),
        Err(_) => Ok(default),
    }
}

fn binary() -> Result<PathBuf, Failure> {
    if let Some(p) = std::env::var_os("MAKAI_BIN") {
        return Ok(PathBuf::from(p));
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    ["release-lto", "release"]
        .iter()
        .map(|p| target.join(p).join("makai"))
        .find(|p| p.is_file())
        .ok_or_else(|| "no release build of makai: build it or set MAKAI_BIN".into())
}

/// CPU seconds (user+sys) of process `pid` so far.
fn cpu_seconds(pid: u32) -> Result<f64, Failure> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Fields after the command name (which may hold spaces), from field 3 on.
    let rest = stat.rsplit_once(')').ok_or("unreadable /proc stat")?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields[11].parse::<f64>()? + fields[12].parse::<f64>()?;
    // USER_HZ, 100 on every Linux architecture makai builds for.
    Ok(ticks / 100.0)
}

/// A `VmRSS` / `VmHWM` line of process `pid`, in KiB.
fn memory_kib(pid: u32, field: &str) -> Result<u64, Failure> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .ok_or_else(|| format!("no {field} in /proc status"))?;
    Ok(line
        .split_whitespace()
        .nth(1)
        .ok_or("unreadable /proc status")?
        .parse()?)
}

/// `makai ARGS` with a private home, against the scripted server.
fn makai(bin: &Path, home: &Path, mock_v1: &str, args: &[&str]) -> Command {
    let mut c = Command::new(bin);
    c.args(args)
        .args([
            "--base-url",
            mock_v1,
            "--api",
            "openai-completions",
            "--model",
            "mock-model",
            "--no-session",
        ])
        .current_dir(home)
        .env("MAKAI_HOME", home)
        .env("MAKAI_AUTO_LOCAL", "0")
        .env("MAKAI_AUTO_TITLE", "0")
        .env("MAKAI_NO_BROWSER", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    c
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        // The bench is over either way; a child that already exited is fine.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn report(label: &str, events: u64, cpu: f64, wall: f64, extra: &str) {
    println!(
        "{label}: {events} token events in {wall:.2} s wall, {cpu:.2} CPU-s: {:.2} µs per token event, {:.0} token events per CPU-second; {extra}",
        cpu * 1e6 / events.max(1) as f64,
        events as f64 / cpu.max(1e-9)
    );
}

async fn serve(
    bin: &Path,
    home: &Path,
    mock_v1: &str,
    tokens: u64,
    read_interval: Option<Duration>,
) -> Result<(), Failure> {
    let token_file = home.join("serve-token");
    let token_arg = token_file.to_string_lossy().into_owned();
    let mut child = makai(
        bin,
        home,
        mock_v1,
        &["serve", "--port", "0", "--token-file", &token_arg],
    )
    .spawn()?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let child = Killed(child);
    let pid = child.0.id();
    let mut url = String::new();
    BufReader::new(stdout).read_line(&mut url)?;
    let url = url.trim().to_string();
    let token = std::fs::read_to_string(&token_file)?.trim().to_string();
    let model = Model::custom(Api::OpenAiCompletions, "mock", "mock-model", mock_v1);
    let context = Context {
        system_prompt: None,
        messages: vec![Message::User(UserMessage::text(
            "Run the benchmark script.",
        ))],
        tools: Vec::new(),
    };
    let calls = env_num("CALLS", 2)?;
    let sessions = std::env::var("SESSIONS").unwrap_or_else(|_| "50 500".into());
    for n in sessions.split_whitespace() {
        let n: usize = n.parse().map_err(|_| format!("SESSIONS: {n:?}"))?;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let before = memory_kib(pid, "VmRSS")?;
        // The server takes at most 64 connections per token: more sessions
        // share connections (the protocol multiplexes streams).
        let connections = n.min(MAX_CONNECTIONS);
        let mut clients = Vec::with_capacity(connections);
        for _ in 0..connections {
            clients.push(RemoteProtocolClient::connect(&url, &token).await?);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let attached = memory_kib(pid, "VmRSS")?;
        let per_session = (attached.saturating_sub(before)) as f64 / connections as f64;
        let cpu0 = cpu_seconds(pid)?;
        let started = Instant::now();
        let mut tasks = Vec::with_capacity(n);
        for i in 0..n {
            let client = clients[i % connections].clone();
            let (model, context) = (model.clone(), context.clone());
            tasks.push(tokio::spawn(async move {
                let mut deltas = 0u64;
                for _ in 0..calls {
                    let options = StreamOptions {
                        read_interval: read_interval.filter(|i| !i.is_zero()),
                        ..Default::default()
                    };
                    let mut s = client.stream(&model, &context, options).await;
                    while let Some(e) = s.next().await {
                        match e {
                            AssistantMessageEvent::TextDelta { .. } => deltas += 1,
                            AssistantMessageEvent::Error { error, .. } => {
                                return Err(error.error_message.unwrap_or_default());
                            }
                            _ => {}
                        }
                    }
                }
                Ok(deltas)
            }));
        }
        let mut events = 0;
        for t in tasks {
            events += t.await?.map_err(|e| format!("a stream failed: {e}"))?;
        }
        let wall = started.elapsed().as_secs_f64();
        let cpu = cpu_seconds(pid)? - cpu0;
        if events != n as u64 * calls * tokens {
            return Err(format!(
                "saw {events} text deltas, expected {}",
                n as u64 * calls * tokens
            )
            .into());
        }
        let peak = memory_kib(pid, "VmHWM")?;
        report(
            &format!("serve, {n} sessions over {connections} connections x {calls} calls"),
            events,
            cpu,
            wall,
            &format!(
                "{per_session:.1} KiB per idle attached connection, peak {:.1} MiB",
                peak as f64 / 1024.0
            ),
        );
        drop(clients);
    }
    Ok(())
}

fn rpc(bin: &Path, home: &Path, mock_v1: &str, tokens: u64) -> Result<(), Failure> {
    let mut child = makai(bin, home, mock_v1, &["--mode", "rpc", "--no-tools"]).spawn()?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let child = Killed(child);
    let pid = child.0.id();
    let mut lines = BufReader::new(stdout).lines();
    let prompts = env_num("PROMPTS", 10)?;
    let mut events = 0u64;
    let mut cpu0 = None;
    let started = Instant::now();
    for i in 0..prompts {
        writeln!(
            stdin,
            r#"{{"type":"prompt","message":"Run the benchmark script ({i})."}}"#
        )?;
        stdin.flush()?;
        // The first prompt's CPU includes start-up: measure from the second.
        if i == 1 {
            cpu0 = Some(cpu_seconds(pid)?);
        }
        loop {
            let line = lines.next().ok_or("makai --mode rpc ended")??;
            if i > 0 && line.contains(r#""type":"text_delta""#) {
                events += 1;
            }
            if line.starts_with(r#"{"type":"agent_end""#) {
                break;
            }
        }
    }
    let cpu = cpu_seconds(pid)? - cpu0.unwrap_or(0.0);
    if events != (prompts.saturating_sub(1)) * tokens {
        return Err(format!("rpc: saw {events} text deltas").into());
    }
    report(
        &format!("rpc, 1 session x {} prompts", prompts - 1),
        events,
        cpu,
        started.elapsed().as_secs_f64(),
        &format!(
            "resident {:.1} MiB, peak {:.1} MiB",
            memory_kib(pid, "VmRSS")? as f64 / 1024.0,
            memory_kib(pid, "VmHWM")? as f64 / 1024.0
        ),
    );
    Ok(())
}

fn main() -> Result<(), Failure> {
    let bin = binary()?;
    let tokens = env_num("TOKENS", 200)?;
    let delay = Duration::from_micros(env_num("DELAY_US", 1000)?);
    let home = tempfile::tempdir()?;
    let read_interval = match std::env::var("READ_INTERVAL_US") {
        Ok(_) => Some(Duration::from_micros(env_num("READ_INTERVAL_US", 0)?)),
        Err(_) => None,
    };
    if let Some(interval) = read_interval {
        std::fs::write(
            home.path().join("settings.json"),
            format!("{{\"streamReadIntervalMs\": {}}}", interval.as_millis()),
        )?;
    }
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async {
        let mock = MockServer::start_with(
            Scenario::new(),
            ServerOptions {
                record_requests: false,
                check_invariants_on_drop: false,
                ..Default::default()
            },
        )
        .await?;
        mock.set_responder(Some(bench_responder(
            tokens as usize,
            0,
            BenchPacing::Stream { delay },
        )));
        let v1 = mock.base_url_v1();
        println!(
            "makai: {}; {tokens} tokens per response, {} µs apart",
            bin.display(),
            delay.as_micros()
        );
        let mode = std::env::var("MODES").unwrap_or_else(|_| "serve rpc".into());
        if mode.contains("serve") {
            serve(&bin, home.path(), &v1, tokens, read_interval).await?;
        }
        if mode.contains("rpc") {
            let (bin, home, v1) = (bin.clone(), home.path().to_path_buf(), v1.clone());
            tokio::task::spawn_blocking(move || {
                rpc(&bin, &home, &v1, tokens).map_err(|e| e.to_string())
            })
            .await??;
        }
        Ok(())
    })
}
