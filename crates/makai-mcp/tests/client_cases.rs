//! The client against the repository's test MCP server (a real child process):
//! naming, schemas, results, errors, images, list_changed, timeouts,
//! cancellation, crashes and restarts, start-up failures, environment.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use makai_agent::{ToolContext, ToolError, ToolSet};
use makai_ai::UserContent;
use makai_mcp::{McpEvent, McpManager, McpServerConfig, ServerState, naming::is_valid_tool_name};
use serde_json::{Value, json};

#[tokio::test]
async fn tools_are_named_described_and_flagged() {
    let dir = tempfile::tempdir().unwrap();
    let m = ready_manager("t", testserver(&[]), dir.path()).await;
    let tools = m.tools();
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    for expected in [
        "mcp__t__echo",
        "mcp__t__add",
        "mcp__t__fail",
        "mcp__t__image",
        "mcp__t__hang",
        "mcp__t__has_dots_in_name",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    assert!(names.iter().all(|n| is_valid_tool_name(n)), "{names:?}");
    let echo = tool(&m, "mcp__t__echo");
    assert!(echo.read_only(), "readOnlyHint maps to read_only");
    assert!(!tool(&m, "mcp__t__fail").read_only());
    assert_eq!(echo.label(), "Echo");
    assert_eq!(echo.description(), "Returns its text.");
    assert_eq!(echo.parameters()["required"], json!(["text"]));
    // A schema without "type" gets "type": "object" (providers require it).
    assert_eq!(
        tool(&m, "mcp__t__has_dots_in_name").parameters()["type"],
        "object"
    );
    // The agent's tool set accepts every schema.
    let set = ToolSet::new(tools.clone());
    assert!(set.validate("mcp__t__echo", &json!({"text": "x"})).is_ok());
    assert!(set.validate("mcp__t__echo", &json!({})).is_err());
    let status = &m.status()[0];
    assert_eq!(status.state, ServerState::Ready);
    assert_eq!(
        status.server_info.as_deref(),
        Some("makai-mcp-testserver 1.0.0")
    );
    assert_eq!(status.tools.len(), tools.len());
    m.shutdown().await;
    assert_eq!(m.state("t"), Some(ServerState::Stopped));
    assert!(m.tools().is_empty());
}

#[tokio::test]
async fn results_map_text_structured_errors_and_images() {
    let dir = tempfile::tempdir().unwrap();
    let m = ready_manager("t", testserver(&[]), dir.path()).await;
    let out = call(&tool(&m, "mcp__t__echo"), json!({"text": "hi"}))
        .await
        .unwrap();
    assert_eq!(out.text_content(), "echo: hi");
    assert_eq!(out.details["server"], "t");
    assert_eq!(out.details["tool"], "echo");

    let out = call(&tool(&m, "mcp__t__add"), json!({"a": 2, "b": 3.5}))
        .await
        .unwrap();
    assert_eq!(out.details["structuredContent"], json!({"sum": 5.5}));
    let v: Value = serde_json::from_str(&out.text_content()).unwrap();
    assert_eq!(
        v,
        json!({"sum": 5.5}),
        "structured content reaches the model as JSON text"
    );

    match call(&tool(&m, "mcp__t__fail"), json!({})).await {
        Err(ToolError::Output(o)) => {
            assert_eq!(o.text_content(), "the operation failed on purpose");
            assert_eq!(o.details["isError"], true);
        }
        other => panic!("isError must become an error result: {other:?}"),
    }

    let out = call(&tool(&m, "mcp__t__image"), json!({})).await.unwrap();
    assert_eq!(out.content.len(), 2);
    match &out.content[1] {
        UserContent::Image(i) => {
            assert_eq!(i.mime_type, "image/png");
            assert!(i.data.starts_with("iVBORw0KGgo"));
        }
        other => panic!("expected an image, got {other:?}"),
    }
    assert_eq!(
        call(&tool(&m, "mcp__t__has_dots_in_name"), json!({}))
            .await
            .unwrap()
            .text_content(),
        "sanitized"
    );
    m.shutdown().await;
}

#[tokio::test]
async fn list_changed_updates_the_tools() {
    let dir = tempfile::tempdir().unwrap();
    let m = ready_manager("t", testserver(&[]), dir.path()).await;
    let mut rx = m.subscribe();
    assert!(m.tools().iter().all(|t| t.name() != "mcp__t__late"));
    let out = call(&tool(&m, "mcp__t__add_tool"), json!({"name": "late"}))
        .await
        .unwrap();
    assert_eq!(out.text_content(), "added late");
    let ev = wait_event(&mut rx, 10, |e| matches!(e, McpEvent::ToolsChanged { tools, .. } if tools.iter().any(|t| t == "mcp__t__late"))).await;
    assert_eq!(ev.server(), "t");
    let late = tool(&m, "mcp__t__late");
    assert_eq!(
        call(&late, json!({})).await.unwrap().text_content(),
        "late ran"
    );
    m.shutdown().await;
}

#[tokio::test]
async fn a_call_over_its_timeout_is_cancelled_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.txt");
    let cfg =
        testserver(&["--log", log.to_str().unwrap()]).with_timeout(Duration::from_millis(500));
    let m = ready_manager("t", cfg, dir.path()).await;
    let started = Instant::now();
    let err = call(&tool(&m, "mcp__t__hang"), json!({}))
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(450) && took < Duration::from_secs(5),
        "{took:?}"
    );
    let text = err.to_string();
    assert!(text.contains("did not finish within 0.5s"), "{text}");
    assert!(text.contains("\"timeout\""), "says how to fix: {text}");
    // The server got `notifications/cancelled` with the reason, and its handler saw it.
    wait_log(&log, "cancelled: timed out after 0.5s", 10).await;
    wait_log(&log, "hang saw its request cancelled", 10).await;
    // The server is still usable.
    assert_eq!(
        call(&tool(&m, "mcp__t__echo"), json!({"text": "x"}))
            .await
            .unwrap()
            .text_content(),
        "echo: x"
    );
    m.shutdown().await;
}

#[tokio::test]
async fn aborting_sends_mcp_cancellation() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.txt");
    let m = ready_manager(
        "t",
        testserver(&["--log", log.to_str().unwrap()]),
        dir.path(),
    )
    .await;
    let hang = tool(&m, "mcp__t__hang");
    let ctx = ToolContext::detached("c1", dir.path());
    let cancel = ctx.cancel_token().clone();
    let task = tokio::spawn(async move { hang.execute("c1", json!({}), ctx).await });
    wait_log(&log, "call hang", 10).await;
    cancel.cancel();
    let result = tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(result, Err(ToolError::Cancelled)), "{result:?}");
    // The server got `notifications/cancelled` with the reason, and its handler saw it.
    wait_log(&log, "cancelled: the user aborted the run", 10).await;
    wait_log(&log, "hang saw its request cancelled", 10).await;
    m.shutdown().await;
}

#[tokio::test]
async fn a_crash_mid_call_is_an_error_result_and_the_server_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = fast_options(dir.path());
    // A long first backoff so calls made while it restarts can be observed.
    opts.restart_backoff = Duration::from_millis(1500);
    let m = McpManager::start([("t".to_string(), testserver(&[]))], opts);
    m.wait_ready("t", Duration::from_secs(30)).await.unwrap();
    let mut rx = m.subscribe();
    let echo = tool(&m, "mcp__t__echo");
    let err = call(&tool(&m, "mcp__t__crash"), json!({}))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("MCP server 't' stopped answering while running 'crash'"),
        "{err}"
    );
    assert!(
        err.contains("restarts or reconnects it automatically"),
        "{err}"
    );
    let ev = wait_event(&mut rx, 10, |e| {
        matches!(
            e,
            McpEvent::StateChanged {
                state: ServerState::Restarting { .. },
                ..
            }
        )
    })
    .await;
    let McpEvent::StateChanged {
        state: ServerState::Restarting { attempt, reason },
        ..
    } = ev
    else {
        unreachable!()
    };
    assert_eq!(attempt, 1);
    assert!(
        reason.contains("simulated crash"),
        "the reason carries the server's stderr: {reason}"
    );
    assert!(m.tools().is_empty(), "a restarting server offers no tools");
    // A tool kept from before gets a clear error while the server is down.
    let err = call(&echo, json!({"text": "x"}))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("MCP server 't' is restarting (attempt 1)"),
        "{err}"
    );
    // It comes back, and the same tool object works again.
    m.wait_ready("t", Duration::from_secs(30)).await.unwrap();
    assert_eq!(
        call(&echo, json!({"text": "back"}))
            .await
            .unwrap()
            .text_content(),
        "echo: back"
    );
    m.shutdown().await;
}

#[tokio::test]
async fn a_server_dying_again_and_again_is_given_up() {
    let dir = tempfile::tempdir().unwrap();
    let m = McpManager::start(
        [("t".to_string(), testserver(&["--crash-after-ms", "300"]))],
        fast_options(dir.path()),
    );
    let st = wait_state(&m, "t", 30, |s| matches!(s, ServerState::Failed { .. })).await;
    let text = st.to_string();
    assert!(text.contains("gave up after 3 restarts"), "{text}");
    assert!(text.contains("crashing after 300 ms"), "{text}");
}

#[tokio::test]
async fn start_up_never_blocks_and_slow_or_broken_servers_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let m = McpManager::start(
        [
            (
                "slow".to_string(),
                testserver(&["--start-delay-ms", "2500"]),
            ),
            ("fast".to_string(), testserver(&[])),
            ("broken".to_string(), testserver(&["--exit-at-start", "3"])),
            (
                "missing".to_string(),
                McpServerConfig::stdio("/nonexistent/mcp-server", ["x"]),
            ),
            (
                "late".to_string(),
                testserver(&["--start-delay-ms", "5000"])
                    .with_startup_timeout(Duration::from_millis(400)),
            ),
            ("off".to_string(), testserver(&[]).with_enabled(false)),
            (
                "nocwd".to_string(),
                testserver(&[]).with_cwd("/nonexistent/dir"),
            ),
        ],
        fast_options(dir.path()),
    );
    assert!(
        started.elapsed() < Duration::from_millis(200),
        "start returns at once"
    );
    assert!(m.tools().is_empty());
    m.wait_ready("fast", Duration::from_secs(20)).await.unwrap();
    // The fast server's tools are there while the slow one still starts.
    assert_eq!(m.state("slow"), Some(ServerState::Starting));
    assert!(
        m.tools()
            .iter()
            .all(|t| t.name().starts_with("mcp__fast__"))
    );
    assert!(!m.tools().is_empty());
    assert!(m.wait_settled(Duration::from_secs(20)).await);
    assert_eq!(m.state("slow"), Some(ServerState::Ready));
    let reason = |n: &str| match m.state(n) {
        Some(ServerState::Failed { reason }) => reason,
        other => panic!("{n}: {other:?}"),
    };
    assert!(
        reason("broken").contains("refusing to start (exit code 3)"),
        "{}",
        reason("broken")
    );
    assert!(
        reason("missing").contains("cannot start `/nonexistent/mcp-server x`"),
        "{}",
        reason("missing")
    );
    assert!(
        reason("late").contains("did not finish starting within 0.4s"),
        "{}",
        reason("late")
    );
    assert!(reason("late").contains("startupTimeout"));
    assert_eq!(m.state("off"), Some(ServerState::Disabled));
    assert!(
        reason("nocwd").contains("working directory /nonexistent/dir does not exist"),
        "{}",
        reason("nocwd")
    );
    let names: Vec<String> = m.tools().iter().map(|t| t.name().to_string()).collect();
    assert!(
        names.iter().any(|n| n.starts_with("mcp__slow__"))
            && names.iter().any(|n| n.starts_with("mcp__fast__"))
    );
    assert!(
        !names
            .iter()
            .any(|n| n.starts_with("mcp__broken__") || n.starts_with("off__"))
    );
    // A failed server can be retried on demand.
    assert!(m.retry("broken"));
    assert!(!m.retry("fast"), "a ready server is not restarted");
    wait_state(&m, "broken", 20, |s| {
        matches!(s, ServerState::Failed { .. })
    })
    .await;
    m.shutdown().await;
}

#[tokio::test]
async fn the_child_environment_holds_no_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = fast_options(dir.path());
    opts.parent_env = Arc::new(|k: &str| match k {
        "OPENAI_API_KEY" => Some("sk-must-not-leak".to_string()),
        "ANTHROPIC_API_KEY" => Some("sk-ant-must-not-leak".to_string()),
        "PASS_ME" => Some("chosen".to_string()),
        other => std::env::var(other).ok(),
    });
    let cfg = testserver(&[])
        .with_env("GIVEN", "1")
        .with_env("FROM_PARENT", "${PASS_ME}");
    let m = McpManager::start([("t".to_string(), cfg)], opts);
    m.wait_ready("t", Duration::from_secs(30)).await.unwrap();
    let out = call(&tool(&m, "mcp__t__env"), json!({})).await.unwrap();
    let env: serde_json::Map<String, Value> = serde_json::from_str(&out.text_content()).unwrap();
    assert_eq!(env.get("GIVEN"), Some(&json!("1")));
    assert_eq!(env.get("FROM_PARENT"), Some(&json!("chosen")));
    assert!(env.contains_key("PATH"));
    for secret in ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "PASS_ME"] {
        assert!(!env.contains_key(secret), "{secret} leaked");
    }
    assert!(!out.text_content().contains("must-not-leak"));
    // Nor does the rest of this process's environment (cargo sets these for tests).
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    assert!(!env.contains_key("CARGO_MANIFEST_DIR"), "{env:?}");
    assert!(
        env.keys()
            .all(|k| makai_mcp::env::SAFE_VARS.contains(&k.as_str())
                || k == "GIVEN"
                || k == "FROM_PARENT"),
        "{env:?}"
    );
    m.shutdown().await;
}

#[test]
fn starting_outside_a_runtime_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let m = McpManager::start(
        [("t".to_string(), testserver(&[]))],
        fast_options(dir.path()),
    );
    match m.state("t") {
        Some(ServerState::Failed { reason }) => {
            assert!(reason.contains("async runtime"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    assert!(m.tools().is_empty());
}
