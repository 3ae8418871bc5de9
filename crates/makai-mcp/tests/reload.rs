//! `McpManager::reload` (pi's `/reload` after the MCP configuration
//! changed): an unchanged server keeps running, an added one starts, a
//! changed one starts again with its new configuration, a removed one
//! stops.

use std::time::Duration;

use crate::common::*;
use makai_mcp::{McpManager, McpReload, ServerState};
use serde_json::json;

#[tokio::test]
async fn reload_keeps_unchanged_servers_and_starts_stops_and_restarts_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let m = McpManager::start(
        [
            ("kept".to_string(), testserver(&[])),
            ("changed".to_string(), testserver(&[])),
            ("removed".to_string(), testserver(&[])),
        ],
        fast_options(dir.path()),
    );
    for name in ["kept", "changed", "removed"] {
        m.wait_ready(name, Duration::from_secs(30)).await.unwrap();
    }
    let kept_echo = tool(&m, "mcp__kept__echo");
    let removed_echo = tool(&m, "mcp__removed__echo");
    let changed_echo = tool(&m, "mcp__changed__echo");

    let log = dir.path().join("changed.log");
    let reload = m.reload([
        ("kept".to_string(), testserver(&[])),
        (
            "changed".to_string(),
            testserver(&["--log", log.to_str().unwrap()]),
        ),
        ("added".to_string(), testserver(&[])),
    ]);
    assert_eq!(
        reload,
        McpReload {
            added: vec!["added".into()],
            changed: vec!["changed".into()],
            removed: vec!["removed".into()],
        }
    );
    // The unchanged server never stopped: its tools answer at once.
    assert_eq!(m.state("kept"), Some(ServerState::Ready));
    let out = call(&kept_echo, json!({"text": "still here"}))
        .await
        .unwrap();
    assert!(out.text_content().contains("still here"), "{out:?}");

    // The removed server is gone, and its process with it.
    assert_eq!(m.state("removed"), None);
    assert!(call(&removed_echo, json!({"text": "x"})).await.is_err());
    assert!(call(&changed_echo, json!({"text": "x"})).await.is_err());

    // The added and the changed one start (the changed one with its new
    // arguments: it writes the log it was given).
    m.wait_ready("added", Duration::from_secs(30))
        .await
        .unwrap();
    m.wait_ready("changed", Duration::from_secs(30))
        .await
        .unwrap();
    call(&tool(&m, "mcp__changed__echo"), json!({"text": "new"}))
        .await
        .unwrap();
    wait_log(&log, "call echo", 10).await;
    let mut names: Vec<String> = m
        .tools()
        .iter()
        .map(|t| t.name().to_string())
        .filter(|n| n.ends_with("__echo"))
        .collect();
    names.sort();
    assert_eq!(
        names,
        vec!["mcp__added__echo", "mcp__changed__echo", "mcp__kept__echo"]
    );
    let statuses: Vec<String> = m.status().iter().map(|s| s.name.clone()).collect();
    assert_eq!(statuses, vec!["kept", "changed", "added"]);

    // The same configuration again changes nothing.
    let again = m.reload([
        ("kept".to_string(), testserver(&[])),
        (
            "changed".to_string(),
            testserver(&["--log", log.to_str().unwrap()]),
        ),
        ("added".to_string(), testserver(&[])),
    ]);
    assert!(again.is_empty(), "{again:?}");
    m.shutdown().await;
}
