//! A stdio MCP server runs under the sandbox: it cannot read a denied path;
//! its own `sandbox` entry changes the policy for it alone.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::{TESTSERVER, call, fast_options, tool};
use makai_agent::ToolError;
use makai_mcp::{McpManager, McpServerConfig, ServerSandbox};
use makai_sandbox::{Policy, SandboxConfig};
use serde_json::json;

struct Fixture {
    _root: tempfile::TempDir,
    work: std::path::PathBuf,
    key: std::path::PathBuf,
    config: SandboxConfig,
}

fn fixture() -> Fixture {
    let root = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(root.path()).unwrap();
    let work = base.join("work");
    let home = base.join("home");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    let key = home.join(".ssh/id_rsa");
    std::fs::write(&key, "PRIVATE-KEY").unwrap();
    std::fs::write(work.join("notes.txt"), "notes").unwrap();
    let config = SandboxConfig::new(Policy::WorkspaceWrite)
        .with_deny_read(SandboxConfig::default_deny_read(Some(&home), None));
    Fixture {
        _root: root,
        work,
        key,
        config,
    }
}

async fn start(f: &Fixture, server: McpServerConfig) -> McpManager {
    let mut opts = fast_options(&f.work);
    opts.sandbox = Some(f.config.clone());
    let m = McpManager::start([("s".to_string(), server)], opts);
    if let Err(state) = m.wait_ready("s", Duration::from_secs(30)).await {
        panic!("server did not become ready: {state}");
    }
    m
}

#[tokio::test]
async fn stdio_server_under_the_policy_cannot_read_a_denied_path() {
    let f = fixture();
    let m = start(&f, McpServerConfig::stdio(TESTSERVER, Vec::<String>::new())).await;
    let read = tool(&m, "mcp__s__read_file");
    let out = match call(&read, json!({"path": f.key.display().to_string()})).await {
        Err(ToolError::Output(o)) => o,
        other => panic!("reading the key must fail: {other:?}"),
    };
    let text = format!("{:?}", out.content);
    assert!(text.contains("Permission denied"), "{text}");
    assert!(!text.contains("PRIVATE-KEY"));
    let out = call(
        &read,
        json!({"path": f.work.join("notes.txt").display().to_string()}),
    )
    .await
    .unwrap();
    assert!(format!("{:?}", out.content).contains("notes"));
    m.shutdown().await;
}

#[tokio::test]
async fn a_server_entry_can_choose_its_own_policy() {
    let f = fixture();
    let server =
        McpServerConfig::stdio(TESTSERVER, Vec::<String>::new()).with_sandbox(ServerSandbox {
            policy: Some(Policy::FullAccess),
            ..Default::default()
        });
    let m = start(&f, server).await;
    let read = tool(&m, "mcp__s__read_file");
    let out = call(&read, json!({"path": f.key.display().to_string()}))
        .await
        .unwrap();
    assert!(format!("{:?}", out.content).contains("PRIVATE-KEY"));
    m.shutdown().await;
}

#[tokio::test]
async fn a_confined_server_that_fails_to_start_names_the_sandbox() {
    let f = fixture();
    let mut opts = fast_options(&f.work);
    opts.sandbox = Some(f.config.clone());
    let server = McpServerConfig::stdio("sh", ["-c", "echo cannot write the cache >&2; exit 3"]);
    let m = McpManager::start([("s".to_string(), server)], opts);
    let state = m
        .wait_ready("s", Duration::from_secs(30))
        .await
        .expect_err("the server exits at once");
    let text = state.to_string();
    assert!(text.contains("workspace-write sandbox"), "{text}");
    assert!(text.contains("writableRoots"), "{text}");
    m.shutdown().await;
}
