//! The event pump: takes every agent event, updates the session (messages are
//! written as they end, automatic compactions recorded, deferred bash runs
//! flushed) and only then hands the event to the subscribers.

use std::sync::{Arc, Weak};

use futures::StreamExt;
use serde_json::Value;

use makai_agent::{AgentEvent, AgentMessage, EndReason};
use makai_coding::session::CompactionRecord;
use makai_rpc::{EventRecord, SessionEvent};

use super::{Shared, lock};

/// One event of an [`super::AppSession`]'s stream.
#[derive(Clone, Debug)]
pub enum OutEvent {
    /// An agent event.
    Agent(AgentEvent),
    /// A session-level event (`agent_settled`, `bash_execution_update`, ...).
    Session(SessionEvent),
}

impl OutEvent {
    /// The `type` of the event.
    pub fn kind(&self) -> &str {
        match self {
            OutEvent::Agent(e) => e.kind(),
            OutEvent::Session(e) => e.kind(),
        }
    }

    /// The event in pi's JSON shape (see [`makai_rpc::JsonEvent`]).
    pub fn record(&self) -> EventRecord<'_> {
        match self {
            OutEvent::Agent(e) => EventRecord::Agent(e),
            OutEvent::Session(e) => EventRecord::Session(e),
        }
    }

    /// The event as one JSON line (without the newline), as pi writes it.
    pub fn to_json_line(&self) -> String {
        self.record().to_json_line()
    }
}

impl serde::Serialize for OutEvent {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.record().serialize(s)
    }
}

/// Starts the task forwarding agent events (it ends with the session).
///
/// After a run's `agent_end`: once the agent is idle (its transcript applied),
/// deferred bash runs are added, the session is titled in the background, and
/// either the queued messages left by an abort continue in a new run (pi's
/// `abort` semantics) or `agent_settled` says nothing more will run.
pub(crate) fn start_pump(shared: &Arc<Shared>) {
    let mut events = shared.agent.subscribe_stream();
    let weak: Weak<Shared> = Arc::downgrade(shared);
    tokio::spawn(async move {
        while let Some(event) = events.next().await {
            let Some(shared) = weak.upgrade() else { break };
            let event = shared.on_agent_event(event);
            let ended = match &event {
                AgentEvent::AgentEnd { end_reason, .. } => Some(end_reason.clone()),
                _ => None,
            };
            shared.deliver(OutEvent::Agent(event));
            // A burst's events leave together: a writer writes at the flush.
            if events.queued() == 0 {
                shared.flush_subscribers();
            }
            if let Some(end_reason) = ended {
                shared.agent.wait_for_idle().await;
                shared.flush_pending_bash();
                shared.spawn_title();
                shared.settle(end_reason);
            }
        }
    });
}

impl Shared {
    /// After a run ended and the agent is idle: continues with the messages an
    /// abort left queued, or reports `agent_settled`.
    fn settle(&self, end_reason: EndReason) {
        let aborted = matches!(end_reason, EndReason::Aborted);
        if aborted && self.agent.has_queued_messages() {
            match self.agent.start_continue() {
                // Its events come through this pump; it settles when it ends.
                Ok(_run) => return,
                Err(e) => {
                    tracing::warn!(error = %e, "queued messages left by an abort could not start a run")
                }
            }
        }
        self.warmer.on_agent_settled();
        self.emit(OutEvent::Session(SessionEvent::AgentSettled { aborted }));
        self.settled.send_modify(|n| *n += 1);
    }

    /// After the first exchange, names the session with a short title from the
    /// current model, in the background: it never blocks or fails a run.
    ///
    /// Off when settings say `"autoTitle": false` or `MAKAI_AUTO_TITLE=0`.
    fn spawn_title(self: &Arc<Self>) {
        let off_by_env = std::env::var("MAKAI_AUTO_TITLE").is_ok_and(|v| v == "0");
        let off_by_settings = self.settings().extra.get("autoTitle") == Some(&Value::Bool(false));
        if off_by_env
            || off_by_settings
            || makai_coding::session::title::needs_title(&self.session).is_none()
        {
            return;
        }
        let titler =
            makai_coding::session::title::ModelTitler::new(self.agent.client(), self.agent.model());
        let session = self.session.clone();
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            let Some(task) = makai_coding::session::title::spawn_title(session, Arc::new(titler))
            else {
                return;
            };
            if let Err(e) = task.await {
                tracing::warn!(error = %e, "the session title task failed");
                return;
            }
            // The title is a session_info entry: tell the clients its name.
            if let Some(shared) = weak.upgrade()
                && let Some(name) = shared.session.lock().name().map(str::to_string)
            {
                shared.emit(OutEvent::Session(SessionEvent::SessionInfoChanged {
                    name: Some(name),
                }));
            }
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
                let prompt = matches!(
                    &**message,
                    makai_agent::AgentMessage::Llm(makai_ai::Message::User(_))
                );
                self.record(|s| {
                    if prompt {
                        self.record_settings_in_force(s)?;
                    }
                    s.append_message((**message).clone())
                });
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

    /// Before a prompt: the model and thinking level in force, recorded on
    /// the branch when it says otherwise (after a `/tree` move to before a
    /// change, the branch holds the earlier ones; resuming it would restore
    /// them). The model is the branch's last model change or answer, the
    /// level its last level change (`off` without one), as the session's
    /// context reads them.
    fn record_settings_in_force(
        &self,
        s: &mut makai_coding::Session,
    ) -> Result<(), makai_coding::session::SessionError> {
        use makai_coding::session::SessionEntry;
        let model = self.agent.model();
        let level = self.agent.thinking_level();
        let (mut branch_model, mut branch_level) = (None, None);
        for entry in s.tree().branch_back() {
            match entry {
                SessionEntry::ModelChange(m) if branch_model.is_none() => {
                    branch_model = Some((m.provider.as_str(), m.model_id.as_str()))
                }
                SessionEntry::Message(m) if branch_model.is_none() => {
                    if let Some(a) = m.message.as_assistant() {
                        branch_model = Some((a.provider.as_str(), a.model.as_str()));
                    }
                }
                SessionEntry::ThinkingLevelChange(t) if branch_level.is_none() => {
                    branch_level = Some(t.thinking_level.as_str())
                }
                _ => {}
            }
            if branch_model.is_some() && branch_level.is_some() {
                break;
            }
        }
        let model_differs = branch_model != Some((model.provider.as_str(), model.id.as_str()));
        let level_differs = branch_level.unwrap_or("off") != level.as_str();
        if model_differs {
            s.append_model_change(model.provider.clone(), model.id.clone())?;
        }
        if level_differs {
            s.append_thinking_level(level)?;
        }
        Ok(())
    }

    /// Writes bash runs that finished while the agent was running.
    pub(crate) fn flush_pending_bash(&self) {
        let pending = std::mem::take(&mut lock(&self.state).pending_bash);
        if pending.is_empty() {
            return;
        }
        let mut all = self.agent.messages();
        all.extend(pending.iter().cloned());
        if let Err(e) = self.agent.replace_messages(all) {
            // Only refused while a run goes on; they stay recorded in the
            // session file and load with it.
            tracing::warn!(error = %e, "shell runs not added to the running agent's transcript");
        }
        for m in pending {
            self.record(|s| s.append_message(m));
        }
    }

    /// Records a compaction (automatic or manual) as a `compaction` entry: the
    /// first message kept verbatim after the summary names the entry the
    /// compaction keeps from; with nothing kept, the entry names itself (pi's
    /// retain-none compaction). Returns that id, `None` when nothing was
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
        let mut head = messages[..summary_at].to_vec();
        // A system checkpoint in front (tools still declared) is pi's
        // `systemMessage`.
        let system_message = match head.first() {
            Some(AgentMessage::System(_)) => Some(Box::new(head.remove(0))),
            _ => None,
        };
        // Nothing kept after the summary: a retain-none compaction (pi stores
        // the entry's own id as its first kept entry).
        let first_kept = if start == messages.len() {
            None
        } else {
            let found = messages[start..].iter().find_map(|m| {
                let i = ctx.messages.iter().position(|s| s == m)?;
                ctx.entry_ids.get(i).cloned()
            });
            Some(found?)
        };
        let summary = if info.summary.is_empty() {
            "Earlier messages were removed to save context.".to_string()
        } else {
            info.summary.clone()
        };
        let record = CompactionRecord {
            summary,
            first_kept_entry_id: first_kept.clone(),
            tokens_before: info.tokens_before,
            tokens_after: Some(info.estimated_tokens_after),
            usage: info.usage,
            details: Some(info.details.clone()),
            retained_head: (!head.is_empty()).then_some(head),
            system_message,
        };
        let mut entry_id = None;
        let recorded = self.record(|s| s.append_compaction(record).map(|id| entry_id = Some(id)));
        if !recorded {
            return None;
        }
        first_kept.or(entry_id)
    }
}
