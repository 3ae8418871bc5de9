//! HTTP/1 connections driven by the request that uses them, and their pool.
//!
//! hyper-util's pooled client runs each connection as a task of its own: every
//! network read of a streamed response wakes that task, which hands the bytes to
//! the request's task over a channel and is woken again when the request wants
//! more. On Tokio's multi-thread runtime the second wake-up of one poll (the
//! connection, after the agent woke its subscribers) pushes a task to the shared
//! queue and wakes another worker through the I/O driver: a write to an eventfd
//! and a context switch per token event (BENCHMARKS.md). Here the connection
//! future ([`hyper::client::conn::http1::Connection`]) is polled by the request
//! itself, while it waits for the response head and while the body is read; the
//! wake-ups the connection and the body give each other during that poll are
//! absorbed ([`Quiet`]) instead of rescheduling the task. A connection whose
//! body was read to the end goes back to a small pool, keyed by scheme and
//! authority, for the next request to the same server.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::task::AtomicWaker;
use http_body_util::Full;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::client::conn::http1::SendRequest;

/// A connection's I/O: the future that reads and writes its socket.
pub(crate) type ConnIo = Pin<Box<dyn Future<Output = hyper::Result<()>> + Send>>;

/// One HTTP/1 connection: the handle requests are sent through, its I/O, and
/// the unread end of the last response, if the response was complete without it.
pub(crate) struct Conn {
    pub(crate) sender: SendRequest<Full<Bytes>>,
    pub(crate) driven: Driven,
    rest: Option<Incoming>,
}

/// Frames of a finished response's unread end read when its connection is
/// taken again, from what already arrived.
const FRAMES_OF_THE_REST: usize = 4;

impl Conn {
    pub(crate) fn new(sender: SendRequest<Full<Bytes>>, io: ConnIo) -> Self {
        Conn {
            sender,
            driven: Driven::new(io),
            rest: None,
        }
    }

    /// Whether the connection is open and can take a request now, without
    /// waiting: the last response's end has arrived and nothing else did.
    fn settle(&mut self) -> bool {
        let mut cx = Context::from_waker(Waker::noop());
        if let Some(rest) = self.rest.as_mut() {
            let mut ended = false;
            for _ in 0..FRAMES_OF_THE_REST {
                match self
                    .driven
                    .poll_with(&mut cx, |qcx| Pin::new(&mut *rest).poll_frame(qcx))
                {
                    Poll::Ready(None) => ended = true,
                    Poll::Ready(Some(Ok(_))) => ended = rest.is_end_stream(),
                    Poll::Ready(Some(Err(_))) | Poll::Pending => return false,
                }
                if ended {
                    break;
                }
            }
            if !ended {
                return false;
            }
            self.rest = None;
        }
        // The connection was not polled while idle: let it notice a close
        // (or anything else the server sent) and ask for the next request.
        let _pending: Poll<()> = self.driven.poll_with(&mut cx, |_| Poll::Pending);
        self.driven.io.is_some() && matches!(self.sender.poll_ready(&mut cx), Poll::Ready(Ok(())))
    }
}

/// Idle connections by `scheme://authority`.
pub(crate) struct Pool {
    idle: Mutex<HashMap<String, Vec<(Conn, Instant)>>>,
    keep: Duration,
}

impl Pool {
    /// A pool that keeps an idle connection for `keep`.
    pub(crate) fn new(keep: Duration) -> Self {
        Pool {
            idle: Mutex::new(HashMap::new()),
            keep,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Vec<(Conn, Instant)>>> {
        self.idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// An idle connection to `key` that can take a request now, if any.
    pub(crate) fn checkout(&self, key: &str) -> Option<Conn> {
        loop {
            let (mut conn, since) = self.lock().get_mut(key)?.pop()?;
            if since.elapsed() >= self.keep {
                continue;
            }
            if conn.settle() {
                tracing::debug!(server = key, "reusing a pooled model connection");
                return Some(conn);
            }
            tracing::debug!(server = key, "a pooled model connection cannot be reused");
        }
    }

    /// Keeps `conn` for the next request to `key`; drops expired connections.
    fn checkin(&self, key: String, conn: Conn) {
        let now = Instant::now();
        let mut idle = self.lock();
        idle.retain(|_, conns| {
            conns.retain(|(_, since)| now.duration_since(*since) < self.keep);
            !conns.is_empty()
        });
        tracing::debug!(server = %key, "model connection kept for reuse");
        idle.entry(key).or_default().push((conn, now));
    }
}

/// The waker a request polls its connection and body with. While the request
/// polls them ([`Driven::poll_with`]), a wake-up only notes that another round
/// is needed; outside it (the socket became readable), it wakes the task.
///
/// One atomic state decides which: a wake-up either turns `POLLING` into
/// `WOKEN` (the poller sees it when its round ends) or finds `IDLE` and wakes
/// the task; there is no moment in between for a wake-up to fall into. (Two
/// flags, read and then written by the waker, left one: a wake-up that read
/// "polling" just before the round ended was noted after the poller had
/// looked, and a response that had fully arrived was never read.)
struct Quiet {
    task: AtomicWaker,
    state: AtomicU8,
}

/// [`Quiet::state`]: nobody is polling; a wake-up wakes the task.
const IDLE: u8 = 0;
/// A round of polling is under way; a wake-up asks for another round.
const POLLING: u8 = 1;
/// A wake-up came during this round: poll again.
const WOKEN: u8 = 2;

impl Quiet {
    /// Starts a round of polling.
    fn begin(&self) {
        self.state.store(POLLING, Ordering::SeqCst);
    }

    /// Ends a round of polling; true when a wake-up came during it.
    fn end(&self) -> bool {
        self.state.swap(IDLE, Ordering::SeqCst) == WOKEN
    }

    /// Notes a wake-up of the round under way (a closed connection, say).
    fn note(&self) {
        let _ = self
            .state
            .compare_exchange(POLLING, WOKEN, Ordering::SeqCst, Ordering::SeqCst);
    }
}

impl Wake for Quiet {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        match self
            .state
            .compare_exchange(POLLING, WOKEN, Ordering::SeqCst, Ordering::SeqCst)
        {
            // Noted for the round under way, or already noted.
            Ok(_) | Err(WOKEN) => {}
            Err(_) => self.task.wake(),
        }
    }
}

/// A connection polled by the request that uses it.
pub(crate) struct Driven {
    io: Option<ConnIo>,
    quiet: Arc<Quiet>,
    waker: Waker,
}

impl Driven {
    pub(crate) fn new(io: ConnIo) -> Self {
        let quiet = Arc::new(Quiet {
            task: AtomicWaker::new(),
            state: AtomicU8::new(IDLE),
        });
        Driven {
            io: Some(io),
            waker: Waker::from(quiet.clone()),
            quiet,
        }
    }

    /// Polls `f` and the connection, again while either woke the other, until
    /// `f` is ready or both wait for the network. Every `Pending` is returned
    /// after a round in which neither was woken, so each has registered the
    /// task's waker (through [`Quiet`]) with what it waits for.
    pub(crate) fn poll_with<T>(
        &mut self,
        cx: &mut Context<'_>,
        mut f: impl FnMut(&mut Context<'_>) -> Poll<T>,
    ) -> Poll<T> {
        self.quiet.task.register(cx.waker());
        let mut qcx = Context::from_waker(&self.waker);
        loop {
            self.quiet.begin();
            let out = f(&mut qcx);
            if out.is_ready() {
                // A wake-up absorbed in this round is served by the next poll,
                // which polls both again.
                self.quiet.end();
                return out;
            }
            if let Some(io) = self.io.as_mut()
                && let Poll::Ready(result) = io.as_mut().poll(&mut qcx)
            {
                // Closed or failed: hyper has handed the error (or the end)
                // to the response and its body, which `f` reports.
                if let Err(e) = result {
                    tracing::debug!(error = %e, "model connection closed with an error");
                }
                self.io = None;
                self.quiet.note();
            }
            if !self.quiet.end() {
                return Poll::Pending;
            }
        }
    }
}

/// A response body read by polling its connection too. Read to the end, or
/// dropped after [`DrivenBody::complete`], it hands the connection back to its
/// pool; dropped otherwise (a cancelled or failed stream), it closes it, so the
/// server stops sending.
pub(crate) struct DrivenBody {
    incoming: Option<Incoming>,
    conn: Option<Conn>,
    pool: Arc<Pool>,
    key: String,
    complete: bool,
}

impl DrivenBody {
    pub(crate) fn new(incoming: Incoming, conn: Conn, pool: Arc<Pool>, key: String) -> Self {
        DrivenBody {
            incoming: Some(incoming),
            conn: Some(conn),
            pool,
            key,
            complete: false,
        }
    }

    /// The reader has what it needs (a stream's last event): whatever is left
    /// of the body (usually the chunked terminator, a moment later) does not
    /// stop the connection from being reused.
    pub(crate) fn complete(&mut self) {
        self.complete = true;
    }

    /// Hands the connection back to the pool, with the body's unread end.
    fn release(&mut self) {
        let Some(mut conn) = self.conn.take() else {
            return;
        };
        conn.rest = self.incoming.take().filter(|i| !i.is_end_stream());
        if conn.driven.io.is_some() {
            self.pool.checkin(std::mem::take(&mut self.key), conn);
        }
    }
}

impl Drop for DrivenBody {
    fn drop(&mut self) {
        if self.complete {
            self.release();
        }
    }
}

impl std::fmt::Debug for DrivenBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DrivenBody")
            .field("server", &self.key)
            .field("complete", &self.complete)
            .finish_non_exhaustive()
    }
}

impl Body for DrivenBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let this = self.get_mut();
        let (Some(incoming), Some(conn)) = (this.incoming.as_mut(), this.conn.as_mut()) else {
            return Poll::Ready(None);
        };
        let out = conn
            .driven
            .poll_with(cx, |qcx| Pin::new(&mut *incoming).poll_frame(qcx));
        let ended = match &out {
            Poll::Ready(None) => true,
            Poll::Ready(Some(Ok(_))) => incoming.is_end_stream(),
            _ => false,
        };
        if ended {
            this.release();
        }
        out
    }

    fn is_end_stream(&self) -> bool {
        self.incoming.as_ref().is_none_or(Incoming::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.incoming
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), Incoming::size_hint)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Barrier;
    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// Counts the wake-ups that reach the task.
    struct Counter(AtomicUsize);

    impl Wake for Counter {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Regression: a wake-up that came as a round of polling ended could be
    /// noted after the poller had looked and never reach the task, and a
    /// response that had fully arrived was never read (1 request in about
    /// 100,000 on the multi-thread runtime). Every wake-up must either make
    /// the round poll again or wake the task: exactly one of the two.
    #[test]
    fn a_wake_up_as_a_round_ends_is_never_lost() {
        let quiet = Arc::new(Quiet {
            task: AtomicWaker::new(),
            state: AtomicU8::new(IDLE),
        });
        let counter = Arc::new(Counter(AtomicUsize::new(0)));
        let task = Waker::from(counter.clone());
        let waker = Waker::from(quiet.clone());
        let rounds = 50_000;
        let start = Arc::new(Barrier::new(2));
        let done = Arc::new(Barrier::new(2));
        let waking = {
            let (start, done) = (start.clone(), done.clone());
            std::thread::spawn(move || {
                for _ in 0..rounds {
                    start.wait();
                    waker.wake_by_ref();
                    done.wait();
                }
            })
        };
        let mut polled_again = 0;
        for round in 0..rounds {
            let before = counter.0.load(Ordering::SeqCst);
            // As every poll does (a wake-up takes the registered waker).
            quiet.task.register(&task);
            quiet.begin();
            start.wait();
            let again = quiet.end();
            done.wait();
            let woke = counter.0.load(Ordering::SeqCst) - before;
            assert_eq!(
                usize::from(again) + woke,
                1,
                "round {round}: polled again {again}, task woken {woke} times"
            );
            polled_again += usize::from(again);
        }
        waking.join().unwrap();
        // Both outcomes happened, so the race was really run.
        assert!(polled_again > 0 && polled_again < rounds, "{polled_again}");
    }
}
