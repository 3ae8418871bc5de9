//! Read pacing: a fast stream read at most once per interval.
//!
//! A provider that streams a token every millisecond costs its client a
//! wake-up from `epoll_wait` and a `read` per token, which on this project's
//! machine is most of the CPU a token event costs (BENCHMARKS.md). A reader
//! that shows text to a person (a terminal UI draws at most 30 frames a
//! second) gains nothing from reading that often. With pacing, once reads come
//! closer together than the interval, the next read waits until an interval
//! after the last one, and then takes everything that arrived meanwhile in one
//! wake-up and one `read`.
//!
//! What it never delays:
//! - the first read of a body, or any read after a gap of at least the
//!   interval (a stream slower than the interval is read as it arrives);
//! - the read after one that filled the read buffer (more is waiting);
//! - bytes already read: pacing only decides when to ask the socket again.
//!
//! Data that arrives more than an interval after a pause ended makes the
//! stream slow again, until two reads come close together.
//!
//! During a pause the socket's receive low-water mark is raised
//! ([`super::low_water`]): Tokio's sockets are edge-triggered, so without it
//! each segment arriving during the pause would still wake the runtime from
//! `epoll_wait`, only to find no task waiting for the socket. The mark is
//! lowered when the pause ends, which reports what arrived meanwhile, and
//! before the connection goes back to the pool.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::time::{Instant, Sleep};

use super::MAX_READ_BUFFER;

/// The receive low-water mark during a pause: the system wakes the runtime
/// only if this much arrives before the pause ends.
pub(crate) const PAUSED_LOW_WATER: usize = MAX_READ_BUFFER;

/// When a body's next socket read may happen (see the module's docs).
pub(crate) struct ReadPacing {
    interval: Duration,
    /// Set while the next read waits for it; made at the first pause.
    pause: Option<Pin<Box<Sleep>>>,
    /// The next read waits for `pause`.
    armed: bool,
    /// When the last read returned data, or the last pause ended.
    since: Option<Instant>,
}

impl ReadPacing {
    /// Pacing at `interval`.
    pub(crate) fn new(interval: Duration) -> Self {
        ReadPacing {
            interval,
            pause: None,
            armed: false,
            since: None,
        }
    }

    /// Ready when the socket may be read.
    pub(crate) fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if self.armed {
            if let Some(pause) = self.pause.as_mut() {
                ready!(pause.as_mut().poll(cx));
                // Data that comes within an interval of the pause's end
                // keeps the stream fast.
                self.since = Some(pause.deadline());
            }
            self.armed = false;
        }
        Poll::Ready(())
    }

    /// A read returned data; `filled` when it filled the read buffer. The
    /// next read waits for a pause when this one came within an interval of
    /// the last read or pause, and did not fill the buffer.
    pub(crate) fn on_data(&mut self, filled: bool) {
        let now = Instant::now();
        let fast = self
            .since
            .is_some_and(|since| now.saturating_duration_since(since) < self.interval);
        self.armed = fast && !filled;
        if self.armed {
            let deadline = now + self.interval;
            match self.pause.as_mut() {
                Some(pause) => pause.as_mut().reset(deadline),
                None => self.pause = Some(Box::pin(tokio::time::sleep_until(deadline))),
            }
        }
        self.since = Some(now);
    }

    /// The socket's receive low-water mark for now: [`PAUSED_LOW_WATER`]
    /// during a pause (arrivals do not wake the runtime), else 1. Lowered
    /// when the pause ends, so that what arrived meanwhile is reported.
    pub(crate) fn low_water(&self) -> usize {
        if self.armed { PAUSED_LOW_WATER } else { 1 }
    }

    /// Whether the next read waits for a pause (for tests).
    #[cfg(test)]
    pub(crate) fn is_armed(&self) -> bool {
        self.armed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::task::Waker;

    fn poll(p: &mut ReadPacing) -> Poll<()> {
        p.poll_ready(&mut Context::from_waker(Waker::noop()))
    }

    async fn advance_ms(ms: u64) {
        tokio::time::advance(Duration::from_millis(ms)).await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_stream_is_never_paused() {
        let mut p = ReadPacing::new(Duration::from_millis(8));
        for _ in 0..5 {
            assert_eq!(poll(&mut p), Poll::Ready(()));
            advance_ms(20).await;
            p.on_data(false);
            assert!(!p.is_armed());
            assert_eq!(p.low_water(), 1);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_fast_stream_is_read_once_per_interval_until_it_slows() {
        let mut p = ReadPacing::new(Duration::from_millis(8));
        p.on_data(false);
        assert!(!p.is_armed(), "the first read is never followed by a pause");
        // A read a millisecond later: fast.
        advance_ms(1).await;
        p.on_data(false);
        assert!(p.is_armed());
        assert_eq!(p.low_water(), PAUSED_LOW_WATER);
        // The pause lasts the interval from that read.
        advance_ms(7).await;
        assert_eq!(poll(&mut p), Poll::Pending);
        assert_eq!(p.low_water(), PAUSED_LOW_WATER);
        advance_ms(1).await;
        assert_eq!(poll(&mut p), Poll::Ready(()));
        assert_eq!(p.low_water(), 1, "lowered for the read after the pause");
        // Data soon after the pause's end: still fast, another pause.
        p.on_data(false);
        assert!(p.is_armed());
        advance_ms(8).await;
        assert_eq!(poll(&mut p), Poll::Ready(()));
        // The data comes long after the pause: slow again.
        advance_ms(30).await;
        p.on_data(false);
        assert!(!p.is_armed());
        assert_eq!(poll(&mut p), Poll::Ready(()));
    }

    #[tokio::test(start_paused = true)]
    async fn a_read_that_fills_the_buffer_is_followed_at_once() {
        let mut p = ReadPacing::new(Duration::from_millis(8));
        p.on_data(true);
        p.on_data(true);
        assert!(!p.is_armed());
        assert_eq!(poll(&mut p), Poll::Ready(()));
    }
}
