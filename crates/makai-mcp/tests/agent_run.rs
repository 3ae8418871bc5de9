//! Agent runs through the scripted LLM server (makai-mockllm over real HTTP)
//! that call MCP tools: the repository's test server, and the official
//! reference servers from npm (`server-everything`, `server-filesystem`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use makai_agent::makai_ai::{Api, Model, RetryPolicy};
use makai_agent::{
    AgentContext, AgentEvent, AgentLoopConfig, AgentRun, CancellationToken, EndReason,
    InProcessClient, RunOutcome, ToolSet, agent_loop,
};
use makai_ai::UserContent;
use makai_mcp::McpManager;
use makai_mockllm::{MockServer, Scenario, ScriptedResponse as Mock};

async fn llm(responses: Vec<Mock>) -> MockServer {
    MockServer::start(Scenario::new().extend(responses))
        .await
        .expect("mock server starts")
}

fn config(server: &MockServer) -> AgentLoopConfig {
    let model = Model::custom(
        Api::OpenAiCompletions,
        "mock",
        "mock-model",
        server.base_url_v1(),
    );
    let mut cfg = AgentLoopConfig::new(model, Arc::new(InProcessClient::new()));
    cfg.options.retry = RetryPolicy::none();
    cfg
}

fn context(m: &McpManager) -> AgentContext {
    AgentContext::new("You are a test.").with_tools(ToolSet::new(m.tools()))
}

async fn collect(run: AgentRun) -> (Vec<AgentEvent>, RunOutcome) {
    tokio::time::timeout(Duration::from_secs(60), run.collect())
        .await
        .expect("the run finished in time")
        .expect("the loop task did not fail")
}

/// The events of a run prompted "go" with the manager's tools, which must
/// complete.
async fn completed_run(m: &McpManager, server: &MockServer) -> Vec<AgentEvent> {
    let run = agent_loop(
        vec!["go".into()],
        context(m),
        config(server),
        CancellationToken::new(),
    );
    let (events, outcome) = collect(run).await;
    assert_eq!(outcome.end_reason, EndReason::Completed);
    events
}

/// (call id, result text, is_error, result content) of each tool call.
fn results(events: &[AgentEvent]) -> Vec<(String, String, bool, Vec<UserContent>)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                result,
                is_error,
                ..
            } => Some((
                tool_call_id.clone(),
                result.text_content(),
                *is_error,
                result.content.clone(),
            )),
            _ => None,
        })
        .collect()
}

fn result_of<'a>(
    r: &'a [(String, String, bool, Vec<UserContent>)],
    id: &str,
) -> &'a (String, String, bool, Vec<UserContent>) {
    r.iter()
        .find(|x| x.0 == id)
        .unwrap_or_else(|| panic!("no result for {id}: {r:?}"))
}

/// The texts of the partial results streamed for call `id`.
fn updates(events: &[AgentEvent], id: &str) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecutionUpdate {
                tool_call_id,
                partial_result,
                ..
            } if tool_call_id == id => Some(partial_result.text_content()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn agent_calls_test_server_tools_with_progress_and_images() {
    let dir = tempfile::tempdir().unwrap();
    let m = ready_manager("t", testserver(&[]), dir.path()).await;
    let server = llm(vec![
        Mock::new()
            .with_tool_call("c1", "mcp__t__progress", r#"{"steps": 3, "ms": 40}"#)
            .with_tool_call("c2", "mcp__t__image", "{}")
            .with_tool_call("c3", "mcp__t__fail", "{}"),
        Mock::text("all done"),
    ])
    .await;
    let events = completed_run(&m, &server).await;
    let r = results(&events);
    assert_eq!(result_of(&r, "c1").1, "finished 3 steps");
    assert!(!result_of(&r, "c1").2);
    let ups = updates(&events, "c1");
    assert!(
        ups.contains(&"Progress: 1/3 (33%) — step 1".to_string()),
        "{ups:?}"
    );
    assert!(
        ups.contains(&"Progress: 3/3 (100%) — step 3".to_string()),
        "{ups:?}"
    );
    let img = result_of(&r, "c2");
    assert!(
        matches!(&img.3[1], UserContent::Image(i) if i.mime_type == "image/png"),
        "{:?}",
        img.3
    );
    assert_eq!(result_of(&r, "c3").1, "the operation failed on purpose");
    assert!(result_of(&r, "c3").2, "isError becomes an error result");
    // The model saw the MCP tools and their schemas, and got the results back.
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert!(
        reqs[0].raw_body.contains("\"mcp__t__echo\""),
        "tool definitions are sent"
    );
    assert!(reqs[1].raw_body.contains("finished 3 steps"));
    assert!(reqs[1].raw_body.contains("the operation failed on purpose"));
    m.shutdown().await;
}

#[tokio::test]
async fn aborting_a_run_cancels_the_mcp_call() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.txt");
    let m = ready_manager(
        "t",
        testserver(&["--log", log.to_str().unwrap()]),
        dir.path(),
    )
    .await;
    let server = llm(vec![Mock::tool_call("c1", "mcp__t__hang", "{}")]).await;
    let cancel = CancellationToken::new();
    let run = agent_loop(
        vec!["go".into()],
        context(&m),
        config(&server),
        cancel.clone(),
    );
    let log2 = log.clone();
    tokio::spawn(async move {
        wait_log(&log2, "call hang", 20).await;
        cancel.cancel();
    });
    let (_events, outcome) = collect(run).await;
    assert_eq!(outcome.end_reason, EndReason::Aborted);
    // The server got `notifications/cancelled` with the reason, and its handler saw it.
    wait_log(&log, "cancelled: the user aborted the run", 10).await;
    wait_log(&log, "hang saw its request cancelled", 10).await;
    m.shutdown().await;
}

#[tokio::test]
async fn agent_uses_the_official_everything_server() {
    let Some(npm) = npm_servers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let m = ready_manager(
        "everything",
        npm_server(&npm, "mcp-server-everything", &[]),
        dir.path(),
    )
    .await;
    let echo = tool(&m, "mcp__everything__echo");
    assert!(echo.read_only());
    assert_eq!(
        echo.parameters()["required"],
        serde_json::json!(["message"])
    );
    assert!(
        echo.parameters().get("$schema").is_none(),
        "the dialect marker is dropped"
    );
    assert!(!tool(&m, "mcp__everything__toggle_simulated_logging").read_only());
    // Its instructions, kept for codemode's describeNamespace(); its tools
    // are reached from scripts by default, as in pi.
    let described = m.descriptions();
    assert_eq!(described[0].name, "everything");
    assert!(
        described[0]
            .instructions
            .as_deref()
            .is_some_and(|i| !i.trim().is_empty()),
        "{described:?}"
    );
    assert!(
        m.tools_with_exposure()
            .iter()
            .all(|(_, e)| *e == makai_mcp::Exposure::Codemode)
    );
    let server = llm(vec![
        Mock::new()
            .with_tool_call(
                "c1",
                "mcp__everything__echo",
                r#"{"message": "hello from makai"}"#,
            )
            .with_tool_call("c2", "mcp__everything__get_sum", r#"{"a": 2, "b": 3}"#)
            .with_tool_call("c3", "mcp__everything__get_tiny_image", "{}")
            .with_tool_call(
                "c4",
                "mcp__everything__trigger_long_running_operation",
                r#"{"duration": 1, "steps": 2}"#,
            )
            .with_tool_call(
                "c5",
                "mcp__everything__get_structured_content",
                r#"{"location": "Chicago"}"#,
            ),
        Mock::text("done"),
    ])
    .await;
    let events = completed_run(&m, &server).await;
    let r = results(&events);
    assert_eq!(result_of(&r, "c1").1, "Echo: hello from makai");
    assert!(
        result_of(&r, "c2").1.contains('5'),
        "{}",
        result_of(&r, "c2").1
    );
    assert!(
        result_of(&r, "c3")
            .3
            .iter()
            .any(|c| matches!(c, UserContent::Image(i) if i.mime_type == "image/png")),
        "{:?}",
        result_of(&r, "c3").3
    );
    assert!(
        result_of(&r, "c4")
            .1
            .contains("Long running operation completed"),
        "{}",
        result_of(&r, "c4").1
    );
    let ups = updates(&events, "c4");
    assert!(
        ups.iter().any(|u| u.starts_with("Progress: 1/2")),
        "progress reaches the agent: {ups:?}"
    );
    let c5 = &result_of(&r, "c5").1;
    assert!(c5.contains("temperature") || c5.contains("Chicago"), "{c5}");
    assert!(r.iter().all(|x| !x.2), "{r:?}");
    m.shutdown().await;
}

#[tokio::test]
async fn agent_uses_the_official_filesystem_server_confined_to_a_folder() {
    let Some(npm) = npm_servers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let root_s = root.display().to_string();
    let m = ready_manager(
        "fs",
        npm_server(&npm, "mcp-server-filesystem", &[&root_s]),
        dir.path(),
    )
    .await;
    assert!(tool(&m, "mcp__fs__read_text_file").read_only());
    assert!(!tool(&m, "mcp__fs__write_file").read_only());
    let note = root.join("note.txt");
    let args = |v: serde_json::Value| v.to_string();
    let server = llm(vec![
        Mock::tool_call(
            "c1",
            "mcp__fs__write_file",
            args(serde_json::json!({"path": note, "content": "written by the agent"})),
        ),
        Mock::new()
            .with_tool_call(
                "c2",
                "mcp__fs__read_text_file",
                args(serde_json::json!({"path": note})),
            )
            .with_tool_call(
                "c3",
                "mcp__fs__read_text_file",
                args(serde_json::json!({"path": "/etc/hostname"})),
            )
            .with_tool_call(
                "c4",
                "mcp__fs__list_directory",
                args(serde_json::json!({"path": root})),
            ),
        Mock::text("done"),
    ])
    .await;
    let events = completed_run(&m, &server).await;
    let r = results(&events);
    assert!(!result_of(&r, "c1").2, "{:?}", result_of(&r, "c1"));
    assert_eq!(
        std::fs::read_to_string(&note).unwrap(),
        "written by the agent"
    );
    assert_eq!(result_of(&r, "c2").1, "written by the agent");
    let outside = result_of(&r, "c3");
    assert!(
        outside.2,
        "reading outside the folder is an error result: {outside:?}"
    );
    assert!(outside.1.contains("Access denied"), "{}", outside.1);
    assert!(
        result_of(&r, "c4").1.contains("[FILE] note.txt"),
        "{}",
        result_of(&r, "c4").1
    );
    m.shutdown().await;
}

/// Dry run is the agent's: an MCP server's mutating tool is described, not
/// called (the file is never written), while its read-only tools still run.
#[tokio::test]
async fn dry_run_describes_mutating_mcp_tools_and_runs_read_only_ones() {
    let Some(npm) = npm_servers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("existing.txt"), "already here").unwrap();
    let m = ready_manager(
        "fs",
        npm_server(
            &npm,
            "mcp-server-filesystem",
            &[&root.display().to_string()],
        ),
        dir.path(),
    )
    .await;
    let note = root.join("note.txt");
    let args = |v: serde_json::Value| v.to_string();
    let server = llm(vec![
        Mock::new()
            .with_tool_call(
                "w",
                "mcp__fs__write_file",
                args(serde_json::json!({"path": note, "content": "must not be written"})),
            )
            .with_tool_call(
                "r",
                "mcp__fs__read_text_file",
                args(serde_json::json!({"path": root.join("existing.txt")})),
            ),
        Mock::text("done"),
    ])
    .await;
    let mut cfg = config(&server);
    cfg.dry_run = true;
    let (events, outcome) = collect(agent_loop(
        vec!["go".into()],
        context(&m),
        cfg,
        CancellationToken::new(),
    ))
    .await;
    assert_eq!(outcome.end_reason, EndReason::Completed);
    let r = results(&events);
    let write = result_of(&r, "w");
    assert!(
        write
            .1
            .starts_with("Dry run: the 'mcp__fs__write_file' tool would have been called with"),
        "{write:?}"
    );
    assert!(!note.exists(), "the MCP server was never asked to write");
    assert_eq!(result_of(&r, "r").1, "already here");
    m.shutdown().await;
}

#[tokio::test]
async fn resources_of_the_official_everything_server_are_listed_and_read() {
    let Some(npm) = npm_servers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let m = ready_manager(
        "everything",
        npm_server(&npm, "mcp-server-everything", &[]).with_exposure(makai_mcp::Exposure::Direct),
        dir.path(),
    )
    .await;
    // The resource tools come with the server's resources, as reachable as
    // the server's tools.
    let exposures = m.tools_with_exposure();
    for name in makai_mcp::resources::RESOURCE_TOOL_NAMES {
        let (t, e) = exposures.iter().find(|(t, _)| t.name() == name).unwrap();
        assert_eq!(*e, makai_mcp::Exposure::Direct);
        assert!(t.read_only());
    }
    let features =
        npm.join("node_modules/@modelcontextprotocol/server-everything/dist/docs/features.md");
    let features_text = std::fs::read_to_string(&features).unwrap();
    let server = llm(vec![
        Mock::new()
            .with_tool_call("l1", "list_mcp_resources", "{}")
            .with_tool_call(
                "l2",
                "list_mcp_resource_templates",
                r#"{"server": "everything"}"#,
            )
            .with_tool_call(
                "r1",
                "read_mcp_resource",
                r#"{"server": "everything", "uri": "demo://resource/static/document/features.md"}"#,
            )
            .with_tool_call(
                "r2",
                "read_mcp_resource",
                r#"{"server": "everything", "uri": "demo://resource/dynamic/blob/7"}"#,
            )
            .with_tool_call(
                "r3",
                "read_mcp_resource",
                r#"{"server": "nowhere", "uri": "demo://x"}"#,
            )
            .with_tool_call(
                "k1",
                "mcp__everything__get_resource_links",
                r#"{"count": 2}"#,
            ),
        Mock::text("done"),
    ])
    .await;
    let events = completed_run(&m, &server).await;
    let r = results(&events);

    let listed: serde_json::Value = serde_json::from_str(&result_of(&r, "l1").1).unwrap();
    let resources = listed["resources"].as_array().unwrap();
    assert!(
        resources.iter().any(|x| x["server"] == "everything"
            && x["uri"] == "demo://resource/static/document/features.md"
            && x["name"] == "features.md"),
        "{listed}"
    );
    assert!(listed.get("errors").is_none(), "{listed}");
    let templates: serde_json::Value = serde_json::from_str(&result_of(&r, "l2").1).unwrap();
    assert_eq!(templates["server"], "everything");
    assert!(
        templates["resourceTemplates"]
            .as_array()
            .unwrap()
            .iter()
            .any(
                |t| t["uriTemplate"] == "demo://resource/dynamic/text/{resourceId}"
                    && t["server"] == "everything"
            ),
        "{templates}"
    );

    // Text reaches the model as text, whole.
    let (_, text, is_error, _) = result_of(&r, "r1");
    assert!(!is_error);
    assert_eq!(*text, features_text);
    // A binary resource is saved to a file the model is told of.
    let (_, note, is_error, _) = result_of(&r, "r2");
    assert!(!is_error, "{note}");
    let path = note
        .split("saved to ")
        .nth(1)
        .and_then(|p| p.strip_suffix(']'))
        .unwrap_or_else(|| panic!("{note}"));
    let saved = std::fs::read_to_string(path).unwrap();
    assert!(
        saved.starts_with("Resource 7: This is a base64 blob"),
        "{saved}"
    );
    let _ = std::fs::remove_file(path);
    let (_, refused, is_error, _) = result_of(&r, "r3");
    assert!(is_error);
    assert!(
        refused.contains("no MCP server 'nowhere'") && refused.contains("everything"),
        "{refused}"
    );
    // A resource link says how to read it.
    let links = &result_of(&r, "k1").1;
    assert!(
        links.contains(
            r#"read_mcp_resource {"server": "everything", "uri": "demo://resource/dynamic/text/2"}"#
        ),
        "{links}"
    );
    m.shutdown().await;
}
