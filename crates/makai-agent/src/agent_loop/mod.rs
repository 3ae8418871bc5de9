//! The low-level API: [`agent_loop`] and [`agent_loop_continue`].
//!
//! Each starts one run on a Tokio task and returns an [`AgentRun`]: a stream of
//! [`AgentEvent`]s (an unbounded, coalescing queue, so a slow reader never stalls
//! the run) and the run's result ([`RunOutcome`]: the new messages, the final
//! context and why the run ended).

mod orphans;
mod run;
mod stream;
mod tools;

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use futures::{Stream, StreamExt};
use tokio::task::JoinHandle;
use tokio_util::sync::{CancellationToken, DropGuard};

use makai_ai::Usage;

use crate::config::AgentLoopConfig;
use crate::error::AgentError;
use crate::event::{AgentEvent, EndReason, EventSink};
use crate::message::AgentMessage;
use crate::subscribers::{COALESCE_AFTER, EventQueue, QueueReader};
use crate::types::AgentContext;

pub use orphans::INTERRUPTED_TOOL_TEXT;
pub use tools::SKIPPED_TOOL_TEXT;

/// The result of a run.
#[derive(Clone, Debug)]
pub struct RunOutcome {
    /// Every message the run added to the transcript, in order (as in `agent_end`).
    pub messages: Vec<AgentMessage>,
    /// The context after the run (compaction included): the transcript to keep.
    pub context: AgentContext,
    /// Why the run ended.
    pub end_reason: EndReason,
    /// Tokens used by the run's model calls (summaries included).
    pub usage: Usage,
    /// Turns taken (model responses that ended a turn).
    pub turns: u32,
    /// Steering messages the run took from its queue but did not deliver
    /// because it ended first (abort, a limit, a `before_turn` stop). Nothing
    /// queued is lost: a caller of [`agent_loop`] decides what to do with
    /// them; an [`crate::Agent`]'s runs put them back at the front of its
    /// queues before `agent_end` (so this is empty there).
    pub undelivered_steering: Vec<AgentMessage>,
    /// Follow-up messages taken but not delivered, as for steering.
    pub undelivered_follow_up: Vec<AgentMessage>,
}

/// A running loop: read its events, then (or instead) await its outcome.
///
/// Dropping it cancels the run.
pub struct AgentRun {
    reader: QueueReader,
    handle: JoinHandle<RunOutcome>,
    cancel: CancellationToken,
    guard: Option<DropGuard>,
}

impl std::fmt::Debug for AgentRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentRun")
            .field("queued_events", &self.reader.len())
            .field("finished", &self.handle.is_finished())
            .finish()
    }
}

impl AgentRun {
    /// The next event; `None` after `agent_end` was read.
    pub async fn next_event(&mut self) -> Option<AgentEvent> {
        self.next().await
    }

    /// Aborts the run: the model call ends `aborted`, running tools see cancellation
    /// and every tool call still gets a result.
    pub fn abort(&self) {
        self.cancel.cancel();
    }

    /// Waits for the run to end and returns its outcome (unread events are discarded).
    pub async fn join(self) -> Result<RunOutcome, AgentError> {
        let AgentRun { handle, guard, .. } = self;
        let result = handle
            .await
            .map_err(|e| AgentError::LoopFailed(e.to_string()));
        if let Some(g) = guard {
            g.disarm();
        }
        result
    }

    /// Reads every event to the end, then returns them with the outcome.
    pub async fn collect(mut self) -> Result<(Vec<AgentEvent>, RunOutcome), AgentError> {
        let mut events = Vec::new();
        while let Some(e) = self.next().await {
            events.push(e);
        }
        let outcome = self.join().await?;
        Ok((events, outcome))
    }
}

impl Stream for AgentRun {
    type Item = AgentEvent;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<AgentEvent>> {
        self.reader.poll_next(cx)
    }
}

/// Starts a run with new prompt messages.
///
/// The prompts are announced (`message_start`/`message_end`) in the first turn and
/// added to the context; the model is then called until it stops asking for tools
/// and no steering or follow-up message is left. Must be called inside a Tokio runtime.
pub fn agent_loop(
    prompts: Vec<AgentMessage>,
    context: AgentContext,
    config: AgentLoopConfig,
    cancel: CancellationToken,
) -> AgentRun {
    start(Some(prompts), context, config, cancel)
}

/// Continues from the current context without new messages (after an error, or
/// when the context ends with a user message or tool results).
///
/// Fails with a clear error, without starting a run, when the context is empty or
/// its last message is an assistant message.
pub fn agent_loop_continue(
    context: AgentContext,
    config: AgentLoopConfig,
    cancel: CancellationToken,
) -> Result<AgentRun, AgentError> {
    check_continuable(&context.messages)?;
    Ok(start(None, context, config, cancel))
}

pub(crate) fn check_continuable(messages: &[AgentMessage]) -> Result<(), AgentError> {
    match messages.last() {
        None => Err(AgentError::NoMessages),
        Some(m) if m.is_assistant() => Err(AgentError::CannotContinueFromAssistant),
        Some(_) => Ok(()),
    }
}

fn start(
    prompts: Option<Vec<AgentMessage>>,
    context: AgentContext,
    config: AgentLoopConfig,
    cancel: CancellationToken,
) -> AgentRun {
    let queue = EventQueue::new(COALESCE_AFTER);
    let run_cancel = cancel.child_token();
    let sink: Arc<dyn EventSink> = queue.clone();
    let finisher = FinishOnDrop(queue.clone());
    let task_cancel = run_cancel.clone();
    let handle = tokio::spawn(async move {
        let _finisher = finisher;
        run::run_loop(
            prompts,
            context,
            0,
            Arc::new(config.normalized()),
            None,
            task_cancel,
            sink,
        )
        .await
    });
    AgentRun {
        reader: QueueReader::new(queue),
        handle,
        guard: Some(run_cancel.clone().drop_guard()),
        cancel: run_cancel,
    }
}

/// Ends the event stream when the loop task ends, whatever the way.
struct FinishOnDrop(Arc<EventQueue>);

impl Drop for FinishOnDrop {
    fn drop(&mut self) {
        self.0.finish();
    }
}

pub(crate) use run::run_loop;
