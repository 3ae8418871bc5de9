//! Runs of an [`Agent`]: what a prompt is ([`PromptInput`]), starting a run
//! from a prompt or a continuation, awaiting it ([`RunHandle`]), aborting it
//! and waiting for the agent to be idle.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, MutexGuard};
use std::task::{Context, Poll};

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use makai_ai::{ImageContent, UserContent, UserMessage, now_ms};

use crate::agent_loop::{RunOutcome, check_continuable, run_loop};
use crate::error::AgentError;
use crate::message::AgentMessage;
use crate::types::AgentContext;

use super::state::{ActiveRun, AgentSink, Core};
use super::{Agent, AgentStatus, Inner};

/// What to prompt with: text, text with images, or messages.
#[derive(Clone, Debug)]
pub enum PromptInput {
    /// A user message with this text.
    Text(String),
    /// A user message with text and images.
    TextWithImages(String, Vec<ImageContent>),
    /// These messages.
    Messages(Vec<AgentMessage>),
}

impl PromptInput {
    fn into_messages(self) -> Vec<AgentMessage> {
        match self {
            PromptInput::Text(t) => vec![AgentMessage::user(t)],
            PromptInput::TextWithImages(t, images) => {
                let mut content = vec![UserContent::text(t)];
                content.extend(images.into_iter().map(UserContent::Image));
                vec![
                    UserMessage {
                        content,
                        timestamp: now_ms(),
                    }
                    .into(),
                ]
            }
            PromptInput::Messages(m) => m,
        }
    }
}

impl From<&str> for PromptInput {
    fn from(t: &str) -> Self {
        PromptInput::Text(t.to_string())
    }
}
impl From<String> for PromptInput {
    fn from(t: String) -> Self {
        PromptInput::Text(t)
    }
}
impl From<AgentMessage> for PromptInput {
    fn from(m: AgentMessage) -> Self {
        PromptInput::Messages(vec![m])
    }
}
impl From<Vec<AgentMessage>> for PromptInput {
    fn from(m: Vec<AgentMessage>) -> Self {
        PromptInput::Messages(m)
    }
}

/// A started run of an [`Agent`]; await it for the outcome. Dropping it does not
/// stop the run (use [`Agent::abort`]).
#[derive(Debug)]
pub struct RunHandle(JoinHandle<RunOutcome>);

impl Future for RunHandle {
    type Output = Result<RunOutcome, AgentError>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0)
            .poll(cx)
            .map(|r| r.map_err(|e| AgentError::LoopFailed(e.to_string())))
    }
}

/// Clears the agent's run if the loop task ends without doing so (panic, abort).
struct RunGuard(Arc<Inner>);

impl Drop for RunGuard {
    fn drop(&mut self) {
        let running = self.0.lock().run.is_some();
        if running {
            self.0.finish_run(None);
        }
    }
}

impl Agent {
    /// Starts a run with `prompts` while holding the lock.
    fn start_locked(
        &self,
        mut core: MutexGuard<'_, Core>,
        prompts: Option<Vec<AgentMessage>>,
        skip_initial_steering_poll: bool,
    ) -> RunHandle {
        let cancel = CancellationToken::new();
        core.run = Some(ActiveRun {
            cancel: cancel.clone(),
        });
        core.state.error_message = None;
        core.partial = None;
        let context = AgentContext {
            system_prompt: core.state.system_prompt.clone(),
            messages: core.state.messages.clone(),
            tools: core.state.tools.clone(),
        };
        let mut config = core.config.clone();
        config.model = core.state.model.clone();
        config.options.thinking = core.state.thinking_level;
        config.skip_initial_steering_poll = skip_initial_steering_poll;
        let usage_floor = core.usage_floor;
        self.inner.apply_status(&mut core, AgentStatus::Streaming);
        drop(core);
        let inner = self.inner.clone();
        RunHandle(tokio::spawn(async move {
            let guard = RunGuard(inner.clone());
            let sink = Arc::new(AgentSink {
                inner: inner.clone(),
            });
            let outcome = run_loop(
                prompts,
                context,
                usage_floor,
                Arc::new(config.normalized()),
                Some(inner.clone() as Arc<dyn crate::hooks::MessageQueues>),
                cancel,
                sink,
            )
            .await;
            inner.finish_run(Some(&outcome));
            drop(guard);
            outcome
        }))
    }

    /// Starts a run with a prompt and returns at once. Fails with
    /// [`AgentError::AlreadyRunning`] while a run is in progress.
    pub fn start_prompt(&self, input: impl Into<PromptInput>) -> Result<RunHandle, AgentError> {
        let core = self.idle_core()?;
        Ok(self.start_locked(core, Some(input.into().into_messages()), false))
    }

    /// Runs a prompt (text, text with images, or messages) to the end.
    pub async fn prompt(&self, input: impl Into<PromptInput>) -> Result<RunOutcome, AgentError> {
        self.start_prompt(input)?.await
    }

    /// Runs a text prompt with images to the end.
    pub async fn prompt_with_images(
        &self,
        text: impl Into<String>,
        images: Vec<ImageContent>,
    ) -> Result<RunOutcome, AgentError> {
        self.prompt(PromptInput::TextWithImages(text.into(), images))
            .await
    }

    /// Starts a continuation and returns at once (see [`Agent::continue_`]).
    pub fn start_continue(&self) -> Result<RunHandle, AgentError> {
        let mut core = self.idle_core()?;
        match core.state.messages.last() {
            Some(m) if m.is_assistant() => {
                let steering = core.drain(true);
                let (prompts, skip) = if !steering.is_empty() {
                    (steering, true)
                } else {
                    let follow_ups = core.drain(false);
                    if follow_ups.is_empty() {
                        return Err(AgentError::CannotContinueFromAssistant);
                    }
                    (follow_ups, false)
                };
                let event = core.queue_event();
                self.inner.registry.broadcast(&event);
                let run = self.start_locked(core, Some(prompts), skip);
                self.inner.registry.deliver_inline();
                Ok(run)
            }
            _ => {
                check_continuable(&core.state.messages)?;
                Ok(self.start_locked(core, None, false))
            }
        }
    }

    /// Continues from the transcript: retries after an error, or answers a
    /// transcript ending with a user message or tool results. When it ends with an
    /// assistant message, queued steering is delivered first, then follow-ups;
    /// with nothing queued this is an error.
    pub async fn continue_(&self) -> Result<RunOutcome, AgentError> {
        self.start_continue()?.await
    }

    /// Aborts the run, if any: the status becomes `aborting` until it ends.
    pub fn abort(&self) {
        let mut core = self.inner.lock();
        let cancel = core.run.as_ref().map(|r| r.cancel.clone());
        if let Some(c) = cancel {
            self.inner.apply_status(&mut core, AgentStatus::Aborting);
            drop(core);
            c.cancel();
        }
    }

    /// Waits until no run is in progress (returns at once when idle).
    pub async fn wait_for_idle(&self) {
        let mut rx = self.inner.status.subscribe();
        // Fails only when the agent's state was dropped: then nothing runs.
        let _ = rx.wait_for(|s| *s == AgentStatus::Idle).await;
    }
}
