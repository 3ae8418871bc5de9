//! The `task` tool end to end: a parent agent loop over real HTTP to the
//! scripted server, children running the same loop with the parent's tools,
//! session files on disk. Requests are told apart on the server's side by
//! their system prompts and task texts.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::subagents::*;
use makai_agent::{
    AgentContext, AgentEvent, AgentMessage, CancellationToken, EndReason, agent_loop,
};
use makai_coding::session::subagent_links;
use makai_coding::subagent::{SubagentStatus, TaskDetails};
use makai_coding::tools::ToolEnv;
use makai_mockllm::{RecordedRequest, ScriptedResponse as Mock, Usage};
use serde_json::json;

#[tokio::test]
async fn a_spec_defined_child_reads_a_file_and_its_answer_is_the_result() {
    let fx = Fixture::new(|r| {
        if is_parent(r) {
            parent_turn(
                r,
                json!({"agent": "explore", "task": "What is the code word in notes.txt?"}),
            )
        } else if has_tool_result(r) {
            Mock::text("The code word is SECRET-42.").usage(Usage::new(300, 20))
        } else {
            Mock::tool_call("c1", "read", r#"{"path": "notes.txt"}"#).usage(Usage::new(200, 10))
        }
    })
    .await;
    let tools = fx.tools(ToolEnv::new(fx.work.path()), "read,ls");
    let (events, outcome) = finish(fx.start(tools, fx.config())).await;
    assert_eq!(outcome.end_reason, EndReason::Completed, "{outcome:?}");

    let (text, is_error, details, usage) = task_end(&events);
    assert!(!is_error, "{text}");
    assert_eq!(text, "The code word is SECRET-42.");
    assert_eq!(details.agents.len(), 1);
    let report = &details.agents[0];
    assert_eq!(
        (report.agent.as_str(), report.status, report.turns),
        ("explore", SubagentStatus::Completed, 2)
    );
    let usage = usage.expect("the child's usage is on the result");
    assert_eq!(usage.total_tokens, 530, "both child calls");

    // Progress reached the parent's stream as updates of the task call.
    let updates: Vec<TaskDetails> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecutionUpdate {
                tool_name,
                partial_result,
                ..
            } if tool_name == "task" => {
                Some(serde_json::from_value(partial_result.details.clone()).unwrap())
            }
            _ => None,
        })
        .collect();
    assert!(
        updates
            .iter()
            .any(|u| u.agents[0].tool.as_deref() == Some("read")),
        "an update names the tool the child runs: {updates:?}"
    );
    assert!(
        updates
            .iter()
            .all(|u| u.agents[0].status == SubagentStatus::Running)
    );

    // The child saw only its own context: the spec's prompt, the task, its tools.
    let child_requests: Vec<_> = fx
        .server
        .requests()
        .into_iter()
        .filter(|r| !is_parent(r))
        .collect();
    assert_eq!(child_requests.len(), 2);
    assert!(child_requests[0].raw_body.contains("EXPLORER spec."));
    assert!(!child_requests[0].raw_body.contains("Please delegate."));
    assert_eq!(
        tool_names(&child_requests[0]),
        ["read", "ls"],
        "spec ∩ parent, grep withheld"
    );
    assert!(child_requests[0].raw_body.contains("Your spec lists grep"));

    // Its transcript is a session file naming the parent's.
    let children = fx.child_files();
    assert_eq!(children.len(), 1);
    let child = read_session(&children[0]);
    let parent_path = fx.session.lock().path().unwrap().display().to_string();
    assert_eq!(
        child.header().parent_session.as_deref(),
        Some(parent_path.as_str())
    );
    let texts: Vec<String> = child.context().messages.iter().map(|m| m.text()).collect();
    assert!(texts[0].contains("code word"), "{texts:?}");
    assert!(texts.iter().any(|t| t.contains("SECRET-42")), "{texts:?}");
    let links = subagent_links(&read_session(Path::new(&parent_path)));
    assert_eq!(links.len(), 1);
    assert_eq!(links[0].agent, "explore");
    assert_eq!(links[0].tool_call_id, "t1");
    fx.server.assert_request_invariants();
}

#[tokio::test]
async fn two_read_only_children_run_at_the_same_time() {
    let arrivals: Arc<Mutex<Vec<(String, Instant)>>> = Arc::default();
    let seen = arrivals.clone();
    let fx = Fixture::new(move |r| {
        if is_parent(r) {
            return parent_turn(
                r,
                json!({"tasks": [
                    {"agent": "explore", "task": "TASK-A: look around"},
                    {"agent": "explore", "task": "TASK-B: look around"}
                ]}),
            );
        }
        let which = if r.raw_body.contains("TASK-A") {
            "A"
        } else {
            "B"
        };
        seen.lock()
            .unwrap()
            .push((which.to_string(), Instant::now()));
        Mock::text(format!("answer {which}")).delay(150)
    })
    .await;
    let tools = fx.tools(ToolEnv::new(fx.work.path()), "read,ls,grep");
    let (events, outcome) = finish(fx.start(tools, fx.config())).await;
    assert_eq!(outcome.end_reason, EndReason::Completed);
    let (text, is_error, details, _) = task_end(&events);
    assert!(!is_error);
    assert!(
        text.contains("answer A") && text.contains("answer B"),
        "{text}"
    );
    assert_eq!(details.agents.len(), 2);

    let arrivals = arrivals.lock().unwrap();
    assert_eq!(arrivals.len(), 2);
    // Each answer takes several 150 ms events; the second request arrived
    // while the first was still being answered.
    let gap = arrivals[1].1.duration_since(arrivals[0].1);
    assert!(
        gap < Duration::from_millis(300),
        "the requests did not overlap: {gap:?}"
    );
    fx.server.assert_request_invariants();
}

#[tokio::test]
async fn mutating_children_run_one_at_a_time() {
    let log: Arc<Mutex<Vec<(String, Instant)>>> = Arc::default();
    let seen = log.clone();
    let fx = Fixture::new(move |r| {
        if is_parent(r) {
            return parent_turn(
                r,
                json!({"tasks": [
                    {"agent": "scribe", "task": "TASK-A: write"},
                    {"agent": "scribe", "task": "TASK-B: write"}
                ]}),
            );
        }
        let which = if r.raw_body.contains("TASK-A") {
            "A"
        } else {
            "B"
        };
        seen.lock()
            .unwrap()
            .push((which.to_string(), Instant::now()));
        Mock::text(format!("answer {which}")).delay(100)
    })
    .await;
    let tools = fx.tools(ToolEnv::new(fx.work.path()), "read,write,bash");
    let (events, outcome) = finish(fx.start(tools, fx.config())).await;
    assert_eq!(outcome.end_reason, EndReason::Completed);
    let (text, ..) = task_end(&events);
    assert!(
        text.contains("answer A") && text.contains("answer B"),
        "{text}"
    );
    let log = log.lock().unwrap();
    assert_eq!(log.len(), 2);
    // A scripted text answer is at least five events 100 ms apart.
    let gap = log[1].1.duration_since(log[0].1);
    assert!(
        gap >= Duration::from_millis(350),
        "the second began before the first ended: {gap:?}"
    );
    fx.server.assert_request_invariants();
}

#[tokio::test]
async fn a_failing_child_is_an_error_result_and_the_parent_goes_on() {
    let fx = Fixture::new(|r| {
        if is_parent(r) {
            parent_turn(
                r,
                json!({"instruction": "Be brief.", "task": "Summarise notes.txt"}),
            )
        } else {
            Mock::new()
                .with_status(400)
                .with_body(r#"{"error": {"message": "bad request from child"}}"#)
        }
    })
    .await;
    let tools = fx.tools(ToolEnv::new(fx.work.path()), "read");
    let (events, outcome) = finish(fx.start(tools, fx.config())).await;
    assert_eq!(outcome.end_reason, EndReason::Completed);
    assert_eq!(outcome.messages.last().unwrap().text(), "Parent is done.");
    let (text, is_error, details, _) = task_end(&events);
    assert!(is_error);
    assert!(
        text.contains("The sub-agent 'worker' did not finish"),
        "{text}"
    );
    assert!(text.contains("bad request from child"), "{text}");
    assert_eq!(details.agents[0].status, SubagentStatus::Failed);
    // The worker got the instruction with the task, in its user message.
    let child = fx
        .server
        .requests()
        .into_iter()
        .find(|r| !is_parent(r))
        .unwrap();
    assert!(
        child.raw_body.contains("# Instruction"),
        "{}",
        child.raw_body
    );
    fx.server.assert_request_invariants();
}

#[tokio::test]
async fn a_child_spawns_only_when_its_spec_and_the_depth_allow() {
    let fx = Fixture::new(|r| {
        if is_parent(r) {
            let agent = if r.raw_body.contains("use deep") {
                "deep"
            } else {
                "delegator"
            };
            parent_turn(r, json!({"agent": agent, "task": "Just answer."}))
        } else {
            Mock::text("child answer")
        }
    })
    .await;
    // Default depth 1: the delegator lists `task` but gets none.
    let tools = fx.tools(ToolEnv::new(fx.work.path()), "read");
    let (_, outcome) = finish(fx.start(tools, fx.config())).await;
    assert_eq!(outcome.end_reason, EndReason::Completed);
    let delegator = fx
        .server
        .requests()
        .into_iter()
        .find(|r| r.raw_body.contains("DELEGATOR spec."))
        .unwrap();
    assert_eq!(tool_names(&delegator), ["read"]);
    assert!(delegator.raw_body.contains("Your spec lists task"));

    // A spec that allows depth 2 gets a task tool of its own.
    let run = agent_loop(
        vec![AgentMessage::user("Please delegate: use deep.")],
        AgentContext::new(format!("{PARENT} system prompt."))
            .with_tools(fx.tools(ToolEnv::new(fx.work.path()), "read")),
        fx.config(),
        CancellationToken::new(),
    );
    let (_, outcome) = finish(run).await;
    assert_eq!(outcome.end_reason, EndReason::Completed);
    let deep = fx
        .server
        .requests()
        .into_iter()
        .find(|r| r.raw_body.contains("DEEP spec."))
        .unwrap();
    assert_eq!(tool_names(&deep), ["read", "task"]);
}

#[tokio::test]
async fn a_tool_the_parent_lacks_cannot_be_called_by_the_child() {
    let fx = Fixture::new(|r| {
        if is_parent(r) {
            parent_turn(r, json!({"agent": "scribe", "task": "Write out.txt"}))
        } else if has_tool_result(r) {
            Mock::text("I could not write.")
        } else {
            Mock::tool_call("w1", "write", r#"{"path": "out.txt", "content": "x"}"#)
        }
    })
    .await;
    // The parent may read, not write.
    let tools = fx.tools(ToolEnv::new(fx.work.path()), "read");
    let (events, outcome) = finish(fx.start(tools, fx.config())).await;
    assert_eq!(outcome.end_reason, EndReason::Completed);
    assert!(!fx.work.path().join("out.txt").exists());
    let child_requests: Vec<_> = fx
        .server
        .requests()
        .into_iter()
        .filter(|r| !is_parent(r))
        .collect();
    assert_eq!(tool_names(&child_requests[0]), ["read"]);
    let result = child_requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .to_string();
    assert!(result.contains("Tool 'write' not found"), "{result}");
    let (text, ..) = task_end(&events);
    assert_eq!(text, "I could not write.");
}

/// A scribe child that writes a.txt, then runs `echo hi > b.txt`, then answers.
fn scribe_writes(r: &RecordedRequest) -> Mock {
    if is_parent(r) {
        return parent_turn(
            r,
            json!({"agent": "scribe", "task": "Create a.txt and b.txt"}),
        );
    }
    let results = r.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .count();
    match results {
        0 => Mock::tool_call("w1", "write", r#"{"path": "a.txt", "content": "x"}"#),
        1 => Mock::tool_call("b1", "bash", r#"{"command": "echo hi > b.txt"}"#),
        _ => Mock::text("tried both"),
    }
}

#[tokio::test]
async fn under_dry_run_the_child_cannot_write() {
    let fx = Fixture::new(scribe_writes).await;
    let env = ToolEnv::new(fx.work.path()).with_dry_run(true);
    let (events, outcome) = finish(fx.start(fx.tools(env, "read,write,bash"), fx.config())).await;
    assert_eq!(outcome.end_reason, EndReason::Completed);
    assert!(!fx.work.path().join("a.txt").exists());
    assert!(!fx.work.path().join("b.txt").exists());
    assert_eq!(task_end(&events).0, "tried both");
}

#[tokio::test]
async fn under_a_read_only_sandbox_the_childs_commands_cannot_write() {
    let fx = Fixture::new(scribe_writes).await;
    let sandbox = makai_sandbox::Sandbox::new(makai_sandbox::SandboxConfig::new(
        makai_sandbox::Policy::ReadOnly,
    ))
    .map(Arc::new)
    .map_err(Arc::new);
    let env = ToolEnv::new(fx.work.path()).with_sandbox(sandbox);
    let (events, outcome) = finish(fx.start(fx.tools(env, "read,write,bash"), fx.config())).await;
    assert_eq!(outcome.end_reason, EndReason::Completed);
    // The file tool is confined to the working directory (not sandboxed);
    // the command runs under the parent's read-only sandbox.
    assert!(fx.work.path().join("a.txt").exists());
    assert!(
        !fx.work.path().join("b.txt").exists(),
        "the sandbox carried over"
    );
    let bash_result = fx
        .server
        .requests()
        .into_iter()
        .rfind(|r| !is_parent(r))
        .unwrap()
        .body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|m| m["role"] == "tool")
        .unwrap()["content"]
        .to_string();
    assert!(
        bash_result.contains("Read-only")
            || bash_result.contains("ermission")
            || bash_result.contains("sandbox"),
        "{bash_result}"
    );
    assert_eq!(task_end(&events).0, "tried both");
}

#[tokio::test]
async fn abort_mid_child_keeps_the_childs_session_file_consistent() {
    let fx = Fixture::new(|r| {
        if is_parent(r) {
            parent_turn(
                r,
                json!({"agent": "explore", "task": "Read notes.txt slowly"}),
            )
        } else if has_tool_result(r) {
            // Long enough to be aborted in the middle.
            Mock::text("a very slow answer that never finishes").delay(2_000)
        } else {
            Mock::tool_call("c1", "read", r#"{"path": "notes.txt"}"#)
        }
    })
    .await;
    let tools = fx.tools(ToolEnv::new(fx.work.path()), "read,ls");
    let mut run = fx.start(tools, fx.config());
    let mut events = Vec::new();
    // Abort once the child has read the file and its next request arrived.
    loop {
        tokio::select! {
            e = run.next_event() => events.push(e.expect("the run is still going")),
            _ = tokio::time::sleep(Duration::from_millis(20)) => {
                if fx.server.requests().len() == 3 {
                    run.abort();
                    break;
                }
            }
        }
    }
    let (rest, outcome) = finish(run).await;
    events.extend(rest);
    assert_eq!(outcome.end_reason, EndReason::Aborted, "{outcome:?}");
    let (text, is_error, details, _) = task_end(&events);
    assert!(is_error, "{text}");
    assert_eq!(details.agents[0].status, SubagentStatus::Aborted);

    let children = fx.child_files();
    assert_eq!(children.len(), 1);
    let child = read_session(&children[0]);
    assert!(child.warnings().is_empty(), "{:?}", child.warnings());
    let context = child.context();
    let roles: Vec<&str> = context.messages.iter().map(|m| m.role()).collect();
    assert_eq!(
        roles,
        ["user", "assistant", "toolResult", "assistant"],
        "the aborted answer is kept"
    );
}
