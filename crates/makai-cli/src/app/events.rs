//! The event pump: takes every agent event, updates the session (messages are
//! written as they end, automatic compactions recorded, deferred bash runs
//! flushed) and only then hands the event to the subscribers.

use std::sync::{Arc, Weak};

use futures::StreamExt;
use serde_json::Value;

use makai_agent::{AgentEvent, AgentMessage};
use makai_coding::session::CompactionRecord;

use super::{Shared, lock};

/// One event of an [`super::AppSession`]'s stream.
#[derive(Clone, Debug)]
pub enum OutEvent {
    /// An agent event (pi's JSON shape).
    Agent(AgentEvent),
    /// A session-level event, already in pi's JSON shape (manual compaction,
    /// `bash_execution_update`).
    Session(Value),
}

impl OutEvent {
    /// The `type` of the event.
    pub fn kind(&self) -> &str {
        match self {
            OutEvent::Agent(e) => e.kind(),
            OutEvent::Session(v) => v.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }

    /// The event as a JSON value, as [`OutEvent::to_json_line`] writes it.
    pub fn to_value(&self) -> Value {
        match self {
            OutEvent::Agent(e) => {
                let mut v = serde_json::to_value(e).unwrap_or_else(|err| {
                    serde_json::json!({"type": "error", "message": format!("event not serializable: {err}")})
                });
                if matches!(e, AgentEvent::AgentEnd { .. })
                    && let Some(o) = v.as_object_mut()
                {
                    o.insert("willRetry".into(), Value::Bool(false));
                }
                v
            }
            OutEvent::Session(v) => v.clone(),
        }
    }

    /// The event as one JSON line (without the newline), as pi writes it.
    /// `agent_end` also carries pi's `willRetry: false`.
    pub fn to_json_line(&self) -> String {
        match self {
            OutEvent::Agent(e @ AgentEvent::AgentEnd { .. }) => {
                let mut v = serde_json::to_value(e).unwrap_or(Value::Null);
                if let Some(o) = v.as_object_mut() {
                    o.insert("willRetry".into(), Value::Bool(false));
                }
                v.to_string()
            }
            OutEvent::Agent(e) => serde_json::to_string(e).unwrap_or_else(|err| {
                format!("{{\"type\":\"error\",\"message\":\"event not serializable: {err}\"}}")
            }),
            OutEvent::Session(v) => v.to_string(),
        }
    }
}

/// Starts the task forwarding agent events (it ends with the session).
pub(crate) fn start_pump(shared: &Arc<Shared>) {
    let mut events = shared.agent.subscribe_stream();
    let weak: Weak<Shared> = Arc::downgrade(shared);
    tokio::spawn(async move {
        while let Some(event) = events.next().await {
            let Some(shared) = weak.upgrade() else { break };
            let event = shared.on_agent_event(event);
            if matches!(event, AgentEvent::AgentEnd { .. })
                && !lock(&shared.state).pending_bash.is_empty()
            {
                // The agent applies the run's transcript when it goes idle; add
                // the deferred bash runs after that.
                let later = shared.clone();
                tokio::spawn(async move {
                    later.agent.wait_for_idle().await;
                    later.flush_pending_bash();
                });
            }
            if matches!(event, AgentEvent::AgentEnd { .. }) {
                shared.spawn_title();
            }
            shared.emit(OutEvent::Agent(event));
        }
    });
}

impl Shared {
    /// After the first exchange, names the session with a short title from the
    /// current model, in the background: it never blocks or fails a run.
    ///
    /// Off when settings say `"autoTitle": false` or `MAKAI_AUTO_TITLE=0`.
    fn spawn_title(self: &Arc<Self>) {
        let off_by_env = std::env::var("MAKAI_AUTO_TITLE").is_ok_and(|v| v == "0");
        let off_by_settings = self.settings.extra.get("autoTitle") == Some(&Value::Bool(false));
        if off_by_env
            || off_by_settings
            || makai_coding::session::title::needs_title(&self.session).is_none()
        {
            return;
        }
        let shared = self.clone();
        tokio::spawn(async move {
            let model = shared.agent.state().model;
            let client = shared.agent.client();
            let titler = makai_coding::session::title::ModelTitler::new(client, model);
            makai_coding::session::title::spawn_title(shared.session.clone(), Arc::new(titler));
        });
    }
}

impl Shared {
    /// Applies an agent event to the session; returns it as subscribers see
    /// it (a recorded compaction's result names its first kept entry).
    fn on_agent_event(&self, mut event: AgentEvent) -> AgentEvent {
        match &mut event {
            AgentEvent::MessageEnd { message } => {
                lock(&self.state).retrying = false;
                self.record(|s| s.append_message((**message).clone()));
            }
            AgentEvent::QueueUpdate {
                steering,
                follow_up,
            } => {
                let mut st = lock(&self.state);
                st.steering = steering.len();
                st.follow_up = follow_up.len();
            }
            AgentEvent::AutoRetryStart { .. } => lock(&self.state).retrying = true,
            AgentEvent::AutoRetryEnd { .. } => lock(&self.state).retrying = false,
            AgentEvent::CompactionEnd {
                result: Some(info),
                messages: Some(messages),
                ..
            } => info.first_kept_entry_id = self.record_compaction(info, messages),
            _ => {}
        }
        event
    }

    /// Writes bash runs that finished while the agent was running.
    pub(crate) fn flush_pending_bash(&self) {
        let pending = std::mem::take(&mut lock(&self.state).pending_bash);
        if pending.is_empty() {
            return;
        }
        let mut all = self.agent.messages();
        all.extend(pending.iter().cloned());
        let _ = self.agent.replace_messages(all);
        for m in pending {
            self.record(|s| s.append_message(m));
        }
    }

    /// Records a compaction (automatic or manual) as a `compaction` entry: the
    /// first message kept verbatim after the summary names the entry the
    /// compaction keeps from. Returns that entry's id, `None` when nothing was
    /// recorded (no summary, or the kept messages are not in the session).
    fn record_compaction(
        &self,
        info: &makai_agent::CompactionInfo,
        messages: &[AgentMessage],
    ) -> Option<String> {
        let ctx = self.session.lock().context();
        let summary_at = messages
            .iter()
            .position(|m| matches!(m, AgentMessage::CompactionSummary(_)));
        let summary_at = summary_at?;
        let start = summary_at + 1;
        // The strategy may keep the conversation's first messages before the summary:
        // they are stored in the entry so a resumed session rebuilds the same context.
        let head = messages[..summary_at].to_vec();
        let first_kept = messages[start..].iter().find_map(|m| {
            let i = ctx.messages.iter().position(|s| s == m)?;
            ctx.entry_ids.get(i).cloned()
        });
        let first_kept_entry_id = first_kept?;
        let summary = if info.summary.is_empty() {
            "Earlier messages were removed to save context.".to_string()
        } else {
            info.summary.clone()
        };
        let record = CompactionRecord {
            summary,
            first_kept_entry_id: first_kept_entry_id.clone(),
            tokens_before: info.tokens_before,
            tokens_after: Some(info.estimated_tokens_after),
            usage: info.usage,
            details: Some(info.details.clone()),
            retained_head: (!head.is_empty()).then_some(head),
        };
        self.record(|s| s.append_compaction(record))
            .then_some(first_kept_entry_id)
    }
}
