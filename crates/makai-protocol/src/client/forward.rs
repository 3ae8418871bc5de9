//! Forwarders: one task per open stream moves what the reader delivered to
//! the consumer, acknowledges what the consumer took (flow-control credit),
//! turns a dropped / cancelled consumer into a `cancel`, and turns an abnormal
//! end into a terminal `error` event that keeps the content received so far.

use std::sync::Arc;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use makai_ai::{AssistantMessageEvent, MessageAccumulator, Model, StopReason};

use super::ClientError;
use super::state::{Delivery, Shared};
use crate::payload::{EndReason, Json, StreamEnd};

/// Most events handed to the consumer at once. With [`CONSUMER_QUEUE`] batches
/// queued, a client buffers at most this many times that many events per
/// stream beyond the server's send window.
pub(crate) const MAX_BATCH: usize = 32;
/// Batches queued for the consumer of a model call.
pub(crate) const CONSUMER_QUEUE: usize = 8;

fn ack_every(shared: &Shared) -> u64 {
    shared
        .limits()
        .map_or(64, |l| (l.send_window / 2).max(1) as u64)
}

/// The terminal event for a stream that ended without one.
pub(crate) fn failure_event(
    acc: &MessageAccumulator,
    started: bool,
    reason: StopReason,
    message: String,
) -> Vec<AssistantMessageEvent> {
    let mut out = Vec::with_capacity(2);
    if !started {
        out.push(AssistantMessageEvent::Start);
    }
    let mut error = acc.message().clone();
    error.stop_reason = reason;
    error.error_message = Some(message);
    out.push(AssistantMessageEvent::Error {
        reason,
        error: Box::new(error),
    });
    out
}

fn end_text(end: &StreamEnd) -> (StopReason, String) {
    let detail = end.message.clone();
    match end.reason {
        EndReason::Cancelled => (
            StopReason::Aborted,
            detail.unwrap_or_else(|| "the request was cancelled".into()),
        ),
        EndReason::Shutdown => (
            StopReason::Error,
            detail.unwrap_or_else(|| "the makai server shut down during the request".into()),
        ),
        EndReason::Failed | EndReason::Complete => (
            StopReason::Error,
            detail.unwrap_or_else(|| "the stream ended without a final event".into()),
        ),
    }
}

/// Forwards a model call's events to an `AssistantMessageEventStream` channel.
/// `_client` keeps the connection open while the stream is.
pub(crate) async fn forward_provider(
    _client: Arc<super::Inner>,
    shared: Arc<Shared>,
    id: u64,
    model: Model,
    mut rx: mpsc::UnboundedReceiver<Delivery>,
    tx: mpsc::Sender<Vec<AssistantMessageEvent>>,
    cancel: CancellationToken,
) {
    let mut acc = MessageAccumulator::new(model.api.as_str(), &model.provider, &model.id);
    let (mut started, mut terminal, mut cancel_sent, mut consumer_gone) =
        (false, false, false, false);
    let every = ack_every(&shared);
    let mut acked = 0u64;
    loop {
        let first = tokio::select! {
            biased;
            _ = cancel.cancelled(), if !cancel_sent => {
                cancel_sent = true;
                shared.cancel(id);
                continue;
            }
            d = rx.recv() => d,
        };
        let Some(first) = first else {
            // The slot vanished without an end (client shut down).
            if !terminal && !consumer_gone {
                let evs = failure_event(
                    &acc,
                    started,
                    StopReason::Error,
                    "the makai client was closed".into(),
                );
                // A receiver that stopped waiting needs no answer.
                let _ = tx.send(evs).await;
            }
            return;
        };
        let mut batch = Vec::new();
        let mut seq = 0u64;
        let mut done = false;
        let mut next = Some(first);
        while let Some(d) = next.take() {
            match d {
                Delivery::Event(s, ev) => {
                    seq = s;
                    if matches!(*ev, AssistantMessageEvent::Start) {
                        started = true;
                    }
                    terminal |= ev.is_terminal();
                    acc.apply(&ev);
                    batch.push(*ev);
                }
                Delivery::End(s, end) => {
                    seq = s;
                    done = true;
                    if !terminal {
                        let (reason, text) = end_text(&end);
                        batch.extend(failure_event(&acc, started, reason, text));
                        terminal = true;
                    }
                }
                Delivery::Fail(text) => {
                    done = true;
                    if !terminal {
                        batch.extend(failure_event(&acc, started, StopReason::Error, text));
                        terminal = true;
                    }
                }
                Delivery::Agent(..) => {}
            }
            if !done && batch.len() < MAX_BATCH {
                next = rx.try_recv().ok();
            }
        }
        if !consumer_gone && !batch.is_empty() {
            let permit = loop {
                tokio::select! {
                    biased;
                    _ = cancel.cancelled(), if !cancel_sent && !terminal => {
                        cancel_sent = true;
                        shared.cancel(id);
                    }
                    p = tx.reserve() => break p.ok(),
                }
            };
            match permit {
                Some(p) => p.send(batch),
                None => consumer_gone = true,
            }
        }
        if consumer_gone && !cancel_sent && !terminal {
            cancel_sent = true;
            shared.cancel(id);
        }
        if done {
            return;
        }
        if seq >= acked + every {
            acked = seq;
            shared.ack(id, seq);
        }
    }
}

/// Forwards an agent-event subscription.
pub(crate) async fn forward_session(
    _client: Arc<super::Inner>,
    shared: Arc<Shared>,
    id: u64,
    mut rx: mpsc::UnboundedReceiver<Delivery>,
    tx: mpsc::Sender<Result<Json, ClientError>>,
    cancel: CancellationToken,
) {
    let every = ack_every(&shared);
    let mut acked = 0u64;
    let mut cancel_sent = false;
    loop {
        let d = tokio::select! {
            biased;
            _ = cancel.cancelled(), if !cancel_sent => {
                cancel_sent = true;
                shared.cancel(id);
                continue;
            }
            d = rx.recv() => d,
        };
        let (seq, item) = match d {
            None => return,
            Some(Delivery::Agent(seq, v)) => (seq, Ok(v)),
            Some(Delivery::End(_, end)) => {
                if end.reason != EndReason::Complete && end.reason != EndReason::Cancelled {
                    let (_, text) = end_text(&end);
                    // A receiver that stopped waiting needs no answer.
                    let _ = tx.send(Err(ClientError::StreamEnded(text))).await;
                }
                return;
            }
            Some(Delivery::Fail(text)) => {
                // A receiver that stopped waiting needs no answer.
                let _ = tx.send(Err(ClientError::StreamEnded(text))).await;
                return;
            }
            Some(Delivery::Event(..)) => continue,
        };
        let sent = tokio::select! {
            r = tx.send(item) => r.is_ok(),
            _ = cancel.cancelled(), if !cancel_sent => false,
        };
        if !sent && !cancel_sent {
            cancel_sent = true;
            shared.cancel(id);
        }
        if seq >= acked + every {
            acked = seq;
            shared.ack(id, seq);
        }
    }
}
