//! A stdio server's standard error: logged, its last lines kept to explain
//! a failure.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio_util::sync::CancellationToken;

use super::lock;

/// How many lines of a child's standard error are kept for failure reports.
pub(super) const STDERR_TAIL: usize = 12;

/// Waits up to a second for a child's standard error to reach its end.
pub(super) async fn settle(done: &CancellationToken) {
    let _ = tokio::time::timeout(Duration::from_secs(1), done.cancelled()).await;
}

pub(super) fn spawn_stderr_reader(
    server: &str,
    stderr: tokio::process::ChildStderr,
    tail: Arc<Mutex<VecDeque<String>>>,
    done: CancellationToken,
) {
    let server = server.to_string();
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::debug!(server = %server, "MCP server stderr: {line}");
            let mut t = lock(&tail);
            if t.len() == STDERR_TAIL {
                t.pop_front();
            }
            t.push_back(line);
        }
        done.cancel();
    });
}

pub(super) fn with_tail(reason: String, tail: &Mutex<VecDeque<String>>) -> String {
    let t = lock(tail);
    let lines: Vec<&str> = t
        .iter()
        .map(String::as_str)
        .filter(|l| !l.trim().is_empty())
        .collect();
    if lines.is_empty() {
        reason
    } else {
        let last = &lines[lines.len().saturating_sub(3)..];
        format!("{reason}; its last error output: {}", last.join(" | "))
    }
}
