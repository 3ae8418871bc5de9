//! Which sandbox one `bash` call runs under, and leaving it with the user's
//! approval (the ask-on-escalation rule, see [`crate::approvals`]):
//!
//! - a command starting with an `escalate` prefix asks first; approved, it
//!   runs outside the sandbox, otherwise inside it as usual;
//! - a command the sandbox probably refused (an error with "Permission
//!   denied", "Operation not permitted" and the like) asks whether to run it
//!   again outside the sandbox; the model reads the outcome either way.
//!
//! Without an [`Escalation`](crate::approvals::Escalation) in the tool
//! environment nothing is asked and the sandbox's answer stands.

use serde_json::Value;

use super::bash::{BashArgs, run_command};
use super::error::with_output;
use super::{CallCtx, ToolEnv, ToolError, ToolOutput};
use crate::approvals::{ApprovalDecision, ApprovalKind, ApprovalRequest};

/// The confinement of one command, `None` without a sandbox. A sandbox the
/// kernel cannot enforce refuses the command with its error.
fn confine(env: &ToolEnv) -> Result<Option<makai_sandbox::Confinement>, ToolError> {
    match &env.sandbox {
        None => Ok(None),
        Some(Err(e)) => Err(ToolError::Failed(format!("The command was not run: {e}."))),
        Some(Ok(sb)) => sb
            .confine(&env.cwd)
            .map(Some)
            .map_err(|e| ToolError::Failed(format!("The command was not run: {e}."))),
    }
}

/// A confinement with no sandbox (the command runs with the user's rights).
fn unconfined(env: &ToolEnv) -> Result<Option<makai_sandbox::Confinement>, ToolError> {
    makai_sandbox::Sandbox::full_access()
        .confine(&env.cwd)
        .map(Some)
        .map_err(|e| ToolError::Failed(format!("The command was not run: {e}.")))
}

/// Asks, unless the call is aborted first.
async fn ask(
    env: &ToolEnv,
    ctx: &CallCtx,
    request: ApprovalRequest,
) -> Result<(ApprovalDecision, ApprovalRequest), ToolError> {
    let Some(esc) = &env.escalation else {
        return Ok((ApprovalDecision::Deny { reason: None }, request));
    };
    tokio::select! {
        d = esc.approver.decide(&request) => Ok((d, request)),
        _ = ctx.cancel.cancelled() => Err(ToolError::Aborted),
    }
}

/// Runs one `bash` call: in the sandbox, or outside it after approval.
pub(crate) async fn run(
    env: &ToolEnv,
    args: &BashArgs,
    timeout: Option<f64>,
    ctx: &CallCtx,
) -> Result<ToolOutput, ToolError> {
    let confined =
        matches!(&env.sandbox, Some(Ok(sb)) if sb.policy() != makai_sandbox::Policy::FullAccess);
    let Some(esc) = env.escalation.as_ref().filter(|_| confined) else {
        return run_command(env, args, timeout, ctx, confine(env)?).await;
    };
    if let Some(prefix) = esc.settings.escalation_prefix(&args.command) {
        let request = ApprovalRequest {
            kind: ApprovalKind::Escalation,
            tool: "bash".into(),
            subject: args.command.clone(),
            reason: format!(
                "It starts with \"{prefix}\", which your approval rules run outside the sandbox."
            ),
        };
        let (decision, request) = ask(env, ctx, request).await?;
        if decision.approved() {
            let run = run_command(env, args, timeout, ctx, unconfined(env)?).await;
            return with_output(run, |out| {
                out.details["escalated"] = Value::Bool(true);
            });
        }
        let run = run_command(env, args, timeout, ctx, confine(env)?).await;
        return with_output(run, |out| {
            if let Some(text) = decision.denial_text(&request) {
                append(out, &format!("{text} It ran inside the sandbox."));
            }
        });
    }
    let first = run_command(env, args, timeout, ctx, confine(env)?).await;
    // Only a failed run can have been refused by the sandbox.
    let Err(ToolError::Output(refused_output)) = &first else {
        return first;
    };
    let refused = refused_output.details.get("sandboxDenied") == Some(&Value::Bool(true));
    if !refused || !esc.settings.ask_on_refusal || ctx.cancel.is_cancelled() {
        return first;
    }
    let last_line = refused_output
        .text_content()
        .lines()
        .rev()
        .find(|l| super::bash::looks_refused(l))
        .unwrap_or("")
        .trim()
        .to_string();
    let request = ApprovalRequest {
        kind: ApprovalKind::Escalation,
        tool: "bash".into(),
        subject: args.command.clone(),
        reason: format!("The sandbox refused it: {last_line}"),
    };
    let (decision, request) = ask(env, ctx, request).await?;
    if decision.approved() {
        let again = run_command(env, args, timeout, ctx, unconfined(env)?).await;
        return with_output(again, |out| {
            out.details["escalated"] = Value::Bool(true);
            let note = "The sandbox refused the first run; the user approved running it again outside the sandbox, and this is that run's output.";
            out.content.insert(0, makai_ai::UserContent::text(note));
        });
    }
    with_output(first, |out| {
        if let Some(text) = decision.denial_text(&request) {
            append(out, &text);
        }
    })
}

fn append(out: &mut ToolOutput, text: &str) {
    out.content
        .push(makai_ai::UserContent::text(format!("\n{text}")));
}
