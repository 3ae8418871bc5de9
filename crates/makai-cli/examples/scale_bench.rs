//! Scale-out benchmark: `makai serve` with the embedded JSONL store against
//! PostgreSQL on one instance and on three, on the agent-loop workload of
//! `scripts/bench-peers.sh` (each run: 6 responses x `TOKENS` tokens, 5 tool
//! rounds) at concurrency 1 and 50.
//!
//! ```text
//! cargo build --release -p makai-cli
//! eval "$(scripts/pg-test.sh start --durable)"
//! MAKAI_BENCH_PG="$MAKAI_TEST_PG" cargo run --release -p makai-cli --example scale_bench
//! ```
//!
//! Prints, per configuration: CPU seconds (user + sys) of the makai server
//! processes per run, and their resident memory per idle attached session
//! (after `IDLE`, default 40, more clients each opened a session and
//! subscribed; a server takes 64 connections per token). The
//! binary is `$MAKAI_BIN`, else `target/release/makai`. `RUNS` (default 100)
//! runs per configuration. The embedded server serves one session, so its
//! concurrency-50 figures are 50 processes of one session each.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures::StreamExt;
use makai_mockllm::{BenchPacing, MockServer, Scenario, ServerOptions, bench_responder};
use makai_protocol::RemoteProtocolClient;
use serde_json::{Value, json};

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn binary() -> PathBuf {
    if let Some(p) = std::env::var_os("MAKAI_BIN") {
        return PathBuf::from(p);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    target.join("release").join("makai")
}

struct Instance {
    child: Child,
    url: String,
}

impl Drop for Instance {
    fn drop(&mut self) {
        if let Err(e) = self.child.kill() {
            eprintln!("cannot stop a server: {e}");
        }
        if let Err(e) = self.child.wait() {
            eprintln!("cannot reap a server: {e}");
        }
    }
}

fn start(bin: &Path, home: &Path, mock: &str, store: Option<&str>, name: &str) -> Instance {
    let mut cmd = Command::new(bin);
    cmd.current_dir(home)
        .env("MAKAI_HOME", home)
        .env("MAKAI_AUTO_TITLE", "0")
        .env("MAKAI_AUTO_LOCAL", "0")
        .args(["serve", "--port", "0", "--token-file"])
        .arg(home.join("token"))
        .args([
            "--base-url",
            mock,
            "--api",
            "openai-completions",
            "--model",
            "mock",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(url) = store {
        cmd.args(["--store", url, "--instance", name]);
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => panic!("cannot start {}: {e}", bin.display()),
    };
    let Some(stdout) = child.stdout.take() else {
        panic!("no stdout")
    };
    let mut line = String::new();
    if BufReader::new(stdout).read_line(&mut line).is_err() || line.trim().is_empty() {
        panic!("makai serve did not start");
    }
    Instance {
        child,
        url: line.trim().to_string(),
    }
}

/// User + system CPU seconds of a process so far.
fn cpu(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // USER_HZ: what /proc counts CPU time in.
    let hz = Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .trim()
                .parse::<f64>()
                .ok()
        })
        .unwrap_or(100.0);
    (ticks(11) + ticks(12)) / hz
}

/// Resident memory of a process, in KiB.
fn rss(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0)
}

async fn call(client: &RemoteProtocolClient, command: Value) -> Value {
    match client.rpc(&command).await {
        Ok(r) => r.decode().unwrap_or(Value::Null),
        Err(e) => panic!("{command}: {e}"),
    }
}

/// One client: `runs` prompts in its session, each until `agent_settled`.
async fn client(url: String, token: String, runs: usize) {
    let client = match RemoteProtocolClient::connect(&url, &token).await {
        Ok(c) => c,
        Err(e) => panic!("cannot connect to {url}: {e}"),
    };
    let mut events = match client.subscribe().await {
        Ok(e) => e,
        Err(e) => panic!("cannot subscribe: {e}"),
    };
    for i in 0..runs {
        let r = call(
            &client,
            json!({"type": "prompt", "message": format!("run {i}")}),
        )
        .await;
        assert_eq!(r["success"], true, "{r}");
        loop {
            let Some(Ok(ev)) = events.next().await else {
                panic!("the event stream ended")
            };
            if ev
                .decode::<Value>()
                .is_ok_and(|v| v["type"] == "agent_settled")
            {
                break;
            }
        }
    }
}

fn main() {
    let runs = env_or("RUNS", 100);
    // A server takes 64 connections per token by default.
    let idle = env_or("IDLE", 40);
    let tokens = env_or("TOKENS", 200);
    let bin = binary();
    if !bin.is_file() {
        eprintln!(
            "no makai binary at {}: cargo build --release -p makai-cli, or set MAKAI_BIN",
            bin.display()
        );
        std::process::exit(1);
    }
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => panic!("{e}"),
    };
    let options = ServerOptions {
        record_requests: false,
        check_invariants_on_drop: false,
        ..ServerOptions::default()
    };
    let mock = match rt.block_on(MockServer::start_with(
        // Each response in one write, as before the bench script could stream.
        Scenario::from_responder(bench_responder(tokens, 5, BenchPacing::Replay)),
        options,
    )) {
        Ok(m) => m,
        Err(e) => panic!("{e}"),
    };
    let mock_url = mock.base_url_v1();
    let _server;
    let pg = match std::env::var("MAKAI_BENCH_PG") {
        Ok(url) => url,
        Err(_) => {
            eprintln!("MAKAI_BENCH_PG is not set: starting a throwaway server (fsync off)");
            let server = match makai_store_pg::testing::TestServer::start_private() {
                Ok(s) => s,
                Err(e) => panic!("{e}"),
            };
            let url = server.admin_url().to_string();
            _server = server;
            url
        }
    };
    println!(
        "{:<22} {:>5} {:>12} {:>12} {:>18}",
        "store", "conc", "cpu_ms/run", "runs/s", "KiB/idle session"
    );
    for (label, store, instances) in [
        ("jsonl (embedded)", None, 0usize),
        ("postgres, 1 instance", Some(pg.as_str()), 1),
        ("postgres, 3 instances", Some(pg.as_str()), 3),
    ] {
        for conc in [1usize, 50] {
            let home = match tempfile::tempdir() {
                Ok(h) => h,
                Err(e) => panic!("{e}"),
            };
            // The embedded server runs one session: one process per client.
            let count = if store.is_none() { conc } else { instances };
            let servers: Vec<Instance> = (0..count)
                .map(|i| start(&bin, home.path(), &mock_url, store, &format!("i{i}")))
                .collect();
            let token = std::fs::read_to_string(home.path().join("token"))
                .unwrap_or_default()
                .trim()
                .to_string();
            let pids: Vec<u32> = servers.iter().map(|s| s.child.id()).collect();
            let before: f64 = pids.iter().map(|p| cpu(*p)).sum();
            let started = Instant::now();
            rt.block_on(async {
                let tasks: Vec<_> = (0..conc)
                    .map(|c| {
                        let url = servers[c % servers.len()].url.clone();
                        tokio::spawn(client(url, token.clone(), runs / conc))
                    })
                    .collect();
                for t in tasks {
                    if let Err(e) = t.await {
                        panic!("a client failed: {e}");
                    }
                }
            });
            let wall = started.elapsed();
            let done = (runs / conc) * conc;
            let used: f64 = pids.iter().map(|p| cpu(*p)).sum::<f64>() - before;
            // Idle sessions attached to one server (stateless servers only).
            let per_idle = if store.is_some() {
                let pid = pids[0];
                let base = rss(pid);
                let url = servers[0].url.clone();
                let clients = rt.block_on(async {
                    let mut kept = Vec::new();
                    for _ in 0..idle {
                        let c = match RemoteProtocolClient::connect(&url, &token).await {
                            Ok(c) => c,
                            Err(e) => panic!("cannot connect: {e}"),
                        };
                        let events = c.subscribe().await;
                        call(&c, json!({"type": "get_state"})).await;
                        kept.push((c, events));
                    }
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    kept
                });
                let per = (rss(pid) - base) / idle as f64;
                drop(clients);
                format!("{per:.0}")
            } else {
                "-".into()
            };
            println!(
                "{:<22} {:>5} {:>12.1} {:>12.1} {:>18}",
                label,
                conc,
                used * 1000.0 / done as f64,
                done as f64 / wall.as_secs_f64(),
                per_idle
            );
        }
    }
}
