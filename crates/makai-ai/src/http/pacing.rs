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
//! A stream is fast once two reads in a row came less than an interval, and
//! more than a burst's microseconds, after the read before.
//!
//! What it never delays:
//! - the first reads of a body, or any read after a gap of at least the
//!   interval (a stream slower than the interval is read as it arrives);
//! - a burst: reads a few microseconds apart bring what is already on its
//!   way (a whole short response), and pausing them would only add latency;
//! - the read after one that filled the read buffer (more is waiting);
//! - bytes already read: pacing only decides when to ask the socket again.
//!
//! Data that arrives more than an interval after a pause ended makes the
//! stream slow again, until two reads come close together.
//!
//! During a pause the socket's receive low-water mark is raised
//! ([`super::low_water`]): Tokio's sockets are edge-triggered, so without it
//! each segment arriving during the pause would still wake the runtime from
//! `epoll_wait`, only to find no task waiting for the socket. When the pause
//! ends, the body reads the socket directly ([`super::tcp`]) and the mark
//! stays up while the stream is fast; it is lowered when a read finds
//! nothing (the body then waits for data as it arrives), when the stream
//! slows, and before the connection goes back to the pool.

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
    /// Set one interval after `pause` while the stream is fast: the pause
    /// after it, already in the runtime's timer wheel ([`ReadPacing::arm`]).
    following: Option<Pin<Box<Sleep>>>,
    /// The next read waits for `pause`.
    armed: bool,
    /// When the last read returned data, or the last pause ended.
    since: Option<Instant>,
    /// The read in progress is the first after a pause.
    after_pause: bool,
    /// Reads in a row that came a token's time after the one before
    /// (within the interval, not in a burst).
    trickling: u32,
}

/// How many reads in a row must come a token's time apart before the first
/// pause: one late segment of a burst (the server was descheduled a moment)
/// is not a stream of tokens.
const TRICKLING_READS: u32 = 2;

impl ReadPacing {
    /// Pacing at `interval`.
    pub(crate) fn new(interval: Duration) -> Self {
        ReadPacing {
            interval,
            pause: None,
            following: None,
            armed: false,
            since: None,
            after_pause: false,
            trickling: 0,
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
                self.after_pause = true;
            }
            self.armed = false;
        }
        Poll::Ready(())
    }

    /// A read returned data; `filled` when it filled the read buffer. The
    /// next read waits for a pause when this one did not fill the buffer and
    /// came within an interval of the last pause's end, or when it is the
    /// [`TRICKLING_READS`]th in a row to come within an interval of the read
    /// before it (but not so soon that the data was a burst already on its
    /// way: [`ReadPacing::burst_gap`]).
    pub(crate) fn on_data(&mut self, filled: bool) {
        let now = Instant::now();
        let gap = self.since.map(|since| now.saturating_duration_since(since));
        let fast = match gap {
            Some(gap) if gap < self.interval && self.after_pause => true,
            Some(gap) if gap < self.interval && gap >= self.burst_gap() => {
                self.trickling += 1;
                self.trickling >= TRICKLING_READS
            }
            _ => {
                self.trickling = 0;
                false
            }
        };
        self.armed = fast && !filled;
        if self.armed {
            // Right after a pause, the next one ends an interval after it
            // (`since` is its end), where `following` already is.
            let on_grid = self.after_pause.then_some(self.since).flatten();
            self.arm(now, on_grid);
        } else {
            // A slow stream: the following pause will not come.
            self.following = None;
        }
        self.since = Some(now);
        self.after_pause = false;
    }

    /// Sets the pause the next read waits for. While a stream stays fast
    /// the pauses keep to a grid of the interval, with two timers taking
    /// turns: when a pause ends, the next one (`following`) is already in the
    /// runtime's timer wheel, and the one set now (for an interval later) is
    /// never earlier than the timer the runtime will sleep for. Setting a
    /// timer earlier than that makes Tokio wake its own driver (an `eventfd`
    /// write, and an `epoll_wait` that returns at once), which at one stream
    /// was a second trip through the kernel per pause (`wake_floor`'s
    /// `with_two_timers`). `ended` is the end of the pause just over, if this
    /// read came right after one.
    fn arm(&mut self, now: Instant, ended: Option<Instant>) {
        let interval = self.interval;
        let next = ended.map(|end| end + interval).filter(|&at| at > now);
        match (next, self.following.take(), self.pause.take()) {
            (Some(at), Some(following), Some(mut done)) if following.deadline() == at => {
                done.as_mut().reset(at + interval);
                self.pause = Some(following);
                self.following = Some(done);
            }
            (_, following, pause) => {
                let at = now + interval;
                self.pause = Some(set_timer(pause, at));
                self.following = Some(set_timer(following, at + interval));
            }
        }
    }

    /// Reads closer together than this bring parts of one burst (a short
    /// response sent at once, segments back to back): pausing would delay the
    /// rest of what is already on its way and save no wake-up. A provider
    /// streaming 2,000 tokens a second sends one every 500 µs; a burst's
    /// segments come microseconds apart.
    fn burst_gap(&self) -> Duration {
        self.interval / 32
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

/// `timer` (made when there is none yet) set to end at `at`.
fn set_timer(timer: Option<Pin<Box<Sleep>>>, at: Instant) -> Pin<Box<Sleep>> {
    match timer {
        Some(mut timer) => {
            timer.as_mut().reset(at);
            timer
        }
        None => Box::pin(tokio::time::sleep_until(at)),
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
        // Two reads a millisecond apart: fast.
        advance_ms(1).await;
        p.on_data(false);
        assert!(!p.is_armed(), "one late segment is not yet a stream");
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
    async fn a_fast_stream_keeps_its_pauses_on_a_grid_of_the_interval() {
        let mut p = ReadPacing::new(Duration::from_millis(8));
        p.on_data(false);
        advance_ms(1).await;
        p.on_data(false);
        advance_ms(1).await;
        p.on_data(false);
        // Fast at 2 ms: the first pause ends at 10 ms.
        advance_ms(8).await;
        assert_eq!(poll(&mut p), Poll::Ready(()));
        // The read after it comes at 13 ms (the consumer took its time):
        // the next pause still ends at 18 ms, an interval after the last.
        advance_ms(3).await;
        p.on_data(false);
        assert!(p.is_armed());
        advance_ms(4).await;
        assert_eq!(poll(&mut p), Poll::Pending);
        advance_ms(1).await;
        assert_eq!(poll(&mut p), Poll::Ready(()));
        // And the one after at 26 ms.
        p.on_data(false);
        advance_ms(7).await;
        assert_eq!(poll(&mut p), Poll::Pending);
        advance_ms(1).await;
        assert_eq!(poll(&mut p), Poll::Ready(()));
        // A stream that slowed and became fast again starts a new grid: an
        // interval from the read that armed it.
        advance_ms(30).await;
        p.on_data(false);
        assert!(!p.is_armed());
        advance_ms(2).await;
        p.on_data(false);
        advance_ms(3).await;
        p.on_data(false);
        assert!(p.is_armed());
        advance_ms(7).await;
        assert_eq!(poll(&mut p), Poll::Pending);
        advance_ms(1).await;
        assert_eq!(poll(&mut p), Poll::Ready(()));
    }

    #[tokio::test(start_paused = true)]
    async fn the_reads_of_a_burst_are_never_paused() {
        let mut p = ReadPacing::new(Duration::from_millis(8));
        for _ in 0..50 {
            tokio::time::advance(Duration::from_micros(20)).await;
            p.on_data(false);
            assert!(!p.is_armed());
        }
        // One late segment is not a stream of tokens.
        advance_ms(1).await;
        p.on_data(false);
        assert!(!p.is_armed());
        tokio::time::advance(Duration::from_micros(20)).await;
        p.on_data(false);
        assert!(!p.is_armed());
        // Two reads in a row a token's time apart are.
        advance_ms(1).await;
        p.on_data(false);
        advance_ms(1).await;
        p.on_data(false);
        assert!(p.is_armed());
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
