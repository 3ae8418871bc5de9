//! The sandbox through the built binary: the RPC `bash` command and the
//! model's `bash` tool run confined; `--sandbox full-access` lifts it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use makai_mockllm::{Scenario, ScriptedResponse};
use serde_json::{Value, json};

/// Runs an RPC `bash` command; a question to run it outside the sandbox
/// (asked when the sandbox refused it) is answered no.
fn bash(rpc: &mut Rpc, command: &str) -> Value {
    let id = rpc.send(json!({"type": "bash", "command": command}));
    loop {
        let v = rpc.next();
        if v["type"] == "extension_ui_request" {
            assert_eq!(v["method"], "confirm", "{v}");
            rpc.send_raw(
                &json!({"type": "extension_ui_response", "id": v["id"], "confirmed": false})
                    .to_string(),
            );
        } else if v["type"] == "response" && v["id"] == id.as_str() {
            assert_eq!(v["success"], true, "{v}");
            return v["data"].clone();
        }
    }
}

#[test]
fn rpc_bash_runs_under_workspace_write_by_default() {
    let env = Env::new();
    std::fs::write(env.home.path().join("auth.json"), r#"{"k":"AUTH-SECRET"}"#).unwrap();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("escaped");
    let mock = Mock::start(Scenario::new());
    let mut rpc = Rpc::start(&env, &mock.args());
    let r = bash(&mut rpc, &format!("echo x > {}", target.display()));
    assert_ne!(r["exitCode"], 0, "{r}");
    assert!(
        r["output"].as_str().unwrap().contains("Permission denied"),
        "{r}"
    );
    assert!(!target.exists());
    let auth = env.home.path().join("auth.json");
    let r = bash(&mut rpc, &format!("cat {}", auth.display()));
    assert!(
        !r["output"].as_str().unwrap().contains("AUTH-SECRET"),
        "{r}"
    );
    let r = bash(&mut rpc, "echo inside > made && cat made");
    assert_eq!(r["output"], "inside", "{r}");
    assert_eq!(rpc.finish(), 0);
}

#[test]
fn full_access_flag_lifts_the_sandbox() {
    let env = Env::new();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("allowed");
    let mock = Mock::start(Scenario::new());
    let mut args = mock.args();
    args.extend(s(&["--sandbox", "full-access"]));
    let mut rpc = Rpc::start(&env, &args);
    let r = bash(
        &mut rpc,
        &format!("echo x > {} && echo ok", target.display()),
    );
    assert_eq!(r["output"], "ok", "{r}");
    assert!(target.exists());
    assert_eq!(rpc.finish(), 0);
}

#[test]
fn model_bash_tool_result_says_the_sandbox_refused() {
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
    let mut args = mock.args();
    args.extend(s(&["--sandbox", "read-only", "-p", "go"]));
    let out = env.run(&args, "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!target.exists());
    let second = request_text(&mock.requests()[1]);
    assert!(second.contains("Permission denied"), "{second}");
    mock.server.assert_request_invariants();
}

#[test]
fn unknown_policy_is_a_usage_error() {
    let env = Env::new();
    let out = env.run(&s(&["--sandbox", "open", "-p", "x"]), "");
    assert!(!out.status.success());
    assert!(stderr(&out).contains("workspace-write"), "{}", stderr(&out));
}

#[test]
fn provider_keys_leave_makais_proc_environ_but_still_work() {
    let env = Env::new();
    let mock = Mock::start(Scenario::new());
    let secret = "sk-HIDDEN-4242";
    let mut rpc = Rpc::start_with(&env, &mock.args(), &[("OPENAI_API_KEY", secret)]);
    let state = rpc.ok(json!({"type": "get_state"}));
    assert!(state.is_object());
    let pid = rpc.child.id();
    let block = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    let block = String::from_utf8_lossy(&block);
    assert!(
        block.contains("OPENAI_API_KEY=**************"),
        "the name stays"
    );
    assert!(!block.contains(secret), "the value is gone from /proc");
    let r = bash(
        &mut rpc,
        "tr '\\0' '\\n' < /proc/$PPID/environ | grep -c HIDDEN; true",
    );
    assert_eq!(r["output"].as_str().unwrap().trim(), "0", "{r}");
    // makai itself still has the key: OpenAI's models are available.
    let models = rpc.ok(json!({"type": "get_available_models"}));
    assert!(
        models["models"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["provider"] == "openai"),
        "{models}"
    );
    assert_eq!(rpc.finish(), 0);
}

#[test]
fn a_sandbox_that_cannot_be_set_up_is_said_once_and_refuses_commands() {
    let env = Env::new();
    env.settings(json!({"sandbox": {"denyEnv": ["["]}}));
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::tool_call(
                "c1",
                "bash",
                json!({"command": "touch made"}).to_string(),
            ))
            .push(ScriptedResponse::text("done")),
    );
    let mut args = mock.args();
    args.extend(s(&["-p", "go"]));
    let out = env.run(&args, "");
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.matches("environment pattern '['").count(), 1, "{err}");
    assert!(!env.work().join("made").exists());
    let second = request_text(&mock.requests()[1]);
    assert!(second.contains("The command was not run"), "{second}");
}
