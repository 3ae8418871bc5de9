//! Test doubles. [`EchoSession`] is a minimal [`SessionHandler`] for tests
//! of the agent-session routing; the CLI's RPC dispatcher is the real one.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;
use futures::stream::BoxStream;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::session::SessionHandler;

/// A session that answers `prompt` by emitting `agent_start`, one
/// `message_update` per word of the prompt and `agent_end` to every
/// subscriber; `get_state` returns how many prompts it saw. Other commands get
/// `success: false`.
#[derive(Default)]
pub struct EchoSession {
    subscribers: Mutex<Vec<mpsc::UnboundedSender<Value>>>,
    prompts: AtomicU64,
    shut_down: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl EchoSession {
    /// A new session.
    pub fn new() -> Self {
        Self::default()
    }

    /// True once the server called [`SessionHandler::shutdown`].
    pub fn was_shut_down(&self) -> bool {
        self.shut_down.load(Ordering::Acquire)
    }

    /// Current subscriber count (closed subscriptions are pruned on the next event).
    pub fn subscribers(&self) -> usize {
        let mut subs = lock(&self.subscribers);
        subs.retain(|s| !s.is_closed());
        subs.len()
    }

    fn emit(&self, event: Value) {
        lock(&self.subscribers).retain(|s| s.send(event.clone()).is_ok());
    }
}

#[async_trait]
impl SessionHandler for EchoSession {
    type Command = Value;
    type Response = Value;
    type Event = Value;

    fn parse_command(&self, payload: &str) -> Result<Value, Value> {
        serde_json::from_str(payload).map_err(|e| {
            json!({"type": "response", "command": "parse", "success": false,
                "error": format!("Failed to parse command: {e}")})
        })
    }

    async fn handle_command(&self, command: Value) -> Value {
        let kind = command["type"].as_str().unwrap_or_default().to_string();
        let id = command.get("id").cloned();
        let mut response = match kind.as_str() {
            "prompt" => {
                let message = command["message"].as_str().unwrap_or_default().to_string();
                self.prompts.fetch_add(1, Ordering::AcqRel);
                self.emit(json!({"type": "agent_start"}));
                for word in message.split_whitespace() {
                    self.emit(json!({"type": "message_update", "delta": word}));
                }
                self.emit(json!({"type": "agent_end"}));
                json!({"type": "response", "command": "prompt", "success": true})
            }
            "get_state" => json!({
                "type": "response", "command": "get_state", "success": true,
                "data": {"prompts": self.prompts.load(Ordering::Acquire)},
            }),
            other => json!({
                "type": "response", "command": other, "success": false,
                "error": format!("unknown command '{other}'"),
            }),
        };
        if let Some(id) = id {
            response["id"] = id;
        }
        response
    }

    fn subscribe(&self) -> BoxStream<'static, Value> {
        let (tx, rx) = mpsc::unbounded_channel();
        lock(&self.subscribers).push(tx);
        Box::pin(futures::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|v| (v, rx))
        }))
    }

    async fn shutdown(&self) {
        self.shut_down.store(true, Ordering::Release);
    }
}
