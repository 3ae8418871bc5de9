//! How fast `bash` output is cleaned as a terminal shows it
//! (`makai_coding::tools::terminal_text`): plain lines, coloured lines and
//! progress redraws, fed in 64 KiB chunks as a command's pipe delivers
//! them. `cargo run --release -p makai-coding --example terminal_text_throughput`.

use std::time::Instant;

use makai_coding::tools::terminal_text::TerminalText;

/// The best of five passes over `total` bytes of `chunk` repeated.
fn run(name: &str, chunk: &[u8], total: usize) {
    let mut best = f64::MAX;
    for _ in 0..5 {
        let mut cleaner = TerminalText::new();
        let mut out = Vec::with_capacity(64 * 1024);
        let started = Instant::now();
        let mut fed = 0;
        while fed < total {
            out.clear();
            cleaner.feed(chunk, &mut out);
            fed += chunk.len();
        }
        best = best.min(started.elapsed().as_secs_f64());
        std::hint::black_box(&out);
    }
    let per_100_mib = best * 1000.0 * (100.0 * 1_048_576.0) / total as f64;
    println!("{name}: {per_100_mib:.1} ms per 100 MiB");
}

/// `line` for each of 0, 1, ... as one chunk of at most 64 KiB.
fn chunk(line: impl Fn(usize) -> String) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while out.len() < 64 * 1024 {
        out.extend(line(i).into_bytes());
        i += 1;
    }
    out.truncate(64 * 1024);
    out
}

fn main() {
    let total = 200 * 1_048_576;
    run(
        "plain lines",
        &chunk(|i| format!("line {i:05} of a build log with some words in it\n")),
        total,
    );
    run(
        "coloured lines",
        &chunk(|i| {
            format!("\x1b[1;32m   Compiling\x1b[0m crate-{i} v0.1.0 (\x1b[2m/src\x1b[0m)\n")
        }),
        total,
    );
    run(
        "progress redraws (CR)",
        &chunk(|i| format!("\r[{:>3}%] downloading {i}", i % 100)),
        total,
    );
}
