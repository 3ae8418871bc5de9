//! [`ServedSession`]: the [`SessionHandler`] of `makai serve`. Commands go to
//! the RPC mode's dispatcher; the session's events (the same JSON objects RPC
//! mode writes on stdout) fan out to every subscriber.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use futures::stream::BoxStream;
use makai_protocol::SessionHandler;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch};

use makai_rpc::{Record, RpcResponse, SessionEvent};

use crate::app::{AppSession, OutEvent};
use crate::modes::rpc::{Handler, Reply};

/// Events queued per subscriber. A subscriber further behind than this loses
/// its subscription (with a final `subscription_overflow` event) instead of
/// making the server hold an unbounded backlog.
pub const SUBSCRIBER_QUEUE: usize = 8192;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

struct Subscriber {
    tx: mpsc::Sender<OutEvent>,
    overflowed: Arc<AtomicBool>,
}

/// Hands each event to every subscriber without blocking.
#[derive(Default)]
struct Fanout {
    subscribers: Mutex<Vec<Subscriber>>,
}

impl Fanout {
    fn emit(&self, event: &OutEvent) {
        lock(&self.subscribers).retain(|s| match s.tx.try_send(event.clone()) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                s.overflowed.store(true, Ordering::Release);
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        });
    }

    /// Waits (up to `limit`) until the server has taken every queued event
    /// from every subscription, so none is dropped when it ends them.
    async fn wait_flushed(&self, limit: Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let pending = lock(&self.subscribers)
                .iter()
                .any(|s| !s.tx.is_closed() && s.tx.capacity() < s.tx.max_capacity());
            if !pending || tokio::time::Instant::now() >= deadline {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    fn subscribe(&self) -> BoxStream<'static, OutEvent> {
        let (tx, rx) = mpsc::channel(SUBSCRIBER_QUEUE);
        let overflowed = Arc::new(AtomicBool::new(false));
        lock(&self.subscribers).push(Subscriber {
            tx,
            overflowed: overflowed.clone(),
        });
        Box::pin(futures::stream::unfold(
            (rx, overflowed, false),
            |(mut rx, overflowed, done)| async move {
                if done {
                    return None;
                }
                match rx.recv().await {
                    Some(v) => Some((v, (rx, overflowed, false))),
                    None if overflowed.load(Ordering::Acquire) => Some((
                        OutEvent::Session(SessionEvent::SubscriptionOverflow {
                            message: format!(
                                "this subscriber fell more than {SUBSCRIBER_QUEUE} events behind, so its \
                                 subscription was ended; subscribe again and send get_messages to catch up"
                            ),
                        }),
                        (rx, overflowed, true),
                    )),
                    None => None,
                }
            },
        ))
    }
}

/// The agent session `makai serve` serves.
pub struct ServedSession {
    app: AppSession,
    handler: Handler,
    fanout: Arc<Fanout>,
    /// True from `agent_start` until `agent_end` has been recorded and sent.
    running: watch::Receiver<bool>,
    /// How long [`ServedSession::drain`] lets a running prompt finish before aborting it.
    grace: Duration,
    /// Set by [`ServedSession::drain`]: commands that start work are refused.
    draining: AtomicBool,
}

impl ServedSession {
    /// Serves `app`; at shutdown a running prompt gets `grace` to finish.
    pub fn new(app: AppSession, grace: Duration) -> Self {
        let fanout = Arc::new(Fanout::default());
        let (running_tx, running) = watch::channel(app.is_streaming());
        let events = fanout.clone();
        // Called in order on the pump task, after the session file was written.
        app.subscribe_with(move |ev| {
            match ev.kind() {
                "agent_start" => running_tx.send_replace(true),
                "agent_end" => running_tx.send_replace(false),
                _ => false,
            };
            events.emit(ev);
        });
        let handler = Handler::new(app.clone());
        ServedSession {
            app,
            handler,
            fanout,
            running,
            grace,
            draining: AtomicBool::new(false),
        }
    }

    /// Graceful stop of the session: refuses new work, gives a running prompt
    /// the grace period to finish (its events still reach the subscribers),
    /// then aborts it; waits until its last message is in the session file.
    pub async fn drain(&self) {
        self.draining.store(true, Ordering::Release);
        if self.app.is_streaming() || *self.running.borrow() {
            eprintln!(
                "makai serve: waiting up to {:?} for the running prompt to finish",
                self.grace
            );
            if !self.wait_idle(self.grace).await {
                eprintln!("makai serve: aborting the running prompt");
                self.app.abort().await;
                // The aborted message is written before its agent_end goes out.
                if !self.wait_idle(Duration::from_secs(10)).await {
                    eprintln!(
                        "makai serve: the run did not end within 10s of the abort; its last message may be missing from the session"
                    );
                }
            }
        }
        // A `bash` command still running is stopped (its output so far is kept).
        self.app.abort_bash();
        self.handler.wait_background().await;
        // An upper bound: returns as soon as every subscriber has taken its events
        // (a detached subscriber, kept for resume, takes none: hence the bound).
        self.fanout.wait_flushed(Duration::from_secs(2)).await;
    }

    /// Waits for the dispatcher's background commands (bash, compact).
    pub(crate) async fn wait_background(&self) {
        self.handler.wait_background().await;
    }

    /// The session served.
    pub fn app(&self) -> &AppSession {
        &self.app
    }

    /// Waits until no run is going (its `agent_end` recorded), up to `limit`.
    async fn wait_idle(&self, limit: Duration) -> bool {
        let mut rx = self.running.clone();
        let idle = rx.wait_for(|running| !*running);
        matches!(tokio::time::timeout(limit, idle).await, Ok(Ok(_))) && !self.app.is_streaming()
    }
}

#[async_trait]
impl SessionHandler for ServedSession {
    type Command = Record;
    type Response = RpcResponse;
    type Event = OutEvent;

    fn parse_command(&self, payload: &str) -> Result<Record, RpcResponse> {
        Record::parse(payload.as_bytes()).map_err(RpcResponse::from)
    }

    async fn handle_command(&self, record: Record) -> RpcResponse {
        let request = match record {
            Record::Command(request) => request,
            Record::UiResponse(answer) => {
                // RPC mode answers nothing; over the protocol every command is answered.
                let id = Some(Value::String(answer.id.clone()));
                self.handler.answer_dialog(answer);
                return RpcResponse::success(id, "extension_ui_response", None);
            }
        };
        if self.draining.load(Ordering::Acquire) && request.command.starts_work() {
            return RpcResponse::failure(
                request.id,
                request.command.name(),
                "the makai server is shutting down; no new work is accepted",
            );
        }
        let id = request.id.clone();
        let name = request.command.name();
        let (reply_tx, reply_rx) = oneshot::channel::<RpcResponse>();
        let events = self.fanout.clone();
        let reply = Reply::new(
            move |response| {
                // The caller stopped waiting only when the connection closed.
                let _ = reply_tx.send(response);
            },
            Arc::new(move |event: SessionEvent| events.emit(&OutEvent::Session(event))),
        );
        self.handler.handle(request, reply).await;
        match reply_rx.await {
            Ok(response) => response,
            Err(_) => RpcResponse::failure(
                id,
                name,
                "the command ended without a response; this is a makai bug, please report it",
            ),
        }
    }

    fn subscribe(&self) -> BoxStream<'static, OutEvent> {
        self.fanout.subscribe()
    }

    async fn shutdown(&self) {
        self.drain().await;
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;
    use makai_rpc::SessionEvent;

    use super::{Fanout, OutEvent, SUBSCRIBER_QUEUE};

    /// A numbered event.
    fn event(n: usize) -> OutEvent {
        OutEvent::Session(SessionEvent::BashExecutionUpdate {
            id: None,
            delta: n.to_string(),
        })
    }

    fn number(e: &OutEvent) -> Option<usize> {
        match e {
            OutEvent::Session(SessionEvent::BashExecutionUpdate { delta, .. }) => {
                delta.parse().ok()
            }
            _ => None,
        }
    }

    /// A subscriber that stops reading keeps the first `SUBSCRIBER_QUEUE`
    /// events, then gets `subscription_overflow` and its stream ends; one that
    /// keeps up gets every event and no overflow.
    #[tokio::test]
    async fn a_subscriber_too_far_behind_is_told_and_dropped_others_are_not() {
        let fanout = Fanout::default();
        let mut stalled = fanout.subscribe();
        let mut reader = fanout.subscribe();
        let total = SUBSCRIBER_QUEUE + 10;
        let mut read = Vec::with_capacity(total);
        for i in 0..total {
            fanout.emit(&event(i));
            read.push(reader.next().await.expect("the reader's stream is open"));
        }
        assert!(read.iter().enumerate().all(|(i, v)| number(v) == Some(i)));
        assert_eq!(
            fanout.subscribers.lock().unwrap().len(),
            1,
            "only the stalled subscriber was dropped"
        );

        let mut kept = Vec::new();
        while let Some(v) = stalled.next().await {
            kept.push(v);
        }
        assert_eq!(kept.len(), SUBSCRIBER_QUEUE + 1);
        assert!(
            kept[..SUBSCRIBER_QUEUE]
                .iter()
                .enumerate()
                .all(|(i, v)| number(v) == Some(i)),
            "the queued events arrive in order, none lost"
        );
        let last = &kept[SUBSCRIBER_QUEUE];
        assert_eq!(last.kind(), "subscription_overflow");
        let OutEvent::Session(SessionEvent::SubscriptionOverflow { message }) = last else {
            panic!("not an overflow event: {last:?}")
        };
        assert!(
            message.contains(&SUBSCRIBER_QUEUE.to_string()) && message.contains("get_messages"),
            "{message}"
        );

        // The reader's subscription goes on.
        fanout.emit(&event(7));
        assert_eq!(number(&reader.next().await.unwrap()), Some(7));
    }
}
