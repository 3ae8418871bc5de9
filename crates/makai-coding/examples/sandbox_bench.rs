//! Added latency of the sandbox per `bash` tool call (issue 15): the same
//! command through the real `bash` tool under each policy, interleaved so
//! every policy sees the same machine load, median and 90th percentile of
//! wall-clock time per call, and the ratio to `full-access` in one run.
//!
//! `cargo run --release -p makai-coding --example sandbox_bench` (env `RUNS`,
//! default 300; `COMMAND`, default `true`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use makai_coding::tools::{CallCtx, ToolEnv, run_builtin};
use makai_sandbox::{Policy, Sandbox, SandboxConfig};
use serde_json::json;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let command = std::env::var("COMMAND").unwrap_or_else(|_| "true".to_string());
    let dir = tempfile::tempdir()?;
    let home = dirs::home_dir();
    let makai_home = makai_coding::makai_home();
    let mut envs = Vec::new();
    for policy in Policy::ALL.into_iter().rev() {
        let config = SandboxConfig::new(policy).with_deny_read(SandboxConfig::default_deny_read(
            home.as_deref(),
            makai_home.as_deref(),
        ));
        let sb = Sandbox::new(config)?;
        if policy == Policy::WorkspaceWrite {
            println!("kernel: {}", sb.support());
        }
        envs.push((
            policy,
            ToolEnv::new(dir.path()).with_sandbox(Ok(Arc::new(sb))),
        ));
    }
    let args = json!({ "command": command });
    let ctx = CallCtx::default();
    // Warm-up: page cache, bash, the dynamic loader.
    for (_, env) in &envs {
        for _ in 0..10 {
            run_builtin("bash", env, args.clone(), &ctx).await?;
        }
    }
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(runs); envs.len()];
    for _ in 0..runs {
        for (i, (_, env)) in envs.iter().enumerate() {
            let t = Instant::now();
            // A failed command is an error (`ToolError::Output`) and ends the bench.
            run_builtin("bash", env, args.clone(), &ctx).await?;
            times[i].push(t.elapsed());
        }
    }
    let mut base = None;
    println!("{runs} calls of `bash -c {command}` per policy, interleaved");
    println!("| policy | median | p90 | added (median) | ratio to full-access |");
    println!("| --- | --- | --- | --- | --- |");
    for ((policy, _), t) in envs.iter().zip(times.iter_mut()) {
        t.sort();
        let med = percentile(t, 0.5);
        let p90 = percentile(t, 0.9);
        let b = *base.get_or_insert(med);
        println!(
            "| {policy} | {:.2} ms | {:.2} ms | {:+.2} ms | {:.2}x |",
            ms(med),
            ms(p90),
            ms(med) - ms(b),
            med.as_secs_f64() / b.as_secs_f64()
        );
    }
    Ok(())
}
