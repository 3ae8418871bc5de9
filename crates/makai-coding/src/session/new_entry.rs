//! Entries to append: content without the tree links, which
//! [`super::Session`] fills in.

use makai_ai::Usage;
use serde_json::Value;

use super::context_edit::{ContentReplacement, ContextEditEntry};
use super::entry::{
    BranchSummaryEntry, CompactionEntry, CustomEntry, CustomMessageEntry, LabelEntry, MessageEntry,
    ModelChangeEntry, SessionEntry, SessionInfoEntry, ThinkingLevelChangeEntry, UsageEntry,
};
use makai_agent::{AgentMessage, MessageContent};

/// Entry content without the tree links; [`crate::session::Session`] adds
/// `id`, `parentId` and `timestamp` when it appends one.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum NewEntry {
    /// A conversation message.
    Message(AgentMessage),
    /// A model switch.
    ModelChange {
        /// Provider name.
        provider: String,
        /// Model id.
        model_id: String,
    },
    /// A thinking-level change (`off` ... `xhigh`).
    ThinkingLevelChange(String),
    /// A compaction.
    Compaction(CompactionRecord),
    /// A branch summary; its parent is the entry the new branch starts from.
    BranchSummary {
        /// The leaf of the branch that was left.
        from_id: String,
        /// The summary.
        summary: String,
        /// Usage of the summarising call.
        usage: Option<Usage>,
        /// Implementation data.
        details: Option<Value>,
    },
    /// Extension state.
    Custom {
        /// Extension name.
        custom_type: String,
        /// Its data.
        data: Option<Value>,
    },
    /// An extension message in the model's context.
    CustomMessage {
        /// Extension name.
        custom_type: String,
        /// Text or parts.
        content: MessageContent,
        /// Whether UIs show it.
        display: bool,
        /// Extension data.
        details: Option<Value>,
    },
    /// Sets (`Some`) or clears (`None`) the label of an entry.
    Label {
        /// The labelled entry.
        target_id: String,
        /// The label.
        label: Option<String>,
    },
    /// Sets (non-empty) or clears (empty) the session's display name.
    SessionInfo {
        /// The name.
        name: String,
    },
    /// Model usage outside assistant messages (e.g. cache warming).
    Usage {
        /// What it was for (`cache_warm`, ...).
        kind: String,
        /// Provider name.
        provider: String,
        /// Model id.
        model: String,
        /// Tokens and cost.
        usage: Usage,
    },
    /// Omits (`None`) or replaces the content of one earlier message in
    /// future model context.
    ContextEdit {
        /// The edited entry.
        target_id: String,
        /// The new content; `None` omits the message.
        replacement: Option<ContentReplacement>,
    },
}

/// What the agent layer's compaction reports; becomes a `compaction` entry.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CompactionRecord {
    /// The summary of the compacted history.
    pub summary: String,
    /// The first entry kept verbatim (see [`crate::session::SessionContext::entry_ids`]);
    /// `None` keeps nothing (pi's retain-none compaction: the entry names itself).
    pub first_kept_entry_id: Option<String>,
    /// Context tokens before compaction.
    pub tokens_before: u64,
    /// Context tokens after compaction.
    pub tokens_after: Option<u64>,
    /// Usage of the summarising call.
    pub usage: Option<Usage>,
    /// Implementation data (e.g. files read and modified).
    pub details: Option<Value>,
    /// Messages kept from the start of the conversation, before the summary
    /// (makai extension, see [`crate::session::CompactionEntry::retained_head`]).
    pub retained_head: Option<Vec<AgentMessage>>,
    /// The system prompt and tool checkpoint at the boundary (pi 1.x, a
    /// `role: "system"` message).
    pub system_message: Option<Box<AgentMessage>>,
}

impl NewEntry {
    /// Builds the stored entry with its links and an ISO timestamp.
    pub(crate) fn into_entry(
        self,
        id: String,
        parent_id: Option<String>,
        timestamp: String,
    ) -> SessionEntry {
        match self {
            NewEntry::Message(message) => SessionEntry::Message(MessageEntry {
                id,
                parent_id,
                timestamp,
                message,
            }),
            NewEntry::ModelChange { provider, model_id } => {
                SessionEntry::ModelChange(ModelChangeEntry {
                    id,
                    parent_id,
                    timestamp,
                    provider,
                    model_id,
                })
            }
            NewEntry::ThinkingLevelChange(thinking_level) => {
                SessionEntry::ThinkingLevelChange(ThinkingLevelChangeEntry {
                    id,
                    parent_id,
                    timestamp,
                    thinking_level,
                })
            }
            NewEntry::Compaction(c) => SessionEntry::Compaction(CompactionEntry {
                first_kept_entry_id: Some(c.first_kept_entry_id.unwrap_or_else(|| id.clone())),
                id,
                parent_id,
                timestamp,
                summary: c.summary,
                tokens_before: c.tokens_before,
                tokens_after: c.tokens_after,
                usage: c.usage,
                retained_tail: None,
                retained_head: c.retained_head,
                details: c.details,
                from_hook: None,
                system_message: c.system_message,
            }),
            NewEntry::BranchSummary {
                from_id,
                summary,
                usage,
                details,
            } => SessionEntry::BranchSummary(BranchSummaryEntry {
                id,
                parent_id,
                timestamp,
                from_id,
                summary,
                usage,
                details,
                from_hook: None,
            }),
            NewEntry::Custom { custom_type, data } => SessionEntry::Custom(CustomEntry {
                id,
                parent_id,
                timestamp,
                custom_type,
                data,
            }),
            NewEntry::CustomMessage {
                custom_type,
                content,
                display,
                details,
            } => SessionEntry::CustomMessage(CustomMessageEntry {
                id,
                parent_id,
                timestamp,
                custom_type,
                content,
                details,
                display,
            }),
            NewEntry::Label { target_id, label } => SessionEntry::Label(LabelEntry {
                id,
                parent_id,
                timestamp,
                target_id,
                label,
            }),
            NewEntry::SessionInfo { name } => SessionEntry::SessionInfo(SessionInfoEntry {
                id,
                parent_id,
                timestamp,
                name: Some(name.trim().to_string()),
            }),
            NewEntry::Usage {
                kind,
                provider,
                model,
                usage,
            } => SessionEntry::Usage(UsageEntry {
                id,
                parent_id,
                timestamp,
                kind,
                provider,
                model,
                usage,
            }),
            NewEntry::ContextEdit {
                target_id,
                replacement,
            } => SessionEntry::ContextEdit(ContextEditEntry {
                id,
                parent_id,
                timestamp,
                target_id,
                replacement,
            }),
        }
    }
}
