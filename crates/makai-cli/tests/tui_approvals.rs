//! Approvals and `!command` in the interactive UI, driven in tmux: a
//! refused `!` command asks before running outside the sandbox (deny with a
//! reason, then approve), and a tool whose rule is `ask` waits for the
//! selector. Skipped (with a message) when tmux is not installed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::tmux::{Pane, tmux_available};
use common::{Env, Mock, request_text};
use makai_mockllm::{Scenario, ScriptedResponse};
use serde_json::json;

#[test]
fn bang_command_runs_in_the_sandbox_and_asks_before_leaving_it() {
    if !tmux_available() {
        return;
    }
    let env = Env::new();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("escaped");
    let mock = Mock::start(Scenario::new());
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");

    pane.type_text("!echo inside > made.txt && cat made.txt");
    pane.keys(&["Enter"]);
    pane.wait_text("(exit code 0)");
    assert_eq!(
        std::fs::read_to_string(env.work().join("made.txt")).unwrap(),
        "inside\n"
    );

    let cmd = format!("!echo x > {}", target.display());
    pane.type_text(&cmd);
    pane.keys(&["Enter"]);
    let screen = pane.wait_text("Run this command outside the sandbox?");
    assert!(screen.contains("Permission denied"), "{screen}");
    assert!(screen.contains("Approve for this session"), "{screen}");
    // Deny, with a reason typed in the editor.
    pane.keys(&["Down", "Down", "Down", "Enter"]);
    pane.wait_text("Type why");
    pane.type_text("not outside please");
    pane.keys(&["Enter"]);
    pane.wait_text("Denied: not outside please");
    assert!(!target.exists());

    // Again, approved once: it runs outside.
    pane.type_text(&cmd);
    pane.keys(&["Enter"]);
    pane.wait_for("a second question", |s| {
        s.matches("Run this command outside the sandbox?").count() >= 2
    });
    pane.keys(&["Enter"]);
    pane.wait_text("Approved once.");
    let start = std::time::Instant::now();
    while !target.exists() && start.elapsed() < std::time::Duration::from_secs(10) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(target.exists(), "{}", pane.diagnostics());
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

#[test]
fn a_tool_that_asks_waits_for_the_selector() {
    if !tmux_available() {
        return;
    }
    let env = Env::new();
    env.settings(json!({"approvals": {"tools": {"write": "ask"}}}));
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::tool_call(
                "c1",
                "write",
                json!({"path": "w.txt", "content": "x"}).to_string(),
            ))
            .push(ScriptedResponse::text("understood")),
    );
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    pane.type_text("write the file");
    pane.keys(&["Enter"]);
    let screen = pane.wait_text("Allow the write tool to run?");
    assert!(screen.contains("w.txt"), "{screen}");
    pane.keys(&["Down", "Down", "Enter"]);
    pane.wait_text("understood");
    assert!(!env.work().join("w.txt").exists());
    let second = request_text(&mock.requests()[1]);
    assert!(second.contains("did not approve running write"), "{second}");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}
