//! [`AssistantMessageEventStream`]: the consumer's side of one model call.
//!
//! makai-ai's own calls run inside the stream: polling it polls the request
//! (connection, decoder, retries), which hands each batch of events over in a
//! [`Handoff`] slot, so a network read reaches the consumer without waking any
//! other task. Other `ProtocolClient` implementations (a remote server, a test
//! double) send batches over a bounded channel through
//! [`AssistantMessageEventStream::from_channel`]. Nothing after the terminal
//! event is delivered.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use std::task::{Context as TaskContext, Poll};

use futures::Stream;
use tokio::sync::mpsc;

use crate::event::AssistantMessageEvent;
use crate::message::{AssistantMessage, StopReason};

/// A stream of [`AssistantMessageEvent`]s for one model call.
///
/// Ends after exactly one terminal event (`done` or `error`). Never panics; every
/// failure (HTTP status, broken connection, malformed stream, cancellation) becomes
/// an `error` event carrying the content received so far. Dropping the stream
/// cancels the request.
pub struct AssistantMessageEventStream {
    source: Source,
    buffer: VecDeque<AssistantMessageEvent>,
    /// The terminal event has been delivered.
    finished: bool,
    /// Called with the final message as the terminal event is delivered.
    on_terminal: Option<TerminalObserver>,
    _guard: tokio_util::sync::DropGuard,
}

/// See [`AssistantMessageEventStream::on_terminal`].
type TerminalObserver = Box<dyn FnOnce(&AssistantMessage) + Send + Sync>;

impl AssistantMessageEventStream {
    /// Consumes the rest of the stream and returns the final message (also on error:
    /// then its `stop_reason` is `error` or `aborted`).
    pub async fn result(mut self) -> AssistantMessage {
        use futures::StreamExt;
        let mut last = None;
        while let Some(event) = self.next().await {
            match event {
                AssistantMessageEvent::Done { message, .. } => last = Some(*message),
                AssistantMessageEvent::Error { error, .. } => last = Some(*error),
                _ => {}
            }
        }
        last.unwrap_or_else(|| AssistantMessage {
            stop_reason: StopReason::Error,
            error_message: Some("the provider task ended without a final message".into()),
            ..Default::default()
        })
    }

    /// A stream holding only the `error` event of a call that failed before
    /// any request was sent (no key, a refused credential...).
    pub fn failed(model: &crate::Model, error_message: impl Into<String>) -> Self {
        let mut builder = crate::MessageBuilder::new(model);
        builder.fail(StopReason::Error, error_message, model);
        let mut events = Vec::new();
        builder.take_events_into(&mut events);
        let (tx, rx) = mpsc::channel(1);
        // The channel is new and holds one slot: this send cannot fail.
        let _ = tx.try_send(events);
        Self::from_channel(rx, tokio_util::sync::CancellationToken::new())
    }

    /// A stream whose events come from `rx` (for other `ProtocolClient` implementations).
    ///
    /// Dropping the stream cancels `cancel`: pass a token owned by this one request
    /// (e.g. `caller_token.child_token()`), never a token shared with other work.
    pub fn from_channel(
        rx: mpsc::Receiver<Vec<AssistantMessageEvent>>,
        cancel: tokio_util::sync::CancellationToken,
    ) -> Self {
        AssistantMessageEventStream {
            source: Source::Channel(rx),
            buffer: VecDeque::new(),
            finished: false,
            on_terminal: None,
            _guard: cancel.drop_guard(),
        }
    }

    /// A stream that runs `driver` itself: each poll of the stream polls the
    /// driver, which puts its batches into `handoff` (see [`Handoff::put`]).
    pub(crate) fn inline(
        driver: Pin<Box<dyn Future<Output = ()> + Send>>,
        handoff: Arc<Handoff>,
        cancel: tokio_util::sync::CancellationToken,
    ) -> Self {
        AssistantMessageEventStream {
            source: Source::Inline {
                driver: Some(driver),
                handoff,
            },
            buffer: VecDeque::new(),
            finished: false,
            on_terminal: None,
            _guard: cancel.drop_guard(),
        }
    }

    /// Calls `f` with the final message when the terminal event (`done` or
    /// `error`) is delivered to the reader. A stream dropped before its end
    /// never calls it (it drops `f` instead), so a wrapper that settles an
    /// account learns both outcomes (a budget ledger, say). Replaces an
    /// observer set before.
    pub fn on_terminal(
        mut self,
        f: impl FnOnce(&AssistantMessage) + Send + Sync + 'static,
    ) -> Self {
        self.on_terminal = Some(Box::new(f));
        self
    }
}

/// Where a stream's batches come from.
enum Source {
    /// Another task sends them.
    Channel(mpsc::Receiver<Vec<AssistantMessageEvent>>),
    /// The stream polls the request itself; `None` once it has ended.
    Inline {
        driver: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
        handoff: Arc<Handoff>,
    },
}

/// The slot between a request driven inside its stream and the stream: at most
/// one batch, put by the driver and taken by the stream in the same task. The
/// emptied batch goes back to the driver for the next one, so a network read
/// allocates no batch of its own.
#[derive(Default)]
pub(crate) struct Handoff {
    /// A batch is in `slot`. Most checks find none (the stream looks before and
    /// after each poll of the driver, the driver after each hand-over), and read
    /// this instead of taking the lock.
    full: AtomicBool,
    slot: Mutex<Slot>,
}

#[derive(Default)]
struct Slot {
    /// The batch handed over and not yet taken.
    batch: Option<Vec<AssistantMessageEvent>>,
    /// An emptied batch, for the driver's next one.
    spare: Vec<AssistantMessageEvent>,
}

/// The largest emptied batch kept for reuse (events): a burst larger than
/// this (a whole response read at once) is not kept for the rest of the stream.
const SPARE_MAX: usize = 32;

impl Handoff {
    fn lock(&self) -> std::sync::MutexGuard<'_, Slot> {
        self.slot
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Moves a handed-over batch's events to the end of `buffer`; false when
    /// there is none.
    fn take_into(&self, buffer: &mut VecDeque<AssistantMessageEvent>) -> bool {
        if !self.full.load(Ordering::Acquire) {
            return false;
        }
        let mut slot = self.lock();
        let Some(mut batch) = slot.batch.take() else {
            return false;
        };
        self.full.store(false, Ordering::Release);
        buffer.extend(batch.drain(..));
        if batch.capacity() <= SPARE_MAX {
            slot.spare = batch;
        }
        true
    }

    /// Puts `batch` in the slot, leaving the spare batch in its place.
    fn store(&self, batch: &mut Vec<AssistantMessageEvent>) {
        let mut slot = self.lock();
        let spare = std::mem::take(&mut slot.spare);
        slot.batch = Some(std::mem::replace(batch, spare));
        self.full.store(true, Ordering::Release);
    }

    /// Hands the events of `batch` to the stream and returns once the stream
    /// has taken them; `batch` is then empty (an earlier batch, with its room).
    ///
    /// The driver is polled only by its stream, and the stream takes the batch
    /// before it polls the driver again; so this future is pending exactly once,
    /// without a waker: nothing but that next poll can make progress here.
    pub(crate) async fn put(&self, batch: &mut Vec<AssistantMessageEvent>) {
        self.store(batch);
        let mut handed = false;
        std::future::poll_fn(|_| {
            if handed && !self.full.load(Ordering::Acquire) {
                Poll::Ready(())
            } else {
                handed = true;
                Poll::Pending
            }
        })
        .await
    }
}

impl Stream for AssistantMessageEventStream {
    type Item = AssistantMessageEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        loop {
            // Nothing follows the terminal event, whatever the source sends.
            if self.finished {
                return Poll::Ready(None);
            }
            if let Some(event) = self.buffer.pop_front() {
                self.finished = event.is_terminal();
                if let Some(f) = self.on_terminal.take_if(|_| event.is_terminal()) {
                    match &event {
                        AssistantMessageEvent::Done { message, .. } => f(message),
                        AssistantMessageEvent::Error { error, .. } => f(error),
                        _ => {}
                    }
                }
                return Poll::Ready(Some(event));
            }
            let this = &mut *self;
            match &mut this.source {
                Source::Channel(rx) => match rx.poll_recv(cx) {
                    Poll::Ready(Some(batch)) => this.buffer.extend(batch),
                    Poll::Ready(None) => return Poll::Ready(None),
                    Poll::Pending => return Poll::Pending,
                },
                Source::Inline { driver, handoff } => {
                    if handoff.take_into(&mut this.buffer) {
                        continue;
                    }
                    let Some(running) = driver.as_mut() else {
                        return Poll::Ready(None);
                    };
                    let ended = running.as_mut().poll(cx).is_ready();
                    if ended {
                        *driver = None;
                    }
                    if handoff.take_into(&mut this.buffer) {
                        continue;
                    }
                    if ended {
                        return Poll::Ready(None);
                    }
                    // Waiting for the network, a timer or a retry: the driver
                    // registered this task's waker.
                    return Poll::Pending;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    fn delta(i: usize) -> AssistantMessageEvent {
        AssistantMessageEvent::TextDelta {
            content_index: 0,
            delta: format!("{i}").into(),
        }
    }

    #[test]
    fn an_emptied_batch_goes_back_to_the_driver_unless_it_is_a_large_one() {
        let handoff = Handoff::default();
        let mut buffer = VecDeque::new();
        assert!(!handoff.take_into(&mut buffer));
        let mut batch = Vec::with_capacity(8);
        batch.extend((0..3).map(delta));
        let room = batch.as_ptr();
        handoff.store(&mut batch);
        assert!(handoff.take_into(&mut buffer));
        assert_eq!(buffer.len(), 3);
        // The driver's next batch is the same allocation, emptied.
        let spare = std::mem::take(&mut handoff.lock().spare);
        assert!(spare.is_empty());
        assert_eq!(spare.as_ptr(), room);
        // A burst past SPARE_MAX events is not kept.
        let mut big: Vec<_> = (0..SPARE_MAX + 1).map(delta).collect();
        handoff.store(&mut big);
        assert!(handoff.take_into(&mut buffer));
        assert_eq!(buffer.len(), 3 + SPARE_MAX + 1);
        assert_eq!(handoff.lock().spare.capacity(), 0);
        // Order kept.
        assert_eq!(
            buffer
                .iter()
                .take(4)
                .map(|e| match e {
                    AssistantMessageEvent::TextDelta { delta, .. } => delta.to_string(),
                    _ => String::new(),
                })
                .collect::<Vec<_>>(),
            ["0", "1", "2", "0"]
        );
    }

    #[tokio::test]
    async fn batches_arrive_in_order_and_the_terminal_message_is_kept() {
        let (tx, rx) = mpsc::channel(2);
        let cancel = tokio_util::sync::CancellationToken::new();
        let stream = AssistantMessageEventStream::from_channel(rx, cancel);
        tokio::spawn(async move {
            for i in 0..3 {
                let delta = AssistantMessageEvent::TextDelta {
                    content_index: 0,
                    delta: format!("{i}").into(),
                };
                let _ = tx.send(vec![delta]).await;
            }
            let message = AssistantMessage {
                stop_reason: StopReason::Stop,
                ..Default::default()
            };
            let done = AssistantMessageEvent::Done {
                reason: StopReason::Stop,
                message: Box::new(message),
            };
            // Events after the terminal one are never delivered.
            let late = AssistantMessageEvent::Start;
            let _ = tx.send(vec![done, late]).await;
        });
        let events: Vec<_> = stream.collect().await;
        let deltas: Vec<String> = events
            .iter()
            .filter_map(|e| match e {
                AssistantMessageEvent::TextDelta { delta, .. } => Some(delta.to_string()),
                _ => None,
            })
            .collect();
        assert_eq!(deltas, ["0", "1", "2"]);
        assert_eq!(events.len(), 4);
        assert!(matches!(events[3], AssistantMessageEvent::Done { .. }));
    }

    #[tokio::test]
    async fn a_closed_channel_without_a_final_message_is_an_error_result() {
        let (tx, rx) = mpsc::channel(1);
        drop(tx);
        let cancel = tokio_util::sync::CancellationToken::new();
        let m = AssistantMessageEventStream::from_channel(rx, cancel)
            .result()
            .await;
        assert_eq!(m.stop_reason, StopReason::Error);
    }

    #[tokio::test]
    async fn the_terminal_observer_sees_the_final_message_once() {
        use std::sync::{Arc, Mutex};
        let (tx, rx) = mpsc::channel(1);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let stream = AssistantMessageEventStream::from_channel(
            rx,
            tokio_util::sync::CancellationToken::new(),
        )
        .on_terminal(move |m| log.lock().unwrap().push(m.usage.output));
        let message = AssistantMessage {
            stop_reason: StopReason::Stop,
            usage: Box::new(crate::Usage {
                output: 7,
                ..Default::default()
            }),
            ..Default::default()
        };
        let done = AssistantMessageEvent::Done {
            reason: StopReason::Stop,
            message: Box::new(message),
        };
        tx.send(vec![AssistantMessageEvent::Start, done])
            .await
            .unwrap();
        let m = stream.result().await;
        assert_eq!(m.usage.output, 7);
        assert_eq!(*seen.lock().unwrap(), [7]);

        // Dropped before its end: never called.
        let (_tx, rx) = mpsc::channel(1);
        let called = Arc::new(Mutex::new(false));
        let flag = called.clone();
        drop(
            AssistantMessageEventStream::from_channel(
                rx,
                tokio_util::sync::CancellationToken::new(),
            )
            .on_terminal(move |_| *flag.lock().unwrap() = true),
        );
        assert!(!*called.lock().unwrap());
    }

    #[tokio::test]
    async fn dropping_the_stream_cancels_its_token() {
        let (_tx, rx) = mpsc::channel(1);
        let cancel = tokio_util::sync::CancellationToken::new();
        drop(AssistantMessageEventStream::from_channel(
            rx,
            cancel.clone(),
        ));
        assert!(cancel.is_cancelled());
    }
}
