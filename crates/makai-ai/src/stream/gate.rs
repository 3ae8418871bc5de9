//! Futures polled only when their own wake-ups say they may be ready.
//!
//! The request polls two futures besides its network read at every poll, so
//! at every network read: its cancellation token and its idle timer.
//! `tokio_util`'s `WaitForCancellationFuture` takes the token's lock to read
//! its flag and then the lock of the token's `Notify` to look at its waiter,
//! every time, and Tokio's `Sleep` registers the task's waker with its timer
//! entry and spends cooperative budget. [`Gated`] polls such a future only on
//! its first poll, after [`Gated::rearm`], and after the future woke the task.
//! The future is given a waker of ours that notes the wake-up and passes it on
//! to the task's; a poll in between only compares the task's waker with the
//! one passed on last.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use futures::task::AtomicWaker;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// `inner`, polled only when it may be ready (see the module's documentation).
///
/// `inner` must wake the waker it was last polled with when it becomes ready,
/// as every future does.
pub(crate) struct Gated<F> {
    inner: F,
    signal: Arc<Signal>,
    /// The task waker last handed to `signal`; `None` until the first poll.
    passed_on: Option<Waker>,
    /// `inner` was polled with `signal`'s waker, was pending, and has not
    /// been changed since.
    armed: bool,
}

/// Between the inner future and the task: notes that the future woke it.
struct Signal {
    woken: AtomicBool,
    task: AtomicWaker,
}

impl Wake for Signal {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::SeqCst);
        self.task.wake();
    }
}

impl<F: Future + Unpin> Gated<F> {
    /// Gates `inner`.
    pub(crate) fn new(inner: F) -> Self {
        Gated {
            inner,
            signal: Arc::new(Signal {
                woken: AtomicBool::new(false),
                task: AtomicWaker::new(),
            }),
            passed_on: None,
            armed: false,
        }
    }

    /// The inner future, to change it (reset a timer); call [`Gated::rearm`]
    /// after a change, so that the next poll polls it.
    pub(crate) fn inner_mut(&mut self) -> &mut F {
        &mut self.inner
    }

    /// Makes the next poll poll the inner future.
    pub(crate) fn rearm(&mut self) {
        self.armed = false;
    }
}

impl<F: Future + Unpin> Future for Gated<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        let woken = this.signal.woken.load(Ordering::SeqCst);
        // The inner future's wake-up takes the waker out of `task`, so after
        // one the task's waker is handed over again, even when it is the same.
        if woken
            || !this
                .passed_on
                .as_ref()
                .is_some_and(|w| w.will_wake(cx.waker()))
        {
            this.signal.task.register(cx.waker());
            this.passed_on = Some(cx.waker().clone());
        }
        if !this.armed || woken {
            this.signal.woken.store(false, Ordering::SeqCst);
            let waker = Waker::from(this.signal.clone());
            match Pin::new(&mut this.inner).poll(&mut Context::from_waker(&waker)) {
                Poll::Ready(out) => {
                    this.armed = false;
                    return Poll::Ready(out);
                }
                Poll::Pending => this.armed = true,
            }
        }
        Poll::Pending
    }
}

/// Completes when its token is cancelled.
pub(crate) type CancelWatch = Gated<Pin<Box<WaitForCancellationFutureOwned>>>;

/// Watches `token` (a clone; cancelling it is the caller's business).
pub(crate) fn cancel_watch(token: CancellationToken) -> CancelWatch {
    Gated::new(Box::pin(token.cancelled_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// A waker that counts its wake-ups.
    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn counting() -> (Arc<Count>, Waker) {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        (count.clone(), Waker::from(count))
    }

    fn poll(watch: &mut CancelWatch, waker: &Waker) -> Poll<()> {
        Pin::new(watch).poll(&mut Context::from_waker(waker))
    }

    #[tokio::test]
    async fn a_gated_timer_fires_and_fires_again_once_reset_and_rearmed() {
        use std::time::Duration;
        use tokio::time::Instant;
        let started = Instant::now();
        let mut timer = Gated::new(Box::pin(tokio::time::sleep(Duration::from_millis(20))));
        (&mut timer).await;
        assert!(started.elapsed() >= Duration::from_millis(20));
        timer
            .inner_mut()
            .as_mut()
            .reset(Instant::now() + Duration::from_millis(20));
        timer.rearm();
        assert!(futures::poll!(&mut timer).is_pending());
        (&mut timer).await;
        assert!(started.elapsed() >= Duration::from_millis(40));
    }

    #[test]
    fn a_token_cancelled_before_the_first_poll_is_seen_at_once() {
        let token = CancellationToken::new();
        token.cancel();
        let mut watch = cancel_watch(token);
        let (_count, waker) = counting();
        assert!(poll(&mut watch, &waker).is_ready());
    }

    /// A watch of the token itself, and a watch of a child of the token.
    #[test]
    fn cancelling_wakes_the_task_and_the_next_poll_is_ready() {
        for child in [false, true] {
            let token = CancellationToken::new();
            let watched = if child {
                token.child_token()
            } else {
                token.clone()
            };
            let mut watch = cancel_watch(watched);
            let (count, waker) = counting();
            assert!(poll(&mut watch, &waker).is_pending());
            // Polls in between, with the same waker, stay pending.
            assert!(poll(&mut watch, &waker).is_pending());
            assert!(poll(&mut watch, &waker).is_pending());
            token.cancel();
            assert_eq!(count.0.load(Ordering::SeqCst), 1, "child: {child}");
            assert!(poll(&mut watch, &waker).is_ready(), "child: {child}");
        }
    }

    #[test]
    fn a_watch_moved_to_another_task_wakes_that_task() {
        let token = CancellationToken::new();
        let mut watch = cancel_watch(token.clone());
        let (first, first_waker) = counting();
        assert!(poll(&mut watch, &first_waker).is_pending());
        let (second, second_waker) = counting();
        assert!(poll(&mut watch, &second_waker).is_pending());
        token.cancel();
        assert_eq!(first.0.load(Ordering::SeqCst), 0);
        assert_eq!(second.0.load(Ordering::SeqCst), 1);
        assert!(poll(&mut watch, &second_waker).is_ready());
    }
}
