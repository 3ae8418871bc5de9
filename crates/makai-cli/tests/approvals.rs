//! Approvals through the built binary: RPC clients answer pi's extension UI
//! requests (select, confirm), no answer in time is a denial, print mode
//! denies unless --pre-approve pre-approves, and every decision is a `custom`
//! entry of the session.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use makai_mockllm::{Scenario, ScriptedResponse};
use serde_json::{Value, json};

fn write_call(path: &str) -> ScriptedResponse {
    ScriptedResponse::tool_call(
        "c1",
        "write",
        json!({"path": path, "content": "written"}).to_string(),
    )
}

/// The `approval` custom entries of the session files.
fn decisions(env: &Env) -> Vec<Value> {
    let mut out = Vec::new();
    for f in env.session_files() {
        for line in std::fs::read_to_string(f).unwrap().lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            if v["type"] == "custom" && v["customType"] == "approval" {
                out.push(v["data"].clone());
            }
        }
    }
    out
}

fn ask_write(env: &Env, timeout: u64) {
    env.settings(json!({"approvals": {"tools": {"write": "ask"}, "timeoutSeconds": timeout}}));
}

#[test]
fn rpc_client_approves_a_tool_through_select() {
    let env = Env::new();
    ask_write(&env, 30);
    let mock = Mock::start(
        Scenario::new()
            .push(write_call("a.txt"))
            .push(ScriptedResponse::text("done")),
    );
    let mut rpc = Rpc::start(&env, &mock.args());
    let id = rpc.send(json!({"type": "prompt", "message": "write it"}));
    assert_eq!(rpc.response(&id)["success"], true);
    let q = rpc.wait_event("extension_ui_request");
    assert_eq!(q["method"], "select", "{q}");
    assert_eq!(q["options"][0], "Approve once");
    assert!(q["title"].as_str().unwrap().contains("a.txt"), "{q}");
    assert!(q["timeout"].as_u64().unwrap() > 0);
    rpc.send_raw(&json!({"type": "extension_ui_response", "id": q["id"], "value": "Approve for this session"}).to_string());
    rpc.wait_event("agent_end");
    assert_eq!(
        std::fs::read_to_string(env.work().join("a.txt")).unwrap(),
        "written"
    );
    let appended = rpc
        .seen
        .iter()
        .find(|v| v["type"] == "entry_appended")
        .expect("the decision is announced");
    assert_eq!(appended["entry"]["customType"], "approval", "{appended}");
    assert!(
        !rpc.seen
            .iter()
            .any(|v| v["type"] == "response" && v["command"] == "extension_ui_response"),
        "pi sends no response to extension_ui_response"
    );
    assert_eq!(rpc.finish(), 0);
    let d = decisions(&env);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0]["decision"], "approved-session");
    assert_eq!(d[0]["tool"], "write");
    assert_eq!(d[0]["by"], "user");
}

#[test]
fn rpc_client_confirms_running_a_refused_command_outside_the_sandbox() {
    let env = Env::new();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("escaped");
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::tool_call(
                "c1",
                "bash",
                json!({"command": format!("echo x > {}", target.display())}).to_string(),
            ))
            .push(ScriptedResponse::text("done")),
    );
    let mut rpc = Rpc::start(&env, &mock.args());
    let id = rpc.send(json!({"type": "prompt", "message": "go"}));
    assert_eq!(rpc.response(&id)["success"], true);
    let q = rpc.wait_event("extension_ui_request");
    assert_eq!(q["method"], "confirm", "{q}");
    assert!(
        q["message"].as_str().unwrap().contains("Permission denied"),
        "{q}"
    );
    assert!(!target.exists(), "refused inside the sandbox first");
    rpc.send_raw(
        &json!({"type": "extension_ui_response", "id": q["id"], "confirmed": true}).to_string(),
    );
    rpc.wait_event("agent_end");
    assert!(target.exists());
    let second = request_text(&mock.requests()[1]);
    assert!(
        second.contains("approved running it again outside"),
        "{second}"
    );
    assert_eq!(rpc.finish(), 0);
    assert_eq!(decisions(&env)[0]["kind"], "escalation");
}

#[test]
fn no_answer_within_the_timeout_denies() {
    let env = Env::new();
    ask_write(&env, 1);
    let mock = Mock::start(
        Scenario::new()
            .push(write_call("late.txt"))
            .push(ScriptedResponse::text("ok")),
    );
    let mut rpc = Rpc::start(&env, &mock.args());
    let id = rpc.send(json!({"type": "prompt", "message": "write it"}));
    assert_eq!(rpc.response(&id)["success"], true);
    let q = rpc.wait_event("extension_ui_request");
    assert_eq!(q["timeout"], 1000);
    rpc.wait_event("agent_end");
    assert!(!env.work().join("late.txt").exists());
    let second = request_text(&mock.requests()[1]);
    assert!(second.contains("no answer within 1 s"), "{second}");
    // A late answer is ignored.
    rpc.send_raw(
        &json!({"type": "extension_ui_response", "id": q["id"], "value": "Approve once"})
            .to_string(),
    );
    assert_eq!(rpc.finish(), 0);
    assert_eq!(decisions(&env)[0]["decision"], "timed-out");
}

#[test]
fn print_mode_denies_unless_a_flag_pre_approves() {
    let env = Env::new();
    ask_write(&env, 30);
    let mock = Mock::start(
        Scenario::new()
            .push(write_call("p.txt"))
            .push(ScriptedResponse::text("ok"))
            .push(write_call("p.txt"))
            .push(ScriptedResponse::text("ok")),
    );
    let mut args = mock.args();
    args.extend(s(&["-p", "write"]));
    let out = env.run(&args, "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!env.work().join("p.txt").exists());
    assert!(request_text(&mock.requests()[1]).contains("--pre-approve"));

    args.extend(s(&["--pre-approve", "write"]));
    let out = env.run(&args, "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(env.work().join("p.txt").exists());
    let d = decisions(&env);
    assert_eq!(d.len(), 2, "{d:?}");
    assert_eq!(
        (d[0]["decision"].as_str(), d[0]["by"].as_str()),
        (Some("denied"), Some("no-prompt"))
    );
    assert_eq!(
        (d[1]["decision"].as_str(), d[1]["by"].as_str()),
        (Some("approved"), Some("flag"))
    );
}

#[test]
fn a_denied_tool_never_runs() {
    let env = Env::new();
    env.settings(json!({"approvals": {"tools": {"*": "deny", "read": "allow"}}}));
    let mock = Mock::start(
        Scenario::new()
            .push(write_call("d.txt"))
            .push(ScriptedResponse::text("ok")),
    );
    let mut args = mock.args();
    args.extend(s(&["-p", "write", "--pre-approve", "all"]));
    let out = env.run(&args, "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!env.work().join("d.txt").exists());
    assert!(request_text(&mock.requests()[1]).contains("do not allow the write tool"));
}
