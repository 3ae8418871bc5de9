//! `makai mcp serve` (makai's built-in tools over stdio), checked with makai's
//! own client and with an independent one: the official MCP inspector CLI.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::Path;
use std::process::Command;

use common::*;
use makai_agent::ToolError;
use serde_json::{Value, json};

fn builtin(dir: &Path, dry_run: bool) -> makai_mcp::McpServerConfig {
    let d = dir.display().to_string();
    let mut args = vec!["--builtin", d.as_str()];
    if dry_run {
        args.push("--dry-run");
    }
    testserver(&args)
}

#[tokio::test]
async fn makai_client_uses_makai_server() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "hello\nworld\n").unwrap();
    let m = ready_manager("makai", builtin(dir.path(), false), dir.path()).await;
    let mut names: Vec<String> = m.tools().iter().map(|t| t.name().to_string()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "mcp__makai__bash",
            "mcp__makai__edit",
            "mcp__makai__find",
            "mcp__makai__grep",
            "mcp__makai__ls",
            "mcp__makai__read",
            "mcp__makai__write"
        ]
    );
    let read = tool(&m, "mcp__makai__read");
    assert!(read.read_only());
    assert!(!tool(&m, "mcp__makai__write").read_only());
    assert_eq!(read.parameters()["required"], json!(["path"]));
    let out = call(&read, json!({"path": "a.txt"})).await.unwrap();
    assert!(
        out.text_content().contains("hello"),
        "{}",
        out.text_content()
    );
    // Confinement: the working directory only.
    let err = call(&read, json!({"path": "../../../../etc/hostname"}))
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::Output(_)), "{err:?}");
    assert!(
        err.to_string().contains("outside the working directory"),
        "{err}"
    );
    // Writing works (not dry-run), edits really happen.
    call(
        &tool(&m, "mcp__makai__write"),
        json!({"path": "b.txt", "content": "new"}),
    )
    .await
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("b.txt")).unwrap(),
        "new"
    );
    // Argument validation happens server-side too.
    let err = call(&read, json!({"path": 3}))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("Invalid arguments for 'read'"), "{err}");
    m.shutdown().await;
}

#[tokio::test]
async fn makai_server_honours_dry_run() {
    let dir = tempfile::tempdir().unwrap();
    let m = ready_manager("makai", builtin(dir.path(), true), dir.path()).await;
    let out = call(
        &tool(&m, "mcp__makai__write"),
        json!({"path": "c.txt", "content": "x"}),
    )
    .await
    .unwrap();
    assert!(
        out.text_content().contains("Dry run"),
        "{}",
        out.text_content()
    );
    assert!(!dir.path().join("c.txt").exists());
    let out = call(
        &tool(&m, "mcp__makai__bash"),
        json!({"command": "touch d.txt"}),
    )
    .await
    .unwrap();
    assert!(
        out.text_content().to_lowercase().contains("dry run"),
        "{}",
        out.text_content()
    );
    assert!(!dir.path().join("d.txt").exists());
    m.shutdown().await;
}

/// Runs the inspector CLI against the built-in tools server; the first JSON
/// value it prints.
fn inspect(npm: &Path, dir: &Path, dry_run: bool, method_args: &[&str]) -> Value {
    let inspector = npm.join("node_modules/.bin/mcp-inspector");
    let mut cmd = Command::new("node");
    cmd.arg(inspector)
        .arg("--cli")
        .arg(TESTSERVER)
        .arg("--builtin")
        .arg(dir);
    if dry_run {
        cmd.arg("--dry-run");
    }
    let out = cmd.args(method_args).output().expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut values = serde_json::Deserializer::from_str(&stdout).into_iter::<Value>();
    match values.next() {
        Some(Ok(v)) => v,
        _ => panic!(
            "the inspector printed no JSON (status {}): {stdout}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

#[test]
fn the_official_inspector_lists_and_calls_makai_tools() {
    let Some(npm) = npm_servers() else { return };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "hello from a file\n").unwrap();

    let list = inspect(&npm, dir.path(), false, &["--method", "tools/list"]);
    let tools = list["tools"].as_array().expect("a tools array");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(
        names,
        ["read", "write", "edit", "bash", "grep", "find", "ls"]
    );
    let read = &tools[0];
    assert_eq!(read["annotations"]["readOnlyHint"], true);
    assert_eq!(read["inputSchema"]["type"], "object");
    assert_eq!(tools[1]["annotations"]["readOnlyHint"], false);

    let r = inspect(
        &npm,
        dir.path(),
        false,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "read",
            "--tool-arg",
            "path=a.txt",
        ],
    );
    assert!(
        r["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("hello from a file"),
        "{r}"
    );
    assert!(r.get("isError").is_none_or(|v| v == false), "{r}");

    let r = inspect(
        &npm,
        dir.path(),
        false,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "read",
            "--tool-arg",
            "path=../outside.txt",
        ],
    );
    assert_eq!(r["isError"], true, "{r}");
    assert!(
        r["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("outside the working directory"),
        "{r}"
    );

    let r = inspect(
        &npm,
        dir.path(),
        true,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "write",
            "--tool-arg",
            "path=new.txt",
            "content=xyz",
        ],
    );
    assert!(
        r["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Dry run"),
        "{r}"
    );
    assert!(
        !dir.path().join("new.txt").exists(),
        "dry-run wrote nothing"
    );

    let r = inspect(
        &npm,
        dir.path(),
        false,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "write",
            "--tool-arg",
            "path=new.txt",
            "content=xyz",
        ],
    );
    assert!(r.get("isError").is_none_or(|v| v == false), "{r}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("new.txt")).unwrap(),
        "xyz"
    );
}
