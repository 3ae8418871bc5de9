//! User-run shell commands (RPC `bash`): output streamed as it comes, the result
//! recorded as a `bashExecution` message that the model sees on the next prompt.

use std::sync::{Arc, Mutex};

use serde_json::Value;

use makai_agent::{AgentMessage, BashExecutionMessage, CancellationToken};
use makai_coding::tools::{CallCtx, ToolEnv, bash};

use super::{AppSession, lock};
use crate::error::CliError;

pub use makai_rpc::BashResult;

/// Removes the status lines the bash tool appends for the model.
fn strip_status(text: &str) -> String {
    let mut t = text.to_string();
    if t == "(no output)" {
        return String::new();
    }
    for marker in [
        "\n\nCommand exited with code",
        "\n\nCommand was killed by signal",
        "\n\nCommand aborted",
        "\n\n[Showing ",
    ] {
        if let Some(i) = t.find(marker) {
            t.truncate(i);
        }
    }
    if t.starts_with("Command exited with code") || t == "Command aborted" {
        return String::new();
    }
    t
}

impl AppSession {
    /// Runs a shell command in the working directory. `on_output` receives each
    /// new piece of output. The result joins the transcript (after the current
    /// run, if one is going) unless `exclude_from_context`.
    pub async fn execute_bash(
        &self,
        command: &str,
        exclude_from_context: bool,
        on_output: impl Fn(&str) + Send + Sync + 'static,
    ) -> Result<BashResult, CliError> {
        let cancel = CancellationToken::new();
        lock(&self.shared().state).bash_cancel = Some(cancel.clone());
        let shown = Arc::new(Mutex::new(String::new()));
        let seen = shown.clone();
        let on_output = Arc::new(on_output);
        let emit = on_output.clone();
        let ctx = CallCtx {
            cancel: cancel.clone(),
            on_update: Some(Arc::new(move |out: makai_coding::tools::ToolOutput| {
                // Finished lines only: the line being written may still be
                // redrawn (a progress bar after CR), and what was streamed
                // cannot be taken back. The last line comes with the result.
                let all = out.text_content();
                let text = match all.rfind('\n') {
                    Some(end) => all[..=end].to_string(),
                    None => return,
                };
                let mut prev = seen.lock().unwrap_or_else(|e| e.into_inner());
                let delta = match text.strip_prefix(prev.as_str()) {
                    Some(rest) => rest.to_string(),
                    None => text.clone(),
                };
                *prev = text;
                drop(prev);
                if !delta.is_empty() {
                    emit(&delta);
                }
            })),
            // pi: the session variables are for the model's commands, not
            // the user's `!` commands.
            session: None,
        };
        let env = ToolEnv::new(self.cwd().to_path_buf())
            .with_sandbox(self.sandbox().clone())
            .with_escalation(self.escalation());
        let settings = self.settings();
        let full = match &settings.shell_command_prefix {
            Some(p) if !p.trim().is_empty() => format!("{p}\n{command}"),
            _ => command.to_string(),
        };
        let args = bash::BashArgs {
            command: full,
            timeout: None,
        };
        let ran = bash::bash(&env, args, &ctx).await;
        lock(&self.shared().state).bash_cancel = None;
        // A failed command (non-zero exit...) still has its output to report.
        let out = match ran {
            Ok(out) | Err(makai_coding::tools::ToolError::Output(out)) => out,
            Err(e) => return Err(CliError::failed(e.to_string())),
        };
        let d = &out.details;
        let result = BashResult {
            output: strip_status(&out.text_content()),
            exit_code: d.get("exitCode").and_then(Value::as_i64),
            cancelled: d.get("aborted").and_then(Value::as_bool).unwrap_or(false)
                || cancel.is_cancelled(),
            truncated: d.get("truncation").is_some(),
            full_output_path: d
                .get("fullOutputPath")
                .and_then(Value::as_str)
                .map(str::to_string),
        };
        // Whatever the periodic updates did not show yet.
        let streamed = shown.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let rest = result
            .output
            .strip_prefix(streamed.as_str())
            .unwrap_or(&result.output);
        if !rest.is_empty() {
            on_output(rest);
        }
        self.record_bash(command, &result, exclude_from_context);
        Ok(result)
    }

    /// How shell commands may leave the sandbox: with this session's approvals.
    pub(crate) fn escalation(&self) -> makai_coding::approvals::Escalation {
        makai_coding::approvals::Escalation {
            approver: self.approvals().clone(),
            settings: self.approvals().settings().clone(),
        }
    }

    /// Cancels the running shell command, if any.
    pub fn abort_bash(&self) {
        if let Some(c) = lock(&self.shared().state).bash_cancel.clone() {
            c.cancel();
        }
    }

    fn record_bash(&self, command: &str, r: &BashResult, exclude: bool) {
        let message = AgentMessage::BashExecution(BashExecutionMessage {
            command: command.to_string(),
            output: r.output.clone(),
            exit_code: r.exit_code,
            cancelled: r.cancelled,
            truncated: r.truncated,
            full_output_path: r.full_output_path.clone(),
            exclude_from_context: exclude.then_some(true),
            timestamp: makai_ai::now_ms(),
        });
        if self.is_streaming() {
            lock(&self.shared().state).pending_bash.push(message);
            return;
        }
        let mut all = self.messages();
        all.push(message.clone());
        if self.agent().replace_messages(all).is_err() {
            // A run started meanwhile: add it when that run ends.
            lock(&self.shared().state).pending_bash.push(message);
            return;
        }
        self.record(|s| s.append_message(message));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines_are_removed() {
        assert_eq!(strip_status("(no output)"), "");
        assert_eq!(strip_status("a\nb\n\nCommand exited with code 2"), "a\nb");
        assert_eq!(strip_status("Command exited with code 1"), "");
        assert_eq!(strip_status("x"), "x");
    }
}
