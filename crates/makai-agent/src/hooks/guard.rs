//! [`RunHooks`]: the one hook layer of a run.
//!
//! A run calls the application's [`AgentHooks`] only through it. It makes every
//! call panic-safe (the behaviour per hook is documented on the trait): a panic
//! in a run-shaping hook is recorded and ends the run with
//! [`EndReason::HookPanicked`], cancelling the model call about to be made; any
//! other panic is logged while the run goes on. It also takes steering and
//! follow-up messages from an [`crate::Agent`]'s own queues before asking the
//! application's getters, so a panicking getter cannot lose what the agent
//! already queued.

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, OnceLock};

use futures::FutureExt;
use tokio_util::sync::CancellationToken;

use makai_ai::{
    AssistantMessage, Context, Message, Model, StreamOptions, UserContent, UserMessage, now_ms,
};

use super::{
    AgentHooks, InputDecision, ToolCallDecision, ToolCallInfo, ToolResultOverride, TurnDecision,
    TurnInfo, TurnSummary,
};
use crate::event::EndReason;
use crate::message::AgentMessage;
use crate::tool::ToolOutput;

/// Stands in for the context after a run-shaping hook panicked. The call it goes
/// into is cancelled before a request is sent, so no model ever reads it; it only
/// keeps the request well-formed.
const NOT_SENT: &str =
    "(not sent: an agent hook panicked while preparing this request, so the call was cancelled)";

/// The LLM context of a cancelled call (see [`NOT_SENT`]).
fn not_sent() -> Vec<Message> {
    vec![Message::User(UserMessage {
        content: vec![UserContent::text(NOT_SENT)],
        timestamp: now_ms(),
    })]
}

/// The text of a panic payload.
pub(crate) fn panic_text(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a text message".into())
}

/// Logs a contained hook panic and returns its text.
fn contained(hook: &'static str, payload: &(dyn Any + Send), consequence: &str) -> String {
    let message = panic_text(payload);
    tracing::warn!(hook, panic = %message, "an agent hook panicked; {consequence}");
    message
}

/// Awaits `fut`; a panic in it becomes `on_panic(payload)`.
async fn guarded<T>(
    fut: impl std::future::Future<Output = T>,
    on_panic: impl FnOnce(&(dyn Any + Send)) -> T,
) -> T {
    match AssertUnwindSafe(fut).catch_unwind().await {
        Ok(value) => value,
        Err(payload) => on_panic(&*payload),
    }
}

/// Calls a steering or follow-up getter, treating a panic as "no messages".
async fn messages_or_none<F>(hook: &'static str, call: F) -> Vec<AgentMessage>
where
    F: std::future::Future<Output = Vec<AgentMessage>>,
{
    guarded(call, |p| {
        contained(hook, p, "it is treated as returning no messages");
        Vec::new()
    })
    .await
}

/// Where a run takes the messages an [`crate::Agent`] queued (steering or
/// follow-up), per the queue's delivery mode.
pub(crate) trait MessageQueues: Send + Sync {
    /// Takes the messages due now from the steering (`true`) or follow-up queue.
    fn take(&self, steering: bool) -> Vec<AgentMessage>;
    /// Puts messages a run took but did not deliver back at the front of
    /// their queues, in order.
    fn restore(&self, steering: Vec<AgentMessage>, follow_up: Vec<AgentMessage>);
}

/// The run's hook layer (see the module docs).
pub(crate) struct RunHooks {
    inner: Arc<dyn AgentHooks>,
    /// The agent's own queues, when the run belongs to an agent.
    queues: Option<Arc<dyn MessageQueues>>,
    /// The run's token: cancelled when a panic leaves no valid input for the
    /// model call about to be made.
    cancel: CancellationToken,
    /// The first run-ending panic.
    fault: OnceLock<EndReason>,
}

impl RunHooks {
    /// The layer over `hooks` for a run cancelled by `cancel`, taking queued
    /// messages from `queues` first.
    pub(crate) fn new(
        hooks: Arc<dyn AgentHooks>,
        queues: Option<Arc<dyn MessageQueues>>,
        cancel: &CancellationToken,
    ) -> Self {
        RunHooks {
            inner: hooks,
            queues,
            cancel: cancel.clone(),
            fault: OnceLock::new(),
        }
    }

    /// Why the run must end, when a run-shaping hook panicked.
    pub(crate) fn fault(&self) -> Option<EndReason> {
        self.fault.get().cloned()
    }

    /// Cancels the model call about to be made after `hook` panicked: the hook
    /// had the transcript, so nothing valid is left to send.
    fn cancel_call(&self, hook: &'static str) {
        tracing::debug!(hook, "cancelling the model call of the turn");
        self.cancel.cancel();
    }

    fn faulted(&self) -> bool {
        self.fault.get().is_some()
    }

    /// Records a run-ending panic; returns the reason text.
    fn fail(&self, hook: &'static str, payload: &(dyn Any + Send)) -> String {
        let message = contained(hook, payload, "the run ends");
        let reason = EndReason::HookPanicked {
            hook: hook.to_string(),
            message: message.clone(),
        };
        let text = reason.describe();
        // Only the first run-ending panic is kept: a later one does not change
        // why the run ends.
        let _ = self.fault.set(reason);
        text
    }

    /// The application's `transform_context`.
    pub(crate) async fn transform_context(
        &self,
        messages: &[AgentMessage],
        cancel: &CancellationToken,
    ) -> Option<Vec<AgentMessage>> {
        if self.faulted() {
            return None;
        }
        guarded(self.inner.transform_context(messages, cancel), |p| {
            self.fail("transform_context", p);
            self.cancel_call("transform_context");
            Some(vec![AgentMessage::user(NOT_SENT)])
        })
        .await
    }

    /// The application's `convert_to_llm`.
    pub(crate) fn convert_to_llm(&self, messages: &[AgentMessage]) -> Vec<Message> {
        if self.faulted() {
            return not_sent();
        }
        match std::panic::catch_unwind(AssertUnwindSafe(|| self.inner.convert_to_llm(messages))) {
            Ok(m) => m,
            Err(p) => {
                self.fail("convert_to_llm", &*p);
                self.cancel_call("convert_to_llm");
                not_sent()
            }
        }
    }

    /// The application's `on_model_request` (a panic is logged; the request goes on).
    pub(crate) fn on_model_request(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) {
        if self.faulted() {
            return;
        }
        if let Err(p) = std::panic::catch_unwind(AssertUnwindSafe(|| {
            self.inner.on_model_request(model, context, options)
        })) {
            contained("on_model_request", &*p, "the request goes on");
        }
    }

    /// The application's `before_turn`.
    pub(crate) async fn before_turn(&self, turn: &TurnInfo<'_>) -> TurnDecision {
        if let Some(reason) = self.fault.get() {
            return TurnDecision::Stop(reason.describe());
        }
        guarded(self.inner.before_turn(turn), |p| {
            TurnDecision::Stop(self.fail("before_turn", p))
        })
        .await
    }

    /// The application's `after_turn`.
    pub(crate) async fn after_turn(&self, turn: &TurnSummary<'_>) {
        guarded(self.inner.after_turn(turn), |p| {
            contained("after_turn", p, "the run goes on");
        })
        .await
    }

    /// The application's `on_error`.
    pub(crate) async fn on_error(&self, message: &AssistantMessage) {
        guarded(self.inner.on_error(message), |p| {
            contained("on_error", p, "the run goes on");
        })
        .await
    }

    /// The application's `before_tool_call`.
    pub(crate) async fn before_tool_call(&self, call: &ToolCallInfo<'_>) -> ToolCallDecision {
        guarded(self.inner.before_tool_call(call), |p| {
            let message = contained("before_tool_call", p, "the tool call is blocked");
            ToolCallDecision::Block(format!(
                    "Tool call '{}' was not executed: the before_tool_call hook panicked ({message}), so the call was blocked. This is a fault in the application, not in the call.",
                call.tool_call.name
            ))
        })
        .await
    }

    /// The application's `after_tool_call`.
    pub(crate) async fn after_tool_call(
        &self,
        call: &ToolCallInfo<'_>,
        result: &ToolOutput,
        is_error: bool,
    ) -> Option<ToolResultOverride> {
        guarded(self.inner.after_tool_call(call, result, is_error), |p| {
            contained("after_tool_call", p, "the tool's original result is kept");
            None
        })
        .await
    }

    /// The application's `filter_input`.
    pub(crate) async fn filter_input(&self, message: &AgentMessage) -> InputDecision {
        if let Some(reason) = self.fault.get() {
            return InputDecision::Reject(reason.describe());
        }
        guarded(self.inner.filter_input(message), |p| {
            InputDecision::Reject(self.fail("filter_input", p))
        })
        .await
    }

    /// Hands undelivered queued messages back to the agent's queues; returns
    /// what is left for the caller (everything, when there are no queues).
    pub(crate) fn restore(
        &self,
        steering: Vec<AgentMessage>,
        follow_up: Vec<AgentMessage>,
    ) -> (Vec<AgentMessage>, Vec<AgentMessage>) {
        match &self.queues {
            Some(q) => {
                if !steering.is_empty() || !follow_up.is_empty() {
                    q.restore(steering, follow_up);
                }
                (Vec::new(), Vec::new())
            }
            None => (steering, follow_up),
        }
    }

    /// Steering messages due now: the agent's queue first, then the
    /// application's `get_steering_messages`.
    pub(crate) async fn steering_messages(&self) -> Vec<AgentMessage> {
        self.queued(true).await
    }

    /// Follow-up messages due now: the agent's queue first, then the
    /// application's `get_follow_up_messages`.
    pub(crate) async fn follow_up_messages(&self) -> Vec<AgentMessage> {
        self.queued(false).await
    }

    async fn queued(&self, steering: bool) -> Vec<AgentMessage> {
        // Once the run is ending, queued messages stay queued for the next run.
        if self.faulted() {
            return Vec::new();
        }
        let mut out = self
            .queues
            .as_ref()
            .map(|q| q.take(steering))
            .unwrap_or_default();
        let from_app = if steering {
            messages_or_none("get_steering_messages", self.inner.get_steering_messages()).await
        } else {
            messages_or_none(
                "get_follow_up_messages",
                self.inner.get_follow_up_messages(),
            )
            .await
        };
        out.extend(from_app);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panic_payload_text() {
        let p = std::panic::catch_unwind(|| panic!("plain")).unwrap_err();
        assert_eq!(panic_text(&*p), "plain");
        let n = 3;
        let p = std::panic::catch_unwind(|| panic!("formatted {n}")).unwrap_err();
        assert_eq!(panic_text(&*p), "formatted 3");
        let p = std::panic::catch_unwind(|| std::panic::panic_any(7u8)).unwrap_err();
        assert_eq!(panic_text(&*p), "a panic without a text message");
    }
}
