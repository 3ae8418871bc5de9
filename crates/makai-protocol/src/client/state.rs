//! Client-side state shared by the API, the connection tasks and the
//! forwarders: open streams (with their last sequence number), pending RPC
//! calls and the current connection.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{Notify, mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

use makai_ai::AssistantMessageEvent;

use super::ClientConfig;
use super::ClientError;
use super::link::Endpoint;
use crate::envelope::{Body, Envelope};
use crate::payload::{Ack, ErrorBody, ErrorCode, Json, Resume, StreamEnd, Welcome};
use crate::transport::Frame;

/// Counters of a client.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientStats {
    /// Sequenced messages dropped because they were already received.
    pub duplicates: u64,
    /// Holes in a stream's sequence detected (each answered with a `resume`).
    pub gaps: u64,
    /// Successful reconnects.
    pub reconnects: u64,
    /// Streams resumed after a reconnect.
    pub resumed_streams: u64,
}

/// What the reader hands to a stream's forwarder.
pub(crate) enum Delivery {
    Event(u64, Box<AssistantMessageEvent>),
    Agent(u64, Json),
    End(u64, StreamEnd),
    Fail(String),
}

struct Slot {
    last_seq: u64,
    consumed: u64,
    request: Frame,
    /// The request went out on some connection.
    sent: bool,
    resent: bool,
    cancelled: bool,
    gap_pending: bool,
    tx: mpsc::UnboundedSender<Delivery>,
}

/// The live connection.
pub(crate) struct Link {
    pub generation: u64,
    pub tx: mpsc::UnboundedSender<Frame>,
    pub kill: CancellationToken,
}

/// Connection state, for callers waiting on a connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Conn {
    Up(u64),
    Down,
    Failed(String),
}

#[derive(Default)]
struct State {
    link: Option<Link>,
    session: Option<String>,
    limits: Option<crate::payload::WireLimits>,
    slots: HashMap<u64, Slot>,
    rpcs: HashMap<u64, oneshot::Sender<Result<Json, ClientError>>>,
}

pub(crate) struct Shared {
    pub endpoint: Endpoint,
    pub token: String,
    pub config: ClientConfig,
    state: Mutex<State>,
    next_id: AtomicU64,
    generation: AtomicU64,
    /// Wakes the connection manager (a connection dropped, or work waits for one).
    pub demand: Notify,
    pub conn: watch::Sender<Conn>,
    pub shutdown: CancellationToken,
    duplicates: AtomicU64,
    gaps: AtomicU64,
    pub reconnects: AtomicU64,
    resumed: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn send_on(st: &State, frame: Frame) {
    if let Some(link) = &st.link {
        to_link(&link.tx, frame);
    }
}

/// Hands a frame to the link's writer. That fails only when the link just
/// died; the reconnect resends whatever a stream still needs.
fn to_link(tx: &mpsc::UnboundedSender<Frame>, frame: Frame) {
    if tx.send(frame).is_err() {
        tracing::debug!(
            "a frame for a link that just closed was dropped; the reconnect resends it"
        );
    }
}

impl Shared {
    pub fn new(endpoint: Endpoint, token: String, config: ClientConfig) -> Self {
        Shared {
            endpoint,
            token,
            config,
            state: Mutex::new(State::default()),
            next_id: AtomicU64::new(1),
            generation: AtomicU64::new(0),
            demand: Notify::new(),
            conn: watch::channel(Conn::Down).0,
            shutdown: CancellationToken::new(),
            duplicates: AtomicU64::new(0),
            gaps: AtomicU64::new(0),
            reconnects: AtomicU64::new(0),
            resumed: AtomicU64::new(0),
        }
    }

    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    pub fn session(&self) -> Option<String> {
        lock(&self.state).session.clone()
    }

    pub fn limits(&self) -> Option<crate::payload::WireLimits> {
        lock(&self.state).limits
    }

    pub fn stats(&self) -> ClientStats {
        ClientStats {
            duplicates: self.duplicates.load(Ordering::Relaxed),
            gaps: self.gaps.load(Ordering::Relaxed),
            reconnects: self.reconnects.load(Ordering::Relaxed),
            resumed_streams: self.resumed.load(Ordering::Relaxed),
        }
    }

    /// Registers stream `id` and sends its opening frame (now, or after the reconnect).
    pub fn open(
        &self,
        id: u64,
        request: Frame,
    ) -> Result<mpsc::UnboundedReceiver<Delivery>, String> {
        let mut st = lock(&self.state);
        if let Some(limits) = st.limits
            && request.len() > limits.max_message_bytes
        {
            return Err(format!(
                "the request is {} bytes but the makai server accepts at most {} bytes per message; shorten the conversation (or compact it) and retry",
                request.len(),
                limits.max_message_bytes
            ));
        }
        let (tx, rx) = mpsc::unbounded_channel();
        send_on(&st, request.clone());
        let connected = st.link.is_some();
        st.slots.insert(
            id,
            Slot {
                last_seq: 0,
                consumed: 0,
                request,
                sent: connected,
                resent: false,
                cancelled: false,
                gap_pending: false,
                tx,
            },
        );
        drop(st);
        if !connected {
            self.demand.notify_one();
        }
        Ok(rx)
    }

    /// The consumer cancelled stream `id`.
    pub fn cancel(&self, id: u64) {
        let mut st = lock(&self.state);
        if let Some(slot) = st.slots.get_mut(&id) {
            slot.cancelled = true;
            send_on(&st, Envelope::new(id, Body::Cancel).to_frame());
        }
    }

    /// The consumer took everything up to `seq` of stream `id`.
    pub fn ack(&self, id: u64, seq: u64) {
        let mut st = lock(&self.state);
        if let Some(slot) = st.slots.get_mut(&id) {
            slot.consumed = slot.consumed.max(seq);
            send_on(&st, Envelope::new(id, Body::Ack(Ack { seq })).to_frame());
        }
    }

    /// Sends a frame no stream waits for (a `preconnect`), if connected:
    /// it is not sent again after a reconnect.
    pub fn send_once(&self, frame: Frame) {
        send_on(&lock(&self.state), frame);
    }

    /// Registers an RPC call and sends it if connected. Returns false when not connected.
    pub fn start_rpc(
        &self,
        id: u64,
        frame: Frame,
        reply: oneshot::Sender<Result<Json, ClientError>>,
    ) -> Result<(), oneshot::Sender<Result<Json, ClientError>>> {
        let mut st = lock(&self.state);
        if st.link.is_none() {
            return Err(reply);
        }
        send_on(&st, frame);
        st.rpcs.insert(id, reply);
        Ok(())
    }

    pub fn drop_rpc(&self, id: u64) {
        lock(&self.state).rpcs.remove(&id);
    }

    /// Installs a fresh connection and re-sends what the streams need:
    /// requests the server never saw, `resume` (plus the last `ack`) for the others.
    pub fn install(
        &self,
        tx: mpsc::UnboundedSender<Frame>,
        kill: CancellationToken,
        welcome: &Welcome,
    ) -> u64 {
        let generation = self.generation.fetch_add(1, Ordering::AcqRel) + 1;
        let mut st = lock(&self.state);
        st.session = Some(welcome.session.clone());
        st.limits = Some(welcome.limits);
        let mut failed = Vec::new();
        for (&id, slot) in st.slots.iter_mut() {
            slot.gap_pending = false;
            if !slot.sent || (!welcome.resumed && slot.last_seq == 0) {
                slot.sent = true;
                to_link(&tx, slot.request.clone());
            } else if !welcome.resumed {
                failed.push(id);
                continue;
            } else {
                let resume = Resume {
                    last_seq: slot.last_seq,
                };
                to_link(&tx, Envelope::new(id, Body::Resume(resume)).to_frame());
                if slot.consumed > 0 {
                    let ack = Ack { seq: slot.consumed };
                    to_link(&tx, Envelope::new(id, Body::Ack(ack)).to_frame());
                }
                self.resumed.fetch_add(1, Ordering::Relaxed);
            }
            if slot.cancelled {
                to_link(&tx, Envelope::new(id, Body::Cancel).to_frame());
            }
        }
        for id in failed {
            if let Some(slot) = st.slots.remove(&id) {
                // A receiver that stopped waiting needs no answer.
                let _ = slot.tx.send(Delivery::Fail(format!(
                    "the makai server no longer knows this client's session (it restarted, or the client stayed away too long): stream {id} is lost after message {}",
                    slot.last_seq
                )));
            }
        }
        st.link = Some(Link {
            generation,
            tx,
            kill,
        });
        drop(st);
        self.conn.send_replace(Conn::Up(generation));
        generation
    }

    /// The connection of `generation` ended: pending RPC calls fail (their
    /// answers are lost), streams wait for the reconnect.
    pub fn link_down(&self, generation: u64) {
        let mut st = lock(&self.state);
        if st.link.as_ref().map(|l| l.generation) != Some(generation) {
            return;
        }
        st.link = None;
        for (_, reply) in st.rpcs.drain() {
            // A receiver that stopped waiting needs no answer.
            let _ = reply.send(Err(ClientError::ConnectionLost(
                "the connection dropped before the command's response arrived; it may or may not have run".into(),
            )));
        }
        drop(st);
        self.conn.send_replace(Conn::Down);
        self.demand.notify_one();
    }

    /// Reconnecting failed for good: every stream and call fails with `reason`.
    pub fn fail_all(&self, reason: &str) {
        let mut st = lock(&self.state);
        for (_, slot) in st.slots.drain() {
            // A receiver that stopped waiting needs no answer.
            let _ = slot.tx.send(Delivery::Fail(reason.to_string()));
        }
        for (_, reply) in st.rpcs.drain() {
            // A receiver that stopped waiting needs no answer.
            let _ = reply.send(Err(ClientError::ConnectionLost(reason.to_string())));
        }
        drop(st);
        self.conn.send_replace(Conn::Failed(reason.to_string()));
    }

    pub fn kill_link(&self) {
        if let Some(link) = &lock(&self.state).link {
            link.kill.cancel();
        }
    }

    /// Handles one message from the server.
    pub fn dispatch(&self, env: Envelope) {
        let id = env.stream;
        match env.body {
            Body::Event(ev) => self.deliver(id, env.seq, Delivery::Event(env.seq, ev)),
            Body::AgentEvent(v) => self.deliver(id, env.seq, Delivery::Agent(env.seq, v)),
            Body::StreamEnd(end) => self.deliver(id, env.seq, Delivery::End(env.seq, end)),
            Body::RpcResponse(v) => {
                if let Some(reply) = lock(&self.state).rpcs.remove(&id) {
                    // A receiver that stopped waiting needs no answer.
                    let _ = reply.send(Ok(v));
                }
            }
            Body::Error(e) => self.on_error(id, e),
            Body::Pong(_) | Body::Welcome(_) => {}
            other => tracing::debug!(kind = other.kind().as_str(), "ignoring unexpected message"),
        }
    }

    fn deliver(&self, id: u64, seq: u64, delivery: Delivery) {
        let is_end = matches!(delivery, Delivery::End(..));
        let mut st = lock(&self.state);
        let Some(slot) = st.slots.get_mut(&id) else {
            if is_end {
                // A stream the consumer gave up on: let the server forget it too.
                send_on(&st, Envelope::new(id, Body::Ack(Ack { seq })).to_frame());
            }
            return;
        };
        if seq <= slot.last_seq {
            self.duplicates.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if seq > slot.last_seq + 1 {
            self.gaps.fetch_add(1, Ordering::Relaxed);
            if !slot.gap_pending {
                slot.gap_pending = true;
                let resume = Resume {
                    last_seq: slot.last_seq,
                };
                send_on(&st, Envelope::new(id, Body::Resume(resume)).to_frame());
            }
            return;
        }
        slot.last_seq = seq;
        slot.gap_pending = false;
        // A forwarder that ended early drops the delivery; the slot stays so
        // the end is still acknowledged.
        let _ = slot.tx.send(delivery);
        if is_end {
            st.slots.remove(&id);
            send_on(&st, Envelope::new(id, Body::Ack(Ack { seq })).to_frame());
        }
    }

    fn on_error(&self, id: u64, e: ErrorBody) {
        let mut st = lock(&self.state);
        if id != 0
            && let Some(reply) = st.rpcs.remove(&id)
        {
            // A receiver that stopped waiting needs no answer.
            let _ = reply.send(Err(ClientError::Server {
                code: e.code,
                message: e.message,
            }));
            return;
        }
        let Some(slot) = st.slots.get_mut(&id) else {
            tracing::warn!(code = ?e.code, message = %e.message, "the makai server reported an error");
            return;
        };
        if e.code == ErrorCode::UnknownStream && slot.last_seq == 0 && !slot.resent {
            // The request was lost with the old connection: send it again.
            slot.resent = true;
            let frame = slot.request.clone();
            send_on(&st, frame);
            return;
        }
        if let Some(slot) = st.slots.remove(&id) {
            // A receiver that stopped waiting needs no answer.
            let _ = slot.tx.send(Delivery::Fail(e.message));
        }
    }
}

/// Builds the shared state behind an `Arc`.
pub(crate) fn shared(endpoint: Endpoint, token: String, config: ClientConfig) -> Arc<Shared> {
    Arc::new(Shared::new(endpoint, token, config))
}
