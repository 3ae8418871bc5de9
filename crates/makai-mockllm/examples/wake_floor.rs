//! What one wake-up costs on this machine: the floor under any reader that
//! sleeps between reads, paced or not.
//!
//! ```text
//! target/release-lto/examples/wake_floor            # 1, 8, 16 and 33 ms
//! INTERVALS_MS="16" WAKES=500 target/release-lto/examples/wake_floor
//! ```
//!
//! For each interval, sleeps `WAKES` times (default 200) on a Tokio timer
//! (the current-thread runtime: its driver waits in `epoll_wait` with the
//! timer's timeout, as a paced reader's pause does) and doing nothing else;
//! prints the process's CPU time (user plus system, `getrusage`) per wake-up,
//! measured around the loop only. Nothing is read: what it shows is what the
//! system charges a process for waking from a sleep of that length, which a
//! paced read cycle pays once per interval and a reader of each event once
//! per event.

use std::process::ExitCode;
use std::time::Duration;

use nix::sys::resource::{UsageWho, getrusage};

/// The process's CPU time so far, in seconds.
fn cpu_seconds() -> Result<f64, String> {
    let usage = getrusage(UsageWho::RUSAGE_SELF).map_err(|e| format!("getrusage: {e}"))?;
    let seconds = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
    Ok(seconds(usage.user_time()) + seconds(usage.system_time()))
}

fn numbers(name: &str, default: &str) -> Result<Vec<u64>, String> {
    let text = std::env::var(name).unwrap_or_else(|_| default.to_string());
    text.split_whitespace()
        .map(|v| {
            v.parse()
                .map_err(|_| format!("{name}={text:?}: {v:?} is not a whole number"))
        })
        .collect()
}

async fn run() -> Result<(), String> {
    let intervals = numbers("INTERVALS_MS", "1 8 16 33")?;
    let wakes = numbers("WAKES", "200")?
        .first()
        .copied()
        .unwrap_or(200)
        .max(1);
    for ms in intervals {
        let interval = Duration::from_millis(ms);
        // One wake-up first, so the timer wheel and the driver are warm.
        tokio::time::sleep(interval).await;
        let before = cpu_seconds()?;
        for _ in 0..wakes {
            tokio::time::sleep(interval).await;
        }
        let one_timer = (cpu_seconds()? - before) / wakes as f64;
        // The same wake-ups from two timers set one interval apart, each
        // set again for two intervals on when it fires: the next one is
        // always in the wheel already, so setting a timer never finds it
        // earlier than the one the driver will sleep for.
        let start = tokio::time::Instant::now();
        let mut due = Box::pin(tokio::time::sleep_until(start + interval));
        let mut after = Box::pin(tokio::time::sleep_until(start + interval * 2));
        let before = cpu_seconds()?;
        for k in 3..wakes + 3 {
            due.as_mut().await;
            due.as_mut().reset(start + interval * k as u32);
            std::mem::swap(&mut due, &mut after);
        }
        let two_timers = (cpu_seconds()? - before) / wakes as f64;
        println!(
            "interval_ms={ms} wakes={wakes} cpu_us_per_wake={:.2} with_two_timers={:.2}",
            one_timer * 1e6,
            two_timers * 1e6
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    let result = match runtime {
        Ok(rt) => rt.block_on(run()),
        Err(e) => Err(format!("cannot start the runtime: {e}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("wake_floor: {e}");
            ExitCode::from(2)
        }
    }
}
