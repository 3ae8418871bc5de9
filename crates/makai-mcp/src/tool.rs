//! [`McpTool`]: one tool of an MCP server as an agent tool.

use std::sync::{Arc, Weak};
use std::time::Duration;

use async_trait::async_trait;
use makai_agent::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use serde_json::Value;

use crate::content::outcome_from_json;
use crate::exposure::Exposure;
use crate::sdk::client::ProgressFn;
use crate::sdk::{CallFailure, ProgressUpdate, RemoteTool};
use crate::supervisor::ServerShared;

/// Extra time the agent loop waits beyond the call timeout before it gives
/// up on the call itself (the tool normally ends the call first).
const LOOP_GRACE: Duration = Duration::from_secs(10);

/// A tool of an MCP server, named `mcp__<server>__<tool>` for the agent.
///
/// Calls go to the server's current connection; while the server is not
/// ready (restarting, failed) a call gets an error result saying so.
pub struct McpTool {
    spec: ToolSpec,
    server_name: String,
    remote: RemoteTool,
    timeout: Duration,
    server: Weak<ServerShared>,
    exposure: Exposure,
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("name", &self.spec.name)
            .field("server", &self.server_name)
            .field("remote", &self.remote.name)
            .field("read_only", &self.remote.read_only)
            .finish()
    }
}

impl McpTool {
    pub(crate) fn new(
        name: String,
        server_name: &str,
        remote: RemoteTool,
        timeout: Duration,
        server: Weak<ServerShared>,
        exposure: Exposure,
    ) -> Self {
        let description = if remote.description.trim().is_empty() {
            format!("Tool '{}' of the MCP server '{server_name}'.", remote.name)
        } else {
            remote.description.clone()
        };
        let label = remote.title.clone().unwrap_or_else(|| remote.name.clone());
        let spec = ToolSpec::new(name, description, remote.input_schema.clone())
            .with_label(label)
            .with_read_only(remote.read_only);
        McpTool {
            spec,
            server_name: server_name.to_string(),
            remote,
            timeout,
            server,
            exposure,
        }
    }

    /// How the model reaches this tool (its server's `exposure` and
    /// `toolExposure`).
    pub fn exposure(&self) -> Exposure {
        self.exposure
    }

    /// The server's name.
    pub fn server(&self) -> &str {
        &self.server_name
    }

    /// The tool's name on the server.
    pub fn remote_name(&self) -> &str {
        &self.remote.name
    }

    fn failed(&self, text: String) -> ToolError {
        ToolError::Output(ToolOutput::text(text).with_details(serde_json::json!({
            "server": self.server_name,
            "tool": self.remote.name,
        })))
    }
}

/// The text of a progress update shown while a call runs.
pub fn progress_text(p: &ProgressUpdate) -> String {
    let mut s = match p.total {
        Some(total) if total > 0.0 => format!(
            "Progress: {}/{} ({:.0}%)",
            trim_float(p.progress),
            trim_float(total),
            (p.progress / total * 100.0).clamp(0.0, 100.0)
        ),
        _ => format!("Progress: {}", trim_float(p.progress)),
    };
    if let Some(m) = p.message.as_deref().filter(|m| !m.is_empty()) {
        s.push_str(" — ");
        s.push_str(m);
    }
    s
}

fn trim_float(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:.2}")
    }
}

#[async_trait]
impl Tool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn timeout(&self) -> Option<Duration> {
        Some(self.timeout + LOOP_GRACE)
    }

    async fn execute(
        &self,
        _call_id: &str,
        args: Value,
        ctx: ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let (server, tool) = (&self.server_name, &self.remote.name);
        let Some(shared) = self.server.upgrade() else {
            return Err(self.failed(format!(
                "MCP server '{server}' was shut down; its tool '{tool}' is no longer available."
            )));
        };
        let conn = shared
            .connection()
            .map_err(|state| self.failed(unavailable_text(server, tool, &state)))?;
        drop(shared);
        let updater = ctx.clone();
        let progress: ProgressFn = Arc::new(move |p: ProgressUpdate| {
            updater.update(ToolOutput::text(progress_text(&p)));
        });
        let result = conn
            .call(tool, args, ctx.cancel_token(), self.timeout, Some(progress))
            .await;
        match result {
            Ok(wire) => {
                let mut outcome = outcome_from_json(server, tool, &wire);
                crate::long_text::cut_long_texts(&mut outcome.output, server, tool);
                if outcome.is_error {
                    Err(ToolError::Output(outcome.output))
                } else {
                    Ok(outcome.output)
                }
            }
            Err(CallFailure::Cancelled) => Err(ToolError::Cancelled),
            Err(CallFailure::TimedOut(d)) => Err(self.failed(format!(
                "The MCP tool '{tool}' of server '{server}' did not finish within {}s, so makai cancelled it. If it needs longer, raise \"timeout\" for server '{server}' in the settings.",
                d.as_secs_f64()
            ))),
            Err(CallFailure::Closed(reason)) => Err(self.failed(format!(
                "MCP server '{server}' stopped answering while running '{tool}' ({reason}). makai restarts or reconnects it automatically; the tool can be tried again once it is back."
            ))),
            Err(CallFailure::Protocol(msg)) => Err(self.failed(format!(
                "MCP server '{server}' refused the call to '{tool}': {msg}"
            ))),
        }
    }
}

/// The error text for a call to a server that is not ready.
fn unavailable_text(server: &str, tool: &str, state: &crate::ServerState) -> String {
    use crate::ServerState as S;
    match state {
        S::Restarting { attempt, reason } => format!(
            "MCP server '{server}' is restarting (attempt {attempt}) after it stopped: {reason}. The tool '{tool}' is unavailable until it is back; try again in a few seconds."
        ),
        S::Starting => format!(
            "MCP server '{server}' is still starting; the tool '{tool}' is unavailable until it is ready."
        ),
        S::Failed { reason } => format!(
            "MCP server '{server}' is not running ({reason}), so its tool '{tool}' cannot be used."
        ),
        other => format!(
            "MCP server '{server}' is {}, so its tool '{tool}' cannot be used.",
            other.label()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_texts() {
        let p = ProgressUpdate {
            progress: 2.0,
            total: Some(5.0),
            message: Some("step 2".into()),
        };
        assert_eq!(progress_text(&p), "Progress: 2/5 (40%) — step 2");
        let p = ProgressUpdate {
            progress: 0.5,
            total: None,
            message: None,
        };
        assert_eq!(progress_text(&p), "Progress: 0.50");
    }
}
