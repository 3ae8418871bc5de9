//! Benchmark: the `grep` tool against the `rg` binary on the same query over a
//! large tree (default: the Cargo registry sources).
//!
//! ```text
//! cargo run --release -p makai-coding --example grep_bench -- [--root DIR] [--runs N] [--pattern REGEX]...
//! ```
//!
//! Both sides search the whole tree with the same rules (hidden files yes,
//! `.git` no, `.gitignore` honoured without a repository) and a match limit
//! high enough that neither stops early. Each query runs once to warm the page
//! cache, then `--runs` times alternating; the median wall times and their
//! ratio are printed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use makai_coding::tools::grep::{GrepArgs, grep};
use makai_coding::tools::{CallCtx, PathPolicy, ToolEnv};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn rg_available() -> bool {
    Command::new("rg")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn run_rg(root: &PathBuf, pattern: &str) -> (Duration, usize) {
    let start = Instant::now();
    let out = Command::new("rg")
        .args([
            "--no-config",
            "--hidden",
            "--no-require-git",
            "-g",
            "!.git",
            "-n",
            "--no-heading",
            "--color",
            "never",
            "-e",
            pattern,
        ])
        .arg(root)
        .stderr(Stdio::null())
        .output()
        .expect("run rg");
    let took = start.elapsed();
    let lines = out.stdout.iter().filter(|&&b| b == b'\n').count();
    (took, lines)
}

async fn run_tool(env: &ToolEnv, pattern: &str) -> (Duration, u64) {
    let args = GrepArgs {
        pattern: pattern.to_string(),
        limit: Some(10_000_000),
        ..GrepArgs::default()
    };
    let start = Instant::now();
    let out = grep(env, args, &CallCtx::default())
        .await
        .expect("grep tool");
    let took = start.elapsed();
    (took, out.details["matches"].as_u64().unwrap_or(0))
}

#[tokio::main]
async fn main() {
    let mut root = dirs::home_dir()
        .map(|h| h.join(".cargo/registry/src"))
        .unwrap_or_else(|| PathBuf::from("."));
    let mut runs = 5usize;
    let mut patterns: Vec<String> = Vec::new();
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--root" => root = PathBuf::from(it.next().expect("--root DIR")),
            "--runs" => runs = it.next().expect("--runs N").parse().expect("a number"),
            "--pattern" => patterns.push(it.next().expect("--pattern REGEX")),
            other => {
                eprintln!("unknown argument {other}; see the file's header for usage");
                std::process::exit(2);
            }
        }
    }
    if patterns.is_empty() {
        patterns = vec![
            "ZZ_makai_no_such_text_ZZ".to_string(),
            r"fn\s+\w+_unchecked\(".to_string(),
            "unsafe impl Send for".to_string(),
        ];
    }
    let env = ToolEnv::new(&root).with_policy(PathPolicy::allow_all());
    let have_rg = rg_available();
    println!(
        "grep tool vs rg on {} ({} runs per query, median wall time; threads: {})",
        root.display(),
        runs,
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    );
    if !have_rg {
        println!("rg not found: only the tool is timed (Debian: apt-get install ripgrep)");
    }
    for pattern in &patterns {
        // Warm-up (page cache) for both.
        let (_, tool_matches) = run_tool(&env, pattern).await;
        let rg_matches = if have_rg {
            Some(run_rg(&root, pattern).1)
        } else {
            None
        };
        let mut tool_times = Vec::new();
        let mut rg_times = Vec::new();
        for _ in 0..runs {
            tool_times.push(run_tool(&env, pattern).await.0);
            if have_rg {
                rg_times.push(run_rg(&root, pattern).0);
            }
        }
        let t = median(tool_times);
        print!(
            "{pattern:<28} tool {:>8.1} ms ({tool_matches} matches)",
            t.as_secs_f64() * 1000.0
        );
        if have_rg {
            let r = median(rg_times);
            print!(
                " | rg {:>8.1} ms ({} lines) | ratio tool/rg {:.2}",
                r.as_secs_f64() * 1000.0,
                rg_matches.unwrap_or(0),
                t.as_secs_f64() / r.as_secs_f64()
            );
        }
        println!();
    }
}
