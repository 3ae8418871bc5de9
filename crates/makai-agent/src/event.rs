//! [`AgentEvent`]: what a run reports, in the JSON shape of pi's event stream.
//!
//! Serialized with `"type"` in snake_case and camelCase fields, so a stream of
//! these is the same JSON lines pi writes in `--mode json` / RPC mode. Payloads
//! sit behind [`Arc`]s, so cloning an event for every subscriber is cheap.
//!
//! Differences from pi, all additive:
//! - `message_update.message` (the partial assistant message) is present only when
//!   [`crate::AgentLoopConfig::partial_snapshots`] is on (off by default: a snapshot
//!   copies the whole message for every delta). makai-ai's stream events carry no `partial`
//!   snapshot, so the loop rebuilds it with a `MessageAccumulator`.
//! - `agent_end` has an `endReason` saying why the run ended (see [`EndReason`]).
//! - `compaction_end` also carries, in Rust only, the compacted transcript.

use std::sync::Arc;

use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use makai_ai::{AssistantMessageEvent, Message, ToolResultMessage, Usage};

use crate::message::AgentMessage;
use crate::tool::ToolOutput;

/// One event of a run. See the crate docs for the ordering contract.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum AgentEvent {
    /// The run began.
    AgentStart,
    /// The run ended; nothing follows.
    AgentEnd {
        /// Every message the run added to the transcript, in order.
        messages: Arc<Vec<AgentMessage>>,
        /// Why the run ended.
        #[serde(default)]
        end_reason: EndReason,
    },
    /// A turn (one model response plus its tool executions) began.
    TurnStart,
    /// A turn ended.
    TurnEnd {
        /// The assistant message of the turn.
        message: Arc<AgentMessage>,
        /// The results of its tool calls, in call order.
        #[serde(with = "tool_results_json")]
        tool_results: Arc<Vec<ToolResultMessage>>,
    },
    /// A message began: a prompt, an injected message, a tool result, or the
    /// assistant message about to stream.
    MessageStart {
        /// The message (for an assistant message: as it stands, usually empty).
        message: Arc<AgentMessage>,
    },
    /// The streaming assistant message changed.
    MessageUpdate {
        /// The partial assistant message after this event (when snapshots are on).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<Arc<AgentMessage>>,
        /// The provider stream event.
        assistant_message_event: AssistantMessageEvent,
    },
    /// A message is complete and part of the transcript.
    MessageEnd {
        /// The final message.
        message: Arc<AgentMessage>,
    },
    /// A tool call began (or was resolved without running: it still gets an end).
    ToolExecutionStart {
        /// The call id.
        tool_call_id: String,
        /// The tool name the model used.
        tool_name: String,
        /// The arguments the model sent.
        args: Arc<Value>,
    },
    /// A running tool reported progress.
    ToolExecutionUpdate {
        /// The call id.
        tool_call_id: String,
        /// The tool name.
        tool_name: String,
        /// The arguments.
        args: Arc<Value>,
        /// The tool's partial result (accumulated so far, by convention).
        partial_result: Arc<ToolOutput>,
    },
    /// A tool call finished.
    ToolExecutionEnd {
        /// The call id.
        tool_call_id: String,
        /// The tool name.
        tool_name: String,
        /// The result sent to the model.
        result: Arc<ToolOutput>,
        /// True when the result is an error.
        is_error: bool,
        /// How long the tool ran, in milliseconds (monotonic clock); `None`
        /// when it did not run (blocked, skipped, bad arguments).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
    },
    /// The steering or follow-up queue of an [`crate::Agent`] changed.
    QueueUpdate {
        /// Text of each queued steering message.
        steering: Vec<String>,
        /// Text of each queued follow-up message.
        follow_up: Vec<String>,
    },
    /// Compaction began.
    CompactionStart {
        /// Why.
        reason: CompactionReason,
    },
    /// Compaction ended.
    CompactionEnd {
        /// Why it ran.
        reason: CompactionReason,
        /// What it did; `None` when it failed or was aborted.
        result: Option<Box<CompactionInfo>>,
        /// True when it was aborted.
        aborted: bool,
        /// True when the model call that overflowed is retried next.
        will_retry: bool,
        /// Why it failed, when it did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error_message: Option<String>,
        /// The compacted transcript (Rust only; not serialized).
        #[serde(skip)]
        messages: Option<Arc<Vec<AgentMessage>>>,
    },
    /// The provider failed and is retrying; discard the partial assistant message.
    AutoRetryStart {
        /// Retry number (1 for the first retry).
        attempt: u32,
        /// Retries allowed.
        max_attempts: u32,
        /// Wait before the retry, in milliseconds.
        delay_ms: u64,
        /// What went wrong.
        error_message: String,
    },
    /// The model call that was retried ended.
    AutoRetryEnd {
        /// True when it finally succeeded.
        success: bool,
        /// The last retry number.
        attempt: u32,
        /// The final error, when it failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        final_error: Option<String>,
    },
}

impl AgentEvent {
    /// The `type` name as serialized.
    pub fn kind(&self) -> &'static str {
        match self {
            AgentEvent::AgentStart => "agent_start",
            AgentEvent::AgentEnd { .. } => "agent_end",
            AgentEvent::TurnStart => "turn_start",
            AgentEvent::TurnEnd { .. } => "turn_end",
            AgentEvent::MessageStart { .. } => "message_start",
            AgentEvent::MessageUpdate { .. } => "message_update",
            AgentEvent::MessageEnd { .. } => "message_end",
            AgentEvent::ToolExecutionStart { .. } => "tool_execution_start",
            AgentEvent::ToolExecutionUpdate { .. } => "tool_execution_update",
            AgentEvent::ToolExecutionEnd { .. } => "tool_execution_end",
            AgentEvent::QueueUpdate { .. } => "queue_update",
            AgentEvent::CompactionStart { .. } => "compaction_start",
            AgentEvent::CompactionEnd { .. } => "compaction_end",
            AgentEvent::AutoRetryStart { .. } => "auto_retry_start",
            AgentEvent::AutoRetryEnd { .. } => "auto_retry_end",
        }
    }

    /// The text delta, for a `message_update` carrying a `text_delta`.
    pub fn text_delta(&self) -> Option<&str> {
        match self {
            AgentEvent::MessageUpdate {
                assistant_message_event: AssistantMessageEvent::TextDelta { delta, .. },
                ..
            } => Some(delta),
            _ => None,
        }
    }
}

/// Why a run ended.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum EndReason {
    /// The model answered without tool calls and no queued message was left.
    #[default]
    Completed,
    /// The model call failed.
    Error {
        /// The provider's error message.
        message: String,
    },
    /// The run was aborted.
    Aborted,
    /// The turn limit was reached.
    MaxTurns {
        /// The limit.
        limit: u32,
    },
    /// The token limit was reached.
    MaxTotalTokens {
        /// The limit.
        limit: u64,
        /// Tokens used by the run.
        used: u64,
    },
    /// The wall-time limit was reached.
    MaxWallTime {
        /// The limit in milliseconds.
        limit_ms: u64,
    },
    /// The same tool call was repeated too often.
    LoopDetected {
        /// The tool.
        tool_name: String,
        /// How many identical calls in a row were seen.
        repeats: u32,
    },
    /// The budget refused the next model call before it was sent (see
    /// [`crate::budget`]); raise the cap and continue.
    BudgetExhausted {
        /// What was spent and what the next request could cost.
        message: String,
    },
    /// The `before_turn` hook stopped the run.
    StoppedByHook {
        /// The hook's reason.
        reason: String,
    },
    /// The input filter rejected the prompt.
    InputRejected {
        /// The filter's reason.
        reason: String,
    },
    /// A hook panicked where the run cannot go on without it (see
    /// [`crate::AgentHooks`] for which hooks end the run).
    HookPanicked {
        /// The hook, e.g. `transform_context`.
        hook: String,
        /// The panic message.
        message: String,
    },
}

impl EndReason {
    /// True when the run finished normally.
    pub fn is_completed(&self) -> bool {
        matches!(self, EndReason::Completed)
    }

    /// A sentence saying why the run ended.
    pub fn describe(&self) -> String {
        match self {
            EndReason::Completed => "the run completed".into(),
            EndReason::Error { message } => format!("the model call failed: {message}"),
            EndReason::Aborted => "the run was aborted".into(),
            EndReason::MaxTurns { limit } => format!(
                "the run stopped after {limit} turns (max_turns limit); raise the limit or continue the run"
            ),
            EndReason::MaxTotalTokens { limit, used } => format!(
                "the run stopped after using {used} tokens (max_total_tokens limit of {limit}); raise the limit or continue the run"
            ),
            EndReason::MaxWallTime { limit_ms } => format!(
                "the run stopped after {:.1} s (max_wall_time limit); raise the limit or continue the run",
                *limit_ms as f64 / 1000.0
            ),
            EndReason::LoopDetected { tool_name, repeats } => format!(
                "the run stopped because tool '{tool_name}' was called {repeats} times in a row with the same arguments (loop detection)"
            ),
            EndReason::BudgetExhausted { message } => message.clone(),
            EndReason::StoppedByHook { reason } => {
                format!("the before_turn hook stopped the run: {reason}")
            }
            EndReason::InputRejected { reason } => {
                format!("the input filter rejected the message: {reason}")
            }
            EndReason::HookPanicked { hook, message } => format!(
                "the {hook} hook panicked ({message}), so the run was ended; fix the hook, then prompt or continue again"
            ),
        }
    }
}

/// Why compaction ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CompactionReason {
    /// Requested by the application.
    Manual,
    /// The context estimate passed the budget.
    Threshold,
    /// The provider said the context overflowed.
    Overflow,
}

/// What a compaction did (pi's `compaction_end.result`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionInfo {
    /// The summary written, if any.
    #[serde(default)]
    pub summary: String,
    /// Estimated context tokens before.
    pub tokens_before: u64,
    /// Estimated context tokens after.
    pub estimated_tokens_after: u64,
    /// Usage of the model calls made to summarize.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Strategy-specific data.
    #[serde(default)]
    pub details: Value,
    /// The first session entry kept after the summary (pi's
    /// `CompactionResult.firstKeptEntryId`). The agent has no entries and
    /// leaves it `None`; an application that stores the transcript as entries
    /// fills it in when it records the compaction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_kept_entry_id: Option<String>,
}

/// Where the loop is, for the agent's status (crate-internal).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RunPhase {
    Streaming,
    ExecutingTools,
    Compacting,
}

/// Receives the events of a run, in order, from the loop task and tool tasks.
pub(crate) trait EventSink: Send + Sync {
    /// Delivers one event. Must not block.
    fn emit(&self, event: AgentEvent);
    /// The loop entered a phase.
    fn phase(&self, _phase: RunPhase) {}
}

/// `toolResults` as pi writes them: tool result messages with `role: "toolResult"`.
mod tool_results_json {
    use super::*;
    use serde::Deserializer;
    use serde::ser::SerializeSeq;

    #[derive(Serialize)]
    struct Tagged<'a> {
        role: &'static str,
        #[serde(flatten)]
        inner: &'a ToolResultMessage,
    }

    pub fn serialize<S: Serializer>(
        results: &Arc<Vec<ToolResultMessage>>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(results.len()))?;
        for r in results.iter() {
            seq.serialize_element(&Tagged {
                role: "toolResult",
                inner: r,
            })?;
        }
        seq.end()
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Arc<Vec<ToolResultMessage>>, D::Error> {
        let messages = Vec::<Message>::deserialize(d)?;
        let mut out = Vec::with_capacity(messages.len());
        for m in messages {
            match m {
                Message::ToolResult(r) => out.push(r),
                other => {
                    return Err(serde::de::Error::custom(format!(
                        "toolResults may hold only toolResult messages, found role '{}'",
                        other.role()
                    )));
                }
            }
        }
        Ok(Arc::new(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use makai_ai::UserContent;
    use serde_json::json;

    #[test]
    fn tool_events_use_pi_field_names() {
        let e = AgentEvent::ToolExecutionEnd {
            tool_call_id: "c1".into(),
            tool_name: "bash".into(),
            result: Arc::new(ToolOutput {
                content: vec![UserContent::text("ok")],
                details: json!({"x": 1}),
                usage: None,
                nested_calls: None,
            }),
            is_error: false,
            duration_ms: Some(12),
        };
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            json!({"type": "tool_execution_end", "toolCallId": "c1", "toolName": "bash",
                "result": {"content": [{"type": "text", "text": "ok"}], "details": {"x": 1}},
                "isError": false, "durationMs": 12})
        );
    }

    #[test]
    fn turn_end_tool_results_carry_their_role() {
        let e = AgentEvent::TurnEnd {
            message: Arc::new(AgentMessage::user("x")),
            tool_results: Arc::new(vec![ToolResultMessage::text("c", "t", "r", false)]),
        };
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["type"], "turn_end");
        assert_eq!(v["toolResults"][0]["role"], "toolResult");
        assert_eq!(v["toolResults"][0]["toolCallId"], "c");
        let back: AgentEvent = serde_json::from_value(v).unwrap();
        let AgentEvent::TurnEnd { tool_results, .. } = back else {
            panic!()
        };
        assert_eq!(tool_results[0].tool_call_id, "c");
    }

    #[test]
    fn message_update_without_snapshot_is_pi_delta_form() {
        let e = AgentEvent::MessageUpdate {
            message: None,
            assistant_message_event: AssistantMessageEvent::TextDelta {
                content_index: 0,
                delta: "Hi".into(),
            },
        };
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            json!({"type": "message_update",
                "assistantMessageEvent": {"type": "text_delta", "contentIndex": 0, "delta": "Hi"}})
        );
        assert_eq!(e.text_delta(), Some("Hi"));
    }

    #[test]
    fn queue_compaction_and_retry_events_match_rpc_docs() {
        let q = AgentEvent::QueueUpdate {
            steering: vec!["a".into()],
            follow_up: vec![],
        };
        assert_eq!(
            serde_json::to_value(&q).unwrap(),
            json!({"type": "queue_update", "steering": ["a"], "followUp": []})
        );
        let c = AgentEvent::CompactionStart {
            reason: CompactionReason::Overflow,
        };
        assert_eq!(
            serde_json::to_value(&c).unwrap(),
            json!({"type": "compaction_start", "reason": "overflow"})
        );
        let end = AgentEvent::CompactionEnd {
            reason: CompactionReason::Threshold,
            result: None,
            aborted: false,
            will_retry: false,
            error_message: Some("x".into()),
            messages: None,
        };
        assert_eq!(
            serde_json::to_value(&end).unwrap(),
            json!({"type": "compaction_end", "reason": "threshold", "result": null,
                "aborted": false, "willRetry": false, "errorMessage": "x"})
        );
        let r = AgentEvent::AutoRetryStart {
            attempt: 1,
            max_attempts: 3,
            delay_ms: 2000,
            error_message: "529".into(),
        };
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"type": "auto_retry_start", "attempt": 1, "maxAttempts": 3, "delayMs": 2000, "errorMessage": "529"})
        );
    }

    #[test]
    fn events_are_small_enough_to_queue_cheaply() {
        // A `message_update` carries its provider event inline (no allocation
        // per delta), so provider events must stay small too.
        assert!(std::mem::size_of::<AssistantMessageEvent>() <= 64);
        assert!(std::mem::size_of::<AgentEvent>() <= 80);
    }

    #[test]
    fn agent_end_states_its_reason() {
        let e = AgentEvent::AgentEnd {
            messages: Arc::new(vec![]),
            end_reason: EndReason::MaxTurns { limit: 3 },
        };
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            json!({"type": "agent_end", "messages": [], "endReason": {"type": "maxTurns", "limit": 3}})
        );
        assert!(
            EndReason::MaxTurns { limit: 3 }
                .describe()
                .contains("3 turns")
        );
    }
}
