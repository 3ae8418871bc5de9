//! Decoding throughput per wire API: the figure for BENCHMARKS.md.
//!
//! Runs each workload of the `decode` bench (bytes in memory to final message via
//! `makai_ai::decode_body`, on one thread) for a few seconds and prints SSE
//! events per second and body megabytes per second.
//!
//! Rates are per second of the thread's CPU time (Linux
//! `/proc/thread-self/schedstat`; wall-clock time elsewhere), so they are per
//! core and hold up on a busy machine. The run is split into ten batches:
//! `events/s`, `deltas/s`, `MB/s` and `ms/body` are from the median batch,
//! `best ev/s` from the fastest, `wall ev/s` is all events over wall-clock time.
//!
//! ```text
//! cargo run --release -p makai-ai --example decode_throughput [-- SECONDS_PER_WORKLOAD [FILTER]]
//! ```

use std::hint::black_box;
use std::time::{Duration, Instant};

use makai_ai::decode_body;

#[path = "../benches/workloads/mod.rs"]
mod workloads;

fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let seconds: f64 = match args.next() {
        Some(s) => s.parse().map_err(|e| {
            format!("the first argument must be seconds per workload, got {s:?} ({e})")
        })?,
        None => 3.0,
    };
    let filter = args.next().unwrap_or_default();
    let budget = Duration::from_secs_f64(seconds);
    if cfg!(debug_assertions) {
        eprintln!("warning: a debug build; run with --release for meaningful figures");
    }
    println!(
        "{:<40} {:>6} {:>6} {:>6} {:>9} {:>12} {:>12} {:>8} {:>12} {:>12}",
        "workload",
        "events",
        "deltas",
        "MB",
        "ms/body",
        "events/s",
        "deltas/s",
        "MB/s",
        "best ev/s",
        "wall ev/s"
    );
    for w in workloads::all() {
        if !w.name.contains(&filter) {
            continue;
        }
        w.verify()?;
        let model = w.model();
        let chunks = w.chunks();
        // Warm up (allocator, caches), then time whole bodies until the budget is spent.
        for _ in 0..3 {
            black_box(decode_body(&model, chunks.iter().copied()));
        }
        // Time batches of whole bodies until the budget is spent; report the
        // median batch and the best one (the least disturbed by other processes).
        let mut rates = Vec::new();
        let mut total_runs = 0u64;
        let mut total_wall = 0.0;
        let start = Instant::now();
        while start.elapsed() < budget || rates.len() < 3 {
            let (runs, cpu, wall) = batch(&model, &chunks, budget / 10);
            rates.push(runs as f64 / cpu);
            total_runs += runs;
            total_wall += wall;
        }
        rates.sort_by(f64::total_cmp);
        let median = rates[rates.len() / 2];
        let best = rates[rates.len() - 1];
        let mb = w.body.len() as f64 / 1e6;
        let events = w.events as f64;
        println!(
            "{:<40} {:>6} {:>6} {:>6.2} {:>9.3} {:>12.0} {:>12.0} {:>8.1} {:>12.0} {:>12.0}",
            w.name,
            w.events,
            w.deltas,
            mb,
            1e3 / median,
            events * median,
            w.deltas as f64 * median,
            mb * median,
            events * best,
            events * total_runs as f64 / total_wall,
        );
    }
    Ok(())
}

/// Decodes the body repeatedly for about `time`; returns the runs, the CPU
/// seconds and the wall-clock seconds they took.
fn batch(model: &makai_ai::Model, chunks: &[&[u8]], time: Duration) -> (u64, f64, f64) {
    let mut runs = 0u64;
    let cpu_start = thread_cpu_ns();
    let start = Instant::now();
    let wall = loop {
        black_box(decode_body(black_box(model), chunks.iter().copied()));
        runs += 1;
        let elapsed = start.elapsed();
        if elapsed >= time {
            break elapsed.as_secs_f64();
        }
    };
    let cpu = match (cpu_start, thread_cpu_ns()) {
        (Some(a), Some(b)) if b > a => (b - a) as f64 / 1e9,
        _ => wall,
    };
    (runs, cpu, wall)
}

/// Nanoseconds this thread has run on a CPU, where Linux reports it.
fn thread_cpu_ns() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    stat.split_whitespace().next()?.parse().ok()
}
