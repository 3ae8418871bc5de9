//! Shared helpers for makai-mcp's tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use makai_agent::{Tool, ToolContext, ToolError, ToolOutput};
use makai_mcp::{McpEvent, McpManager, McpOptions, McpServerConfig, ServerState};
use serde_json::Value;

/// The test server binary built with this crate.
pub const TESTSERVER: &str = env!("CARGO_BIN_EXE_makai-mcp-testserver");

/// Options with short restart delays, for tests.
pub fn fast_options(dir: &Path) -> McpOptions {
    let mut o = McpOptions::new(dir);
    o.restart_backoff = Duration::from_millis(100);
    o.max_backoff = Duration::from_millis(400);
    o.max_restarts = 3;
    o
}

/// A config running the test server with these extra arguments.
pub fn testserver(args: &[&str]) -> McpServerConfig {
    McpServerConfig::stdio(TESTSERVER, args.iter().copied())
}

/// Starts one server called `name` and waits until it is ready.
pub async fn ready_manager(name: &str, config: McpServerConfig, dir: &Path) -> McpManager {
    let m = McpManager::start([(name.to_string(), config)], fast_options(dir));
    if let Err(state) = m.wait_ready(name, Duration::from_secs(30)).await {
        panic!("server {name} did not become ready: {state}");
    }
    m
}

/// The tool called `name` among the manager's ready tools.
pub fn tool(m: &McpManager, name: &str) -> Arc<dyn Tool> {
    m.tools()
        .into_iter()
        .find(|t| t.name() == name)
        .unwrap_or_else(|| {
            let names: Vec<String> = m.tools().iter().map(|t| t.name().to_string()).collect();
            panic!("no tool {name}; have {names:?}")
        })
}

/// Calls a tool directly with a detached context.
pub async fn call(t: &Arc<dyn Tool>, args: Value) -> Result<ToolOutput, ToolError> {
    let ctx = ToolContext::detached("call-1", std::env::temp_dir());
    tokio::time::timeout(Duration::from_secs(30), t.execute("call-1", args, ctx))
        .await
        .expect("the call finished in time")
}

/// Waits for an event matching `pred`, up to `secs` seconds.
pub async fn wait_event(
    rx: &mut tokio::sync::broadcast::Receiver<McpEvent>,
    secs: u64,
    pred: impl Fn(&McpEvent) -> bool,
) -> McpEvent {
    let fut = async {
        loop {
            match rx.recv().await {
                Ok(e) if pred(&e) => return e,
                Ok(_) => {}
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(e) => panic!("event channel closed: {e}"),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(secs), fut)
        .await
        .expect("the expected event came in time")
}

/// Waits until server `name` is in a state matching `pred`.
pub async fn wait_state(
    m: &McpManager,
    name: &str,
    secs: u64,
    pred: impl Fn(&ServerState) -> bool,
) -> ServerState {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        let st = m.state(name).expect("configured");
        if pred(&st) {
            return st;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("server {name} is still {st}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Reads a log file written by the test server (empty when missing).
pub fn read_log(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Waits until the log file contains `needle`.
pub async fn wait_log(path: &Path, needle: &str, secs: u64) -> String {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        let log = read_log(path);
        if log.contains(needle) {
            return log;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("log lacks {needle:?}: {log}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The folder holding the npm reference servers and the inspector, installed by
/// `scripts/setup-mcp-servers.sh` (once per test binary). `None`, with the
/// reason printed, when they cannot be had (no node/npm, no registry, or
/// `MAKAI_MCP_SKIP_NPM` set).
pub fn npm_servers() -> Option<PathBuf> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        if std::env::var_os("MAKAI_MCP_SKIP_NPM").is_some() {
            eprintln!("SKIP: MAKAI_MCP_SKIP_NPM is set; the npm MCP reference-server tests do not run");
            return None;
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/setup-mcp-servers.sh");
        let out = std::process::Command::new("bash").arg(&script).output();
        match out {
            Ok(o) if o.status.success() => {
                let dir = String::from_utf8_lossy(&o.stdout).trim().lines().last().unwrap_or("").to_string();
                Some(PathBuf::from(dir))
            }
            Ok(o) => {
                eprintln!(
                    "SKIP: the npm MCP reference servers are unavailable (setup-mcp-servers.sh exited {}): {}",
                    o.status,
                    String::from_utf8_lossy(&o.stderr).trim()
                );
                None
            }
            Err(e) => {
                eprintln!("SKIP: cannot run setup-mcp-servers.sh: {e}");
                None
            }
        }
    })
    .clone();
    // CI installs them first (`.ci/run`): there a missing server is a failure.
    assert!(
        dir.is_some() || std::env::var_os("CI").is_none(),
        "the npm MCP reference servers are required in CI"
    );
    dir
}

/// A config running an npm-installed server binary (`mcp-server-everything`, ...).
pub fn npm_server(dir: &Path, bin: &str, args: &[&str]) -> McpServerConfig {
    let script = dir.join("node_modules/.bin").join(bin);
    let mut all = vec![script.display().to_string()];
    all.extend(args.iter().map(|s| s.to_string()));
    McpServerConfig::stdio("node", all).with_startup_timeout(Duration::from_secs(60))
}
