//! What JSON and RPC mode write besides responses: the agent's events in pi's
//! wire shape ([`JsonEvent`]) and the session-level events
//! ([`SessionEvent`]) of `docs/json.md` and `docs/rpc-extension-ui.md`.

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::Value;

use makai_agent::{AgentEvent, AgentMessage};
use makai_ai::{AssistantMessageEvent, ThinkingLevel, Usage};
use makai_coding::session::SessionEntry;

/// A dialog or notice for the client (pi's `extension_ui_request`). makai has
/// no extensions; it asks the user this way in RPC mode (tool approvals).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtensionUiRequest {
    /// Unique id; a dialog's `extension_ui_response` repeats it.
    pub id: String,
    /// `select`, `confirm`, `input`, `editor` (dialogs) or `notify`.
    pub method: String,
    /// The dialog's title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The question or notice text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The choices of a `select`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<String>>,
    /// Milliseconds after which makai answers the dialog itself (denies).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
    /// `info`, `warning` or `error`, for `notify`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notify_type: Option<String>,
}

/// An event of the session rather than of one agent run.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum SessionEvent {
    /// Output of a running RPC `bash` command.
    BashExecutionUpdate {
        /// The `bash` command's id, when it had one.
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<Value>,
        /// The new output.
        delta: String,
    },
    /// Nothing more will run on its own (no retry, no queued message).
    AgentSettled {
        /// True when the run ended because it was aborted.
        aborted: bool,
    },
    /// The session's display name changed (`None`: cleared).
    SessionInfoChanged {
        /// The new name.
        #[serde(skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    /// The thinking level changed.
    ThinkingLevelChanged {
        /// The new level.
        level: ThinkingLevel,
    },
    /// A custom entry was appended to the session (an approval decision...).
    EntryAppended {
        /// The entry.
        entry: Box<SessionEntry>,
    },
    /// A dialog or notice for the client.
    ExtensionUiRequest(Box<ExtensionUiRequest>),
    /// makai: the budget refused a model call before it was sent (a run,
    /// a compaction, a title or a sub-agent's); raise the cap to go on.
    BudgetExhausted {
        /// What was spent and what the refused request could have cost.
        message: String,
        /// The ledger's figures at that moment.
        budget: makai_agent::LedgerReport,
    },
    /// makai serve only: this subscriber fell too far behind and its
    /// subscription ends here (subscribe again and read the state to catch up).
    SubscriptionOverflow {
        /// What happened and what to do.
        message: String,
    },
}

impl SessionEvent {
    /// The event's `type`.
    pub fn kind(&self) -> &'static str {
        match self {
            SessionEvent::BashExecutionUpdate { .. } => "bash_execution_update",
            SessionEvent::AgentSettled { .. } => "agent_settled",
            SessionEvent::SessionInfoChanged { .. } => "session_info_changed",
            SessionEvent::ThinkingLevelChanged { .. } => "thinking_level_changed",
            SessionEvent::EntryAppended { .. } => "entry_appended",
            SessionEvent::ExtensionUiRequest(_) => "extension_ui_request",
            SessionEvent::BudgetExhausted { .. } => "budget_exhausted",
            SessionEvent::SubscriptionOverflow { .. } => "subscription_overflow",
        }
    }
}

/// An agent event as JSON and RPC mode write it (pi's `JsonAgentSessionEvent`):
/// `message_update` carries the cumulative `usage` and the delta only (no
/// partial snapshot), `toolcall_start` names the tool as `toolName`,
/// `agent_end` carries `willRetry` (always false: makai retries inside a run).
/// Every other event is the agent's own JSON.
///
/// makai reports usage when a response ends, so the `usage` of a
/// `message_update` is the partial snapshot's when snapshots are on, else
/// zero until `message_end` (pi documents that it "can remain zero until
/// completion").
#[derive(Clone, Copy, Debug)]
pub struct JsonEvent<'a>(pub &'a AgentEvent);

impl Serialize for JsonEvent<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            AgentEvent::MessageUpdate {
                message,
                assistant_message_event,
                ..
            } => {
                let zero = Usage::default();
                let usage = message
                    .as_deref()
                    .and_then(AgentMessage::as_assistant)
                    .map_or(&zero, |a| &a.usage);
                let mut map = s.serialize_map(Some(3))?;
                map.serialize_entry("type", "message_update")?;
                map.serialize_entry("usage", usage)?;
                map.serialize_entry(
                    "assistantMessageEvent",
                    &JsonAssistantEvent(assistant_message_event),
                )?;
                map.end()
            }
            AgentEvent::AgentEnd {
                messages,
                end_reason,
                ..
            } => {
                let mut map = s.serialize_map(Some(4))?;
                map.serialize_entry("type", "agent_end")?;
                map.serialize_entry("messages", messages)?;
                map.serialize_entry("endReason", end_reason)?;
                map.serialize_entry("willRetry", &false)?;
                map.end()
            }
            other => other.serialize(s),
        }
    }
}

/// A provider event inside `message_update`.
struct JsonAssistantEvent<'a>(&'a AssistantMessageEvent);

impl Serialize for JsonAssistantEvent<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            AssistantMessageEvent::ToolcallStart {
                content_index,
                id,
                name,
            } => {
                let mut map = s.serialize_map(Some(5))?;
                map.serialize_entry("type", "toolcall_start")?;
                map.serialize_entry("contentIndex", content_index)?;
                map.serialize_entry("id", id)?;
                map.serialize_entry("toolName", name)?;
                // makai's own field, kept for clients written against it.
                map.serialize_entry("name", name)?;
                map.end()
            }
            other => other.serialize(s),
        }
    }
}

/// Everything JSON and RPC mode write that is not a response.
#[derive(Clone, Copy, Debug)]
pub enum EventRecord<'a> {
    /// An agent event.
    Agent(&'a AgentEvent),
    /// A session event.
    Session(&'a SessionEvent),
}

impl Serialize for EventRecord<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            EventRecord::Agent(e) => JsonEvent(e).serialize(s),
            EventRecord::Session(e) => e.serialize(s),
        }
    }
}

impl EventRecord<'_> {
    /// The record as one JSON line (without the newline). Never fails: an
    /// event that cannot be encoded becomes an `error` record saying so.
    pub fn to_json_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| {
            format!(
                "{{\"type\":\"error\",\"message\":{}}}",
                Value::String(format!("an event could not be encoded: {e}"))
            )
        })
    }
}
