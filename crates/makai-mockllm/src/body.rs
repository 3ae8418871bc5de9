//! The response body driver: sends pre-rendered events one write each, paced
//! by the scripted per-event delay, and the scripted fault at the end.
//!
//! Each event is its own write: the body yields to the server between events
//! (or sleeps for the pace), so hyper flushes every event on its own instead of
//! gathering the ready ones into one write.

use std::io;
use std::time::Duration;

use tokio::time::Instant;

use axum::body::Body;
use bytes::Bytes;
use tokio_util::sync::CancellationToken;

use crate::script::{ErrorKind, ScriptedResponse};

/// How long a stalled stream stays open at most.
pub(crate) const STALL_LIMIT: Duration = Duration::from_secs(600);

/// Pause before a scripted disconnect so earlier frames reach the socket.
const FLUSH_GRACE: Duration = Duration::from_millis(20);

/// Bytes sent by the garbage fault: a broken JSON event, then invalid UTF-8.
pub(crate) const GARBAGE: &[u8] = b"data: {not json\n\n\xff\xfe\xfd\x80\xc3garbage\x00\n\n";

/// What happens once the (possibly truncated) event list has been sent.
#[derive(Debug)]
enum Tail {
    /// End the body cleanly.
    End,
    /// End the body with an error, so the connection is aborted mid-body.
    Disconnect,
    /// Send [`GARBAGE`], then end.
    Garbage,
    /// Send nothing more until the client leaves (or shutdown / [`STALL_LIMIT`]).
    Stall,
    /// Send this (an in-stream error event), then end.
    Event(Bytes),
}

/// A body to send: events, then a tail.
#[derive(Debug)]
pub(crate) struct Plan {
    events: Vec<Bytes>,
    tail: Option<Tail>,
    delay: Option<Duration>,
    cancel: CancellationToken,
}

impl Plan {
    /// Applies the faults of `resp` to `events`; the earliest fault wins (ties:
    /// disconnect, garbage, stall, end, error event). `error_event(n, kind)`
    /// renders the API's error event sent after `n` events.
    pub(crate) fn new(
        mut events: Vec<Bytes>,
        resp: &ScriptedResponse,
        error_event: impl FnOnce(usize, ErrorKind) -> Bytes,
        cancel: CancellationToken,
    ) -> Self {
        enum Fault {
            Disconnect,
            Garbage,
            Stall,
            End,
            Error(ErrorKind),
        }
        let chosen = [
            resp.disconnect_after_events.map(|n| (n, Fault::Disconnect)),
            resp.garbage_after_events.map(|n| (n, Fault::Garbage)),
            resp.stall_after_events.map(|n| (n, Fault::Stall)),
            resp.end_after_events.map(|n| (n, Fault::End)),
            resp.error_event_after.map(|(n, k)| (n, Fault::Error(k))),
        ]
        .into_iter()
        .flatten()
        .min_by_key(|(n, _)| *n);
        let tail = match chosen {
            None => Tail::End,
            Some((n, fault)) => {
                events.truncate(n);
                match fault {
                    Fault::Disconnect => Tail::Disconnect,
                    Fault::Garbage => Tail::Garbage,
                    Fault::Stall => Tail::Stall,
                    Fault::End => Tail::End,
                    Fault::Error(kind) => Tail::Event(error_event(events.len(), kind)),
                }
            }
        };
        Self {
            events,
            tail: Some(tail),
            delay: resp.delay_per_event.filter(|d| !d.is_zero()),
            cancel,
        }
    }

    /// Whether the body can be sent as one buffer (no delay, no fault).
    fn is_plain(&self) -> bool {
        self.delay.is_none() && matches!(self.tail, Some(Tail::End))
    }

    /// The streaming body (one frame per event).
    pub(crate) fn into_body(self) -> Body {
        if self.is_plain() && self.events.len() == 1 {
            return Body::from(self.events.into_iter().next().unwrap_or_default());
        }
        let state = State {
            events: self.events.into_iter(),
            tail: self.tail,
            delay: self.delay,
            next: None,
            cancel: self.cancel,
            done: false,
        };
        Body::from_stream(futures::stream::unfold(state, step))
    }
}

struct State {
    events: std::vec::IntoIter<Bytes>,
    tail: Option<Tail>,
    delay: Option<Duration>,
    /// When the next event is due (paced streams, from the first event on).
    next: Option<Instant>,
    cancel: CancellationToken,
    done: bool,
}

enum Action {
    Send(Bytes),
    Tail(Tail),
}

fn aborted(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionAborted, format!("mockllm: {why}"))
}

/// Sleeps `d` unless the server shuts down first; `false` on shutdown.
async fn pause(cancel: &CancellationToken, d: Duration) -> bool {
    pause_until(cancel, Instant::now() + d).await
}

/// Sleeps until `deadline` unless the server shuts down first; `false` on shutdown.
async fn pause_until(cancel: &CancellationToken, deadline: Instant) -> bool {
    tokio::select! {
        () = cancel.cancelled() => false,
        () = tokio::time::sleep_until(deadline) => true,
    }
}

/// Waits until the next event is due: `delay` after the previous one's due
/// time (a late event does not push back the ones after it), or, unpaced,
/// one turn of the scheduler, so the event before is written on its own.
async fn wait_turn(st: &mut State) -> bool {
    let Some(delay) = st.delay else {
        tokio::task::yield_now().await;
        return true;
    };
    let now = Instant::now();
    let due = st.next.map_or(now + delay, |last| last + delay);
    st.next = Some(due);
    if due <= now {
        tokio::task::yield_now().await;
        return true;
    }
    pause_until(&st.cancel, due).await
}

async fn step(mut st: State) -> Option<(Result<Bytes, io::Error>, State)> {
    if st.done {
        return None;
    }
    let action = match st.events.next() {
        Some(bytes) => Action::Send(bytes),
        None => Action::Tail(st.tail.take()?),
    };
    let sends = matches!(
        action,
        Action::Send(_) | Action::Tail(Tail::Event(_) | Tail::Garbage)
    );
    if sends && !wait_turn(&mut st).await {
        st.done = true;
        return Some((Err(aborted("server shut down")), st));
    }
    match action {
        Action::Send(bytes) | Action::Tail(Tail::Event(bytes)) => Some((Ok(bytes), st)),
        Action::Tail(Tail::Garbage) => Some((Ok(Bytes::from_static(GARBAGE)), st)),
        Action::Tail(Tail::End) => None,
        Action::Tail(Tail::Disconnect) => {
            // Let the server flush the headers and the events sent so far, so
            // the client sees them and then a broken body (not a failed request).
            pause(&st.cancel, FLUSH_GRACE).await;
            st.done = true;
            Some((Err(aborted("scripted disconnect")), st))
        }
        Action::Tail(Tail::Stall) => {
            tracing::debug!("mockllm: stalling stream");
            pause(&st.cancel, STALL_LIMIT).await;
            st.done = true;
            Some((Err(aborted("stall ended")), st))
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use futures::StreamExt;

    fn evs(n: usize) -> Vec<Bytes> {
        (0..n).map(|i| Bytes::from(format!("e{i};"))).collect()
    }

    async fn collect(plan: Plan) -> (Vec<u8>, bool) {
        let mut stream = plan.into_body().into_data_stream();
        let mut out = Vec::new();
        while let Some(item) = stream.next().await {
            match item {
                Ok(b) => out.extend_from_slice(&b),
                Err(_) => return (out, true),
            }
        }
        (out, false)
    }

    #[tokio::test]
    async fn earliest_fault_wins() {
        let resp = ScriptedResponse::new()
            .error_after(1, ErrorKind::Server)
            .disconnect_after(2);
        let plan = Plan::new(
            evs(4),
            &resp,
            |n, _| Bytes::from(format!("err@{n}")),
            CancellationToken::new(),
        );
        assert_eq!(collect(plan).await, (b"e0;err@1".to_vec(), false));

        let resp = ScriptedResponse::new().disconnect_after(2).end_after(2);
        let plan = Plan::new(evs(4), &resp, |_, _| Bytes::new(), CancellationToken::new());
        assert_eq!(collect(plan).await, (b"e0;e1;".to_vec(), true));
    }

    #[tokio::test]
    async fn stall_ends_on_shutdown() {
        let cancel = CancellationToken::new();
        let resp = ScriptedResponse::new().stall_after(1);
        let plan = Plan::new(evs(3), &resp, |_, _| Bytes::new(), cancel.clone());
        let task = tokio::spawn(collect(plan));
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!task.is_finished());
        cancel.cancel();
        assert_eq!(task.await.unwrap(), (b"e0;".to_vec(), true));
    }
}
