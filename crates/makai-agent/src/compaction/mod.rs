//! Context size: token estimates and compaction.
//!
//! The estimate of a transcript is the context size the provider last reported
//! (input, cache reads and writes, and output of the newest assistant message that
//! has usage) plus about one token per four characters of every newer message. When
//! a [`crate::ContextConfig`] is set and the estimate passes its budget, the
//! [`CompactionStrategy`] runs before the model call. A provider error that says the
//! context overflowed triggers compaction and one retry of the call.
//!
//! Usage reported before a compaction counted a context that no longer exists,
//! so it is not trusted afterwards: not for the rest of the run, and not by the
//! [`crate::Agent`]'s next runs after `compact()` or an automatic compaction (the
//! agent remembers where the compacted transcript ended; replacing or clearing
//! the messages forgets it).

pub(crate) mod branch;
pub(crate) mod default;

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use makai_ai::{AssistantContent, Message, Model, StopReason, StreamOptions, Usage, UserContent};

use crate::config::ContextConfig;
use crate::event::CompactionReason;
use crate::message::AgentMessage;
use makai_ai::ProtocolClient;

pub use branch::{BranchSummary, branch_files};
pub use default::DefaultCompaction;

/// Tokens assumed for one image.
const IMAGE_TOKENS: u64 = 1200;
/// Tokens of per-message overhead (role markers and framing).
const MESSAGE_OVERHEAD: u64 = 4;

/// Rough token count of one message: characters / 4 plus a small overhead.
pub fn estimate_message_tokens(message: &AgentMessage) -> u64 {
    let body = match message {
        AgentMessage::Llm(m) => return estimate_llm_message_tokens(m),
        AgentMessage::Custom(c) => match &c.content {
            crate::message::MessageContent::Text(t) => t.len() as u64 / 4,
            crate::message::MessageContent::Parts(p) => parts_tokens(p),
        },
        AgentMessage::CompactionSummary(s) => s.summary.len() as u64 / 4,
        AgentMessage::BranchSummary(s) => s.summary.len() as u64 / 4,
        AgentMessage::BashExecution(b) if b.exclude_from_context != Some(true) => {
            (b.command.len() + b.output.len()) as u64 / 4
        }
        _ => 0,
    };
    body + MESSAGE_OVERHEAD
}

fn parts_tokens(content: &[UserContent]) -> u64 {
    content
        .iter()
        .map(|c| match c {
            UserContent::Text(t) => t.text.len() as u64 / 4,
            _ => IMAGE_TOKENS,
        })
        .sum()
}

/// Rough token count of one LLM message (as [`estimate_message_tokens`]).
pub(crate) fn estimate_llm_message_tokens(message: &Message) -> u64 {
    let body = match message {
        Message::User(u) => parts_tokens(&u.content),
        Message::ToolResult(r) => parts_tokens(&r.content) + r.tool_name.len() as u64 / 4,
        Message::Assistant(a) => a
            .content
            .iter()
            .map(|c| match c {
                AssistantContent::Text(t) => t.text.len() as u64 / 4,
                AssistantContent::Thinking(t) => t.thinking.len() as u64 / 4,
                AssistantContent::ToolCall(c) => {
                    let args: usize = c.arguments.iter().map(|(k, v)| k.len() + json_len(v)).sum();
                    (c.name.len() + args) as u64 / 4 + 8
                }
                _ => 0,
            })
            .sum(),
        _ => 0,
    };
    body + MESSAGE_OVERHEAD
}

/// Length of a JSON value written compactly (close enough for an estimate).
pub(crate) fn json_len(v: &Value) -> usize {
    match v {
        Value::String(s) => s.len() + 2,
        Value::Array(a) => a.iter().map(json_len).sum::<usize>() + 2,
        Value::Object(o) => {
            o.iter()
                .map(|(k, v)| k.len() + 3 + json_len(v))
                .sum::<usize>()
                + 2
        }
        _ => 4,
    }
}

/// Estimated context tokens of `messages` (see the module docs).
pub fn estimate_tokens(messages: &[AgentMessage]) -> u64 {
    estimate_tokens_from(messages, 0)
}

/// Like [`estimate_tokens`], trusting reported usage only of assistant messages at
/// index `trusted_from` or later (usage reported before a compaction is stale).
pub(crate) fn estimate_tokens_from(messages: &[AgentMessage], trusted_from: usize) -> u64 {
    let anchor = messages
        .iter()
        .enumerate()
        .skip(trusted_from)
        .rev()
        .find_map(|(i, m)| match m.as_assistant() {
            Some(a)
                if !matches!(a.stop_reason, StopReason::Error | StopReason::Aborted)
                    && context_tokens(&a.usage) > 0 =>
            {
                Some((i, context_tokens(&a.usage)))
            }
            _ => None,
        });
    match anchor {
        Some((i, tokens)) => {
            tokens
                + messages[i + 1..]
                    .iter()
                    .map(estimate_message_tokens)
                    .sum::<u64>()
        }
        None => messages.iter().map(estimate_message_tokens).sum(),
    }
}

/// Context size implied by one response's usage: everything read plus what was written.
fn context_tokens(u: &Usage) -> u64 {
    u.input + u.cache_read + u.cache_write + u.output
}

/// True when a provider error message says the context was too long: the
/// wording of Anthropic, OpenAI, Google, Bedrock, xAI, Groq, OpenRouter,
/// LiteLLM, Copilot, llama.cpp, vLLM, Ollama, Kimi, MiniMax, Qwen and
/// others (the fragments pi's `isContextOverflow` matches); never a rate
/// limit or an overloaded service, whatever else it says.
pub fn is_context_overflow(error_message: &str) -> bool {
    /// Fragments that say it alone.
    const PHRASES: [&str; 25] = [
        "context length",
        "context_length",
        "context window",
        "context_window",
        "contextwindowexceeded",
        "context size",
        "too many tokens",
        "maximum context",
        "prompt is too long",
        "prompt too long",
        "request_too_large",
        "input is too long",
        "exceeds the context",
        "maximum prompt length is",
        "reduce the length of the messages",
        "exceeds the limit of",
        "exceeded model token limit",
        "token limit exceeded",
        "range of input length should be",
        "max_model_len",
        "maximum model length",
        "maximum allowed input length",
        "n_ctx_slot",
        "exceeds the maximum number of input tokens",
        "上下文长度",
    ];
    /// Not an overflow, whatever else the message says.
    const NOT: [&str; 5] = [
        "rate limit",
        "rate_limit",
        "too many requests",
        "throttling",
        "service unavailable",
    ];
    let lower = error_message.to_lowercase();
    if NOT.iter().any(|p| lower.contains(p)) {
        return false;
    }
    PHRASES.iter().any(|p| lower.contains(p))
        // Gemini: "The input token count (N) exceeds the maximum number of
        // tokens allowed (M)".
        || (lower.contains("input token count") && lower.contains("exceeds the maximum"))
}

/// True when `answer` ended because the context was full: an error saying
/// so ([`is_context_overflow`]), or a length stop that wrote nothing with
/// the input at 99% of `context_window` or more (a provider that cuts the
/// answer instead of refusing the request).
pub fn answer_overflowed(answer: &makai_ai::AssistantMessage, context_window: u64) -> bool {
    match answer.stop_reason {
        makai_ai::StopReason::Error => answer
            .error_message
            .as_deref()
            .is_some_and(is_context_overflow),
        makai_ai::StopReason::Length => {
            let u = &answer.usage;
            context_window > 0
                && u.output == 0
                && (u.input + u.cache_read) * 100 >= context_window * 99
        }
        _ => false,
    }
}

/// What a compaction strategy is given.
#[non_exhaustive]
pub struct CompactionContext<'a> {
    /// Why compaction runs.
    pub reason: CompactionReason,
    /// The estimate to get under.
    pub target_tokens: u64,
    /// The estimate before compaction.
    pub tokens_before: u64,
    /// The context settings.
    pub config: &'a ContextConfig,
    /// The model of the run (also used for summaries).
    pub model: &'a Model,
    /// The run's client, for summary calls.
    pub client: &'a Arc<dyn ProtocolClient>,
    /// Request options for summary calls (cancellation already set).
    pub options: StreamOptions,
    /// Cancelled when the run is aborted.
    pub cancel: &'a CancellationToken,
    /// What the application asked the summary to focus on (manual compaction,
    /// [`crate::Agent::compact`]); `None` for automatic compaction.
    pub custom_instructions: Option<&'a str>,
}

/// What [`CompactionStrategy::should_compact`] is given before each model call.
#[derive(Debug)]
#[non_exhaustive]
pub struct CompactionCheck<'a> {
    /// The estimated context size now (see [`estimate_tokens`]).
    pub tokens: u64,
    /// The budget the context should stay under.
    pub budget_tokens: u64,
    /// The context settings.
    pub config: &'a ContextConfig,
    /// The model about to be called.
    pub model: &'a Model,
}

/// `compacted` (what a strategy made of `before`) with a checkpoint in front
/// when the system messages it dropped leave other tools declared: one
/// system message whose `toolsAdded` lists every tool `before` left declared
/// (pi's compaction checkpoint), so tools a run declared
/// ([`crate::ToolContext::declare_tools`]) outlive the compaction.
pub(crate) fn keep_declared_tools(
    before: &[AgentMessage],
    mut compacted: Vec<AgentMessage>,
) -> Vec<AgentMessage> {
    let declared = crate::declared_tool_changes(before);
    if declared == crate::declared_tool_changes(&compacted) {
        return compacted;
    }
    let mut definitions: Vec<makai_ai::ToolDefinition> = Vec::new();
    for m in before {
        if let AgentMessage::System(s) = m {
            for t in s.tools_added.iter().flatten() {
                definitions.retain(|d| d.name != t.name);
                definitions.push(t.clone());
            }
        }
    }
    definitions.retain(|d| declared.contains(&d.name));
    compacted.insert(0, crate::SystemMessage::tools_added(definitions).into());
    compacted
}

/// What a compaction produced.
#[derive(Clone, Debug, Default)]
pub struct CompactionOutput {
    /// The new transcript.
    pub messages: Vec<AgentMessage>,
    /// The summary written, if any.
    pub summary: Option<String>,
    /// Usage of the model calls made.
    pub usage: Option<Usage>,
    /// Strategy-specific data (reported in `compaction_end.result.details`).
    pub details: Value,
}

/// Why compaction failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CompactionError {
    /// The run was aborted during compaction.
    #[error("compaction was aborted")]
    Aborted,
    /// The strategy failed.
    #[error("compaction failed: {0}")]
    Failed(String),
}

/// Shrinks a transcript that no longer fits.
///
/// When context management is on ([`crate::ContextConfig`]), the strategy is
/// consulted before every model call ([`CompactionStrategy::should_compact`]);
/// when it answers yes, [`CompactionStrategy::compact`] runs between
/// `compaction_start` and `compaction_end` events. After a context-overflow
/// error `compact` runs without asking.
///
/// Must keep the transcript valid: every tool result stays right after the
/// assistant message that made its call (never keep one without the other).
#[async_trait]
pub trait CompactionStrategy: Send + Sync {
    /// Whether to compact before this model call. The default: when the
    /// estimate passes the budget.
    fn should_compact(&self, _messages: &[AgentMessage], check: &CompactionCheck<'_>) -> bool {
        check.tokens > check.budget_tokens
    }

    /// Returns the compacted transcript.
    async fn compact(
        &self,
        messages: Vec<AgentMessage>,
        cx: &CompactionContext<'_>,
    ) -> Result<CompactionOutput, CompactionError>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use makai_ai::AssistantMessage;

    #[test]
    fn estimate_uses_last_usage_plus_newer_messages() {
        let mut a = AssistantMessage::default();
        a.usage.input = 1000;
        a.usage.output = 50;
        let msgs = vec![
            AgentMessage::user("x".repeat(4000)),
            a.into(),
            AgentMessage::user("y".repeat(400)),
        ];
        assert_eq!(estimate_tokens(&msgs), 1050 + 100 + MESSAGE_OVERHEAD);
        // Usage before the trusted index is ignored.
        assert_eq!(
            estimate_tokens_from(&msgs, 2),
            1000 + 100 + MESSAGE_OVERHEAD * 3
        );
    }

    #[test]
    fn overflow_messages_are_recognized() {
        assert!(is_context_overflow(
            "HTTP 400 from openai: This model's maximum context length is 8192 tokens"
        ));
        assert!(is_context_overflow(
            "prompt is too long: 210000 tokens > 200000 maximum"
        ));
        assert!(!is_context_overflow("HTTP 429: rate limited"));
        // Each provider's wording (pi's list).
        for said in [
            "HTTP 413: request_too_large",
            "Input is too long for requested model.",
            "Your input exceeds the context window of this model.",
            "litellm.ContextWindowExceededError: litellm.BadRequestError: prompt exceeds the model's maximum context length (8192)",
            "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
            "This model's maximum prompt length is 131072 but the request contains 140000 tokens.",
            "Please reduce the length of the messages or completion.",
            "prompt token count of 130000 exceeds the limit of 128000",
            "the request exceeds the available context size, try increasing it",
            "Invalid request: Your request exceeded model token limit: 262144",
            "context window exceeds limit (2013)",
            "prompt has 40,000 tokens, but the configured context size is 32,768 tokens",
            "model_context_window_exceeded",
            "Range of input length should be [1, 30720]",
            "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens",
            "token limit exceeded",
        ] {
            assert!(is_context_overflow(said), "{said}");
        }
        for said in [
            "Rate limit reached: too many tokens per minute",
            "Throttling error: Too many tokens, please wait before trying again.",
            "Service unavailable: the context window service is down",
            "HTTP 500: internal error",
        ] {
            assert!(!is_context_overflow(said), "{said}");
        }
    }

    #[test]
    fn a_length_stop_that_wrote_nothing_at_a_full_window_is_an_overflow() {
        let answer = |stop, input, output| {
            let mut a = makai_ai::AssistantMessage {
                stop_reason: stop,
                ..Default::default()
            };
            a.usage.input = input;
            a.usage.output = output;
            a
        };
        use makai_ai::StopReason::{Length, Stop};
        assert!(answer_overflowed(&answer(Length, 99_000, 0), 100_000));
        assert!(!answer_overflowed(&answer(Length, 98_000, 0), 100_000));
        assert!(!answer_overflowed(&answer(Length, 99_500, 12), 100_000));
        assert!(!answer_overflowed(&answer(Stop, 120_000, 0), 100_000));
        assert!(!answer_overflowed(&answer(Length, 99_500, 0), 0));
    }
}
