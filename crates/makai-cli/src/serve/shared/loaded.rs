//! [`Loaded`]: one session of the shared store as this instance holds it: its
//! agent session (served by the RPC dispatcher, [`ServedSession`]), the
//! forwarding of its events into the session's feed in the database, and
//! what tells when it is idle.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use makai_protocol::SessionHandler;
use makai_store_pg::lease::Lease;
use makai_store_pg::{Coord, PgStore};
use tokio::sync::Notify;

use crate::app::OutEvent;
use crate::serve::ServedSession;

/// One session loaded on this instance.
pub(crate) struct Loaded {
    /// The session id.
    pub id: String,
    /// The agent session and its RPC dispatcher.
    pub served: ServedSession,
    /// This process's coordination state of the session (fence, queued events).
    pub coord: Arc<Coord>,
    /// The lease while this instance runs the session; the lock orders
    /// commands that start work against the release of the lease.
    pub tenure: Arc<tokio::sync::Mutex<Option<Lease>>>,
    /// Runs started by commands this instance handled (a `prompt` answered
    /// `started`): the session is not idle before the forwarder saw as many
    /// `agent_start`s.
    pub expected_starts: AtomicU64,
    /// `agent_start`s the forwarder saw.
    seen_starts: AtomicU64,
    /// False from an `agent_start` until its `agent_settled`, as forwarded.
    settled: AtomicBool,
    /// Woken after every forwarded event.
    pub changed: Arc<Notify>,
    /// The store revision the session had when loaded or last appended here.
    loaded_revision: u64,
    /// When a command last used it.
    used: std::sync::Mutex<std::time::Instant>,
}

impl Loaded {
    /// Builds the agent session for `session` (read from the store) and
    /// starts forwarding its events to the feed.
    pub fn start(store: &PgStore, id: &str, served: ServedSession) -> Arc<Loaded> {
        let loaded_revision = served.app().session().lock().revision();
        let events = served.subscribe();
        let loaded = Arc::new(Loaded {
            id: id.to_string(),
            served,
            coord: store.coord(id),
            tenure: Arc::new(tokio::sync::Mutex::new(None)),
            expected_starts: AtomicU64::new(0),
            seen_starts: AtomicU64::new(0),
            settled: AtomicBool::new(true),
            changed: Arc::new(Notify::new()),
            loaded_revision,
            used: std::sync::Mutex::new(std::time::Instant::now()),
        });
        tokio::spawn(forward(Arc::downgrade(&loaded), store.clone(), events));
        loaded
    }

    /// True when nothing runs or will run on its own: no run, no compaction,
    /// every started run settled and its events forwarded.
    pub fn is_idle(&self) -> bool {
        let app = self.served.app();
        !app.is_streaming()
            && !app.is_compacting()
            && self.settled.load(Ordering::Acquire)
            && self.seen_starts.load(Ordering::Acquire)
                >= self.expected_starts.load(Ordering::Acquire)
    }

    /// Waits until [`Loaded::is_idle`] (checked on every event and at least
    /// every 100 ms).
    pub async fn wait_idle(&self) {
        loop {
            if self.is_idle() {
                self.served.wait_background().await;
                if self.is_idle() {
                    return;
                }
            }
            let woken = self.changed.notified();
            // A bound, not a timer: idleness also changes without an event.
            let _woken_or_not = tokio::time::timeout(Duration::from_millis(100), woken).await;
        }
    }

    /// Notes a use (commands keep a session loaded).
    pub fn touch(&self) {
        *self
            .used
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = std::time::Instant::now();
    }

    /// How long since a command used it.
    pub fn unused_for(&self) -> Duration {
        self.used
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .elapsed()
    }

    /// True when the store has entries this copy of the session has not read
    /// (another instance appended since): it must be loaded again before it
    /// runs or answers.
    pub fn is_stale(&self, store_revision: u64) -> bool {
        let here = self.served.app().session().lock().revision();
        store_revision > here.max(self.loaded_revision)
    }
}

/// Forwards the session's events to its feed, batching what is ready, until
/// the session is dropped. A forwarder that fell too far behind (the database
/// was slow) loses its subscription; it subscribes again and takes the
/// session's state as it is now, so the session can still become idle.
async fn forward(weak: Weak<Loaded>, store: PgStore, mut events: BoxStream<'static, OutEvent>) {
    loop {
        while let Some(first) = events.next().await {
            // Everything ready now goes to the feed in one write.
            let mut batch = vec![first];
            while let Some(Some(more)) = events.next().now_or_never() {
                batch.push(more);
            }
            let Some(l) = weak.upgrade() else { return };
            for event in &batch {
                match event.kind() {
                    "agent_start" => {
                        l.seen_starts.fetch_add(1, Ordering::AcqRel);
                        l.settled.store(false, Ordering::Release);
                    }
                    "agent_settled" => l.settled.store(true, Ordering::Release),
                    _ => {}
                }
                match serde_json::to_string(event) {
                    Ok(json) => l.coord.push_event(json),
                    Err(e) => tracing::warn!(error = %e, "a session event could not be encoded"),
                }
            }
            if let Err(e) = store.flush_events(&l.id).await {
                // Kept queued: they go with the next append or flush.
                tracing::warn!(session = %l.id, error = %e, "session events wait for the database");
            }
            l.changed.notify_waiters();
        }
        let Some(l) = weak.upgrade() else { return };
        tracing::warn!(session = %l.id, "the session's events fell behind the database; forwarding starts again");
        events = l.served.subscribe();
        l.seen_starts
            .fetch_max(l.expected_starts.load(Ordering::Acquire), Ordering::AcqRel);
        l.settled
            .store(!l.served.app().is_streaming(), Ordering::Release);
        l.changed.notify_waiters();
    }
}
