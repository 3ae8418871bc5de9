//! Where [`AppSession`]'s events go: its subscribers (channels, or
//! callbacks run in order on the emitting task, flushed after each burst).

use tokio::sync::mpsc;

use super::{AppSession, OutEvent, Shared, lock};

/// Where events go: a channel, or a callback run in order on the emitting
/// task, with an optional `flush` run after the last event of each burst.
pub(super) enum Subscriber {
    Channel(mpsc::UnboundedSender<OutEvent>),
    Callback {
        on_event: EventCallback,
        flush: Option<FlushCallback>,
    },
}

/// A [`Subscriber::Callback`]'s event callback.
type EventCallback = Box<dyn Fn(&OutEvent) + Send + Sync>;
/// A [`Subscriber::Callback`]'s flush.
type FlushCallback = Box<dyn Fn() + Send + Sync>;

impl AppSession {
    /// A new subscriber: every event from now on, in order.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<OutEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        lock(&self.inner.subscribers).push(Subscriber::Channel(tx));
        rx
    }

    /// A subscriber called for every event, in order, on the task that emits it
    /// (it must not block). Session-level events reach it before the call that
    /// emitted them returns.
    pub fn subscribe_with(&self, f: impl Fn(&OutEvent) + Send + Sync + 'static) {
        lock(&self.inner.subscribers).push(Subscriber::Callback {
            on_event: Box::new(f),
            flush: None,
        });
    }

    /// A subscriber called as [`Self::subscribe_with`]'s is, and `flush` once
    /// the events that were ready have all been delivered: after the last
    /// event of each burst the agent produced, and after each session-level
    /// event. A writer buffers the events and writes them at `flush`, so
    /// events read from the network together leave in one write, and a lone
    /// event costs no extra task or thread wake-up.
    pub fn subscribe_batched(
        &self,
        on_event: impl Fn(&OutEvent) + Send + Sync + 'static,
        flush: impl Fn() + Send + Sync + 'static,
    ) {
        lock(&self.inner.subscribers).push(Subscriber::Callback {
            on_event: Box::new(on_event),
            flush: Some(Box::new(flush)),
        });
    }
}

impl Shared {
    /// Delivers `event` to every subscriber, then flushes them.
    pub(crate) fn emit(&self, event: OutEvent) {
        self.deliver(event);
        self.flush_subscribers();
    }

    /// Delivers `event` to every subscriber, without a flush: the caller
    /// flushes once the burst it is part of has been delivered.
    pub(crate) fn deliver(&self, event: OutEvent) {
        lock(&self.subscribers).retain(|sub| match sub {
            Subscriber::Channel(tx) => tx.send(event.clone()).is_ok(),
            Subscriber::Callback { on_event, .. } => {
                on_event(&event);
                true
            }
        });
    }

    /// Runs every subscriber's flush.
    pub(crate) fn flush_subscribers(&self) {
        for sub in lock(&self.subscribers).iter() {
            if let Subscriber::Callback {
                flush: Some(flush), ..
            } = sub
            {
                flush();
            }
        }
    }
}
