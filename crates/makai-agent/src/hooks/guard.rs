//! Panic isolation for [`AgentHooks`]: the behaviour per hook is documented on
//! the trait. Two layers:
//!
//! - [`PanicSafeHooks`] wraps a run's hooks once, in `run_loop`. It catches every
//!   panic, records the first one from a run-shaping hook (which then ends the
//!   run with [`EndReason::HookPanicked`]) and cancels the run's model call when
//!   one is about to be made.
//! - [`QueueSafeHooks`] wraps the application's hooks below an
//!   [`crate::Agent`]'s queue layer, so a panicking steering or follow-up getter
//!   cannot lose the messages the agent already took from its own queues. Every
//!   other hook passes through it untouched, to be caught by the run's layer.

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use futures::FutureExt;
use tokio_util::sync::CancellationToken;

use makai_ai::{ApiKey, AssistantMessage, Message, UserContent, UserMessage, now_ms};

use super::{
    AgentHooks, InputDecision, ToolCallDecision, ToolCallInfo, ToolResultOverride, TurnDecision,
    TurnInfo, TurnSummary,
};
use crate::config::AgentLoopConfig;
use crate::event::EndReason;
use crate::tool::ToolOutput;
use crate::types::AgentMessage;

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

/// Calls `get_api_key`, treating a panic as "no key from the hook".
pub(crate) async fn api_key_or_none(hooks: &dyn AgentHooks, provider: &str) -> Option<ApiKey> {
    guarded(hooks.get_api_key(provider), |p| {
        contained("get_api_key", p, "the configured API key is used instead");
        None
    })
    .await
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

/// The run's hook layer (see the module docs).
pub(crate) struct PanicSafeHooks {
    inner: Arc<dyn AgentHooks>,
    /// The run's token: cancelled when a panic leaves no valid input for the
    /// model call about to be made.
    cancel: CancellationToken,
    /// The first run-ending panic.
    fault: OnceLock<EndReason>,
}

impl PanicSafeHooks {
    /// Wraps `cfg`'s hooks for a run cancelled by `cancel`. Returns the config to
    /// run with and the layer, to ask for [`PanicSafeHooks::fault`] at the end.
    pub(crate) fn install(
        cfg: Arc<AgentLoopConfig>,
        cancel: &CancellationToken,
    ) -> (Arc<AgentLoopConfig>, Arc<PanicSafeHooks>) {
        let mut cfg = Arc::unwrap_or_clone(cfg);
        let layer = Arc::new(PanicSafeHooks {
            inner: cfg.hooks.clone(),
            cancel: cancel.clone(),
            fault: OnceLock::new(),
        });
        cfg.hooks = layer.clone();
        (Arc::new(cfg), layer)
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
        let _ = self.fault.set(reason);
        text
    }
}

#[async_trait]
impl AgentHooks for PanicSafeHooks {
    async fn transform_context(
        &self,
        messages: Vec<AgentMessage>,
        cancel: &CancellationToken,
    ) -> Vec<AgentMessage> {
        if self.faulted() {
            return messages;
        }
        guarded(self.inner.transform_context(messages, cancel), |p| {
            self.fail("transform_context", p);
            self.cancel_call("transform_context");
            vec![AgentMessage::user(NOT_SENT)]
        })
        .await
    }

    fn convert_to_llm(&self, messages: &[AgentMessage]) -> Vec<Message> {
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

    async fn before_turn(&self, turn: &TurnInfo<'_>) -> TurnDecision {
        if let Some(reason) = self.fault.get() {
            return TurnDecision::Stop(reason.describe());
        }
        guarded(self.inner.before_turn(turn), |p| {
            TurnDecision::Stop(self.fail("before_turn", p))
        })
        .await
    }

    async fn after_turn(&self, turn: &TurnSummary<'_>) {
        guarded(self.inner.after_turn(turn), |p| {
            contained("after_turn", p, "the run goes on");
        })
        .await
    }

    async fn on_error(&self, message: &AssistantMessage) {
        guarded(self.inner.on_error(message), |p| {
            contained("on_error", p, "the run goes on");
        })
        .await
    }

    async fn before_tool_call(&self, call: &ToolCallInfo<'_>) -> ToolCallDecision {
        guarded(self.inner.before_tool_call(call), |p| {
            let message = contained("before_tool_call", p, "the tool call is blocked");
            ToolCallDecision::Block(format!(
                    "Tool call '{}' was not executed: the before_tool_call hook panicked ({message}), so the call was blocked. This is a fault in the application, not in the call.",
                call.tool_call.name
            ))
        })
        .await
    }

    async fn after_tool_call(
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

    async fn filter_input(&self, message: &AgentMessage) -> InputDecision {
        if let Some(reason) = self.fault.get() {
            return InputDecision::Reject(reason.describe());
        }
        guarded(self.inner.filter_input(message), |p| {
            InputDecision::Reject(self.fail("filter_input", p))
        })
        .await
    }

    async fn get_steering_messages(&self) -> Vec<AgentMessage> {
        // Once the run is ending, queued messages stay queued for the next run.
        if self.faulted() {
            return Vec::new();
        }
        messages_or_none("get_steering_messages", self.inner.get_steering_messages()).await
    }

    async fn get_follow_up_messages(&self) -> Vec<AgentMessage> {
        if self.faulted() {
            return Vec::new();
        }
        messages_or_none(
            "get_follow_up_messages",
            self.inner.get_follow_up_messages(),
        )
        .await
    }

    async fn get_api_key(&self, provider: &str) -> Option<ApiKey> {
        api_key_or_none(&*self.inner, provider).await
    }
}

/// The application's hooks below an agent's queue layer (see the module docs).
pub(crate) struct QueueSafeHooks(pub(crate) Arc<dyn AgentHooks>);

#[async_trait]
impl AgentHooks for QueueSafeHooks {
    async fn transform_context(
        &self,
        messages: Vec<AgentMessage>,
        cancel: &CancellationToken,
    ) -> Vec<AgentMessage> {
        self.0.transform_context(messages, cancel).await
    }
    fn convert_to_llm(&self, messages: &[AgentMessage]) -> Vec<Message> {
        self.0.convert_to_llm(messages)
    }
    async fn before_turn(&self, turn: &TurnInfo<'_>) -> TurnDecision {
        self.0.before_turn(turn).await
    }
    async fn after_turn(&self, turn: &TurnSummary<'_>) {
        self.0.after_turn(turn).await
    }
    async fn on_error(&self, message: &AssistantMessage) {
        self.0.on_error(message).await
    }
    async fn before_tool_call(&self, call: &ToolCallInfo<'_>) -> ToolCallDecision {
        self.0.before_tool_call(call).await
    }
    async fn after_tool_call(
        &self,
        call: &ToolCallInfo<'_>,
        result: &ToolOutput,
        is_error: bool,
    ) -> Option<ToolResultOverride> {
        self.0.after_tool_call(call, result, is_error).await
    }
    async fn filter_input(&self, message: &AgentMessage) -> InputDecision {
        self.0.filter_input(message).await
    }
    async fn get_steering_messages(&self) -> Vec<AgentMessage> {
        messages_or_none("get_steering_messages", self.0.get_steering_messages()).await
    }
    async fn get_follow_up_messages(&self) -> Vec<AgentMessage> {
        messages_or_none("get_follow_up_messages", self.0.get_follow_up_messages()).await
    }
    async fn get_api_key(&self, provider: &str) -> Option<ApiKey> {
        self.0.get_api_key(provider).await
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
