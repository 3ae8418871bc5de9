//! `bash`: run `bash -c COMMAND` in the working directory, in its own process
//! group, streaming merged stdout/stderr as updates; on abort or timeout the
//! whole group is killed (SIGTERM, then SIGKILL) so no grandchild survives.

use std::os::fd::OwnedFd;
use std::process::Stdio;
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio::process::Child;
use tokio::time::{Instant, MissedTickBehavior};

use super::args::opt_number;
use super::bash_output::OutputAccumulator;
use super::truncate::{MAX_BYTES, MAX_LINES};
use super::{CallCtx, ToolEnv, ToolError, ToolOutput};

/// Minimum time between two streamed updates.
pub const UPDATE_INTERVAL: Duration = Duration::from_millis(100);
/// How long processes get to exit after SIGTERM before SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_millis(1500);
/// After the shell exits, how long to wait for more output from leftovers
/// (background jobs) still holding the pipe.
const DRAIN_IDLE: Duration = Duration::from_millis(100);
/// Longest time spent reading leftovers after the shell exited.
const DRAIN_MAX: Duration = Duration::from_millis(1000);
/// Longest timeout accepted, in seconds (about 24 days).
const MAX_TIMEOUT_SECS: f64 = 2_147_483.0;

/// Arguments of `bash`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BashArgs {
    /// Bash command to execute.
    pub command: String,
    /// Timeout in seconds (optional; no timeout by default).
    #[serde(default, deserialize_with = "opt_number")]
    pub timeout: Option<f64>,
}

/// The tool's description for the model.
pub fn description() -> String {
    format!(
        "Execute a bash command in the current working directory. Returns stdout and stderr (merged). \
         Output is truncated to the last {MAX_LINES} lines or {}KB (whichever is hit first); when truncated, \
         the full output is saved to a temporary file whose path is given. A non-zero exit code is reported as an error. \
         Optionally provide a timeout in seconds.",
        MAX_BYTES / 1024
    )
}

enum Ending {
    Exited(std::process::ExitStatus),
    TimedOut(f64),
    Aborted,
}

/// Runs `bash`.
pub async fn bash(env: &ToolEnv, args: BashArgs, ctx: &CallCtx) -> Result<ToolOutput, ToolError> {
    ctx.check()?;
    if args.command.trim().is_empty() {
        return Err(ToolError::invalid("bash", "command is empty"));
    }
    let timeout = match args.timeout {
        None => None,
        Some(t) if t.is_finite() && t > 0.0 && t <= MAX_TIMEOUT_SECS => Some(t),
        Some(t) => {
            return Err(ToolError::invalid(
                "bash",
                format!(
                    "timeout must be a positive number of seconds up to {MAX_TIMEOUT_SECS}, got {t}"
                ),
            ));
        }
    };
    let cwd_shown = env.cwd.display().to_string();
    if env.dry_run {
        let limit = timeout.map_or("no timeout".to_string(), |t| format!("timeout {t} s"));
        return Ok(ToolOutput::text(format!(
            "Dry run: would run this command with `bash -c` in {cwd_shown} ({limit}). Nothing was executed.\n\n{}",
            args.command
        ))
        .with_details(json!({
            "dryRun": true,
            "command": args.command,
            "cwd": cwd_shown,
            "timeout": timeout,
        })));
    }
    if !env.cwd.is_dir() {
        return Err(ToolError::Failed(format!(
            "Working directory does not exist: {cwd_shown}. Cannot execute bash commands."
        )));
    }
    super::bash_escalate::run(env, &args, timeout, ctx).await
}

/// Runs the command once under `confinement` (`None`: as makai's own child).
pub(crate) async fn run_command(
    env: &ToolEnv,
    args: &BashArgs,
    timeout: Option<f64>,
    ctx: &CallCtx,
    confinement: Option<makai_sandbox::Confinement>,
) -> Result<ToolOutput, ToolError> {
    // The shell leads a process group of its own, so that stopping it stops
    // what it started. Inside a sandbox that refuses `setpgid` (makai's own,
    // when makai runs as a sandboxed MCP server) it stays in makai's group,
    // and only the shell itself is signalled.
    let (mut child, reader, own_group) =
        match spawn_shell(env, args, ctx, confinement.as_ref(), true) {
            Err(e) if e.raw_os_error() == Some(Errno::EPERM as i32) => {
                tracing::debug!(
                    "setpgid refused (a sandbox around makai); bash runs in makai's process group"
                );
                let (child, reader) = spawn_shell(env, args, ctx, confinement.as_ref(), false)
                    .map_err(|e| spawn_error(confinement.as_ref(), e))?;
                (child, reader, false)
            }
            Err(e) => return Err(spawn_error(confinement.as_ref(), e)),
            Ok((child, reader)) => (child, reader, true),
        };
    let Some(pid) = child.id() else {
        return Err(ToolError::Failed(
            "bash exited before it could be tracked".to_string(),
        ));
    };
    let pgid = Stopper {
        pid: Pid::from_raw(pid as i32),
        own_group,
    };
    let mut rx = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(reader))
        .map_err(|e| ToolError::Failed(format!("Could not read bash's output: {e}")))?;

    let temp_dir = env.temp_dir.clone().unwrap_or_else(std::env::temp_dir);
    let mut acc = OutputAccumulator::new(temp_dir);
    let mut chunk = vec![0u8; 64 * 1024];
    let mut tick = tokio::time::interval(UPDATE_INTERVAL);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut dirty = false;
    let deadline = timeout.map(|t| Instant::now() + Duration::from_secs_f64(t));
    let sleep_until_deadline = async {
        match deadline {
            Some(d) => tokio::time::sleep_until(d).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(sleep_until_deadline);
    let mut pipe_open = true;

    let ending = loop {
        tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => {
                kill_group(pgid, &mut child).await;
                break Ending::Aborted;
            }
            _ = &mut sleep_until_deadline => {
                kill_group(pgid, &mut child).await;
                break Ending::TimedOut(timeout.unwrap_or_default());
            }
            read = rx.read(&mut chunk), if pipe_open => {
                match read {
                    Ok(0) | Err(_) => pipe_open = false,
                    Ok(n) => { acc.push(&chunk[..n]); dirty = true; }
                }
            }
            status = child.wait() => {
                match status {
                    Ok(st) => {
                        if pipe_open {
                            drain(&mut rx, &mut chunk, &mut acc).await;
                        }
                        break Ending::Exited(st);
                    }
                    Err(e) => {
                        kill_group(pgid, &mut child).await;
                        return Err(ToolError::Failed(format!("Waiting for bash failed: {e}")));
                    }
                }
            }
            _ = tick.tick() => {
                if dirty && ctx.on_update.is_some() {
                    dirty = false;
                    let snap = acc.snapshot();
                    ctx.update(ToolOutput::text(snap.text.clone()).with_details(snap.details()));
                }
            }
        }
    };
    // Under a sandbox nothing outlives its call: background processes still
    // running are stopped with their group (they cannot leave it).
    let leftovers = confinement.as_ref().is_some_and(|c| c.is_confined())
        && matches!(ending, Ending::Exited(_))
        && pgid.own_group
        && !group_gone(pgid);
    if leftovers {
        // The group may have exited already (ESRCH): nothing is left to kill.
        let _ = pgid.signal(Signal::SIGKILL); // ESRCH: they ended meanwhile.
    }
    acc.finish();
    let snap = acc.snapshot();
    let mut text = if snap.text.is_empty() {
        String::new()
    } else {
        snap.text.clone()
    };
    if let Some(notice) = snap.notice() {
        text.push_str("\n\n");
        text.push_str(&notice);
    }
    let mut details = snap.details();
    details["command"] = Value::String(args.command.clone());
    let (status_line, is_error) = match ending {
        Ending::Exited(st) => match st.code() {
            Some(code) => {
                details["exitCode"] = json!(code);
                if code == 0 {
                    (None, false)
                } else {
                    (Some(format!("Command exited with code {code}")), true)
                }
            }
            None => {
                use std::os::unix::process::ExitStatusExt;
                let sig = st.signal().unwrap_or(0);
                details["signal"] = json!(sig);
                (Some(format!("Command was killed by signal {sig}")), true)
            }
        },
        Ending::TimedOut(t) => {
            details["timedOut"] = Value::Bool(true);
            (Some(format!("Command timed out after {t} seconds")), true)
        }
        Ending::Aborted => {
            details["aborted"] = Value::Bool(true);
            (Some("Command aborted".to_string()), true)
        }
    };
    if let Some(c) = &confinement {
        details["sandbox"] = json!(c.policy().as_str());
        if is_error && c.is_confined() && looks_refused(&text) {
            details["sandboxDenied"] = Value::Bool(true);
        }
    }
    if leftovers {
        details["killedLeftovers"] = Value::Bool(true);
    }
    match status_line {
        Some(s) if text.is_empty() => text = s,
        Some(s) => {
            text.push_str("\n\n");
            text.push_str(&s);
        }
        None if text.is_empty() => text = "(no output)".to_string(),
        None => {}
    }
    if leftovers {
        text.push_str(
            "\n\nProcesses the command left running in the background were stopped: under the sandbox a command cannot outlive its call.",
        );
    }
    let output = ToolOutput {
        content: vec![makai_ai::UserContent::text(text)],
        details,
        usage: None,
        nested_calls: None,
    };
    if is_error {
        Err(ToolError::Output(output))
    } else {
        Ok(output)
    }
}

/// Error text that suggests the sandbox refused something (a write outside
/// the writable folders, the network, a refused system call).
pub fn looks_refused(output: &str) -> bool {
    const MARKERS: [&str; 6] = [
        "Permission denied",
        "Operation not permitted",
        "Read-only file system",
        "EACCES",
        "EPERM",
        "Network is unreachable",
    ];
    MARKERS.iter().any(|m| output.contains(m))
}

/// Reads what is left in the pipe after the shell exited: until EOF, until it
/// has been quiet for [`DRAIN_IDLE`], or for at most [`DRAIN_MAX`] (a
/// background job may hold the pipe open and keep writing).
async fn drain(
    rx: &mut tokio::net::unix::pipe::Receiver,
    chunk: &mut [u8],
    acc: &mut OutputAccumulator,
) {
    let until = Instant::now() + DRAIN_MAX;
    while Instant::now() < until {
        match tokio::time::timeout(DRAIN_IDLE, rx.read(chunk)).await {
            Ok(Ok(n)) if n > 0 => acc.push(&chunk[..n]),
            _ => return,
        }
    }
}

/// The bash child as it is stopped: its process group when it leads one,
/// else the shell alone.
#[derive(Clone, Copy, Debug)]
pub struct Stopper {
    /// The shell's pid (its group's id when it leads one).
    pub pid: Pid,
    /// Whether the shell leads a process group of its own.
    pub own_group: bool,
}

impl Stopper {
    /// Sends `signal` (`None`: only checks) to the group, or to the shell.
    fn signal(self, signal: impl Into<Option<Signal>>) -> nix::Result<()> {
        if self.own_group {
            killpg(self.pid, signal)
        } else {
            nix::sys::signal::kill(self.pid, signal)
        }
    }
}

/// Starts `bash -c <command>` with its output on one pipe, in a process
/// group of its own when `own_group`, told about the session of the call.
fn spawn_shell(
    env: &ToolEnv,
    args: &BashArgs,
    ctx: &CallCtx,
    confinement: Option<&makai_sandbox::Confinement>,
    own_group: bool,
) -> std::io::Result<(Child, std::io::PipeReader)> {
    let (reader, writer) = std::io::pipe()?;
    let writer2 = writer.try_clone()?;
    let mut cmd = match confinement {
        Some(c) => c.command("bash"),
        None => tokio::process::Command::new("bash"),
    };
    cmd.arg("-c")
        .arg(&args.command)
        .current_dir(&env.cwd)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(writer2)
        .kill_on_drop(false);
    if own_group {
        cmd.process_group(0);
    }
    if !env.expose_session {
        super::session_env::hide(&mut cmd);
    } else if let Some(session) = &ctx.session {
        let mut session = session.clone();
        session.file = env
            .session_file
            .as_ref()
            .and_then(|f| f.of(session.id.as_deref()));
        session.apply(&mut cmd);
    }
    let spawned = cmd.spawn();
    // Drop our copies of the pipe's write end so EOF arrives when the command's do.
    drop(cmd);
    Ok((spawned?, reader))
}

/// The error for a shell that did not start.
fn spawn_error(confinement: Option<&makai_sandbox::Confinement>, e: std::io::Error) -> ToolError {
    match confinement {
        Some(c) => ToolError::Failed(format!(
            "Could not start bash in the {} sandbox: {e}",
            c.policy()
        )),
        None => ToolError::Failed(format!("Could not start bash: {e}")),
    }
}

/// Sends SIGTERM to the process group (or the shell, [`Stopper`]), waits up
/// to [`KILL_GRACE`] for it to disappear, then sends SIGKILL; reaps the shell.
pub async fn kill_group(pgid: Stopper, child: &mut Child) {
    // ESRCH (the group exited already) leaves nothing to stop.
    let _ = pgid.signal(Signal::SIGTERM);
    let until = Instant::now() + KILL_GRACE;
    loop {
        // Reaping is best effort: the group kill below still runs.
        let _ = child.try_wait();
        if group_gone(pgid) {
            break;
        }
        if Instant::now() >= until {
            // As above: a group that is gone needs no SIGKILL.
            let _ = pgid.signal(Signal::SIGKILL);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A child that survives SIGKILL for 5 s is left to the kernel.
    let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
}

/// True when no live (non-zombie) process remains in the group (or, for a
/// shell without one, when the shell is gone).
fn group_gone(stopper: Stopper) -> bool {
    let pgid = stopper.pid;
    if matches!(stopper.signal(None), Err(Errno::ESRCH)) {
        return true;
    }
    if !stopper.own_group {
        return std::fs::read_to_string(format!("/proc/{pgid}/stat")).map_or(true, |stat| {
            stat.rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z'))
        });
    }
    // Orphans that nobody reaped yet stay as zombies and still "exist" for
    // kill(); look for live members instead.
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    for entry in dir.flatten() {
        let name = entry.file_name();
        let Some(s) = name.to_str() else { continue };
        if !s.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // Fields after the command name: state ppid pgrp ...
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let mut fields = stat[close + 1..].split_whitespace();
        let state = fields.next();
        let _ppid = fields.next();
        let pgrp = fields.next().and_then(|p| p.parse::<i32>().ok());
        if pgrp == Some(pgid.as_raw()) && state != Some("Z") {
            return false;
        }
    }
    true
}
