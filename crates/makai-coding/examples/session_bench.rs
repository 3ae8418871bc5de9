//! Session benchmark: append latency (write + flush, with and without fsync)
//! and the time to load a 10,000-entry session.
//!
//! ```text
//! cargo run --release -p makai-coding --example session_bench [-- DIR]
//! ```
//!
//! DIR (default: the system temp folder) should be on the disk you care about;
//! a tmpfs makes fsync free. Set `MAKAI_BENCH_KEEP=1` to keep the files.

use std::path::Path;
use std::time::{Duration, Instant};

use makai_agent::AgentMessage;
use makai_ai::{
    AssistantContent, AssistantMessage, StopReason, TextContent, ToolCall, ToolResultMessage,
    Usage, UserMessage,
};
use makai_coding::session::{Durability, Session, read_session_file};

fn user(i: usize) -> AgentMessage {
    UserMessage::text(format!(
        "Request {i}: please look at src/module_{i}.rs and make the parser accept trailing commas; \
         keep the existing error messages."
    ))
    .into()
}

fn assistant(i: usize) -> AgentMessage {
    let mut args = serde_json::Map::new();
    args.insert("path".into(), format!("src/module_{i}.rs").into());
    AssistantMessage {
        content: vec![
            AssistantContent::Text(TextContent {
                text: format!(
                    "I'll read the module first to see how the parser handles separators (step {i}). {}",
                    "Then I will change the loop that consumes tokens. ".repeat(6)
                ),
                text_signature: None,
            }),
            AssistantContent::ToolCall(ToolCall::new(format!("toolu_{i:08}"), "read", args)),
        ],
        api: "anthropic-messages".into(),
        provider: "anthropic".into(),
        model: "claude-sonnet-4-5".into(),
        usage: Box::new(Usage {
            input: 1200,
            output: 240,
            cache_read: 30_000,
            cache_write: 800,
            total_tokens: 32_240,
            ..Default::default()
        }),
        stop_reason: StopReason::ToolUse,
        timestamp: makai_ai::now_ms(),
        ..Default::default()
    }
    .into()
}

fn tool_result(i: usize) -> AgentMessage {
    let body: String = (1..=40)
        .map(|l| format!("{l}\tlet token_{l} = lexer.next_token()?; // module {i}\n"))
        .collect();
    ToolResultMessage::text(format!("toolu_{i:08}"), "read", body, false).into()
}

fn message(i: usize) -> AgentMessage {
    match i % 3 {
        0 => user(i),
        1 => assistant(i),
        _ => tool_result(i),
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx]
}

fn bench_appends(dir: &Path, durability: Durability, n: usize) {
    let mut s = Session::create_at(dir.join(format!("append-{durability:?}.jsonl")), "/bench");
    s.set_durability(durability);
    s.append_message(user(0)).ok();
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let m = message(i);
        let start = Instant::now();
        if let Err(e) = s.append_message(m) {
            eprintln!("append failed: {e}");
            return;
        }
        times.push(start.elapsed());
    }
    times.sort();
    println!(
        "append ({durability:?}, {n} entries): p50 {:?}  p99 {:?}  max {:?}",
        percentile(&times, 0.50),
        percentile(&times, 0.99),
        times[times.len() - 1]
    );
}

/// Runs `f` 11 times: (median wall time, mean CPU time of all threads).
fn measure(mut f: impl FnMut()) -> (Duration, Option<Duration>) {
    let mut wall = Vec::with_capacity(11);
    let cpu_before = process_cpu();
    for _ in 0..11 {
        let t = Instant::now();
        f();
        wall.push(t.elapsed());
    }
    let cpu = process_cpu().zip(cpu_before).map(|(a, b)| (a - b) / 11);
    wall.sort();
    (wall[5], cpu)
}

fn show(what: &str, (wall, cpu): (Duration, Option<Duration>)) {
    match cpu {
        Some(c) => println!("  {what}: median {wall:?} wall, {c:?} CPU (all threads)"),
        None => println!("  {what}: median {wall:?} wall"),
    }
}

fn bench_load(dir: &Path, n: usize, light: bool) {
    let path = dir.join(format!(
        "load-{n}-{}.jsonl",
        if light { "light" } else { "heavy" }
    ));
    let mut s = Session::create_at(&path, "/bench");
    s.set_durability(Durability::Flush);
    // Appended in batches of 100 entries per write to build the file quickly.
    let mut i = 0;
    while i < n {
        let batch: Vec<_> = (i..(i + 100).min(n))
            .map(|j| {
                let m = if light && j % 3 == 2 {
                    ToolResultMessage::text(
                        format!("toolu_{j:08}"),
                        "ls",
                        "src/\nCargo.toml",
                        false,
                    )
                    .into()
                } else {
                    message(j)
                };
                makai_coding::session::NewEntry::Message(m)
            })
            .collect();
        i += batch.len();
        if let Err(e) = s.append_all(batch) {
            eprintln!("building the file failed: {e}");
            return;
        }
    }
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    println!(
        "load {n} entries, {:.1} MB ({}):",
        size as f64 / 1e6,
        if light {
            "short tool results"
        } else {
            "2 KB tool results"
        }
    );
    show(
        "read + parse",
        measure(|| {
            let loaded = read_session_file(&path);
            assert!(loaded.is_ok());
        }),
    );
    show(
        "Session::open (parse + tree)",
        measure(|| {
            let s = Session::open(&path);
            assert!(s.as_ref().map(|s| s.entries().len() == n).unwrap_or(false));
        }),
    );
    let Ok(session) = Session::open(&path) else {
        return;
    };
    show(
        "context at the leaf (path_to_leaf)",
        measure(|| {
            assert_eq!(session.path_to_leaf().len(), n);
        }),
    );
}

/// CPU time of this process so far (all threads), from /proc (Linux, 100 Hz ticks).
fn process_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(Duration::from_millis((utime + stime) * 10))
}

fn main() {
    let base = std::env::args()
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let dir = match tempfile::tempdir_in(&base) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("cannot create a folder in {}: {e}", base.display());
            std::process::exit(1);
        }
    };
    println!("session bench in {}", dir.path().display());
    bench_appends(dir.path(), Durability::Fsync, 2_000);
    bench_appends(dir.path(), Durability::Flush, 2_000);
    bench_load(dir.path(), 10_000, false);
    bench_load(dir.path(), 10_000, true);
    if std::env::var_os("MAKAI_BENCH_KEEP").is_some() {
        let kept = dir.keep();
        println!("kept the files in {}", kept.display());
    }
}
