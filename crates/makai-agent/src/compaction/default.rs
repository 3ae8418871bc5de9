//! The default strategy: truncate old tool outputs, then summarize old turns with a
//! model call, then drop middle messages; the first and the most recent messages stay.
//!
//! Manual compaction ([`CompactionReason::Manual`]) always summarizes the middle
//! (truncation alone never ends it) and fails instead of dropping messages
//! unsummarized when the summary call fails.

use async_trait::async_trait;
use serde_json::json;

use makai_ai::{Context, Message, StopReason, TextContent, UserContent, UserMessage, now_ms};

use super::{
    CompactionContext, CompactionError, CompactionOutput, CompactionStrategy,
    estimate_message_tokens,
};
use crate::event::CompactionReason;
use crate::message::{AgentMessage, CompactionSummaryMessage};

/// The three-level default compaction (see the module docs).
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultCompaction;

const SUMMARY_SYSTEM: &str = "You write short, factual summaries of an assistant's working session, so the work can continue with less context.";
const SUMMARY_REQUEST: &str = "Summarize the session transcript below so that you could continue the task from the summary alone. Keep the user's goals and constraints, decisions made, files, commands and identifiers involved, tool results that still matter, and what is left to do. Be brief.";

fn estimate(messages: &[AgentMessage]) -> u64 {
    messages.iter().map(estimate_message_tokens).sum()
}

fn is_tool_result(m: &AgentMessage) -> bool {
    m.as_tool_result().is_some()
}

/// End of the kept head: `keep_first` messages plus the results of their calls.
fn head_end(messages: &[AgentMessage], keep_first: usize) -> usize {
    let mut end = keep_first.min(messages.len());
    while end < messages.len() && is_tool_result(&messages[end]) {
        end += 1;
    }
    end
}

/// Start of the kept tail: at most `keep_recent` messages, never starting with a
/// tool result (its call would be cut off).
fn tail_start(messages: &[AgentMessage], keep_recent: usize, head: usize) -> usize {
    let mut start = messages.len().saturating_sub(keep_recent).max(head);
    while start > head && start < messages.len() && is_tool_result(&messages[start]) {
        start -= 1;
    }
    start
}

/// Start of the kept tail when it is measured in tokens: the most recent
/// messages within `keep_tokens`, moved to the start of a turn (a user message)
/// when one follows the head; otherwise as [`tail_start`] would move it.
fn tail_start_by_tokens(messages: &[AgentMessage], keep_tokens: u64, head: usize) -> usize {
    let mut kept = 0u64;
    let mut cut = messages.len();
    while cut > head {
        let t = estimate_message_tokens(&messages[cut - 1]);
        if kept + t > keep_tokens {
            break;
        }
        kept += t;
        cut -= 1;
    }
    let is_user = |i: &usize| messages[*i].as_user().is_some();
    let forward = (cut..messages.len()).find(is_user);
    let backward = || (head + 1..messages.len()).rev().find(is_user);
    match forward.filter(|&i| i > head).or_else(backward) {
        Some(i) => i,
        None => tail_start(messages, messages.len() - cut, head),
    }
}

/// Cuts `text` to about `max` characters, keeping its head and tail.
fn truncate_middle(text: &str, max: usize) -> Option<String> {
    if text.len() <= max {
        return None;
    }
    let half = max / 2;
    let mut head_end = half;
    while !text.is_char_boundary(head_end) {
        head_end -= 1;
    }
    let mut tail_start = text.len() - half;
    while !text.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    let omitted = tail_start - head_end;
    Some(format!(
        "{}\n[... {omitted} characters of this old tool output were removed to save context ...]\n{}",
        &text[..head_end],
        &text[tail_start..]
    ))
}

/// Level 1: truncates long tool outputs in `range`. Returns how many were cut.
fn truncate_tool_outputs(
    messages: &mut [AgentMessage],
    range: std::ops::Range<usize>,
    max: usize,
) -> usize {
    let mut cut = 0;
    for m in &mut messages[range] {
        if let AgentMessage::Llm(Message::ToolResult(r)) = m {
            for part in &mut r.content {
                if let UserContent::Text(t) = part
                    && let Some(short) = truncate_middle(&t.text, max)
                {
                    t.text = short;
                    cut += 1;
                }
            }
        }
    }
    cut
}

fn clip(text: &str, max: usize) -> String {
    truncate_middle(text, max).unwrap_or_else(|| text.to_string())
}

/// Renders messages as plain text for the summary request. A failed or
/// aborted answer is left out (no request showed it to the model), unless
/// `failures`: then it says why it failed.
fn transcript(messages: &[AgentMessage], max_chars: usize, failures: bool) -> String {
    let mut out = String::new();
    for m in messages {
        match m {
            AgentMessage::Llm(Message::User(_)) => {
                out.push_str(&format!("[user]\n{}\n\n", clip(&m.text(), 4000)))
            }
            AgentMessage::Llm(Message::Assistant(a)) if !a.stop_reason.is_answer() && failures => {
                let error = a.error_message.as_deref().unwrap_or("no reason given");
                out.push_str(&format!(
                    "[assistant failed ({})] {}\n\n",
                    a.stop_reason.as_str(),
                    clip(error, 1000)
                ));
            }
            AgentMessage::Llm(Message::Assistant(a)) if !a.stop_reason.is_answer() => {}
            AgentMessage::Llm(Message::Assistant(a)) => {
                let text = a.text();
                if !text.is_empty() {
                    out.push_str(&format!("[assistant]\n{}\n\n", clip(&text, 4000)));
                }
                for c in a.tool_calls() {
                    let args = serde_json::to_string(&c.arguments).unwrap_or_default();
                    out.push_str(&format!(
                        "[assistant called {}] {}\n\n",
                        c.name,
                        clip(&args, 1000)
                    ));
                }
            }
            AgentMessage::Llm(Message::ToolResult(r)) => out.push_str(&format!(
                "[result of {}{}]\n{}\n\n",
                r.tool_name,
                if r.is_error { ", error" } else { "" },
                clip(&r.text_content(), 1500)
            )),
            AgentMessage::Custom(c) => out.push_str(&format!(
                "[{}]\n{}\n\n",
                c.custom_type,
                clip(&m.text(), 2000)
            )),
            AgentMessage::CompactionSummary(s) => {
                out.push_str(&format!("[summary of earlier work]\n{}\n\n", s.summary))
            }
            AgentMessage::BranchSummary(s) => out.push_str(&format!(
                "[summary of a branch left earlier]\n{}\n\n",
                s.summary
            )),
            _ => {}
        }
    }
    clip(&out, max_chars)
}

async fn summarize(
    messages: &[AgentMessage],
    cx: &CompactionContext<'_>,
) -> Result<(String, makai_ai::Usage), CompactionError> {
    summary_call(
        SummaryRequest {
            system: SUMMARY_SYSTEM,
            request: SUMMARY_REQUEST,
            custom_instructions: cx.custom_instructions,
            model: cx.model,
            client: cx.client,
            options: cx.options.clone(),
            max_tokens: cx.config.summary_max_tokens,
            failures: false,
        },
        messages,
    )
    .await
}

/// One summary call: what to ask, of which model, through which client.
pub(crate) struct SummaryRequest<'a> {
    /// The system prompt.
    pub system: &'a str,
    /// What the summary must be; the transcript follows it.
    pub request: &'a str,
    /// What the user asked the summary to focus on.
    pub custom_instructions: Option<&'a str>,
    /// The model that writes it.
    pub model: &'a makai_ai::Model,
    /// The client that reaches the model.
    pub client: &'a std::sync::Arc<dyn makai_ai::ProtocolClient>,
    /// Request options (cancellation set).
    pub options: makai_ai::StreamOptions,
    /// Output token limit.
    pub max_tokens: u64,
    /// Whether the transcript says why failed turns failed.
    pub failures: bool,
}

/// Asks `call.model` for a summary of `messages` (rendered as a plain
/// transcript of at most half the model's window); the summary and the
/// call's usage.
pub(crate) async fn summary_call(
    call: SummaryRequest<'_>,
    messages: &[AgentMessage],
) -> Result<(String, makai_ai::Usage), CompactionError> {
    // Keep the request well inside the model's window: about half of it, in characters.
    let max_chars = (call.model.context_window as usize)
        .saturating_mul(2)
        .max(8000);
    let mut request = call.request.to_string();
    if let Some(extra) = call.custom_instructions.filter(|s| !s.trim().is_empty()) {
        request.push_str("\n\nAdditional instructions for this summary: ");
        request.push_str(extra.trim());
    }
    let request = format!(
        "{request}\n\n<transcript>\n{}</transcript>",
        transcript(messages, max_chars, call.failures)
    );
    let context = Context {
        system_prompt: Some(call.system.to_string()),
        messages: vec![Message::User(UserMessage {
            content: vec![UserContent::Text(TextContent {
                text: request,
                text_signature: None,
            })],
            timestamp: now_ms(),
        })],
        tools: Vec::new(),
    };
    let mut options = call.options;
    options.max_tokens = Some(call.max_tokens);
    options.tool_choice = None;
    let result = call
        .client
        .stream(call.model, &context, options)
        .await
        .result()
        .await;
    match result.stop_reason {
        StopReason::Aborted => Err(CompactionError::Aborted),
        StopReason::Error => Err(CompactionError::Failed(format!(
            "the summary call failed: {}",
            result.error_message.unwrap_or_default()
        ))),
        _ => {
            let text = result.text();
            if text.trim().is_empty() {
                Err(CompactionError::Failed(
                    "the summary call returned no text".into(),
                ))
            } else {
                Ok((text.trim().to_string(), *result.usage))
            }
        }
    }
}

#[async_trait]
impl CompactionStrategy for DefaultCompaction {
    async fn compact(
        &self,
        mut messages: Vec<AgentMessage>,
        cx: &CompactionContext<'_>,
    ) -> Result<CompactionOutput, CompactionError> {
        let cfg = cx.config;
        let target = cx.target_tokens;
        let head = head_end(&messages, cfg.keep_first);
        let mut tail = match cfg.keep_recent_tokens {
            Some(tokens) => tail_start_by_tokens(&messages, tokens, head),
            None => tail_start(&messages, cfg.keep_recent, head),
        };
        let manual = cx.reason == CompactionReason::Manual;
        if manual && tail <= head {
            return Err(CompactionError::Failed(
                "Nothing to compact (session too small)".into(),
            ));
        }

        // Level 1: old tool outputs.
        let truncated = truncate_tool_outputs(&mut messages, head..tail, cfg.tool_output_max_chars);
        if estimate(&messages) <= target && !(manual && cfg.summarize && tail > head) {
            return Ok(CompactionOutput {
                messages,
                summary: None,
                usage: None,
                details: json!({"level": 1, "truncatedToolOutputs": truncated}),
            });
        }

        // Level 2: summarize the middle.
        let mut summary: Option<String> = None;
        let mut usage = None;
        let mut summary_error: Option<String> = None;
        if cfg.summarize && tail > head {
            match summarize(&messages[head..tail], cx).await {
                Ok((text, u)) => {
                    summary = Some(text);
                    usage = Some(u);
                }
                Err(CompactionError::Aborted) => return Err(CompactionError::Aborted),
                Err(e) if manual => return Err(e),
                Err(e) => {
                    tracing::warn!(error = %e, "summarizing for compaction failed; dropping messages instead");
                    summary_error = Some(e.to_string());
                }
            }
        }
        let summary_message = |summary: &Option<String>, dropped: usize| {
            let text = match summary {
                Some(s) if dropped == 0 => s.clone(),
                Some(s) => format!(
                    "{s}\n\n({dropped} later messages were also removed to fit the context window.)"
                ),
                None => format!(
                    "({dropped} earlier messages were removed to fit the context window; their content is no longer available.)"
                ),
            };
            AgentMessage::CompactionSummary(CompactionSummaryMessage {
                summary: text,
                tokens_before: cx.tokens_before,
                timestamp: now_ms(),
            })
        };
        // Messages from `head` to `tail` are replaced by one summary message; with
        // a summary, messages past `summarized_until` were dropped unsummarized.
        let summarized_until = tail;
        let build = |messages: &[AgentMessage], tail: usize| {
            let dropped = if summary.is_some() {
                tail - summarized_until
            } else {
                tail - head
            };
            let mut out = Vec::with_capacity(head + 1 + messages.len() - tail);
            out.extend_from_slice(&messages[..head]);
            if tail > head {
                out.push(summary_message(&summary, dropped));
            }
            out.extend_from_slice(&messages[tail..]);
            out
        };
        let mut out = build(&messages, tail);

        // Level 3: drop more of the middle until it fits (the last turn always stays).
        while estimate(&out) > target {
            let Some(next) = (tail + 1..messages.len()).find(|&i| !is_tool_result(&messages[i]))
            else {
                break;
            };
            tail = next;
            out = build(&messages, tail);
        }
        Ok(CompactionOutput {
            messages: out,
            summary,
            usage,
            details: json!({
                "level": if tail > summarized_until { 3 } else { 2 },
                "truncatedToolOutputs": truncated,
                "summaryError": summary_error,
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use makai_ai::{AssistantMessage, ToolCall, ToolResultMessage};

    fn call_turn(id: &str, output: &str) -> Vec<AgentMessage> {
        let mut a = AssistantMessage::default();
        a.content
            .push(makai_ai::AssistantContent::ToolCall(ToolCall::new(
                id,
                "read",
                Default::default(),
            )));
        vec![
            a.into(),
            ToolResultMessage::text(id, "read", output, false).into(),
        ]
    }

    #[test]
    fn tail_never_starts_with_a_tool_result() {
        let mut msgs = vec![AgentMessage::user("go")];
        msgs.extend(call_turn("a", "x"));
        msgs.extend(call_turn("b", "y"));
        let head = head_end(&msgs, 1);
        assert_eq!(head, 1);
        // keep_recent 1 would start at the last tool result: moved back to its call.
        assert_eq!(tail_start(&msgs, 1, head), 3);
    }

    #[test]
    fn a_token_measured_tail_starts_at_a_turn() {
        let mut msgs = vec![AgentMessage::user("x".repeat(4000))];
        msgs.extend(call_turn("a", "y"));
        msgs.push(AgentMessage::user("second"));
        msgs.extend(call_turn("b", "z"));
        // Everything after the first message fits: the tail still starts at the
        // last user message, so the older turn is summarized.
        assert_eq!(tail_start_by_tokens(&msgs, 1_000_000, 0), 3);
        assert_eq!(tail_start_by_tokens(&msgs, 10, 0), 3);
        // No user message after the head: never starts with a tool result.
        assert_eq!(tail_start_by_tokens(&msgs[..3], 5, 0), 1);
    }

    #[test]
    fn truncation_keeps_head_and_tail_on_char_boundaries() {
        let text = "é".repeat(3000);
        let short = truncate_middle(&text, 100).unwrap();
        assert!(short.len() < 300);
        assert!(short.starts_with('é') && short.ends_with('é'));
        assert!(truncate_middle("short", 100).is_none());
    }
}
