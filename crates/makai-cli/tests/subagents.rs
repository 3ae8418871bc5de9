//! Sub-agents through the built binary: a `task` call's child keeps the
//! parent's approval rules and dry run, and its transcript opens as a
//! session of its own.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use makai_mockllm::{Scenario, ScriptedResponse};
use serde_json::json;

/// The parent hands a writing task to the worker; the child calls `write`
/// and then reports; the parent closes.
fn delegated_write(file: &str) -> Scenario {
    let task = json!({"task": format!("Create {file} containing hi.")});
    Scenario::new()
        .push(ScriptedResponse::tool_call("t1", "task", task.to_string()))
        .push(ScriptedResponse::tool_call(
            "w1",
            "write",
            json!({"path": file, "content": "hi\n"}).to_string(),
        ))
        .push(ScriptedResponse::text("child: tried to write"))
        .push(ScriptedResponse::text("parent: done"))
}

#[test]
fn a_child_keeps_the_parents_approval_rules() {
    let env = Env::new();
    env.settings(json!({"approvals": {"tools": {"write": "deny"}}}));
    let mock = Mock::start(delegated_write("denied.txt"));
    let mut args = mock.args();
    args.extend(s(&["-p", "delegate the write"]));
    let out = env.run(&args, "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "parent: done\n");
    assert!(
        !env.work().join("denied.txt").exists(),
        "the child's write never ran"
    );
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 4);
    assert!(
        request_text(&reqs[2]).contains("do not allow the write tool"),
        "the child got the rule's refusal: {}",
        request_text(&reqs[2])
    );
}

#[test]
fn under_dry_run_a_child_cannot_write_and_its_transcript_opens_as_a_session() {
    let env = Env::new();
    let mock = Mock::start(delegated_write("dry.txt"));
    let mut args = mock.args();
    args.extend(s(&["--dry-run", "-p", "delegate the write"]));
    let out = env.run(&args, "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!env.work().join("dry.txt").exists(), "dry run carried over");
    // The child ran, under the same dry run: its write only said what it
    // would have done.
    let child_request = request_text(&mock.requests()[2]);
    assert!(
        child_request.contains("Dry run: would create dry.txt"),
        "{child_request}"
    );

    // The child's file is a session: it opens, and its messages are the child's.
    let files = env.session_files();
    assert_eq!(files.len(), 2, "{files:?}");
    let child = files
        .iter()
        .find(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            text.lines().next().unwrap().contains("\"parentSession\"")
        })
        .expect("a child session");
    let mut rpc = Rpc::start(&env, &mock.args());
    rpc.ok(json!({"type": "switch_session", "sessionPath": child}));
    let msgs = rpc.ok(json!({"type": "get_messages"}))["messages"].to_string();
    assert!(msgs.contains("Create dry.txt containing hi."), "{msgs}");
    assert!(msgs.contains("child: tried to write"), "{msgs}");
    assert!(
        !msgs.contains("delegate the write"),
        "only the child's context: {msgs}"
    );
    assert_eq!(rpc.finish(), 0);
}
