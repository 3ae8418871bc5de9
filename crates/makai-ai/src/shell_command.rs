//! A configured shell command whose output is a value: a `!command` in
//! `models.json` or an MCP server's `mcp.json`, AWS's `credential_process`.
//! One way to run them: `sh -c`, no standard input, killed when dropped or
//! when its time runs out; an error never holds the command's output.

use std::process::{ExitStatus, Stdio};
use std::time::Duration;

/// How a value's command failed. Each message reads after the command's name
/// ("credential_process `x` did not finish within 60 s").
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShellCommandError {
    /// `sh` could not be started.
    #[error("could not be started: {0}")]
    Spawn(#[source] std::io::Error),
    /// It ran past its time limit and was killed.
    #[error("did not finish within {} s", .0.as_secs())]
    TimedOut(Duration),
    /// It exited unsuccessfully.
    #[error("failed ({status}): {stderr}")]
    Failed {
        /// Its exit status.
        status: ExitStatus,
        /// The start of its standard error (up to 300 characters), trimmed.
        stderr: String,
    },
}

/// Runs `command` with `sh -c` in this process's environment and returns its
/// standard output, waiting at most `limit` (`None`: as long as it takes).
pub async fn run_shell_command(
    command: &str,
    limit: Option<Duration>,
) -> Result<Vec<u8>, ShellCommandError> {
    let run = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = match limit {
        Some(limit) => tokio::time::timeout(limit, run)
            .await
            .map_err(|_| ShellCommandError::TimedOut(limit))?,
        None => run.await,
    }
    .map_err(ShellCommandError::Spawn)?;
    if !output.status.success() {
        let stderr: String = String::from_utf8_lossy(&output.stderr)
            .chars()
            .take(300)
            .collect();
        return Err(ShellCommandError::Failed {
            status: output.status,
            stderr: stderr.trim().to_string(),
        });
    }
    Ok(output.stdout)
}
