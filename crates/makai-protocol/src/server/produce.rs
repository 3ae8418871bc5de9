//! Producers: turn a model call or an agent-event subscription into the
//! sequenced messages of one stream.

use std::sync::Arc;

use futures::StreamExt;
use futures::stream::BoxStream;

use makai_ai::{AssistantMessage, AssistantMessageEvent, StopReason, now_ms};

use super::guard::check_credentials;
use super::state::Shared;
use super::stream::StreamEntry;
use crate::envelope::{Body, Envelope};
use crate::payload::{EndReason, Json, StreamEnd, StreamRequest};

const SHUTDOWN_TEXT: &str =
    "the makai server is shutting down; the response was cut short (retry once it is back)";

struct Seq<'a> {
    entry: &'a Arc<StreamEntry>,
    seq: u64,
}

impl Seq<'_> {
    async fn push(&mut self, body: Body) -> Result<(), ()> {
        self.seq += 1;
        let frame = Envelope::sequenced(self.entry.key.1, self.seq, body).to_frame();
        self.entry.push(frame, false).await
    }

    async fn end(&mut self, reason: EndReason, message: Option<String>) {
        self.seq += 1;
        let body = Body::StreamEnd(StreamEnd { reason, message });
        let frame = Envelope::sequenced(self.entry.key.1, self.seq, body).to_frame();
        // Refused only when the stream was already killed (client gone for
        // good): there is nobody left to tell that it ended.
        let _ = self.entry.push(frame, true).await;
    }
}

fn refusal_event(req: &StreamRequest, message: String) -> AssistantMessageEvent {
    AssistantMessageEvent::Error {
        reason: StopReason::Error,
        error: Box::new(AssistantMessage {
            api: req.model.api.as_str().to_string(),
            provider: req.model.provider.clone(),
            model: req.model.id.clone(),
            stop_reason: StopReason::Error,
            error_message: Some(message),
            timestamp: now_ms(),
            ..Default::default()
        }),
    }
}

/// Runs one model call on the server's client and streams its events.
pub(crate) async fn run_provider(shared: Arc<Shared>, entry: Arc<StreamEntry>, req: StreamRequest) {
    let mut out = Seq {
        entry: &entry,
        seq: 0,
    };
    if let Err(message) = check_credentials(&req.model, &shared.trusted_base_urls) {
        let ev = refusal_event(&req, message);
        if out.push(Body::Event(Box::new(ev))).await.is_ok() {
            out.end(EndReason::Complete, None).await;
        }
        return;
    }
    let options = req.options.to_stream_options(entry.cancel.clone());
    let mut events = shared
        .client
        .stream(&req.model, &req.context, options)
        .await;
    let mut terminal = false;
    let (reason, message) = loop {
        let next = tokio::select! {
            biased;
            _ = entry.kill.cancelled() => return,
            _ = shared.force_stop.cancelled() => {
                break (EndReason::Shutdown, Some(SHUTDOWN_TEXT.to_string()));
            }
            ev = events.next() => ev,
        };
        match next {
            Some(ev) => {
                terminal = ev.is_terminal();
                if out.push(Body::Event(Box::new(ev))).await.is_err() {
                    return;
                }
                if terminal {
                    let reason = if entry.cancel.is_cancelled() {
                        EndReason::Cancelled
                    } else {
                        EndReason::Complete
                    };
                    break (reason, None);
                }
            }
            None if terminal => break (EndReason::Complete, None),
            None => {
                break (
                    EndReason::Failed,
                    Some("the model stream ended without a final event".to_string()),
                );
            }
        }
    };
    // Dropping the provider stream cancels a request that is still running.
    drop(events);
    out.end(reason, message).await;
}

/// Forwards an agent-session subscription as `agent_event` messages; the
/// first is message `after + 1`.
pub(crate) async fn run_subscription(
    shared: Arc<Shared>,
    entry: Arc<StreamEntry>,
    mut events: BoxStream<'static, Json>,
    after: u64,
) {
    let mut out = Seq {
        entry: &entry,
        seq: after,
    };
    let (reason, message) = loop {
        let next = tokio::select! {
            biased;
            _ = entry.kill.cancelled() => return,
            _ = entry.cancel.cancelled() => break (EndReason::Cancelled, None),
            _ = shared.force_stop.cancelled() => {
                break (EndReason::Shutdown, Some("the makai server is shutting down".to_string()));
            }
            ev = events.next() => ev,
        };
        match next {
            Some(v) => {
                if out.push(Body::AgentEvent(v)).await.is_err() {
                    return;
                }
            }
            None => break (EndReason::Complete, None),
        }
    };
    drop(events);
    out.end(reason, message).await;
}
