//! The idle timeout of a response body ([`IdleTimer`]).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use super::gate::Gated;

/// The idle timeout of one response body: one timer for the whole body, and
/// no clock read per network read.
///
/// A timer per read (`tokio::time::timeout` around each) is inserted into and
/// removed from the runtime's timer wheel at every network read, and an insertion
/// earlier than the parked driver's next wake-up wakes it: on the multi-thread
/// runtime, a wake-up of another worker per token event (BENCHMARKS.md). Noting
/// the time of each read instead cost a clock read per read (about 2% of the
/// client's user-space samples in `perf record`, streaming). Here a read only
/// sets a flag, and the timer ticks every `idle / IDLE_TICKS`, each tick set
/// from the time it fired (the clock is read once per tick). A tick that finds
/// no read since the previous one is quiet; `IDLE_TICKS` quiet ticks in a row
/// are a stall. So a stall is reported never sooner than `idle` after the last
/// data, and about `idle / IDLE_TICKS` later than that at most. Ticks missed
/// while the stream was not polled (a consumer that paused) count as one, so
/// data read on resuming is never followed by a stall of its own making.
pub(super) struct IdleTimer {
    tick: Duration,
    /// Data came since the last tick.
    read_since_tick: bool,
    /// Ticks in a row that found no data.
    quiet_ticks: u32,
    /// Polled only when it may have fired (`gate.rs`): a pending read would
    /// poll it at every network read.
    timer: Gated<Pin<Box<tokio::time::Sleep>>>,
}

/// The idle timeout asked for as zero ("none"): a year.
const NO_IDLE_TIMEOUT: Duration = Duration::from_secs(365 * 24 * 60 * 60);

/// Ticks per idle timeout (see [`IdleTimer`]).
const IDLE_TICKS: u32 = 8;

impl IdleTimer {
    /// A timer failing a read after `idle` without data; zero: after
    /// [`NO_IDLE_TIMEOUT`] (a branch in `read` for "never" cost the hot loop
    /// about 2% of its instructions per event).
    pub(super) fn new(idle: Duration) -> Self {
        let idle = if idle.is_zero() {
            NO_IDLE_TIMEOUT
        } else {
            idle
        };
        let tick = (idle / IDLE_TICKS).max(Duration::from_millis(1));
        IdleTimer {
            tick,
            read_since_tick: false,
            quiet_ticks: 0,
            timer: Gated::new(Box::pin(tokio::time::sleep(tick))),
        }
    }

    /// `read`'s output, or `Err` when no data came for `idle`.
    pub(super) async fn read<F: Future>(&mut self, read: F) -> Result<F::Output, ()> {
        let mut read = std::pin::pin!(read);
        loop {
            tokio::select! {
                biased;
                out = &mut read => {
                    self.read_since_tick = true;
                    return Ok(out);
                }
                () = &mut self.timer => {
                    if std::mem::take(&mut self.read_since_tick) {
                        self.quiet_ticks = 0;
                    } else {
                        self.quiet_ticks += 1;
                        if self.quiet_ticks >= IDLE_TICKS {
                            return Err(());
                        }
                    }
                    let next = tokio::time::Instant::now() + self.tick;
                    self.timer.inner_mut().as_mut().reset(next);
                    self.timer.rearm();
                }
            }
        }
    }
}
