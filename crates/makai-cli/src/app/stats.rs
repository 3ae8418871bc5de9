//! Usage and cost: per session (`get_session_stats`) and the context-window use.

use makai_agent::{AgentMessage, estimate_tokens};
use makai_ai::{AssistantContent, StopReason, Usage};
use makai_coding::session::SessionEntry;

use super::AppSession;

pub use makai_rpc::{ContextUsage, SessionStats, TokenTotals};

/// Sums usage over the assistant messages of a transcript and the usage
/// tools reported on their results (a sub-agent's run).
pub fn total_usage(messages: &[AgentMessage]) -> Usage {
    let mut u = Usage::default();
    for m in messages {
        if let Some(a) = m.as_assistant() {
            u.add(&a.usage);
        } else if let Some(used) = m.as_tool_result().and_then(|r| r.usage.as_ref()) {
            u.add(used);
        }
    }
    u
}

/// Sub-agents started over the whole session file: one per child reported
/// in the `details.agents` of each `task` result.
fn subagent_count(entries: &[SessionEntry]) -> usize {
    entries
        .iter()
        .filter_map(|e| match e {
            SessionEntry::Message(m) => m.message.as_tool_result(),
            _ => None,
        })
        .filter(|r| r.tool_name == makai_coding::subagent::TASK_TOOL)
        .map(|r| {
            r.details
                .as_ref()
                .and_then(|d| d.get("agents"))
                .and_then(|a| a.as_array())
                .map_or(0, Vec::len)
        })
        .sum()
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
        // Read from the transcript in place (a long session's is megabytes).
        let (counts, mut u) = self.with_messages(|messages| {
            let mut counts = [0usize; 4];
            for m in messages {
                match m.role() {
                    "user" => counts[0] += 1,
                    "toolResult" => counts[1] += 1,
                    "assistant" => counts[2] += 1,
                    _ => {}
                }
                if let Some(a) = m.as_assistant() {
                    counts[3] += a
                        .content
                        .iter()
                        .filter(|c| matches!(c, AssistantContent::ToolCall(_)))
                        .count();
                }
            }
            (counts, total_usage(messages))
        });
        let [user_messages, tool_results, assistant_messages, tool_calls] = counts;
        let mut s = SessionStats {
            session_file: self.session_location(),
            session_id: self.session_id(),
            user_messages,
            assistant_messages,
            tool_calls,
            tool_results,
            total_messages: self.agent().message_count(),
            tokens: TokenTotals::default(),
            cost: 0.0,
            context_usage: self.context_usage(),
            subagents: subagent_count(self.session().lock().entries()),
            budget: self.budget(),
        };
        u.add(&self.session().lock().side_usage());
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
        let tokens = self.with_messages(estimate_tokens);
        Some(ContextUsage {
            tokens: Some(tokens),
            context_window: window,
            percent: Some(tokens as f64 / window as f64 * 100.0),
        })
    }
}
