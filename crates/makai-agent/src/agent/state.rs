//! The agent's observable state and how events update it.

use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use makai_ai::{AssistantMessage, MessageAccumulator, Model, ThinkingLevel};

use super::Inner;
use crate::config::AgentLoopConfig;
use crate::event::{AgentEvent, EndReason, EventSink, RunPhase};
use crate::hooks::MessageQueues;
use crate::message::AgentMessage;
use crate::subscribers::Fanout;
use crate::tool::ToolSet;
use crate::types::QueueMode;

/// Where the agent is. Every change is observable through
/// [`crate::Agent::status_watch`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentStatus {
    /// No run.
    #[default]
    Idle,
    /// A model response is being requested or streamed.
    Streaming,
    /// Tool calls are running.
    ExecutingTools,
    /// The context is being compacted.
    Compacting,
    /// `abort()` was called; the run is winding down.
    Aborting,
}

/// A snapshot of the agent's state.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct AgentState {
    /// System prompt for future runs.
    pub system_prompt: String,
    /// Model for future runs.
    pub model: Model,
    /// Thinking level for future runs.
    pub thinking_level: ThinkingLevel,
    /// Tools for future runs.
    pub tools: ToolSet,
    /// The transcript.
    pub messages: Vec<AgentMessage>,
    /// The status.
    pub status: AgentStatus,
    /// The assistant message being streamed, as it stands.
    pub partial_message: Option<AssistantMessage>,
    /// Ids of tool calls currently executing.
    pub pending_tool_calls: BTreeSet<String>,
    /// The last error: a failed model call or why the last run stopped early.
    pub error_message: Option<String>,
}

pub(super) struct ActiveRun {
    pub(super) cancel: CancellationToken,
}

/// Everything behind the agent's lock.
pub(super) struct Core {
    pub(super) state: AgentState,
    pub(super) partial: Option<MessageAccumulator>,
    pub(super) config: AgentLoopConfig,
    pub(super) steering: VecDeque<AgentMessage>,
    pub(super) follow_up: VecDeque<AgentMessage>,
    pub(super) steering_mode: QueueMode,
    pub(super) follow_up_mode: QueueMode,
    pub(super) run: Option<ActiveRun>,
    /// Index of the first message whose reported usage describes the current
    /// transcript: the ones before it were there when it was last compacted, so
    /// their usage counts a context that no longer exists. Passed to each run.
    pub(super) usage_floor: usize,
    /// Counts the times the transcript was rewritten rather than extended
    /// (compacted, replaced, cleared): see [`super::TranscriptMark`].
    pub(super) generation: u64,
    /// The subscribers' queues as the sink sends to them (see [`Fanout`]).
    pub(super) fanout: Fanout,
}

impl Core {
    pub(super) fn snapshot(&self) -> AgentState {
        let mut s = self.state.clone();
        s.partial_message = self.partial.as_ref().map(|a| a.message().clone());
        s
    }

    pub(super) fn queue_event(&self) -> AgentEvent {
        AgentEvent::QueueUpdate {
            steering: self.steering.iter().map(AgentMessage::text).collect(),
            follow_up: self.follow_up.iter().map(AgentMessage::text).collect(),
        }
    }

    /// Updates the state for one event of the running loop.
    pub(super) fn reduce(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::MessageStart { message } => {
                if let Some(a) = message.as_assistant() {
                    self.partial = Some(MessageAccumulator::new(&a.api, &a.provider, &a.model));
                }
            }
            AgentEvent::MessageUpdate {
                assistant_message_event,
                ..
            } => {
                if let Some(acc) = self.partial.as_mut() {
                    acc.apply(assistant_message_event);
                }
            }
            AgentEvent::AutoRetryStart { .. } => {
                if let Some(acc) = self.partial.as_mut() {
                    acc.apply(&makai_ai::AssistantMessageEvent::Start);
                }
            }
            AgentEvent::MessageEnd { message } => {
                self.partial = None;
                self.state.messages.push((**message).clone());
            }
            AgentEvent::ToolExecutionStart { tool_call_id, .. } => {
                self.state.pending_tool_calls.insert(tool_call_id.clone());
            }
            AgentEvent::ToolExecutionEnd { tool_call_id, .. } => {
                self.state.pending_tool_calls.remove(tool_call_id);
            }
            AgentEvent::TurnEnd { message, .. } => {
                if let Some(e) = message.as_assistant().and_then(|a| a.error_message.clone()) {
                    self.state.error_message = Some(e);
                }
            }
            AgentEvent::CompactionEnd {
                messages: Some(m), ..
            } => {
                self.state.messages = (**m).clone();
                self.usage_floor = m.len();
                self.generation += 1;
            }
            AgentEvent::AgentEnd { end_reason, .. } => {
                self.partial = None;
                match end_reason {
                    EndReason::Completed | EndReason::Error { .. } => {}
                    other => self.state.error_message = Some(other.describe()),
                }
            }
            _ => {}
        }
    }

    /// Takes queued messages per the queue's mode.
    pub(super) fn drain(&mut self, steering: bool) -> Vec<AgentMessage> {
        let (queue, mode) = if steering {
            (&mut self.steering, self.steering_mode)
        } else {
            (&mut self.follow_up, self.follow_up_mode)
        };
        match mode {
            QueueMode::All => queue.drain(..).collect(),
            QueueMode::OneAtATime => queue.pop_front().into_iter().collect(),
        }
    }
}

/// Receives the loop's events: updates the state, then fans out to subscribers.
pub(super) struct AgentSink {
    pub(super) inner: Arc<Inner>,
}

impl EventSink for AgentSink {
    fn emit(&self, event: AgentEvent) {
        let mut core = self.inner.lock();
        core.reduce(&event);
        core.fanout.send(&self.inner.registry, event);
        drop(core);
        self.inner.registry.deliver_inline();
    }

    fn phase(&self, phase: RunPhase) {
        let status = match phase {
            RunPhase::Streaming => AgentStatus::Streaming,
            RunPhase::ExecutingTools => AgentStatus::ExecutingTools,
            RunPhase::Compacting => AgentStatus::Compacting,
        };
        self.inner.set_status_unless_aborting(status, true);
    }
}

/// The agent's queues as a run sees them.
impl MessageQueues for Inner {
    fn take(&self, steering: bool) -> Vec<AgentMessage> {
        let mut core = self.lock();
        let out = core.drain(steering);
        if !out.is_empty() {
            let event = core.queue_event();
            self.registry.broadcast(&event);
        }
        drop(core);
        self.registry.deliver_inline();
        out
    }

    fn restore(&self, steering: Vec<AgentMessage>, follow_up: Vec<AgentMessage>) {
        let mut core = self.lock();
        for m in steering.into_iter().rev() {
            core.steering.push_front(m);
        }
        for m in follow_up.into_iter().rev() {
            core.follow_up.push_front(m);
        }
        let event = core.queue_event();
        self.registry.broadcast(&event);
        drop(core);
        self.registry.deliver_inline();
    }
}
