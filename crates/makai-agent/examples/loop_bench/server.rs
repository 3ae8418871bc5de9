//! The bench script's server as a child process.
//!
//! The scripted server runs in its own process (the `makai-mockllm` binary), so
//! the bench process's CPU time and memory are the agent's alone, as they are
//! against an external server given with `MOCK_URL`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::Pacing;

const BIN: &str = "makai-mockllm";

/// A running `makai-mockllm --bench-tokens ...`; stopped when dropped.
pub struct ChildServer {
    child: Child,
    /// Its base URL, `/v1` included.
    pub base_url: String,
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the scripted server with the bench script, written as `pacing` says.
pub fn start(tokens: usize, tool_rounds: usize, pacing: Pacing) -> Result<ChildServer, String> {
    let bin = binary()?;
    let mut command = Command::new(&bin);
    command
        .args(["--port", "0", "--no-record", "--bench-tokens"])
        .arg(tokens.to_string())
        .arg("--bench-tool-rounds")
        .arg(tool_rounds.to_string());
    if let Pacing::Stream { delay_us } = pacing {
        command.arg("--bench-delay-us").arg(delay_us.to_string());
    }
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
    let mut line = String::new();
    let read = child
        .stdout
        .take()
        .map(|out| BufReader::new(out).read_line(&mut line));
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .map(str::to_string);
    match (read, url) {
        (Some(Ok(_)), Some(url)) => Ok(ChildServer {
            child,
            base_url: format!("{url}/v1"),
        }),
        _ => {
            let _ = child.kill();
            let _ = child.wait();
            Err(format!(
                "{} did not report its address (it printed {:?})",
                bin.display(),
                line.trim()
            ))
        }
    }
}

/// `MOCKLLM_BIN`, or `makai-mockllm` in this build's target directory (built
/// with this bench's profile when missing and the bench runs under `cargo run`).
fn binary() -> Result<PathBuf, String> {
    if let Ok(path) = std::env::var("MOCKLLM_BIN") {
        return Ok(PathBuf::from(path));
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot locate this bench: {e}"))?;
    // target/<profile>/examples/loop_bench
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or("cannot locate the target directory")?;
    let candidate = profile_dir.join(BIN);
    if candidate.is_file() {
        return Ok(candidate);
    }
    let hint = format!(
        "the scripted server binary was not found at {}: build it with \
         `cargo build --release -p makai-mockllm`, or set MOCK_URL or MOCKLLM_BIN",
        candidate.display()
    );
    let Ok(cargo) = std::env::var("CARGO") else {
        return Err(hint);
    };
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => "dev".to_string(),
        Some(name) => name.to_string(),
        None => return Err(hint),
    };
    eprintln!("loop_bench: building {BIN} (profile {profile}) first");
    let status = Command::new(cargo)
        .args([
            "build",
            "--quiet",
            "--profile",
            &profile,
            "-p",
            BIN,
            "--bin",
            BIN,
        ])
        .status()
        .map_err(|e| format!("{hint} ({e})"))?;
    if status.success() && candidate.is_file() {
        Ok(candidate)
    } else {
        Err(hint)
    }
}
