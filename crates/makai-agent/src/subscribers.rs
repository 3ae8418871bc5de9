//! Event delivery that never stalls the loop.
//!
//! Every consumer (an [`crate::Agent`] subscriber, or the event stream of a
//! low-level [`crate::AgentRun`]) has its own ordered, unbounded queue. The loop
//! only appends to queues, so a slow or stuck consumer delays nobody else. Nothing
//! is ever dropped: once a queue holds more than [`COALESCE_AFTER`] events, a new
//! `text_delta`, `thinking_delta` or `toolcall_delta` for the same content block as
//! the event at the back of the queue is merged into it (deltas concatenated, the
//! newest partial snapshot kept), so a consumer that falls far behind receives the
//! same text in fewer events. Lifecycle events are never merged.
//!
//! A callback subscriber runs on its own thread, so it may block or sleep; a
//! panic in it is caught and logged, and delivery goes on with the next event.
//!
//! An inline subscriber ([`Registry::subscribe_inline`]) has no queue of its
//! own and no thread: events are appended to one shared pending list under
//! the agent's lock (so in the order the state changed), and whoever emitted
//! them delivers them once that lock is released ([`Registry::deliver_inline`]).
//! One delivery runs at a time; an event emitted while one runs (from another
//! thread, or from the callback itself, such as the `queue_update` of a
//! `steer`) is left to it, so callbacks are never called concurrently or
//! reentrantly, and always in order.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll};

use futures::Stream;

use crate::error::AgentError;
use crate::event::AgentEvent;

mod queue;

#[cfg(test)]
use queue::KEPT_CAPACITY;
pub(crate) use queue::{EventQueue, QueueReader};

/// Queue length past which consecutive deltas of one content block are merged.
pub const COALESCE_AFTER: usize = 1024;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// An inline subscriber's callback.
type InlineCallback = Arc<dyn Fn(&AgentEvent) + Send + Sync>;

/// The inline subscribers and the events waiting for them (see the module's
/// docs).
#[derive(Default)]
struct Inline {
    /// Replaced whole at every subscribe and unsubscribe, so that a delivery
    /// takes the list with one reference count, not a copy.
    callbacks: Mutex<Arc<[(u64, InlineCallback)]>>,
    /// How many callbacks there are: no inline subscriber, no work.
    count: AtomicUsize,
    /// Bumped at every subscribe and unsubscribe: a delivery re-reads the
    /// callbacks when it moved.
    version: AtomicU64,
    pending: Mutex<Pending>,
}

/// Events waiting for the inline subscribers.
#[derive(Default)]
struct Pending {
    events: VecDeque<AgentEvent>,
    /// A delivery is running: it takes every event queued meanwhile.
    delivering: bool,
}

/// The set of subscriber queues of one agent.
pub(crate) struct Registry {
    inline: Inline,
    queues: Mutex<Vec<(u64, Arc<EventQueue>)>>,
    next_id: AtomicU64,
    /// Bumped, under `queues`' lock, at every subscribe and unsubscribe: a
    /// [`Fanout`] reads it to know, without the lock, that its copy is current.
    version: AtomicU64,
}

impl Registry {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Registry {
            inline: Inline::default(),
            queues: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(1),
            version: AtomicU64::new(0),
        })
    }

    /// Appends `event` to every queue, in registration order, and to the
    /// inline subscribers' pending list. Called under the agent's lock; the
    /// caller runs [`Registry::deliver_inline`] once it released it.
    pub(crate) fn broadcast(&self, event: &AgentEvent) {
        if self.inline.count.load(Ordering::Acquire) > 0 {
            lock(&self.inline.pending).events.push_back(event.clone());
        }
        for (_, q) in lock(&self.queues).iter() {
            q.push(event.clone());
        }
    }

    /// Calls the inline subscribers with every pending event, in order,
    /// unless a delivery is already running (it takes them). Never called
    /// under the agent's lock: a callback may call the agent.
    pub(crate) fn deliver_inline(&self) {
        if self.inline.count.load(Ordering::Acquire) == 0 {
            return;
        }
        // Taken before the pending list: the two locks are never held in
        // the other order.
        let mut version = self.inline.version.load(Ordering::Acquire);
        let mut callbacks = lock(&self.inline.callbacks).clone();
        let mut pending = lock(&self.inline.pending);
        if pending.delivering {
            return;
        }
        pending.delivering = true;
        while let Some(event) = pending.events.pop_front() {
            drop(pending);
            let now = self.inline.version.load(Ordering::Acquire);
            if now != version {
                version = now;
                callbacks = lock(&self.inline.callbacks).clone();
            }
            for (_, callback) in callbacks.iter() {
                if catch_unwind(AssertUnwindSafe(|| callback(&event))).is_err() {
                    tracing::error!(
                        event = event.kind(),
                        "an inline agent event subscriber panicked; it keeps receiving later events"
                    );
                }
            }
            drop(event);
            pending = lock(&self.inline.pending);
        }
        pending.delivering = false;
    }

    /// Subscribes a callback called inline (see the module's docs).
    pub(crate) fn subscribe_inline<F>(self: &Arc<Self>, callback: F) -> InlineSubscription
    where
        F: Fn(&AgentEvent) + Send + Sync + 'static,
    {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut list = lock(&self.inline.callbacks);
        let callback: InlineCallback = Arc::new(callback);
        *list = list.iter().cloned().chain([(id, callback)]).collect();
        self.inline.count.store(list.len(), Ordering::Release);
        self.inline.version.fetch_add(1, Ordering::Release);
        drop(list);
        InlineSubscription {
            id,
            registry: Arc::downgrade(self),
        }
    }

    fn unsubscribe_inline(&self, id: u64) {
        let mut list = lock(&self.inline.callbacks);
        *list = list.iter().filter(|(i, _)| *i != id).cloned().collect();
        self.inline.count.store(list.len(), Ordering::Release);
        self.inline.version.fetch_add(1, Ordering::Release);
        let none_left = list.is_empty();
        drop(list);
        if none_left {
            lock(&self.inline.pending).events.clear();
        }
    }

    fn add(self: &Arc<Self>, coalesce_after: usize) -> Subscription {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let queue = EventQueue::new(coalesce_after);
        let mut queues = lock(&self.queues);
        queues.push((id, queue.clone()));
        self.version.fetch_add(1, Ordering::Release);
        drop(queues);
        Subscription {
            id,
            queue,
            registry: Arc::downgrade(self),
        }
    }

    fn remove(&self, id: u64) {
        let mut queues = lock(&self.queues);
        queues.retain(|(i, _)| *i != id);
        self.version.fetch_add(1, Ordering::Release);
    }

    /// Subscribes a callback served by its own thread.
    pub(crate) fn subscribe<F>(
        self: &Arc<Self>,
        coalesce_after: usize,
        callback: F,
    ) -> Result<Subscription, AgentError>
    where
        F: Fn(&AgentEvent) + Send + 'static,
    {
        let sub = self.add(coalesce_after);
        let queue = sub.queue.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("makai-subscriber-{}", sub.id))
            .spawn(move || {
                let mut batch = VecDeque::new();
                while queue.take_blocking(&mut batch) {
                    while let Some(event) = batch.pop_front() {
                        if queue.is_closed() {
                            return;
                        }
                        if catch_unwind(AssertUnwindSafe(|| callback(&event))).is_err() {
                            tracing::error!(
                                event = event.kind(),
                                "an agent event subscriber panicked; it keeps receiving later events"
                            );
                        }
                        queue.in_hand.fetch_sub(1, Ordering::Relaxed);
                    }
                }
            });
        match spawned {
            Ok(_) => Ok(sub),
            Err(e) => Err(AgentError::Subscribe(e)),
        }
    }

    /// Subscribes a stream.
    pub(crate) fn subscribe_stream(self: &Arc<Self>, coalesce_after: usize) -> EventStream {
        let sub = self.add(coalesce_after);
        EventStream {
            reader: QueueReader::new(sub.queue.clone()),
            _sub: sub,
        }
    }
}

/// A copy of a [`Registry`]'s queues, kept by the one sender of every event of
/// a run (the agent's sink, under the agent's lock), so that an event reaches
/// the queues without the registry's lock: the copy is refreshed only when
/// the registry's version moved (a subscribe or an unsubscribe).
#[derive(Default)]
pub(crate) struct Fanout {
    version: u64,
    queues: Vec<Arc<EventQueue>>,
}

impl Fanout {
    /// Appends `event` to every queue, in registration order, and to the
    /// inline subscribers' pending list; the last queue (or with none, the
    /// pending list) gets `event` itself, the others copies.
    pub(crate) fn send(&mut self, registry: &Registry, event: AgentEvent) {
        if registry.version.load(Ordering::Acquire) != self.version {
            let queues = lock(&registry.queues);
            self.queues.clear();
            self.queues.extend(queues.iter().map(|(_, q)| q.clone()));
            // Read under the lock: the version of exactly this list.
            self.version = registry.version.load(Ordering::Relaxed);
        }
        let inline = registry.inline.count.load(Ordering::Acquire) > 0;
        match self.queues.split_last() {
            Some((last, others)) => {
                for q in others {
                    q.push(event.clone());
                }
                if inline {
                    lock(&registry.inline.pending)
                        .events
                        .push_back(event.clone());
                }
                last.push(event);
            }
            None if inline => lock(&registry.inline.pending).events.push_back(event),
            None => {}
        }
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        for (_, q) in lock(&self.queues).iter() {
            q.finish();
        }
    }
}

/// A subscription; dropping it unsubscribes (queued events are discarded).
pub struct Subscription {
    id: u64,
    queue: Arc<EventQueue>,
    registry: Weak<Registry>,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("id", &self.id)
            .field("queued", &self.queue.len())
            .finish()
    }
}

impl Subscription {
    /// Events queued and not yet delivered (shows how far behind the subscriber is).
    pub fn queued(&self) -> usize {
        self.queue.len()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(r) = self.registry.upgrade() {
            r.remove(self.id);
        }
        self.queue.close();
    }
}

/// An inline subscription ([`crate::Agent::subscribe_inline`]); dropping it
/// unsubscribes.
pub struct InlineSubscription {
    id: u64,
    registry: Weak<Registry>,
}

impl std::fmt::Debug for InlineSubscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InlineSubscription")
            .field("id", &self.id)
            .finish()
    }
}

impl Drop for InlineSubscription {
    fn drop(&mut self) {
        if let Some(r) = self.registry.upgrade() {
            r.unsubscribe_inline(self.id);
        }
    }
}

/// A subscription read as an async [`Stream`] of events; dropping it unsubscribes.
/// The stream ends when the agent is dropped.
pub struct EventStream {
    reader: QueueReader,
    _sub: Subscription,
}

impl std::fmt::Debug for EventStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventStream")
            .field("queued", &self.queued())
            .finish()
    }
}

impl EventStream {
    /// Events queued and not yet read.
    pub fn queued(&self) -> usize {
        self.reader.len()
    }
}

impl Stream for EventStream {
    type Item = AgentEvent;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<AgentEvent>> {
        self.reader.poll_next(cx)
    }
}

#[cfg(test)]
#[path = "subscribers_tests.rs"]
mod tests;
