//! One consumer's ordered, unbounded queue of events ([`EventQueue`]), read
//! in batches ([`QueueReader`]); past its threshold, consecutive deltas of one
//! content block merge (see the parent module).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use makai_ai::AssistantMessageEvent;

use super::lock;
use crate::event::{AgentEvent, EventSink};

/// Capacity an emptied queue buffer keeps when it goes back to the producer,
/// or while its consumer waits: a burst (a whole response read at once is
/// about 200 events) regrows it in a few doublings, and the 50 queues of 50
/// concurrent runs do not each keep a burst's worth of room between bursts.
pub(super) const KEPT_CAPACITY: usize = 16;

/// Hands the queued events to the consumer's empty buffer `out`, and gives the
/// producer that buffer back, trimmed to [`KEPT_CAPACITY`].
fn hand_over(events: &mut VecDeque<AgentEvent>, out: &mut VecDeque<AgentEvent>) {
    std::mem::swap(events, out);
    if events.capacity() > KEPT_CAPACITY {
        events.shrink_to(KEPT_CAPACITY);
    }
}

#[derive(Default)]
pub(super) struct QueueState {
    pub(super) events: VecDeque<AgentEvent>,
    /// The producer is done: the consumer drains what is left, then sees the end.
    finished: bool,
    /// A consumer thread is blocked waiting (only then is the condvar signalled).
    thread_waiting: bool,
    waker: Option<Waker>,
}

/// One consumer's queue. The consumer takes everything queued at once, so a
/// consumer that keeps up never lets the queue grow.
pub(crate) struct EventQueue {
    pub(super) state: Mutex<QueueState>,
    ready: Condvar,
    /// The consumer is gone: drop everything.
    closed: AtomicBool,
    /// Events taken by the consumer and not yet handled.
    pub(super) in_hand: AtomicUsize,
    coalesce_after: usize,
}

impl EventQueue {
    pub(crate) fn new(coalesce_after: usize) -> Arc<Self> {
        Arc::new(EventQueue {
            state: Mutex::new(QueueState::default()),
            ready: Condvar::new(),
            closed: AtomicBool::new(false),
            in_hand: AtomicUsize::new(0),
            coalesce_after,
        })
    }

    pub(crate) fn push(&self, event: AgentEvent) {
        if self.closed.load(Ordering::Relaxed) {
            return;
        }
        let mut st = lock(&self.state);
        if st.finished {
            return;
        }
        if st.events.len() >= self.coalesce_after
            && let Some(back) = st.events.back_mut()
            && merge_delta(back, &event)
        {
            return;
        }
        st.events.push_back(event);
        let waker = st.waker.take();
        let notify = st.thread_waiting;
        drop(st);
        if notify {
            self.ready.notify_one();
        }
        if let Some(w) = waker {
            w.wake();
        }
    }

    pub(super) fn wake_all(&self, mut st: MutexGuard<'_, QueueState>) {
        let waker = st.waker.take();
        drop(st);
        self.ready.notify_all();
        if let Some(w) = waker {
            w.wake();
        }
    }

    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let mut st = lock(&self.state);
        st.events.clear();
        self.wake_all(st);
    }

    pub(crate) fn finish(&self) {
        let mut st = lock(&self.state);
        st.finished = true;
        self.wake_all(st);
    }

    pub(super) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }

    /// Events queued or taken and not yet handled.
    pub(crate) fn len(&self) -> usize {
        lock(&self.state).events.len() + self.in_hand.load(Ordering::Relaxed)
    }

    /// Blocks until events arrive and moves them all into `out` (which must be
    /// empty); false once closed, or finished and drained.
    pub(super) fn take_blocking(&self, out: &mut VecDeque<AgentEvent>) -> bool {
        let mut st = lock(&self.state);
        loop {
            if self.is_closed() {
                return false;
            }
            if !st.events.is_empty() {
                hand_over(&mut st.events, out);
                self.in_hand.store(out.len(), Ordering::Relaxed);
                return true;
            }
            if st.finished {
                return false;
            }
            if out.capacity() > KEPT_CAPACITY {
                out.shrink_to(KEPT_CAPACITY);
            }
            st.thread_waiting = true;
            st = self.ready.wait(st).unwrap_or_else(|e| e.into_inner());
            st.thread_waiting = false;
        }
    }

    /// Moves every queued event into `out` (which must be empty); `Ready(false)`
    /// once closed, or finished and drained.
    pub(super) fn poll_take(
        &self,
        cx: &mut Context<'_>,
        out: &mut VecDeque<AgentEvent>,
    ) -> Poll<bool> {
        if self.is_closed() {
            return Poll::Ready(false);
        }
        let mut st = lock(&self.state);
        if !st.events.is_empty() {
            hand_over(&mut st.events, out);
            return Poll::Ready(true);
        }
        if st.finished {
            return Poll::Ready(false);
        }
        st.waker = Some(cx.waker().clone());
        drop(st);
        // A consumer that waits holds no more than a small buffer.
        if out.capacity() > KEPT_CAPACITY {
            out.shrink_to(KEPT_CAPACITY);
        }
        Poll::Pending
    }
}

/// Reads a queue in batches (one lock per batch).
pub(crate) struct QueueReader {
    pub(super) queue: Arc<EventQueue>,
    local: VecDeque<AgentEvent>,
}

impl QueueReader {
    pub(crate) fn new(queue: Arc<EventQueue>) -> Self {
        QueueReader {
            queue,
            local: VecDeque::new(),
        }
    }

    /// Events not yet read.
    pub(crate) fn len(&self) -> usize {
        self.local.len() + self.queue.len()
    }

    pub(crate) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<AgentEvent>> {
        if self.queue.is_closed() {
            return Poll::Ready(None);
        }
        if let Some(e) = self.local.pop_front() {
            return Poll::Ready(Some(e));
        }
        match self.queue.poll_take(cx, &mut self.local) {
            Poll::Ready(true) => Poll::Ready(self.local.pop_front()),
            Poll::Ready(false) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl EventSink for EventQueue {
    fn emit(&self, event: AgentEvent) {
        self.push(event);
    }
}

/// Merges `new` into `back` when both are deltas of the same kind for the same block.
fn merge_delta(back: &mut AgentEvent, new: &AgentEvent) -> bool {
    use AssistantMessageEvent as E;
    let (
        AgentEvent::MessageUpdate {
            message: back_msg,
            assistant_message_event: back_ev,
        },
        AgentEvent::MessageUpdate {
            message: new_msg,
            assistant_message_event: new_ev,
        },
    ) = (back, new)
    else {
        return false;
    };
    let same = match (&*back_ev, new_ev) {
        (
            E::TextDelta {
                content_index: a, ..
            },
            E::TextDelta {
                content_index: b, ..
            },
        )
        | (
            E::ThinkingDelta {
                content_index: a, ..
            },
            E::ThinkingDelta {
                content_index: b, ..
            },
        )
        | (
            E::ToolcallDelta {
                content_index: a, ..
            },
            E::ToolcallDelta {
                content_index: b, ..
            },
        ) => a == b,
        _ => false,
    };
    if !same {
        return false;
    }
    match (back_ev, new_ev) {
        (E::TextDelta { delta, .. }, E::TextDelta { delta: more, .. })
        | (E::ThinkingDelta { delta, .. }, E::ThinkingDelta { delta: more, .. })
        | (E::ToolcallDelta { delta, .. }, E::ToolcallDelta { delta: more, .. }) => {
            delta.push_str(more)
        }
        _ => return false,
    }
    back_msg.clone_from(new_msg);
    true
}
