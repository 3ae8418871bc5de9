//! Runs a command and writes what it cost: its CPU time (user plus system, to
//! the microsecond, as the kernel accounts it) and its peak resident memory.
//!
//! ```text
//! cpu_time OUT_FILE COMMAND [ARGS...]
//! ```
//!
//! Writes `CPU_SECONDS PEAK_KIB USER_SECONDS` (for example `0.081234 14336
//! 0.031002`) to `OUT_FILE`: the user-space part is what a change to the
//! client's own code moves, without the kernel's share, which varies from run
//! to run with how the reads fall. The command's standard streams are its own,
//! and its exit code is returned.
//! `scripts/bench-peers.sh` measures every run with it: `/usr/bin/time` prints
//! hundredths of a second, too coarse for workloads of a tenth of a second.

use std::process::{Command, ExitCode};

use nix::sys::resource::{UsageWho, getrusage};

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let (Some(out), Some(program)) = (args.next(), args.next()) else {
        eprintln!("usage: cpu_time OUT_FILE COMMAND [ARGS...]");
        return ExitCode::from(2);
    };
    let status = match Command::new(&program).args(args).status() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("cpu_time: cannot run {}: {e}", program.to_string_lossy());
            return ExitCode::from(127);
        }
    };
    let usage = match getrusage(UsageWho::RUSAGE_CHILDREN) {
        Ok(u) => u,
        Err(e) => {
            eprintln!("cpu_time: getrusage: {e}");
            return ExitCode::from(2);
        }
    };
    let seconds = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
    let user = seconds(usage.user_time());
    let cpu = user + seconds(usage.system_time());
    // Linux reports the peak in KiB.
    let line = format!("{cpu:.6} {} {user:.6}\n", usage.max_rss());
    if let Err(e) = std::fs::write(&out, line) {
        eprintln!("cpu_time: cannot write {}: {e}", out.to_string_lossy());
        return ExitCode::from(2);
    }
    match status.code() {
        Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        None => ExitCode::from(1),
    }
}
