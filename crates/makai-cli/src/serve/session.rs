//! [`ServedSession`]: the [`SessionHandler`] of `makai serve`. Commands go to
//! the RPC mode's dispatcher; the session's events (the same JSON objects RPC
//! mode writes on stdout) fan out to every subscriber.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use futures::stream::BoxStream;
use makai_protocol::SessionHandler;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot, watch};

use crate::app::AppSession;
use crate::modes::rpc::{Handler, Output, failure, success};

/// Events queued per subscriber. A subscriber further behind than this loses
/// its subscription (with a final `subscription_overflow` event) instead of
/// making the server hold an unbounded backlog.
pub const SUBSCRIBER_QUEUE: usize = 8192;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

struct Subscriber {
    tx: mpsc::Sender<Value>,
    overflowed: Arc<AtomicBool>,
}

/// Hands each event to every subscriber without blocking.
#[derive(Default)]
struct Fanout {
    subscribers: Mutex<Vec<Subscriber>>,
}

impl Fanout {
    fn emit(&self, event: &Value) {
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

    fn subscribe(&self) -> BoxStream<'static, Value> {
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
                        json!({
                            "type": "subscription_overflow",
                            "message": format!(
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

/// Commands refused while draining (they would start new work).
const STARTS_WORK: [&str; 6] = ["prompt", "steer", "follow_up", "bash", "compact", "fork"];

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
            events.emit(&ev.to_value());
        });
        let side = fanout.clone();
        let handler = Handler::new(app.clone(), Output::from_callback(move |v| side.emit(&v)));
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
    async fn handle_command(&self, command: Value) -> Value {
        let id = command.get("id").filter(|v| !v.is_null()).cloned();
        let kind = command
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("parse")
            .to_string();
        if self.draining.load(Ordering::Acquire) && STARTS_WORK.contains(&kind.as_str()) {
            return failure(
                &id,
                &kind,
                "the makai server is shutting down; no new work is accepted",
            );
        }
        if kind == "extension_ui_response" {
            // RPC mode ignores it silently; over the protocol every command is answered.
            return success(&id, &kind, None);
        }
        let (reply_tx, reply_rx) = oneshot::channel::<Value>();
        let reply = Mutex::new(Some(reply_tx));
        let events = self.fanout.clone();
        // The first response answers the command; anything else the command
        // produces (`bash_execution_update`, a late failure) is a session event.
        let out = Output::from_callback(move |v| {
            if v.get("type").and_then(Value::as_str) == Some("response")
                && let Some(tx) = lock(&reply).take()
            {
                let _ = tx.send(v);
                return;
            }
            events.emit(&v);
        });
        self.handler.handle_value(command, &out).await;
        drop(out);
        match reply_rx.await {
            Ok(v) => v,
            Err(_) => failure(
                &id,
                &kind,
                "the command ended without a response; this is a makai bug, please report it",
            ),
        }
    }

    fn subscribe(&self) -> BoxStream<'static, Value> {
        self.fanout.subscribe()
    }

    async fn shutdown(&self) {
        self.drain().await;
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;
    use serde_json::json;

    use super::{Fanout, SUBSCRIBER_QUEUE};

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
            fanout.emit(&json!({"type": "message_update", "n": i}));
            read.push(reader.next().await.expect("the reader's stream is open"));
        }
        assert!(read.iter().enumerate().all(|(i, v)| v["n"] == i));
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
                .all(|(i, v)| v["n"] == i),
            "the queued events arrive in order, none lost"
        );
        let last = &kept[SUBSCRIBER_QUEUE];
        assert_eq!(last["type"], "subscription_overflow");
        let message = last["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(&SUBSCRIBER_QUEUE.to_string()) && message.contains("get_messages"),
            "{message}"
        );

        // The reader's subscription goes on.
        fanout.emit(&json!({"type": "agent_end"}));
        assert_eq!(reader.next().await.unwrap()["type"], "agent_end");
    }
}
