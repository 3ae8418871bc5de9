//! One server-side stream: its replay ring, flow control and scheduling onto
//! the connection currently attached to it.
//!
//! Sequence numbers: `produced` is the last message made, `sent` the last one
//! handed to a connection writer, `acked` the last one the client consumed.
//! The ring keeps every message after `acked` (so `resume` can replay them);
//! the producer waits while `produced - acked` reaches the replay capacity and
//! the writer sends only up to `acked + send_window`. A slow client therefore
//! stalls its own streams' producers and nothing else, and memory per stream is
//! bounded by the replay capacity.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::payload::ErrorCode;
use crate::transport::Frame;

/// What a stream carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StreamKind {
    /// A model call (`stream_request`).
    Provider,
    /// An agent-session event subscription (`subscribe`).
    Subscription,
}

/// `(session, stream id)`.
pub(crate) type StreamKey = (Arc<str>, u64);

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A connection's outgoing side: streams with something to send, and control frames.
pub(crate) struct Outbox {
    pub id: u64,
    queue: Mutex<VecDeque<Arc<StreamEntry>>>,
    notify: Notify,
}

impl Outbox {
    pub fn new(id: u64) -> Self {
        Outbox {
            id,
            queue: Mutex::new(VecDeque::new()),
            notify: Notify::new(),
        }
    }

    fn enqueue(&self, entry: Arc<StreamEntry>) {
        lock(&self.queue).push_back(entry);
        self.notify.notify_one();
    }

    /// Puts a stream that still has sendable messages back at the end (round robin).
    pub fn requeue(&self, entry: Arc<StreamEntry>) {
        lock(&self.queue).push_back(entry);
    }

    pub fn pop(&self) -> Option<Arc<StreamEntry>> {
        lock(&self.queue).pop_front()
    }

    pub async fn wait(&self) {
        self.notify.notified().await;
    }
}

struct State {
    /// Messages `first_seq ..= produced`.
    ring: VecDeque<Frame>,
    first_seq: u64,
    produced: u64,
    sent: u64,
    acked: u64,
    finished: bool,
    attached: Option<Arc<Outbox>>,
    scheduled: bool,
    /// Bumped at every attach / detach, to tell stale expiry timers apart.
    epoch: u64,
}

impl State {
    fn sendable(&self, window: u64) -> bool {
        self.sent < self.produced && self.sent < self.acked.saturating_add(window)
    }
}

/// Why a `resume` was refused.
#[derive(Debug)]
pub(crate) struct ResumeRefused {
    pub code: ErrorCode,
    pub message: String,
}

/// One stream of a session.
pub(crate) struct StreamEntry {
    pub key: StreamKey,
    pub kind: StreamKind,
    /// Cancels the work (the provider request): client `cancel`.
    pub cancel: CancellationToken,
    /// Abandons the stream entirely (expired while detached, forced shutdown).
    pub kill: CancellationToken,
    capacity: u64,
    window: u64,
    state: Mutex<State>,
    space: Notify,
}

impl StreamEntry {
    pub fn new(key: StreamKey, kind: StreamKind, capacity: usize, window: usize) -> Arc<Self> {
        StreamEntry::after(key, kind, capacity, window, 0)
    }

    /// A stream whose messages up to `seq` were produced (and acknowledged)
    /// elsewhere: its next message is `seq + 1` (a subscription resumed from
    /// another server's, see [`crate::SessionHandler::resume_subscription`]).
    pub fn after(
        key: StreamKey,
        kind: StreamKind,
        capacity: usize,
        window: usize,
        seq: u64,
    ) -> Arc<Self> {
        let capacity = capacity.max(1) as u64;
        Arc::new(StreamEntry {
            key,
            kind,
            cancel: CancellationToken::new(),
            kill: CancellationToken::new(),
            capacity,
            window: (window.max(1) as u64).min(capacity),
            state: Mutex::new(State {
                ring: VecDeque::new(),
                first_seq: seq + 1,
                produced: seq,
                sent: seq,
                acked: seq,
                finished: false,
                attached: None,
                scheduled: false,
                epoch: 0,
            }),
            space: Notify::new(),
        })
    }

    fn maybe_schedule(self: &Arc<Self>, st: &mut State) {
        if st.scheduled || !st.sendable(self.window) {
            return;
        }
        if let Some(outbox) = &st.attached {
            st.scheduled = true;
            outbox.enqueue(Arc::clone(self));
        }
    }

    /// Appends the next message (the producer's `seq` must be `produced + 1`),
    /// waiting while the client is a full replay buffer behind. `Err` when the
    /// stream was killed meanwhile.
    pub async fn push(self: &Arc<Self>, frame: Frame, last: bool) -> Result<(), ()> {
        loop {
            let waiter = self.space.notified();
            {
                let mut st = lock(&self.state);
                if st.finished {
                    return Err(());
                }
                if st.produced - st.acked < self.capacity {
                    st.ring.push_back(frame);
                    st.produced += 1;
                    st.finished = last;
                    self.maybe_schedule(&mut st);
                    return Ok(());
                }
            }
            tokio::select! {
                _ = waiter => {}
                _ = self.kill.cancelled() => return Err(()),
            }
        }
    }

    /// Writer side: moves up to `max` sendable messages into `out`. Returns
    /// true when more remain sendable (the caller re-queues the stream).
    pub fn take_batch(self: &Arc<Self>, outbox_id: u64, out: &mut Vec<Frame>, max: usize) -> bool {
        let mut st = lock(&self.state);
        if st.attached.as_ref().map(|o| o.id) != Some(outbox_id) {
            // Re-attached elsewhere (that connection schedules it) or detached.
            return false;
        }
        let mut n = 0;
        while n < max && st.sendable(self.window) {
            let idx = (st.sent + 1 - st.first_seq) as usize;
            match st.ring.get(idx) {
                Some(f) => out.push(f.clone()),
                None => break,
            }
            st.sent += 1;
            n += 1;
        }
        let more = st.sendable(self.window);
        if !more {
            st.scheduled = false;
        }
        more
    }

    /// The client consumed everything up to `seq`. Returns true when the stream
    /// is finished and fully acknowledged (it can be forgotten).
    pub fn ack(self: &Arc<Self>, seq: u64) -> bool {
        let mut st = lock(&self.state);
        let seq = seq.min(st.sent);
        if seq > st.acked {
            st.acked = seq;
            while st.first_seq <= st.acked && st.ring.pop_front().is_some() {
                st.first_seq += 1;
            }
            self.space.notify_one();
            self.maybe_schedule(&mut st);
        }
        st.finished && st.acked >= st.produced
    }

    /// Attaches the stream to `outbox`, re-sending everything after `last_seq`.
    pub fn attach(
        self: &Arc<Self>,
        outbox: &Arc<Outbox>,
        last_seq: u64,
    ) -> Result<(), ResumeRefused> {
        let mut st = lock(&self.state);
        if last_seq > st.produced {
            return Err(ResumeRefused {
                code: ErrorCode::ResumeInvalid,
                message: format!(
                    "cannot resume stream {} after seq {last_seq}: the server has sent only up to seq {}; resume from the last seq you received",
                    self.key.1, st.produced
                ),
            });
        }
        if last_seq + 1 < st.first_seq {
            return Err(ResumeRefused {
                code: ErrorCode::ResumeGapTooOld,
                message: format!(
                    "cannot resume stream {} after seq {last_seq}: the server keeps only messages after the last acknowledged one (oldest kept: seq {}); messages {}..{} are gone, so the stream cannot be completed: start the request again",
                    self.key.1,
                    st.first_seq,
                    last_seq + 1,
                    st.first_seq - 1
                ),
            });
        }
        st.sent = last_seq;
        st.attached = Some(Arc::clone(outbox));
        st.scheduled = false;
        st.epoch += 1;
        self.maybe_schedule(&mut st);
        Ok(())
    }

    /// Detaches from `outbox_id` (its connection ended). Returns the new epoch
    /// when it was attached there, for the expiry timer.
    pub fn detach(&self, outbox_id: u64) -> Option<u64> {
        let mut st = lock(&self.state);
        if st.attached.as_ref().map(|o| o.id) != Some(outbox_id) {
            return None;
        }
        st.attached = None;
        st.scheduled = false;
        st.epoch += 1;
        Some(st.epoch)
    }

    /// True when still detached since `epoch`.
    pub fn detached_since(&self, epoch: u64) -> bool {
        let st = lock(&self.state);
        st.attached.is_none() && st.epoch == epoch
    }

    /// True once the last message was produced.
    pub fn finished(&self) -> bool {
        lock(&self.state).finished
    }

    /// True when finished and every message was handed to a writer (or nobody is attached to take it).
    pub fn drained(&self) -> bool {
        let st = lock(&self.state);
        st.finished && (st.sent >= st.produced || st.attached.is_none())
    }

    /// True when every message produced so far was handed to a writer (or nobody
    /// is attached to take it), finished or not: a session subscription never
    /// finishes before shutdown, but its events must still go out.
    pub fn caught_up(&self) -> bool {
        let st = lock(&self.state);
        st.sent >= st.produced || st.attached.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::ndjson::frame;
    use std::time::Duration;

    fn entry(cap: usize, window: usize) -> Arc<StreamEntry> {
        StreamEntry::new((Arc::from("s"), 1), StreamKind::Provider, cap, window)
    }

    /// Everything `o` holds now (`_e`: the stream whose frames are expected).
    fn drain(_e: &Arc<StreamEntry>, o: &Arc<Outbox>) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(x) = o.pop() {
            if x.take_batch(o.id, &mut out, 2) {
                o.requeue(x);
            }
        }
        out.iter().map(|f| f.as_str().to_string()).collect()
    }

    #[tokio::test]
    async fn window_limits_sending_and_acks_release_it() {
        let e = entry(8, 2);
        let o = Arc::new(Outbox::new(1));
        e.attach(&o, 0).unwrap();
        for i in 1..=4 {
            e.push(frame(&i.to_string()), false).await.unwrap();
        }
        assert_eq!(drain(&e, &o), ["1", "2"]);
        assert!(!e.ack(1));
        assert_eq!(drain(&e, &o), ["3"]);
        e.ack(3);
        assert_eq!(drain(&e, &o), ["4"]);
    }

    #[tokio::test]
    async fn producer_waits_at_capacity_until_acked() {
        let e = entry(2, 2);
        let o = Arc::new(Outbox::new(1));
        e.attach(&o, 0).unwrap();
        e.push(frame("1"), false).await.unwrap();
        e.push(frame("2"), false).await.unwrap();
        let blocked = tokio::time::timeout(Duration::from_millis(50), e.push(frame("3"), true));
        assert!(blocked.await.is_err(), "the third push must wait");
        assert_eq!(drain(&e, &o), ["1", "2"]);
        e.ack(1);
        e.push(frame("3"), true).await.unwrap();
        assert_eq!(drain(&e, &o), ["3"]);
        assert!(!e.ack(2));
        assert!(e.ack(3), "finished and fully acknowledged");
    }

    #[tokio::test]
    async fn resume_replays_unacked_and_refuses_old_gaps() {
        let e = entry(8, 8);
        let o1 = Arc::new(Outbox::new(1));
        e.attach(&o1, 0).unwrap();
        for i in 1..=5 {
            e.push(frame(&i.to_string()), false).await.unwrap();
        }
        assert_eq!(drain(&e, &o1).len(), 5);
        e.ack(2);
        assert!(e.detach(1).is_some());
        let o2 = Arc::new(Outbox::new(2));
        e.attach(&o2, 3).unwrap();
        assert_eq!(drain(&e, &o2), ["4", "5"]);
        assert_eq!(drain(&e, &o1), Vec::<String>::new());
        let err = e.attach(&o2, 1).unwrap_err();
        assert_eq!(err.code, ErrorCode::ResumeGapTooOld);
        assert!(
            err.message.contains("oldest kept: seq 3"),
            "{}",
            err.message
        );
        assert_eq!(e.attach(&o2, 9).unwrap_err().code, ErrorCode::ResumeInvalid);
    }
}
