//! Usage and cost: per session (`get_session_stats`) and the context-window use.

use serde::Serialize;

use makai_agent::{AgentMessage, estimate_tokens};
use makai_ai::{AssistantContent, StopReason, Usage};
use makai_coding::session::SessionEntry;

use super::AppSession;

/// Tokens used, by kind.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenTotals {
    /// Uncached input.
    pub input: u64,
    /// Output.
    pub output: u64,
    /// Cache reads.
    pub cache_read: u64,
    /// Cache writes.
    pub cache_write: u64,
    /// All of the above.
    pub total: u64,
}

/// How full the context window is.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextUsage {
    /// Estimated context tokens (`None` right after a compaction, until the next response).
    pub tokens: Option<u64>,
    /// The model's context window.
    pub context_window: u64,
    /// `tokens` as a percentage of the window.
    pub percent: Option<f64>,
}

/// pi's `SessionStats`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionStats {
    /// The session file.
    pub session_file: Option<String>,
    /// The session id.
    pub session_id: String,
    /// User messages in the transcript.
    pub user_messages: usize,
    /// Assistant messages.
    pub assistant_messages: usize,
    /// Tool calls made.
    pub tool_calls: usize,
    /// Tool results.
    pub tool_results: usize,
    /// All messages.
    pub total_messages: usize,
    /// Tokens over every assistant message.
    pub tokens: TokenTotals,
    /// Cost in dollars.
    pub cost: f64,
    /// The context window use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_usage: Option<ContextUsage>,
}

/// Sums usage over the assistant messages of a transcript.
pub fn total_usage(messages: &[AgentMessage]) -> Usage {
    let mut u = Usage::default();
    for m in messages {
        if let Some(a) = m.as_assistant() {
            u.add(&a.usage);
        }
    }
    u
}

/// One line of usage and cost, e.g. for `--verbose` and the TUI footer.
pub fn usage_line(label: &str, u: &Usage) -> String {
    format!(
        "{label}: {} in, {} out, {} cache read, {} cache write, ${:.4}",
        u.input, u.output, u.cache_read, u.cache_write, u.cost.total
    )
}

impl AppSession {
    /// pi's `get_session_stats` data.
    pub fn session_stats(&self) -> SessionStats {
        let messages = self.messages();
        let mut s = SessionStats {
            session_file: self.session_file().map(|p| p.display().to_string()),
            session_id: self.session_id(),
            user_messages: 0,
            assistant_messages: 0,
            tool_calls: 0,
            tool_results: 0,
            total_messages: messages.len(),
            tokens: TokenTotals::default(),
            cost: 0.0,
            context_usage: self.context_usage(),
        };
        for m in &messages {
            match m.role() {
                "user" => s.user_messages += 1,
                "toolResult" => s.tool_results += 1,
                "assistant" => s.assistant_messages += 1,
                _ => {}
            }
            if let Some(a) = m.as_assistant() {
                s.tool_calls += a
                    .content
                    .iter()
                    .filter(|c| matches!(c, AssistantContent::ToolCall(_)))
                    .count();
            }
        }
        let u = total_usage(&messages);
        s.tokens = TokenTotals {
            input: u.input,
            output: u.output,
            cache_read: u.cache_read,
            cache_write: u.cache_write,
            total: u.input + u.output + u.cache_read + u.cache_write,
        };
        s.cost = u.cost.total;
        s
    }

    /// The context window use; tokens unknown right after a compaction.
    pub fn context_usage(&self) -> Option<ContextUsage> {
        let window = self.model().context_window;
        if window == 0 {
            return None;
        }
        // Usage reported before the last compaction describes the old context:
        // only a reply after the compaction entry tells the new size.
        let fresh_after_compaction = {
            let s = self.session().lock();
            let path = s.current_path();
            path.iter()
                .rposition(|e| matches!(e, SessionEntry::Compaction(_)))
                .map(|i| {
                    path[i + 1..].iter().any(|e| match e {
                        SessionEntry::Message(m) => m.message.as_assistant().is_some_and(|a| {
                            !matches!(a.stop_reason, StopReason::Error | StopReason::Aborted)
                                && a.usage.input + a.usage.output + a.usage.cache_read > 0
                        }),
                        _ => false,
                    })
                })
        };
        if fresh_after_compaction == Some(false) {
            return Some(ContextUsage {
                tokens: None,
                context_window: window,
                percent: None,
            });
        }
        let messages = self.messages();
        let tokens = estimate_tokens(&messages);
        Some(ContextUsage {
            tokens: Some(tokens),
            context_window: window,
            percent: Some(tokens as f64 / window as f64 * 100.0),
        })
    }
}
