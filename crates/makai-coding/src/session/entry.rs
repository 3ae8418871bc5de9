//! Session file lines: the header and the tree entries, in pi's JSONL format
//! (format version 3, `packages/coding-agent/docs/session-format.md`).
//!
//! Every entry has `type`, `id` (8 hex characters), `parentId` (`null` for a
//! root) and `timestamp` (ISO 8601 with milliseconds, UTC). Field names are
//! pi's, camelCase. An entry whose `type` this version does not know is kept
//! verbatim as [`SessionEntry::Unknown`], so newer files still load.

use makai_ai::Usage;
use serde::de::{MapAccess, value::MapAccessDeserializer};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use makai_agent::{AgentMessage, MessageContent};
use makai_ai::tagged::{TagDispatch, deserialize_tagged, rest_with_tag};

use super::context_edit::ContextEditEntry;

/// The format version this crate writes.
pub const SESSION_VERSION: u32 = 3;

/// The first line of a session file. Not part of the tree.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionHeader {
    /// Always `"session"`.
    #[serde(rename = "type")]
    pub kind: HeaderTag,
    /// Format version (absent in version 1 files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
    /// The session id (a UUID).
    pub id: String,
    /// When the session was created (ISO 8601).
    pub timestamp: String,
    /// The working directory the session belongs to.
    #[serde(default)]
    pub cwd: String,
    /// The session file this one was forked from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session: Option<String>,
}

/// The `type` tag of a header line; only `"session"` is accepted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeaderTag;

impl Serialize for HeaderTag {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str("session")
    }
}

impl<'de> Deserialize<'de> for HeaderTag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if s == "session" {
            Ok(HeaderTag)
        } else {
            Err(serde::de::Error::custom(format!(
                "expected a header line with type \"session\", found type \"{s}\""
            )))
        }
    }
}

impl SessionHeader {
    /// A version-3 header stamped now.
    pub fn new(id: impl Into<String>, cwd: impl Into<String>) -> Self {
        SessionHeader {
            kind: HeaderTag,
            version: Some(SESSION_VERSION),
            id: id.into(),
            timestamp: now_iso(),
            cwd: cwd.into(),
            parent_session: None,
        }
    }
}

/// The current time as pi writes it: `2024-12-03T14:00:00.000Z`.
pub fn now_iso() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// A conversation message (`type: "message"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageEntry {
    /// Entry id.
    pub id: String,
    /// Parent entry id; `None` for a root.
    pub parent_id: Option<String>,
    /// When it was appended (ISO 8601).
    pub timestamp: String,
    /// The message.
    pub message: AgentMessage,
}

/// The user switched models (`type: "model_change"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelChangeEntry {
    /// Entry id.
    pub id: String,
    /// Parent entry id.
    pub parent_id: Option<String>,
    /// When (ISO 8601).
    pub timestamp: String,
    /// Provider name.
    pub provider: String,
    /// Model id.
    pub model_id: String,
}

/// The user changed the thinking level (`type: "thinking_level_change"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThinkingLevelChangeEntry {
    /// Entry id.
    pub id: String,
    /// Parent entry id.
    pub parent_id: Option<String>,
    /// When (ISO 8601).
    pub timestamp: String,
    /// `off`, `minimal`, `low`, `medium`, `high` or `xhigh`.
    pub thinking_level: String,
}

/// Earlier history was summarised (`type: "compaction"`).
///
/// The model's context at a leaf below this entry is: the system checkpoint
/// (`systemMessage`, when present), the summary, then the non-system entries
/// from `firstKeptEntryId` up to this entry, then the entries after it (or,
/// when `retainedTail` is present, the summary, the retained messages and the
/// entries after it). A retain-none compaction names itself as
/// `firstKeptEntryId`, so nothing before it is kept.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionEntry {
    /// Entry id.
    pub id: String,
    /// Parent entry id.
    pub parent_id: Option<String>,
    /// When (ISO 8601).
    pub timestamp: String,
    /// The summary of what was compacted.
    pub summary: String,
    /// The first entry kept verbatim after the summary; this entry's own id
    /// for a retain-none compaction. Required by pi; absent only in files
    /// written by old makai versions (read as retain-none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_kept_entry_id: Option<String>,
    /// Context size before compaction.
    #[serde(default)]
    pub tokens_before: u64,
    /// Context size after compaction (a makai extension; pi ignores it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_after: Option<u64>,
    /// Usage of the model call that wrote the summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Newer pi: the messages kept after the summary, stored on the entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retained_tail: Option<Vec<AgentMessage>>,
    /// makai extension (pi is silent here): messages the compaction kept from the
    /// start of the conversation, placed before the summary when the context is
    /// rebuilt, so a resumed session sees exactly what the agent saw. pi ignores it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retained_head: Option<Vec<AgentMessage>>,
    /// Implementation data (e.g. files read and modified).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// True when an extension wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_hook: Option<bool>,
    /// pi 1.x: the system prompt and tool checkpoint at the compaction boundary
    /// (a `role: "system"` message); it leads the compacted context and system
    /// messages among the kept entries are dropped in its favour.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_message: Option<Box<AgentMessage>>,
}

impl CompactionEntry {
    /// True when the compaction keeps no entry from before it (pi's
    /// retain-none compaction: `firstKeptEntryId` is the entry's own id).
    pub fn retains_none(&self) -> bool {
        self.first_kept_entry_id
            .as_deref()
            .is_none_or(|first| first == self.id)
    }
}

/// Model usage that is not an assistant message, such as cache warming
/// (`type: "usage"`). Counted in session totals, never part of the context.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageEntry {
    /// Entry id.
    pub id: String,
    /// Parent entry id.
    pub parent_id: Option<String>,
    /// When (ISO 8601).
    pub timestamp: String,
    /// What the usage was for (`cache_warm`, ...); any value is normal usage.
    pub kind: String,
    /// Provider name.
    pub provider: String,
    /// Model id.
    pub model: String,
    /// Tokens and cost.
    pub usage: Usage,
}

/// The summary of a branch the user left (`type: "branch_summary"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BranchSummaryEntry {
    /// Entry id.
    pub id: String,
    /// Parent entry id (the entry the new branch starts from).
    pub parent_id: Option<String>,
    /// When (ISO 8601).
    pub timestamp: String,
    /// The leaf of the branch that was left (`"root"` when branching from before the first entry).
    pub from_id: String,
    /// The summary.
    pub summary: String,
    /// Usage of the model call that wrote the summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Implementation data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// True when an extension wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_hook: Option<bool>,
}

/// Extension state, not part of the model's context (`type: "custom"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomEntry {
    /// Entry id.
    pub id: String,
    /// Parent entry id.
    pub parent_id: Option<String>,
    /// When (ISO 8601).
    pub timestamp: String,
    /// Which extension wrote it.
    pub custom_type: String,
    /// The extension's data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// An extension message that is part of the model's context (`type: "custom_message"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomMessageEntry {
    /// Entry id.
    pub id: String,
    /// Parent entry id.
    pub parent_id: Option<String>,
    /// When (ISO 8601).
    pub timestamp: String,
    /// Which extension wrote it.
    pub custom_type: String,
    /// Text or parts, sent to the model as user content.
    pub content: MessageContent,
    /// Extension data, never sent to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// Whether UIs show it.
    #[serde(default)]
    pub display: bool,
}

/// A bookmark on an entry (`type: "label"`); no label clears it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelEntry {
    /// Entry id.
    pub id: String,
    /// Parent entry id.
    pub parent_id: Option<String>,
    /// When (ISO 8601).
    pub timestamp: String,
    /// The labelled entry.
    pub target_id: String,
    /// The label; `None` clears it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

/// Session metadata such as its display name (`type: "session_info"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfoEntry {
    /// Entry id.
    pub id: String,
    /// Parent entry id.
    pub parent_id: Option<String>,
    /// When (ISO 8601).
    pub timestamp: String,
    /// The display name; empty or absent clears it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// An entry of a type this version does not know, kept verbatim.
#[derive(Clone, Debug, PartialEq)]
pub struct UnknownEntry {
    /// Its `type`.
    pub kind: String,
    /// Its `id`.
    pub id: String,
    /// Its `parentId`.
    pub parent_id: Option<String>,
    /// Its `timestamp` (empty when absent).
    pub timestamp: String,
    /// The whole JSON object.
    pub raw: Map<String, Value>,
}

impl UnknownEntry {
    /// Reads the base fields out of a JSON object; `None` when `type` or `id` is missing.
    pub fn from_object(raw: Map<String, Value>) -> Option<Self> {
        let kind = raw.get("type")?.as_str()?.to_string();
        let id = raw.get("id")?.as_str()?.to_string();
        let parent_id = raw
            .get("parentId")
            .and_then(Value::as_str)
            .map(str::to_string);
        let timestamp = raw
            .get("timestamp")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        Some(UnknownEntry {
            kind,
            id,
            parent_id,
            timestamp,
            raw,
        })
    }
}

impl Serialize for UnknownEntry {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.raw.serialize(s)
    }
}

impl<'de> Deserialize<'de> for UnknownEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Map::deserialize(d)?;
        UnknownEntry::from_object(raw).ok_or_else(|| {
            serde::de::Error::custom("entry needs string \"type\" and \"id\" fields")
        })
    }
}

/// One tree entry of a session file.
///
/// Reading an entry of a known type whose fields do not fit is an error;
/// an entry of an unknown type becomes [`SessionEntry::Unknown`].
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum SessionEntry {
    /// `message`
    Message(MessageEntry),
    /// `thinking_level_change`
    ThinkingLevelChange(ThinkingLevelChangeEntry),
    /// `model_change`
    ModelChange(ModelChangeEntry),
    /// `compaction`
    Compaction(CompactionEntry),
    /// `branch_summary`
    BranchSummary(BranchSummaryEntry),
    /// `custom`
    Custom(CustomEntry),
    /// `custom_message`
    CustomMessage(CustomMessageEntry),
    /// `label`
    Label(LabelEntry),
    /// `session_info`
    SessionInfo(SessionInfoEntry),
    /// `usage`
    Usage(UsageEntry),
    /// `context_edit`
    ContextEdit(ContextEditEntry),
    /// Any other type, kept verbatim.
    #[serde(untagged)]
    Unknown(UnknownEntry),
}

/// The known entry types, for objects whose `type` is not the first key.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum KnownEntry {
    Message(MessageEntry),
    ThinkingLevelChange(ThinkingLevelChangeEntry),
    ModelChange(ModelChangeEntry),
    Compaction(CompactionEntry),
    BranchSummary(BranchSummaryEntry),
    Custom(CustomEntry),
    CustomMessage(CustomMessageEntry),
    Label(LabelEntry),
    SessionInfo(SessionInfoEntry),
    Usage(UsageEntry),
    ContextEdit(ContextEditEntry),
}

impl From<KnownEntry> for SessionEntry {
    fn from(k: KnownEntry) -> Self {
        match k {
            KnownEntry::Message(e) => SessionEntry::Message(e),
            KnownEntry::ThinkingLevelChange(e) => SessionEntry::ThinkingLevelChange(e),
            KnownEntry::ModelChange(e) => SessionEntry::ModelChange(e),
            KnownEntry::Compaction(e) => SessionEntry::Compaction(e),
            KnownEntry::BranchSummary(e) => SessionEntry::BranchSummary(e),
            KnownEntry::Custom(e) => SessionEntry::Custom(e),
            KnownEntry::CustomMessage(e) => SessionEntry::CustomMessage(e),
            KnownEntry::Label(e) => SessionEntry::Label(e),
            KnownEntry::SessionInfo(e) => SessionEntry::SessionInfo(e),
            KnownEntry::Usage(e) => SessionEntry::Usage(e),
            KnownEntry::ContextEdit(e) => SessionEntry::ContextEdit(e),
        }
    }
}

impl TagDispatch for SessionEntry {
    const TAG: &'static str = "type";
    const EXPECTING: &'static str = "a session entry object";

    fn from_rest<'de, M: MapAccess<'de>>(tag: &str, rest: M) -> Result<Self, M::Error> {
        Ok(match tag {
            "message" => {
                SessionEntry::Message(MessageEntry::deserialize(MapAccessDeserializer::new(rest))?)
            }
            "thinking_level_change" => SessionEntry::ThinkingLevelChange(
                ThinkingLevelChangeEntry::deserialize(MapAccessDeserializer::new(rest))?,
            ),
            "model_change" => SessionEntry::ModelChange(ModelChangeEntry::deserialize(
                MapAccessDeserializer::new(rest),
            )?),
            "compaction" => SessionEntry::Compaction(CompactionEntry::deserialize(
                MapAccessDeserializer::new(rest),
            )?),
            "branch_summary" => SessionEntry::BranchSummary(BranchSummaryEntry::deserialize(
                MapAccessDeserializer::new(rest),
            )?),
            "custom" => {
                SessionEntry::Custom(CustomEntry::deserialize(MapAccessDeserializer::new(rest))?)
            }
            "custom_message" => SessionEntry::CustomMessage(CustomMessageEntry::deserialize(
                MapAccessDeserializer::new(rest),
            )?),
            "label" => {
                SessionEntry::Label(LabelEntry::deserialize(MapAccessDeserializer::new(rest))?)
            }
            "session_info" => SessionEntry::SessionInfo(SessionInfoEntry::deserialize(
                MapAccessDeserializer::new(rest),
            )?),
            "usage" => {
                SessionEntry::Usage(UsageEntry::deserialize(MapAccessDeserializer::new(rest))?)
            }
            "context_edit" => SessionEntry::ContextEdit(ContextEditEntry::deserialize(
                MapAccessDeserializer::new(rest),
            )?),
            other => {
                let raw = rest_with_tag("type", other, rest)?;
                SessionEntry::Unknown(UnknownEntry::from_object(raw).ok_or_else(|| {
                    <M::Error as serde::de::Error>::custom(
                        "entry needs string \"type\" and \"id\" fields",
                    )
                })?)
            }
        })
    }

    fn from_object<E: serde::de::Error>(object: Map<String, Value>) -> Result<Self, E> {
        let kind = object
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if KNOWN_ENTRY_TYPES.contains(&kind) {
            serde_json::from_value::<KnownEntry>(Value::Object(object))
                .map(SessionEntry::from)
                .map_err(E::custom)
        } else {
            UnknownEntry::from_object(object)
                .map(SessionEntry::Unknown)
                .ok_or_else(|| E::custom("entry needs string \"type\" and \"id\" fields"))
        }
    }
}

impl<'de> Deserialize<'de> for SessionEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_tagged(d)
    }
}

/// The `type` names of the entries this version understands.
pub const KNOWN_ENTRY_TYPES: [&str; 11] = [
    "message",
    "thinking_level_change",
    "model_change",
    "compaction",
    "branch_summary",
    "custom",
    "custom_message",
    "label",
    "session_info",
    "usage",
    "context_edit",
];

macro_rules! each_entry {
    ($self:expr, $e:ident => $body:expr) => {
        match $self {
            SessionEntry::Message($e) => $body,
            SessionEntry::ThinkingLevelChange($e) => $body,
            SessionEntry::ModelChange($e) => $body,
            SessionEntry::Compaction($e) => $body,
            SessionEntry::BranchSummary($e) => $body,
            SessionEntry::Custom($e) => $body,
            SessionEntry::CustomMessage($e) => $body,
            SessionEntry::Label($e) => $body,
            SessionEntry::SessionInfo($e) => $body,
            SessionEntry::Usage($e) => $body,
            SessionEntry::ContextEdit($e) => $body,
            SessionEntry::Unknown($e) => $body,
        }
    };
}

impl SessionEntry {
    /// The entry id.
    pub fn id(&self) -> &str {
        each_entry!(self, e => &e.id)
    }

    /// The parent entry id; `None` for a root.
    pub fn parent_id(&self) -> Option<&str> {
        each_entry!(self, e => e.parent_id.as_deref())
    }

    /// When it was appended (ISO 8601 as stored).
    pub fn timestamp(&self) -> &str {
        each_entry!(self, e => &e.timestamp)
    }

    /// The `type` name as stored.
    pub fn kind(&self) -> &str {
        match self {
            SessionEntry::Message(_) => "message",
            SessionEntry::ThinkingLevelChange(_) => "thinking_level_change",
            SessionEntry::ModelChange(_) => "model_change",
            SessionEntry::Compaction(_) => "compaction",
            SessionEntry::BranchSummary(_) => "branch_summary",
            SessionEntry::Custom(_) => "custom",
            SessionEntry::CustomMessage(_) => "custom_message",
            SessionEntry::Label(_) => "label",
            SessionEntry::SessionInfo(_) => "session_info",
            SessionEntry::Usage(_) => "usage",
            SessionEntry::ContextEdit(_) => "context_edit",
            SessionEntry::Unknown(e) => &e.kind,
        }
    }

    /// The message, for a `message` entry.
    pub fn message(&self) -> Option<&AgentMessage> {
        match self {
            SessionEntry::Message(m) => Some(&m.message),
            _ => None,
        }
    }
}
