//! [`Agent`]: the stateful, shareable agent.
//!
//! An `Agent` owns the transcript, the model and tools for future runs, the
//! steering and follow-up queues, and the subscribers. It is `Send + Sync` and
//! cheap to clone (an `Arc` inside): a UI task can steer or abort while another
//! task awaits the run. State changes come from the run's events, applied before
//! the event reaches any subscriber, so a subscriber that reads the state sees it
//! at least as new as the event.

mod compact;
mod queues;
mod run;
mod state;

use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::watch;

use makai_ai::{Model, ProtocolClient, ThinkingLevel};

use crate::agent_loop::RunOutcome;
use crate::config::AgentLoopConfig;
use crate::error::AgentError;
use crate::event::AgentEvent;
use crate::message::AgentMessage;
use crate::subscribers::{COALESCE_AFTER, EventStream, InlineSubscription, Registry, Subscription};
use crate::tool::ToolSet;
use crate::types::QueueMode;

pub use compact::SummaryPrompt;
pub use run::{PromptInput, RunHandle};
use state::Core;
pub use state::{AgentState, AgentStatus};

pub(crate) struct Inner {
    core: Mutex<Core>,
    registry: Arc<Registry>,
    status: watch::Sender<AgentStatus>,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Core> {
        self.core.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sets the status; with `keep_aborting`, an `aborting` status is left as is.
    fn set_status_unless_aborting(&self, status: AgentStatus, keep_aborting: bool) {
        let mut core = self.lock();
        if keep_aborting && core.state.status == AgentStatus::Aborting {
            return;
        }
        self.apply_status(&mut core, status);
    }

    /// Sets the status under the lock, so the watch never disagrees with the state.
    fn apply_status(&self, core: &mut Core, status: AgentStatus) {
        core.state.status = status;
        self.status.send_if_modified(|s| {
            let changed = *s != status;
            *s = status;
            changed
        });
    }

    /// Clears the run when its task ends (however it ends).
    fn finish_run(&self, outcome: Option<&RunOutcome>) {
        let mut core = self.lock();
        // The state followed the run's events, so it normally holds the run's
        // transcript already: compared, not copied again.
        if let Some(o) = outcome
            && core.state.messages != o.context.messages
        {
            core.state.messages = o.context.messages.clone();
        }
        // Tools the run declared (`ToolContext::declare_tools`) stay
        // declared for the next run.
        if let Some(o) = outcome {
            let declared: Vec<_> = crate::declared_tool_changes(&o.messages)
                .iter()
                .filter(|n| core.state.tools.get(n).is_none())
                .filter_map(|n| o.context.tools.get(n).cloned())
                .collect();
            if !declared.is_empty() {
                core.state.tools = ToolSet::new(core.state.tools.iter().cloned().chain(declared));
            }
        }
        core.run = None;
        core.partial = None;
        core.state.pending_tool_calls.clear();
        self.apply_status(&mut core, AgentStatus::Idle);
    }
}

/// The stateful agent. See the module docs.
#[derive(Clone)]
pub struct Agent {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let core = self.inner.lock();
        f.debug_struct("Agent")
            .field("model", &core.state.model.id)
            .field("status", &core.state.status)
            .field("messages", &core.state.messages.len())
            .finish_non_exhaustive()
    }
}

impl Agent {
    /// An idle agent using `config` for its runs (model, client, hooks, options,
    /// strategies, limits). The thinking level starts as `config.options.thinking`.
    pub fn new(config: AgentLoopConfig) -> Self {
        let state = AgentState {
            system_prompt: String::new(),
            model: config.model.clone(),
            thinking_level: config.options.thinking,
            tools: ToolSet::default(),
            messages: Vec::new(),
            status: AgentStatus::Idle,
            partial_message: None,
            pending_tool_calls: Default::default(),
            error_message: None,
        };
        let core = Core {
            state,
            partial: None,
            config,
            steering: Default::default(),
            follow_up: Default::default(),
            steering_mode: QueueMode::OneAtATime,
            follow_up_mode: QueueMode::OneAtATime,
            run: None,
            usage_floor: 0,
            generation: 0,
            fanout: Default::default(),
        };
        Agent {
            inner: Arc::new(Inner {
                core: Mutex::new(core),
                registry: Registry::new(),
                status: watch::Sender::new(AgentStatus::Idle),
            }),
        }
    }

    /// Sets the system prompt (builder style).
    pub fn with_system_prompt(self, prompt: impl Into<String>) -> Self {
        self.set_system_prompt(prompt);
        self
    }

    /// Sets the tools (builder style).
    pub fn with_tools(self, tools: ToolSet) -> Self {
        self.set_tools(tools);
        self
    }

    // ---- state ----

    /// A snapshot of the state: a copy of everything, the transcript
    /// included. To read one part, use its own accessor ([`Agent::model`],
    /// [`Agent::thinking_level`], [`Agent::tools`], [`Agent::message_count`],
    /// [`Agent::with_messages`]): a long session's transcript is megabytes.
    pub fn state(&self) -> AgentState {
        self.inner.lock().snapshot()
    }

    /// The transcript (a copy; [`Agent::with_messages`] reads it without one).
    pub fn messages(&self) -> Vec<AgentMessage> {
        self.inner.lock().state.messages.clone()
    }

    /// Runs `read` on the transcript without copying it. The agent's state
    /// is locked meanwhile: `read` must not call the agent.
    pub fn with_messages<R>(&self, read: impl FnOnce(&[AgentMessage]) -> R) -> R {
        read(&self.inner.lock().state.messages)
    }

    /// The number of messages in the transcript.
    pub fn message_count(&self) -> usize {
        self.inner.lock().state.messages.len()
    }

    /// The thinking level of future runs.
    pub fn thinking_level(&self) -> ThinkingLevel {
        self.inner.lock().state.thinking_level
    }

    /// The system prompt of future runs.
    pub fn system_prompt(&self) -> String {
        self.inner.lock().state.system_prompt.clone()
    }

    /// The tools of future runs.
    pub fn tools(&self) -> ToolSet {
        self.inner.lock().state.tools.clone()
    }

    /// What the transcript's system messages leave declared
    /// ([`crate::declared_tool_changes`]), read without copying the
    /// transcript.
    pub fn declared_tool_changes(&self) -> Vec<String> {
        crate::declared_tool_changes(&self.inner.lock().state.messages)
    }

    /// The model of future runs.
    pub fn model(&self) -> Model {
        self.inner.lock().state.model.clone()
    }

    /// Marks the transcript as it is now, for [`Agent::transcript_continues`].
    pub fn transcript_mark(&self) -> TranscriptMark {
        let core = self.inner.lock();
        TranscriptMark {
            generation: core.generation,
            len: core.state.messages.len(),
        }
    }

    /// True while the transcript still begins with the messages it held at
    /// `mark`: since then messages were only appended (no compaction, no
    /// replacement by other messages, no clearing).
    pub fn transcript_continues(&self, mark: TranscriptMark) -> bool {
        let core = self.inner.lock();
        core.generation == mark.generation && core.state.messages.len() >= mark.len
    }

    /// The status.
    pub fn status(&self) -> AgentStatus {
        self.inner.lock().state.status
    }

    /// A receiver that sees every status change.
    pub fn status_watch(&self) -> watch::Receiver<AgentStatus> {
        self.inner.status.subscribe()
    }

    /// True while a run is in progress.
    pub fn is_running(&self) -> bool {
        self.inner.lock().run.is_some()
    }

    /// Sets the system prompt for future runs.
    pub fn set_system_prompt(&self, prompt: impl Into<String>) {
        self.inner.lock().state.system_prompt = prompt.into();
    }

    /// Sets the model for future runs.
    pub fn set_model(&self, model: Model) {
        self.inner.lock().state.model = model;
    }

    /// Opens the connection the next run's first request will take, through
    /// the agent's client ([`makai_ai::ProtocolClient::preconnect`]), so that
    /// the request does not wait for a TLS handshake. Call it while the user
    /// types (and after [`Agent::set_model`]); it sends nothing to the model,
    /// and a failure is left for that request to report.
    pub async fn preconnect(&self) {
        let (client, model, options) = {
            let core = self.inner.lock();
            (
                core.config.client.clone(),
                core.state.model.clone(),
                core.config.options.clone(),
            )
        };
        client.preconnect(&model, &options).await;
    }

    /// Sets the thinking level for future runs.
    pub fn set_thinking_level(&self, level: ThinkingLevel) {
        self.inner.lock().state.thinking_level = level;
    }

    /// Sets the tools for future runs.
    pub fn set_tools(&self, tools: ToolSet) {
        self.inner.lock().state.tools = tools;
    }

    /// The client every model call of this agent goes through (runs and
    /// compactions). Applications send their side calls (titles, branch
    /// summaries) through it too, so one client sees every request.
    pub fn client(&self) -> Arc<dyn ProtocolClient> {
        self.inner.lock().config.client.clone()
    }

    /// Changes the run configuration for future runs (hooks, options, limits, ...).
    pub fn update_config(&self, f: impl FnOnce(&mut AgentLoopConfig)) {
        f(&mut self.inner.lock().config);
    }

    fn idle_core(&self) -> Result<MutexGuard<'_, Core>, AgentError> {
        let core = self.inner.lock();
        if core.run.is_some() {
            return Err(AgentError::AlreadyRunning);
        }
        Ok(core)
    }

    /// Replaces the transcript (not while running).
    pub fn replace_messages(&self, messages: Vec<AgentMessage>) -> Result<(), AgentError> {
        let mut core = self.idle_core()?;
        if !messages.starts_with(&core.state.messages) {
            core.generation += 1;
        }
        core.state.messages = messages;
        core.usage_floor = 0;
        Ok(())
    }

    /// Appends a message to the transcript (not while running).
    pub fn append_message(&self, message: impl Into<AgentMessage>) -> Result<(), AgentError> {
        self.idle_core()?.state.messages.push(message.into());
        Ok(())
    }

    /// Empties the transcript (not while running).
    pub fn clear_messages(&self) -> Result<(), AgentError> {
        let mut core = self.idle_core()?;
        core.state.messages.clear();
        core.usage_floor = 0;
        core.generation += 1;
        Ok(())
    }

    /// Clears the transcript, queues and last error (not while running).
    pub fn reset(&self) -> Result<(), AgentError> {
        let mut core = self.idle_core()?;
        core.state.messages.clear();
        core.usage_floor = 0;
        core.generation += 1;
        core.state.error_message = None;
        core.state.pending_tool_calls.clear();
        core.partial = None;
        core.steering.clear();
        core.follow_up.clear();
        let event = core.queue_event();
        self.inner.registry.broadcast(&event);
        drop(core);
        self.inner.registry.deliver_inline();
        Ok(())
    }

    // ---- subscribers ----

    /// Calls `callback` for every event, on a thread of its own: it may block or
    /// be slow without delaying the run or other subscribers; a panic in it is
    /// caught. Dropping the returned handle unsubscribes.
    pub fn subscribe<F>(&self, callback: F) -> Result<Subscription, AgentError>
    where
        F: Fn(&AgentEvent) + Send + 'static,
    {
        self.inner.registry.subscribe(COALESCE_AFTER, callback)
    }

    /// Like [`Agent::subscribe`], merging deltas only once more than
    /// `coalesce_after` events are queued (`usize::MAX`: never merge; memory then
    /// grows with how far the subscriber falls behind).
    pub fn subscribe_with<F>(
        &self,
        coalesce_after: usize,
        callback: F,
    ) -> Result<Subscription, AgentError>
    where
        F: Fn(&AgentEvent) + Send + 'static,
    {
        self.inner.registry.subscribe(coalesce_after, callback)
    }

    /// Calls `callback` for every event inline, as pi's `subscribe` does: no
    /// queue and no thread of its own, so it costs next to nothing per event,
    /// and it must be quick (a slow callback holds up whoever emitted the
    /// event, usually the run). It is called in event order, one call at a
    /// time, never while the agent's lock is held: it may call the agent
    /// (`state()`, `steer()`, `abort()`); an event that causes (a `steer`'s
    /// `queue_update`) is delivered once it returns. It runs on the thread
    /// that emitted the event, or on one already delivering earlier events.
    /// A panic in it is caught. Dropping the handle unsubscribes (an event
    /// being delivered at that moment may still reach it).
    pub fn subscribe_inline<F>(&self, callback: F) -> InlineSubscription
    where
        F: Fn(&AgentEvent) + Send + Sync + 'static,
    {
        self.inner.registry.subscribe_inline(callback)
    }

    /// Events as an async stream with its own queue. Dropping it unsubscribes.
    pub fn subscribe_stream(&self) -> EventStream {
        self.inner.registry.subscribe_stream(COALESCE_AFTER)
    }

    /// Like [`Agent::subscribe_stream`] with its own merge threshold (see
    /// [`Agent::subscribe_with`]).
    pub fn subscribe_stream_with(&self, coalesce_after: usize) -> EventStream {
        self.inner.registry.subscribe_stream(coalesce_after)
    }
}

/// A point in an agent's transcript ([`Agent::transcript_mark`]): how many
/// messages it held, and how many times it had been rewritten rather than
/// extended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TranscriptMark {
    generation: u64,
    len: usize,
}
