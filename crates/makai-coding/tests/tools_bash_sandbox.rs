//! `bash` under the sandbox on the real kernel: refused escapes come back as
//! error results the model can read, and nothing outlives its call.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use makai_coding::approvals::{
    ApprovalDecision, ApprovalKind, ApprovalRequest, ApprovalSettings, Approver, Escalation,
};
use makai_coding::tools::{CallCtx, ToolEnv, run_builtin};
use makai_sandbox::{Policy, Sandbox, SandboxConfig, SandboxError};
use serde_json::json;

/// A tool call's output and whether it failed (a failure with output, such
/// as a non-zero exit, is `Err(ToolError::Output)`).
fn ran(
    result: Result<makai_coding::tools::ToolOutput, makai_coding::tools::ToolError>,
) -> (makai_coding::tools::ToolOutput, bool) {
    match result {
        Ok(out) => (out, false),
        Err(makai_coding::tools::ToolError::Output(out)) => (out, true),
        Err(e) => panic!("the call failed without output: {e}"),
    }
}

fn sandboxed(dir: &std::path::Path, policy: Policy) -> ToolEnv {
    let sb = Sandbox::new(SandboxConfig::new(policy)).unwrap();
    ToolEnv::new(dir).with_sandbox(Ok(Arc::new(sb)))
}

fn is_dead(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            let after = &stat[stat.rfind(')').unwrap() + 1..];
            after.split_whitespace().next() == Some("Z")
        }
    }
}

#[tokio::test]
async fn background_process_is_killed_with_its_group_when_the_call_ends() {
    let dir = tempfile::tempdir().unwrap();
    let env = sandboxed(dir.path(), Policy::WorkspaceWrite);
    let out = run_builtin(
        "bash",
        &env,
        json!({"command": "sleep 300 >/dev/null 2>&1 & echo $!"}),
        &CallCtx::default(),
    )
    .await;
    let (out, failed) = ran(out);
    assert!(!failed, "{}", out.text_content());
    let pid: i32 = out
        .text_content()
        .lines()
        .next()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let start = Instant::now();
    while !is_dead(pid) && start.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(is_dead(pid), "the background sleep outlived the call");
    assert_eq!(out.details["killedLeftovers"], json!(true));
    assert!(out.text_content().contains("cannot outlive its call"));
}

#[tokio::test]
async fn write_outside_is_an_error_result_marked_as_refused() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let env = sandboxed(dir.path(), Policy::WorkspaceWrite);
    let target = outside.path().join("x");
    let out = run_builtin(
        "bash",
        &env,
        json!({"command": format!("echo hi > {}", target.display())}),
        &CallCtx::default(),
    )
    .await;
    let (out, failed) = ran(out);
    assert!(failed);
    assert!(
        out.text_content().contains("Permission denied"),
        "{}",
        out.text_content()
    );
    assert_eq!(out.details["sandbox"], json!("workspace-write"));
    assert_eq!(out.details["sandboxDenied"], json!(true));
    assert!(!target.exists());
    // Inside the working directory the same command works.
    let out = run_builtin(
        "bash",
        &env,
        json!({"command": "echo hi > inside && cat inside"}),
        &CallCtx::default(),
    )
    .await;
    let (out, failed) = ran(out);
    assert!(!failed, "{}", out.text_content());
    assert_eq!(out.text_content(), "hi");
    assert!(out.details.get("sandboxDenied").is_none());
}

#[tokio::test]
async fn a_sandbox_the_kernel_cannot_enforce_refuses_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let refusal = SandboxError::Unsupported {
        policy: Policy::WorkspaceWrite,
        missing: "Landlock is not available".into(),
    };
    let env = ToolEnv::new(dir.path()).with_sandbox(Err(Arc::new(refusal)));
    let err = run_builtin(
        "bash",
        &env,
        json!({"command": "touch made"}),
        &CallCtx::default(),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(err.contains("The command was not run"), "{err}");
    assert!(err.contains("full-access"), "{err}");
    assert!(!dir.path().join("made").exists());
}

/// Answers every question with one decision and keeps the questions.
struct Answer {
    decision: ApprovalDecision,
    asked: std::sync::Mutex<Vec<ApprovalRequest>>,
}

#[async_trait::async_trait]
impl Approver for Answer {
    async fn decide(&self, request: &ApprovalRequest) -> ApprovalDecision {
        self.asked.lock().unwrap().push(request.clone());
        self.decision.clone()
    }
}

fn escalating(
    dir: &std::path::Path,
    decision: ApprovalDecision,
    settings: ApprovalSettings,
) -> (ToolEnv, Arc<Answer>) {
    let answer = Arc::new(Answer {
        decision,
        asked: Default::default(),
    });
    let env = sandboxed(dir, Policy::WorkspaceWrite).with_escalation(Escalation {
        approver: answer.clone(),
        settings,
    });
    (env, answer)
}

#[tokio::test]
async fn a_refused_command_runs_again_outside_only_after_approval() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("x");
    let cmd = json!({"command": format!("echo hi > {}", target.display())});

    let (env, answer) = escalating(
        dir.path(),
        ApprovalDecision::Deny {
            reason: Some("stay inside".into()),
        },
        ApprovalSettings::default(),
    );
    let out = run_builtin("bash", &env, cmd.clone(), &CallCtx::default()).await;
    let (out, failed) = ran(out);
    assert!(failed);
    assert!(!target.exists());
    let text = out.text_content();
    assert!(
        text.contains("did not approve") && text.contains("stay inside"),
        "{text}"
    );
    let asked = answer.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].kind, ApprovalKind::Escalation);
    assert!(
        asked[0].reason.contains("Permission denied"),
        "{:?}",
        asked[0]
    );

    let (env, _) = escalating(
        dir.path(),
        ApprovalDecision::ApproveOnce,
        ApprovalSettings::default(),
    );
    let out = run_builtin("bash", &env, cmd, &CallCtx::default()).await;
    let (out, failed) = ran(out);
    assert!(!failed, "{}", out.text_content());
    assert_eq!(out.details["escalated"], json!(true));
    assert!(target.exists());
}

#[tokio::test]
async fn an_escalation_prefix_asks_before_running() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("pushed");
    let settings = ApprovalSettings {
        escalate: vec!["touch".into()],
        ..Default::default()
    };
    let (env, answer) = escalating(dir.path(), ApprovalDecision::ApproveOnce, settings.clone());
    let cmd = json!({"command": format!("touch {}", target.display())});
    let out = run_builtin("bash", &env, cmd.clone(), &CallCtx::default()).await;
    let (out, failed) = ran(out);
    assert!(!failed, "{}", out.text_content());
    assert!(target.exists());
    assert!(answer.asked.lock().unwrap()[0].reason.contains("\"touch\""));

    std::fs::remove_file(&target).unwrap();
    let (env, _) = escalating(
        dir.path(),
        ApprovalDecision::Deny { reason: None },
        settings,
    );
    let out = run_builtin("bash", &env, cmd, &CallCtx::default()).await;
    let (out, failed) = ran(out);
    assert!(failed, "denied: it ran inside the sandbox and was refused");
    assert!(!target.exists());
    assert!(out.text_content().contains("It ran inside the sandbox"));
}
