//! A stdio MCP server for makai-mcp's tests: precise cases (slow start, crash
//! mid-call, a call that never returns, list_changed, error and image
//! results, ...). Not for use outside tests.
//!
//! ```text
//! makai-mcp-testserver [--start-delay-ms N] [--exit-at-start CODE]
//!                      [--crash-after-ms N] [--log FILE] [--builtin DIR [--dry-run]]
//! ```
//!
//! `--builtin DIR` serves makai's built-in tools confined to DIR instead (what
//! `makai mcp serve` does), through `makai_mcp::serve_builtin_tools_stdio`.

mod cases;

use std::path::PathBuf;
use std::time::Duration;

use rmcp::ServiceExt;

#[derive(Default)]
struct Args {
    start_delay_ms: u64,
    exit_at_start: Option<i32>,
    crash_after_ms: Option<u64>,
    log: Option<PathBuf>,
    builtin: Option<PathBuf>,
    dry_run: bool,
}

fn parse() -> Result<Args, String> {
    let mut a = Args::default();
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--start-delay-ms" => {
                a.start_delay_ms = value()?.parse().map_err(|e| format!("{e}"))?
            }
            "--exit-at-start" => {
                a.exit_at_start = Some(value()?.parse().map_err(|e| format!("{e}"))?)
            }
            "--crash-after-ms" => {
                a.crash_after_ms = Some(value()?.parse().map_err(|e| format!("{e}"))?)
            }
            "--log" => a.log = Some(PathBuf::from(value()?)),
            "--builtin" => a.builtin = Some(PathBuf::from(value()?)),
            "--dry-run" => a.dry_run = true,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(a)
}

#[tokio::main]
async fn main() {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("makai-mcp-testserver: {e}");
            std::process::exit(2);
        }
    };
    if let Some(code) = args.exit_at_start {
        eprintln!("makai-mcp-testserver: refusing to start (exit code {code})");
        std::process::exit(code);
    }
    if let Some(dir) = args.builtin {
        let env = makai_coding::tools::ToolEnv::new(dir).with_dry_run(args.dry_run);
        if let Err(e) = makai_mcp::serve_builtin_tools_stdio(env).await {
            eprintln!("{e}");
            std::process::exit(1);
        }
        return;
    }
    if args.start_delay_ms > 0 {
        tokio::time::sleep(Duration::from_millis(args.start_delay_ms)).await;
    }
    if let Some(ms) = args.crash_after_ms {
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            eprintln!("makai-mcp-testserver: crashing after {ms} ms as asked");
            std::process::exit(9);
        });
    }
    let server = cases::Cases::new(args.log);
    match server.serve(rmcp::transport::stdio()).await {
        Ok(running) => {
            // Test server: it ends when the client goes, however it goes.
            let _ = running.waiting().await;
        }
        Err(e) => {
            eprintln!("makai-mcp-testserver: handshake failed: {e}");
            std::process::exit(1);
        }
    }
}
