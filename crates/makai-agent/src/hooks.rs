//! [`AgentHooks`]: every callback of the loop in one trait with default methods.
//!
//! Implement only what you need; [`NoHooks`] uses every default. Hooks run on the
//! loop task: a slow hook delays the run (that is the point of `before_tool_call`
//! approvals) but never blocks event delivery to subscribers. A panicking hook is
//! contained (see [`AgentHooks`] for what each panic does).

mod guard;

use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use makai_ai::{
    AssistantMessage, Context, Message, Model, StreamOptions, ToolCall, ToolResultMessage, Usage,
    UserContent,
};

use crate::message::{AgentMessage, default_convert_to_llm};
use crate::tool::ToolOutput;

pub(crate) use guard::{MessageQueues, RunHooks, panic_text};

/// What `before_turn` sees: the state just before a model call.
#[derive(Debug)]
#[non_exhaustive]
pub struct TurnInfo<'a> {
    /// Index of the model call in this run (0 for the first).
    pub turn: u32,
    /// The transcript so far.
    pub messages: &'a [AgentMessage],
    /// Messages about to be added before the call (prompts, steering, follow-ups).
    pub pending: &'a [AgentMessage],
    /// Tokens used by the run so far.
    pub usage: &'a Usage,
}

/// What `after_turn` sees: a finished turn.
#[derive(Debug)]
#[non_exhaustive]
pub struct TurnSummary<'a> {
    /// Index of the turn in this run (0 for the first).
    pub turn: u32,
    /// The assistant message of the turn.
    pub message: &'a AssistantMessage,
    /// Its tool results, in call order.
    pub tool_results: &'a [ToolResultMessage],
    /// The transcript after the turn.
    pub messages: &'a [AgentMessage],
    /// Tokens used by the run so far.
    pub usage: &'a Usage,
}

/// What `before_tool_call` and `after_tool_call` see.
#[derive(Debug)]
#[non_exhaustive]
pub struct ToolCallInfo<'a> {
    /// The assistant message that made the call.
    pub assistant_message: &'a AssistantMessage,
    /// The call.
    pub tool_call: &'a ToolCall,
    /// The validated arguments.
    pub args: &'a Value,
}

/// `before_turn`'s answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TurnDecision {
    /// Make the model call.
    Continue,
    /// End the run now; the reason is reported in `agent_end`.
    Stop(String),
}

/// `before_tool_call`'s answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolCallDecision {
    /// Run the tool.
    Allow,
    /// Do not run it; the reason becomes the error result the model sees.
    Block(String),
}

/// `filter_input`'s answer for one user message.
#[derive(Clone, Debug, PartialEq)]
pub enum InputDecision {
    /// Use the message as is.
    Accept,
    /// Use this message instead (e.g. with secrets redacted).
    Replace(Box<AgentMessage>),
    /// Drop the message. For a prompt the run ends with this reason; a rejected
    /// steering or follow-up message is dropped and the run goes on.
    Reject(String),
}

/// Replacement parts for a tool result (`after_tool_call`). `None` keeps the original.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolResultOverride {
    /// Replaces the content.
    pub content: Option<Vec<UserContent>>,
    /// Replaces the details.
    pub details: Option<Value>,
    /// Replaces the error flag.
    pub is_error: Option<bool>,
}

impl ToolResultOverride {
    /// Applies the replacements to a call's result and error flag.
    pub fn apply(self, output: &mut crate::tool::ToolOutput, is_error: &mut bool) {
        if let Some(c) = self.content {
            output.content = c;
        }
        if let Some(d) = self.details {
            output.details = d;
        }
        if let Some(e) = self.is_error {
            *is_error = e;
        }
    }
}

/// Callbacks of the agent loop. Every method has a default that changes nothing.
///
/// # Panics in hooks
///
/// A hook that panics never unwinds through the loop: every call is caught, the
/// panic is logged with `tracing::warn!`, and the run goes on or ends cleanly
/// (always with `agent_end`, every tool call answered, the transcript valid). An
/// [`crate::Agent`] is idle and usable again afterwards, its queues intact.
///
/// - `transform_context`, `convert_to_llm`: the run ends with
///   [`crate::EndReason::HookPanicked`] naming the hook and the panic message. The
///   model call of that turn is cancelled before any request is sent; it appears
///   as an `aborted` assistant message closing the turn.
/// - `before_turn`: the run ends with `HookPanicked` before the turn starts.
/// - `filter_input`: the message being checked is not used and the run ends with
///   `HookPanicked`: at once for a prompt; before the next model call for a
///   steering or follow-up message (tool calls already under way finish).
/// - `before_tool_call`: that call is blocked; its error result names the hook
///   and the panic message. The run goes on.
/// - `after_tool_call`: the tool's original result is kept. The run goes on.
/// - `after_turn`, `on_error`, `on_model_request`: logged only. The run goes on.
/// - `get_steering_messages`, `get_follow_up_messages`: count as returning no
///   messages (an agent's own queued messages are still delivered).
///
/// Once a run is ending because of a panic, `before_turn` is not called again and
/// no steering or follow-up message is taken from the queues (they stay queued
/// for the next run).
#[async_trait]
pub trait AgentHooks: Send + Sync {
    /// Rewrites the transcript before each model call (pruning, injecting context).
    /// Returns what the model sees instead of `messages`, or `None` (the
    /// default) to send them as they are; the stored transcript is unchanged
    /// either way. Returning `None` costs no copy of the transcript.
    async fn transform_context(
        &self,
        _messages: &[AgentMessage],
        _cancel: &CancellationToken,
    ) -> Option<Vec<AgentMessage>> {
        None
    }

    /// Turns agent messages into LLM messages (custom messages become LLM messages
    /// or are filtered out). Default: [`default_convert_to_llm`].
    fn convert_to_llm(&self, messages: &[AgentMessage]) -> Vec<Message> {
        default_convert_to_llm(messages)
    }

    /// Called with each model request of a run just before it goes to the
    /// client: the model, the context and the options exactly as sent. It
    /// observes and cannot change the request (cache warming keeps the last
    /// one to send it again). Compactions' requests are not reported.
    fn on_model_request(&self, _model: &Model, _context: &Context, _options: &StreamOptions) {}

    /// Called before each model call; may stop the run.
    async fn before_turn(&self, _turn: &TurnInfo<'_>) -> TurnDecision {
        TurnDecision::Continue
    }

    /// Called after each `turn_end`.
    async fn after_turn(&self, _turn: &TurnSummary<'_>) {}

    /// Called when a model call ends with stop reason `error`.
    async fn on_error(&self, _message: &AssistantMessage) {}

    /// Called before a tool runs, after its arguments were validated; may block it
    /// (the hook for approvals).
    async fn before_tool_call(&self, _call: &ToolCallInfo<'_>) -> ToolCallDecision {
        ToolCallDecision::Allow
    }

    /// Called after a tool ran, before its end event; may rewrite the result.
    async fn after_tool_call(
        &self,
        _call: &ToolCallInfo<'_>,
        _result: &ToolOutput,
        _is_error: bool,
    ) -> Option<ToolResultOverride> {
        None
    }

    /// Checks each user message (prompts, steering, follow-ups) before it joins the transcript.
    async fn filter_input(&self, _message: &AgentMessage) -> InputDecision {
        InputDecision::Accept
    }

    /// Messages to inject mid-run; polled after each tool completes and after each turn.
    async fn get_steering_messages(&self) -> Vec<AgentMessage> {
        Vec::new()
    }

    /// Messages to process when the run would otherwise end.
    async fn get_follow_up_messages(&self) -> Vec<AgentMessage> {
        Vec::new()
    }
}

/// Hooks that change nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoHooks;

impl AgentHooks for NoHooks {}
