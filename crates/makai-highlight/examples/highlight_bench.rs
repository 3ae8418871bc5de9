//! What highlighting a code block costs while it streams: a source file
//! grown a few bytes at a time (as a model writes it), highlighted at each
//! step as the UI does (the parser resuming after the last complete line),
//! then the same steps each highlighted from the start. Prints the load of
//! the grammars, the time per step both ways, and the whole file once.
//!
//! ```text
//! cargo run --release -p makai-highlight --example highlight_bench -- [FILE] [STEP_BYTES]
//! ```
//!
//! Defaults: this crate's `src/incremental.rs`, 16 bytes a step.

use std::time::Instant;

use makai_highlight::{Language, highlight};

fn main() {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/src/incremental.rs").to_string());
    let step: usize = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(16);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    };
    let started = Instant::now();
    let Some(language) = Language::from_path(&path) else {
        eprintln!("{path}: no grammar knows this file");
        std::process::exit(1);
    };
    println!(
        "{} ({} bytes, {} lines); grammars loaded in {:.1} ms",
        language.name(),
        text.len(),
        text.lines().count(),
        started.elapsed().as_secs_f64() * 1e3
    );
    // The first parse compiles the grammar's expressions: not counted below.
    let started = Instant::now();
    highlight(&language, &text);
    println!(
        "whole file, first time: {:.2} ms",
        started.elapsed().as_secs_f64() * 1e3
    );
    let other = Language::from_fence("json").unwrap_or(language);
    highlight(&other, "{}");
    let started = Instant::now();
    highlight(&language, &text);
    println!(
        "whole file, again: {:.2} ms",
        started.elapsed().as_secs_f64() * 1e3
    );
    let ends: Vec<usize> = (1..=text.len() / step)
        .map(|i| i * step)
        .filter(|&e| text.is_char_boundary(e))
        .collect();
    highlight(&other, "{}");
    let started = Instant::now();
    for &end in &ends {
        highlight(&language, &text[..end]);
    }
    let resumed = started.elapsed().as_secs_f64() / ends.len() as f64;
    let started = Instant::now();
    for &end in &ends {
        // Another text in between: each step starts over.
        highlight(&other, "{}");
        highlight(&language, &text[..end]);
    }
    let anew = started.elapsed().as_secs_f64() / ends.len() as f64;
    println!(
        "{} steps of {step} bytes: {:.1} µs a step resumed, {:.1} µs a step from the start ({:.0}x)",
        ends.len(),
        resumed * 1e6,
        anew * 1e6,
        anew / resumed
    );
}
