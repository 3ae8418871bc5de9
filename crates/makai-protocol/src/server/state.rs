//! Server-wide state: authentication and connection limits, sessions, the
//! stream registry, and the shutdown sequence.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use makai_ai::ProtocolClient;

use super::stream::{StreamEntry, StreamKey, StreamKind, lock};
use super::{Limits, ServerConfig, ShutdownReport};
use crate::payload::ErrorCode;
use crate::session::ServedSession;
use crate::token::tokens_match;

/// Counters and gauges of a running server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServerStats {
    /// Authenticated connections open now.
    pub connections: usize,
    /// Streams the server holds now (running, or finished but not yet acknowledged).
    pub streams: usize,
    /// Streams started since the server started.
    pub streams_started: u64,
    /// Connections refused for a missing or wrong token.
    pub auth_failures: u64,
    /// Frames answered with `malformed_envelope` or `message_too_large`.
    pub bad_frames: u64,
    /// Streams cancelled because their client did not come back in time.
    pub streams_expired: u64,
}

#[derive(Default)]
struct SessionRec {
    streams: usize,
    conns: usize,
}

#[derive(Default)]
struct Registry {
    streams: HashMap<StreamKey, Arc<StreamEntry>>,
    sessions: HashMap<Arc<str>, SessionRec>,
}

/// Everything the listeners, connections and producers share.
pub(crate) struct Shared {
    token: String,
    pub limits: Limits,
    pub client: Arc<dyn ProtocolClient>,
    pub session: Option<Arc<dyn ServedSession>>,
    pub trusted_base_urls: Vec<String>,
    registry: Mutex<Registry>,
    connections: AtomicUsize,
    next_conn: AtomicU64,
    streams_started: AtomicU64,
    auth_failures: AtomicU64,
    pub bad_frames: AtomicU64,
    streams_expired: AtomicU64,
    pub rpc_in_flight: AtomicUsize,
    pub draining: AtomicBool,
    /// Stops the listeners.
    pub stop_accept: CancellationToken,
    /// Ends every running stream with a `shutdown` end.
    pub force_stop: CancellationToken,
    /// Closes every connection (politely).
    pub close_conns: CancellationToken,
    /// Test hook: replaced each time connections are killed.
    kill_switch: Mutex<CancellationToken>,
    pub tracker: TaskTracker,
}

/// One authenticated connection slot; released on drop.
pub(crate) struct ConnPermit {
    shared: Arc<Shared>,
}

impl Drop for ConnPermit {
    fn drop(&mut self) {
        self.shared.connections.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Why a connection or request was refused.
pub(crate) type Refusal = (ErrorCode, String);

impl Shared {
    pub fn new(config: &ServerConfig) -> Self {
        Shared {
            token: config.token.clone(),
            limits: config.limits.clone(),
            client: Arc::clone(&config.client),
            session: config.session.clone(),
            trusted_base_urls: config.trusted_base_urls.clone(),
            registry: Mutex::new(Registry::default()),
            connections: AtomicUsize::new(0),
            next_conn: AtomicU64::new(1),
            streams_started: AtomicU64::new(0),
            auth_failures: AtomicU64::new(0),
            bad_frames: AtomicU64::new(0),
            streams_expired: AtomicU64::new(0),
            rpc_in_flight: AtomicUsize::new(0),
            draining: AtomicBool::new(false),
            stop_accept: CancellationToken::new(),
            force_stop: CancellationToken::new(),
            close_conns: CancellationToken::new(),
            kill_switch: Mutex::new(CancellationToken::new()),
            tracker: TaskTracker::new(),
        }
    }

    pub fn next_conn_id(&self) -> u64 {
        self.next_conn.fetch_add(1, Ordering::Relaxed)
    }

    /// Checks the token and takes a connection slot for it.
    pub fn authenticate(self: &Arc<Self>, token: Option<&str>) -> Result<ConnPermit, Refusal> {
        let Some(token) = token else {
            self.auth_failures.fetch_add(1, Ordering::Relaxed);
            return Err((
                ErrorCode::Unauthorized,
                "no token: send `Authorization: Bearer <token>` with the WebSocket upgrade, or the token in the first `hello` frame (the token is in the server's serve-token file)".into(),
            ));
        };
        if !tokens_match(token, &self.token) {
            self.auth_failures.fetch_add(1, Ordering::Relaxed);
            return Err((
                ErrorCode::Unauthorized,
                "wrong token: use the token printed by `makai serve` (stored in its serve-token file)".into(),
            ));
        }
        let max = self.limits.max_connections_per_token;
        let taken = self
            .connections
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            });
        if taken.is_err() {
            return Err((
                ErrorCode::TooManyConnections,
                format!(
                    "this token already has {max} open connections (the server's limit); close one, or multiplex streams over one connection"
                ),
            ));
        }
        Ok(ConnPermit {
            shared: Arc::clone(self),
        })
    }

    /// True when the server holds session `id` now.
    pub fn has_session(&self, id: &str) -> bool {
        lock(&self.registry).sessions.contains_key(id)
    }

    /// Re-attaches `requested` when the server still knows it (or `adopt`:
    /// the session handler knows it from its shared store), else opens a new
    /// session.
    pub fn open_session(
        &self,
        requested: Option<&str>,
        adopt: bool,
    ) -> Result<(Arc<str>, bool), Refusal> {
        let mut reg = lock(&self.registry);
        let known = requested
            .and_then(|id| reg.sessions.get_key_value(id))
            .map(|(k, _)| Arc::clone(k));
        if let Some(key) = known {
            if let Some(rec) = reg.sessions.get_mut(&key) {
                rec.conns += 1;
            }
            return Ok((key, true));
        }
        if let Some(id) = requested.filter(|_| adopt) {
            let key: Arc<str> = Arc::from(id);
            reg.sessions.insert(
                Arc::clone(&key),
                SessionRec {
                    streams: 0,
                    conns: 1,
                },
            );
            return Ok((key, true));
        }
        let mut raw = [0u8; 16];
        getrandom::fill(&mut raw).map_err(|e| {
            (
                ErrorCode::Internal,
                format!("cannot make a session id: {e}"),
            )
        })?;
        let id: String = raw.iter().map(|b| format!("{b:02x}")).collect();
        let id: Arc<str> = Arc::from(id);
        reg.sessions.insert(
            Arc::clone(&id),
            SessionRec {
                streams: 0,
                conns: 1,
            },
        );
        Ok((id, false))
    }

    /// A connection of `session` ended.
    pub fn leave_session(&self, session: &Arc<str>) {
        let mut reg = lock(&self.registry);
        if let Some(rec) = reg.sessions.get_mut(session) {
            rec.conns = rec.conns.saturating_sub(1);
            if rec.conns == 0 && rec.streams == 0 {
                reg.sessions.remove(session);
            }
        }
    }

    /// Registers a new stream.
    pub fn insert_stream(&self, entry: &Arc<StreamEntry>) -> Result<(), Refusal> {
        if self.draining.load(Ordering::Acquire) {
            return Err((
                ErrorCode::ShuttingDown,
                "the server is shutting down and takes no new streams; reconnect to the restarted server".into(),
            ));
        }
        let mut reg = lock(&self.registry);
        if reg.streams.contains_key(&entry.key) {
            return Err((
                ErrorCode::DuplicateStream,
                format!(
                    "stream {} is already open in this session; use a new stream id",
                    entry.key.1
                ),
            ));
        }
        let max = self.limits.max_streams_per_session;
        let rec = reg.sessions.entry(Arc::clone(&entry.key.0)).or_default();
        if rec.streams >= max {
            return Err((
                ErrorCode::TooManyStreams,
                format!(
                    "this session already has {max} open streams (the server's limit); wait for some to finish"
                ),
            ));
        }
        rec.streams += 1;
        reg.streams.insert(entry.key.clone(), Arc::clone(entry));
        self.streams_started.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    pub fn get_stream(&self, key: &StreamKey) -> Option<Arc<StreamEntry>> {
        lock(&self.registry).streams.get(key).cloned()
    }

    /// Forgets a stream (finished and acknowledged, expired or killed).
    pub fn remove_stream(&self, key: &StreamKey) {
        let mut reg = lock(&self.registry);
        if let Some(entry) = reg.streams.remove(key) {
            entry.kill.cancel();
            if let Some(rec) = reg.sessions.get_mut(&key.0) {
                rec.streams = rec.streams.saturating_sub(1);
                if rec.conns == 0 && rec.streams == 0 {
                    reg.sessions.remove(&key.0);
                }
            }
        }
    }

    fn entries(&self) -> Vec<Arc<StreamEntry>> {
        lock(&self.registry).streams.values().cloned().collect()
    }

    /// A connection ended: its streams wait `detach_timeout` for a `resume`, then are cancelled.
    pub fn detach_all(self: &Arc<Self>, session: &Arc<str>, outbox_id: u64) {
        let detached: Vec<(Arc<StreamEntry>, u64)> = self
            .entries()
            .into_iter()
            .filter(|e| &e.key.0 == session)
            .filter_map(|e| e.detach(outbox_id).map(|epoch| (e, epoch)))
            .collect();
        if detached.is_empty() {
            return;
        }
        let shared = Arc::clone(self);
        let timeout = self.limits.detach_timeout;
        self.tracker.spawn(async move {
            tokio::select! {
                _ = tokio::time::sleep(timeout) => {}
                _ = shared.close_conns.cancelled() => return,
            }
            for (entry, epoch) in detached {
                if entry.detached_since(epoch) {
                    tracing::info!(
                        stream = entry.key.1,
                        "stream expired: its client did not resume in time"
                    );
                    shared.streams_expired.fetch_add(1, Ordering::Relaxed);
                    entry.cancel.cancel();
                    shared.remove_stream(&entry.key);
                }
            }
        });
    }

    pub fn kill_token(&self) -> CancellationToken {
        lock(&self.kill_switch).clone()
    }

    pub fn kill_connections(&self) {
        let mut k = lock(&self.kill_switch);
        k.cancel();
        *k = CancellationToken::new();
    }

    pub fn stats(&self) -> ServerStats {
        ServerStats {
            connections: self.connections.load(Ordering::Acquire),
            streams: lock(&self.registry).streams.len(),
            streams_started: self.streams_started.load(Ordering::Relaxed),
            auth_failures: self.auth_failures.load(Ordering::Relaxed),
            bad_frames: self.bad_frames.load(Ordering::Relaxed),
            streams_expired: self.streams_expired.load(Ordering::Relaxed),
        }
    }

    async fn wait_until(&self, deadline: Instant, done: impl Fn(&[Arc<StreamEntry>]) -> bool) {
        loop {
            if done(&self.entries()) || Instant::now() >= deadline {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    pub async fn shutdown(self: &Arc<Self>, grace: Duration) -> ShutdownReport {
        self.draining.store(true, Ordering::Release);
        self.stop_accept.cancel();
        let running_calls = |es: &[Arc<StreamEntry>]| {
            es.iter()
                .filter(|e| e.kind == StreamKind::Provider && !e.finished())
                .count()
        };
        let rpc = &self.rpc_in_flight;
        self.wait_until(Instant::now() + grace, |es| {
            running_calls(es) == 0 && rpc.load(Ordering::Acquire) == 0
        })
        .await;
        let cut_short = running_calls(&self.entries());
        self.force_stop.cancel();
        // Upper bounds, not delays: each wait ends as soon as its condition holds.
        let settle = Duration::from_secs(2);
        self.wait_until(Instant::now() + settle, |es| {
            es.iter().all(|e| e.finished())
        })
        .await;
        self.wait_until(Instant::now() + settle, |es| {
            es.iter().all(|e| match e.kind {
                StreamKind::Provider => e.drained(),
                StreamKind::Subscription => e.caught_up(),
            })
        })
        .await;
        self.close_conns.cancel();
        for e in self.entries() {
            e.kill.cancel();
        }
        self.tracker.close();
        if tokio::time::timeout(settle, self.tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                "connection tasks still running {settle:?} after they were told to stop; shutting down without them"
            );
        }
        if let Some(session) = &self.session {
            session.shutdown().await;
        }
        ShutdownReport { cut_short }
    }

    pub fn abort(&self) {
        self.draining.store(true, Ordering::Release);
        self.stop_accept.cancel();
        self.force_stop.cancel();
        self.close_conns.cancel();
        for e in self.entries() {
            e.cancel.cancel();
            e.kill.cancel();
        }
        self.tracker.close();
    }
}
