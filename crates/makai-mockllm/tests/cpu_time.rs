//! `examples/cpu_time.rs`, the measuring tool behind every figure of
//! `scripts/bench-peers.sh` and `scripts/bench-cli.sh`: what it writes is the
//! command's own CPU time and peak memory, and it returns the command's exit
//! code.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

/// The example as `cargo test` builds it, beside this test's own binary
/// (`target/<profile>/deps/..` → `target/<profile>/examples/cpu_time`).
fn cpu_time() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(|d| d.parent()).unwrap();
    let path = profile_dir.join("examples").join("cpu_time");
    assert!(
        path.is_file(),
        "{} is missing: `cargo test` without target filters builds the examples; \
         alone, build it first (cargo build -p makai-mockllm --example cpu_time)",
        path.display()
    );
    path
}

/// Runs `cpu_time OUT command...`; returns the exit code and the three
/// figures written (CPU seconds, peak KiB, user seconds).
fn measure(command: &[&str]) -> (Option<i32>, f64, u64, f64) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t");
    let status = Command::new(cpu_time())
        .arg(&out)
        .args(command)
        .status()
        .unwrap();
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    let fields: Vec<&str> = text.split_whitespace().collect();
    assert_eq!(fields.len(), 3, "cpu_time wrote {text:?}");
    (
        status.code(),
        fields[0].parse().unwrap(),
        fields[1].parse().unwrap(),
        fields[2].parse().unwrap(),
    )
}

#[test]
fn the_peak_memory_is_the_commands_own() {
    // dd holds one 64 MiB block in memory.
    let (code, _, peak_kib, _) = measure(&[
        "dd",
        "if=/dev/zero",
        "of=/dev/null",
        "bs=64M",
        "count=1",
        "status=none",
    ]);
    assert_eq!(code, Some(0));
    assert!(peak_kib >= 64 * 1024, "peak {peak_kib} KiB");
    // A small command is not charged the tool's own memory or another's.
    let (_, _, small_kib, _) = measure(&["true"]);
    assert!(small_kib < 16 * 1024, "peak of `true`: {small_kib} KiB");
}

#[test]
fn the_cpu_time_is_the_commands_own_and_no_more_than_it_ran() {
    let started = Instant::now();
    let (code, cpu, _, user) = measure(&[
        "sh",
        "-c",
        "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done",
    ]);
    let wall = started.elapsed().as_secs_f64();
    assert_eq!(code, Some(0));
    // One process at a time: never more CPU than the time it ran; a busy
    // loop of 200,000 rounds takes some.
    assert!(cpu > 0.01, "cpu {cpu} s");
    assert!(cpu <= wall, "cpu {cpu} s in {wall} s");
    assert!(user <= cpu, "user {user} s of {cpu} s");
    // Sleeping costs next to nothing.
    let (_, sleeping, _, _) = measure(&["sleep", "0.3"]);
    assert!(sleeping < 0.1, "sleep 0.3 cost {sleeping} s of CPU");
}

#[test]
fn the_commands_exit_code_is_returned() {
    let (code, ..) = measure(&["sh", "-c", "exit 3"]);
    assert_eq!(code, Some(3));
    let status = Command::new(cpu_time())
        .arg(tempfile::tempdir().unwrap().path().join("t"))
        .arg("/nonexistent/command")
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(127));
}
