//! The messages stored inside session `message` entries.
//!
//! pi's coding agent stores "agent messages": the three LLM roles of
//! [`makai_ai::Message`] (`user`, `assistant`, `toolResult`) plus four roles
//! of its own (`bashExecution`, `custom`, `branchSummary`,
//! `compactionSummary`). [`AgentMessage`] reads and writes all of them with the
//! same JSON shape, and keeps a message of a role it does not know as raw JSON
//! so a file written by a newer pi still loads.

use makai_ai::{AssistantMessage, Message, Timestamp, ToolResultMessage, UserContent, UserMessage};
use serde::de::{MapAccess, value::MapAccessDeserializer};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::fast::{AssistantMessageDef, ToolResultMessageDef, UserMessageDef};
use super::tagged::{TagDispatch, deserialize_tagged, rest_with_tag};

/// Text of the user message that stands in for a compaction summary.
const COMPACTION_HEADER: &str =
    "Earlier parts of this conversation were condensed. Summary of what happened so far:";
/// Text of the user message that stands in for a branch summary.
const BRANCH_HEADER: &str =
    "The conversation returned here from another branch. Summary of that branch:";

/// Content that pi stores either as a plain string or as a list of parts.
///
/// Kept in the form it was read so a round trip writes the same JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MessageContent {
    /// A plain string.
    Text(String),
    /// Text and image parts.
    Parts(Vec<UserContent>),
}

impl MessageContent {
    /// The content as parts (a plain string becomes one text part).
    pub fn to_parts(&self) -> Vec<UserContent> {
        match self {
            MessageContent::Text(t) => vec![UserContent::text(t.clone())],
            MessageContent::Parts(p) => p.clone(),
        }
    }

    /// All text joined with spaces (images skipped).
    pub fn text(&self) -> String {
        match self {
            MessageContent::Text(t) => t.clone(),
            MessageContent::Parts(p) => parts_text(p),
        }
    }
}

impl From<&str> for MessageContent {
    fn from(s: &str) -> Self {
        MessageContent::Text(s.to_string())
    }
}

impl From<String> for MessageContent {
    fn from(s: String) -> Self {
        MessageContent::Text(s)
    }
}

/// Joins the text parts of a content list with spaces.
pub(crate) fn parts_text(parts: &[UserContent]) -> String {
    let mut out = Vec::new();
    for p in parts {
        if let UserContent::Text(t) = p {
            out.push(t.text.as_str());
        }
    }
    out.join(" ")
}

/// A shell command the user ran directly (pi's `!command`), with its output.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BashExecutionMessage {
    /// The command line.
    pub command: String,
    /// Its (possibly truncated) output.
    pub output: String,
    /// The exit code; absent when the command did not finish.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// True when the user cancelled it.
    #[serde(default)]
    pub cancelled: bool,
    /// True when `output` was truncated.
    #[serde(default)]
    pub truncated: bool,
    /// Where the full output was saved, when truncated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_output_path: Option<String>,
    /// True when the run must not be shown to the model (pi's `!!command`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude_from_context: Option<bool>,
    /// When it ran (Unix ms).
    #[serde(default)]
    pub timestamp: Timestamp,
}

/// A message injected by an extension; the model sees it as user input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomMessage {
    /// Which extension wrote it.
    pub custom_type: String,
    /// The text or parts.
    pub content: MessageContent,
    /// Whether UIs show it.
    #[serde(default)]
    pub display: bool,
    /// Extension data, never sent to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// When it was created (Unix ms).
    #[serde(default)]
    pub timestamp: Timestamp,
}

/// The summary of an abandoned branch, as the model sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BranchSummaryMessage {
    /// The summary text.
    pub summary: String,
    /// The entry the conversation branched from.
    pub from_id: String,
    /// When it was created (Unix ms).
    #[serde(default)]
    pub timestamp: Timestamp,
}

/// The summary of compacted history, as the model sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionSummaryMessage {
    /// The summary text.
    pub summary: String,
    /// Context size before compaction.
    #[serde(default)]
    pub tokens_before: u64,
    /// When it was created (Unix ms).
    #[serde(default)]
    pub timestamp: Timestamp,
}

/// One message of a session: an LLM message or one of pi's extra roles.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "role", rename_all = "camelCase")]
#[non_exhaustive]
pub enum AgentMessage {
    /// From the user.
    User(UserMessage),
    /// From the model.
    Assistant(AssistantMessage),
    /// A tool's answer.
    ToolResult(ToolResultMessage),
    /// A shell command run by the user.
    BashExecution(BashExecutionMessage),
    /// An extension's message (pi before format v3 called this role `hookMessage`).
    Custom(CustomMessage),
    /// A branch summary.
    BranchSummary(BranchSummaryMessage),
    /// A compaction summary.
    CompactionSummary(CompactionSummaryMessage),
    /// A role this version does not know, kept verbatim.
    #[serde(untagged)]
    Unknown(Value),
}

/// The known roles, deserialized by tag in one pass.
#[derive(Deserialize)]
#[serde(tag = "role", rename_all = "camelCase")]
enum KnownMessage {
    User(UserMessage),
    Assistant(AssistantMessage),
    ToolResult(ToolResultMessage),
    BashExecution(BashExecutionMessage),
    #[serde(alias = "hookMessage")]
    Custom(CustomMessage),
    BranchSummary(BranchSummaryMessage),
    CompactionSummary(CompactionSummaryMessage),
}

const KNOWN_ROLES: [&str; 8] = [
    "user",
    "assistant",
    "toolResult",
    "bashExecution",
    "custom",
    "hookMessage",
    "branchSummary",
    "compactionSummary",
];

impl TagDispatch for AgentMessage {
    const TAG: &'static str = "role";
    const EXPECTING: &'static str = "a message object";

    fn from_rest<'de, M: MapAccess<'de>>(role: &str, rest: M) -> Result<Self, M::Error> {
        Ok(match role {
            "user" => AgentMessage::User(UserMessageDef::deserialize(MapAccessDeserializer::new(
                rest,
            ))?),
            "assistant" => AgentMessage::Assistant(AssistantMessageDef::deserialize(
                MapAccessDeserializer::new(rest),
            )?),
            "toolResult" => AgentMessage::ToolResult(ToolResultMessageDef::deserialize(
                MapAccessDeserializer::new(rest),
            )?),
            "bashExecution" => AgentMessage::BashExecution(BashExecutionMessage::deserialize(
                MapAccessDeserializer::new(rest),
            )?),
            "custom" | "hookMessage" => AgentMessage::Custom(CustomMessage::deserialize(
                MapAccessDeserializer::new(rest),
            )?),
            "branchSummary" => AgentMessage::BranchSummary(BranchSummaryMessage::deserialize(
                MapAccessDeserializer::new(rest),
            )?),
            "compactionSummary" => AgentMessage::CompactionSummary(
                CompactionSummaryMessage::deserialize(MapAccessDeserializer::new(rest))?,
            ),
            other => AgentMessage::Unknown(Value::Object(rest_with_tag("role", other, rest)?)),
        })
    }

    fn from_object<E: serde::de::Error>(object: Map<String, Value>) -> Result<Self, E> {
        match object.get("role").and_then(Value::as_str) {
            Some(r) if KNOWN_ROLES.contains(&r) => {
                let known = KnownMessage::deserialize(Value::Object(object)).map_err(E::custom)?;
                Ok(match known {
                    KnownMessage::User(m) => AgentMessage::User(m),
                    KnownMessage::Assistant(m) => AgentMessage::Assistant(m),
                    KnownMessage::ToolResult(m) => AgentMessage::ToolResult(m),
                    KnownMessage::BashExecution(m) => AgentMessage::BashExecution(m),
                    KnownMessage::Custom(m) => AgentMessage::Custom(m),
                    KnownMessage::BranchSummary(m) => AgentMessage::BranchSummary(m),
                    KnownMessage::CompactionSummary(m) => AgentMessage::CompactionSummary(m),
                })
            }
            Some(_) => Ok(AgentMessage::Unknown(Value::Object(object))),
            None => Err(E::custom("message has no string \"role\" field")),
        }
    }
}

impl<'de> Deserialize<'de> for AgentMessage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_tagged(d)
    }
}

impl AgentMessage {
    /// The role name as stored.
    pub fn role(&self) -> &str {
        match self {
            AgentMessage::User(_) => "user",
            AgentMessage::Assistant(_) => "assistant",
            AgentMessage::ToolResult(_) => "toolResult",
            AgentMessage::BashExecution(_) => "bashExecution",
            AgentMessage::Custom(_) => "custom",
            AgentMessage::BranchSummary(_) => "branchSummary",
            AgentMessage::CompactionSummary(_) => "compactionSummary",
            AgentMessage::Unknown(v) => v.get("role").and_then(Value::as_str).unwrap_or(""),
        }
    }

    /// The message's timestamp (Unix ms; 0 when unknown).
    pub fn timestamp(&self) -> Timestamp {
        match self {
            AgentMessage::User(m) => m.timestamp,
            AgentMessage::Assistant(m) => m.timestamp,
            AgentMessage::ToolResult(m) => m.timestamp,
            AgentMessage::BashExecution(m) => m.timestamp,
            AgentMessage::Custom(m) => m.timestamp,
            AgentMessage::BranchSummary(m) => m.timestamp,
            AgentMessage::CompactionSummary(m) => m.timestamp,
            AgentMessage::Unknown(v) => v.get("timestamp").and_then(Value::as_i64).unwrap_or(0),
        }
    }

    /// The text a session list shows for it: user and assistant text only.
    pub fn display_text(&self) -> Option<String> {
        let text = match self {
            AgentMessage::User(m) => parts_text(&m.content),
            AgentMessage::Assistant(m) => m.text(),
            _ => return None,
        };
        (!text.is_empty()).then_some(text)
    }

    /// The message as the model sees it, or `None` when it is not part of the
    /// model's context (`!!` shell runs, unknown roles).
    ///
    /// pi's extra roles become user messages: an extension message keeps its
    /// content; a shell run, a branch summary and a compaction summary become
    /// one text part describing them.
    pub fn to_llm(&self) -> Option<Message> {
        let user = |text: String, timestamp| {
            Some(Message::User(UserMessage {
                content: vec![UserContent::text(text)],
                timestamp,
            }))
        };
        match self {
            AgentMessage::User(m) => Some(Message::User(m.clone())),
            AgentMessage::Assistant(m) => Some(Message::Assistant(m.clone())),
            AgentMessage::ToolResult(m) => Some(Message::ToolResult(m.clone())),
            AgentMessage::BashExecution(m) => {
                if m.exclude_from_context == Some(true) {
                    return None;
                }
                user(bash_execution_text(m), m.timestamp)
            }
            AgentMessage::Custom(m) => Some(Message::User(UserMessage {
                content: m.content.to_parts(),
                timestamp: m.timestamp,
            })),
            AgentMessage::BranchSummary(m) => user(
                format!("{BRANCH_HEADER}\n\n<summary>\n{}\n</summary>", m.summary),
                m.timestamp,
            ),
            AgentMessage::CompactionSummary(m) => user(
                format!(
                    "{COMPACTION_HEADER}\n\n<summary>\n{}\n</summary>",
                    m.summary
                ),
                m.timestamp,
            ),
            AgentMessage::Unknown(_) => None,
        }
    }
}

/// How a user-run shell command is shown to the model.
fn bash_execution_text(m: &BashExecutionMessage) -> String {
    let mut text = format!("The user ran the shell command `{}`.\n", m.command);
    if m.output.is_empty() {
        text.push_str("It printed nothing.");
    } else {
        text.push_str("Output:\n```\n");
        text.push_str(&m.output);
        text.push_str("\n```");
    }
    if m.cancelled {
        text.push_str("\nThe user cancelled the command.");
    } else if let Some(code) = m.exit_code.filter(|c| *c != 0) {
        text.push_str(&format!("\nIt exited with code {code}."));
    }
    if m.truncated
        && let Some(path) = &m.full_output_path
    {
        text.push_str(&format!(
            "\nThe output above is truncated; the full output is in {path}."
        ));
    }
    text
}

impl From<Message> for AgentMessage {
    fn from(m: Message) -> Self {
        match m {
            Message::User(m) => AgentMessage::User(m),
            Message::Assistant(m) => AgentMessage::Assistant(m),
            Message::ToolResult(m) => AgentMessage::ToolResult(m),
            // `Message` is non-exhaustive: a future role is kept as raw JSON.
            other => AgentMessage::Unknown(serde_json::to_value(&other).unwrap_or(Value::Null)),
        }
    }
}

impl From<UserMessage> for AgentMessage {
    fn from(m: UserMessage) -> Self {
        AgentMessage::User(m)
    }
}

impl From<AssistantMessage> for AgentMessage {
    fn from(m: AssistantMessage) -> Self {
        AgentMessage::Assistant(m)
    }
}

impl From<ToolResultMessage> for AgentMessage {
    fn from(m: ToolResultMessage) -> Self {
        AgentMessage::ToolResult(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hook_message_reads_as_custom() {
        let m: AgentMessage = serde_json::from_value(json!({
            "role": "hookMessage", "customType": "x", "content": "hi", "display": true, "timestamp": 1
        }))
        .unwrap();
        assert!(matches!(m, AgentMessage::Custom(_)));
        assert_eq!(serde_json::to_value(&m).unwrap()["role"], "custom");
    }

    #[test]
    fn unknown_role_is_kept_verbatim() {
        let raw = json!({"role": "futureThing", "x": 1});
        let m: AgentMessage = serde_json::from_value(raw.clone()).unwrap();
        assert!(m.to_llm().is_none());
        assert_eq!(serde_json::to_value(&m).unwrap(), raw);
    }

    #[test]
    fn known_role_with_bad_fields_is_an_error() {
        let err = serde_json::from_value::<AgentMessage>(json!({"role": "user"})).unwrap_err();
        assert!(err.to_string().contains("content"), "{err}");
        let err = serde_json::from_str::<AgentMessage>(r#"{"timestamp": 1, "role": "user"}"#)
            .unwrap_err();
        assert!(err.to_string().contains("content"), "{err}");
    }

    #[test]
    fn role_anywhere_reads_the_same() {
        let a: AgentMessage =
            serde_json::from_str(r#"{"role":"user","content":"hi","timestamp":1}"#).unwrap();
        let b: AgentMessage =
            serde_json::from_str(r#"{"content":"hi","timestamp":1,"role":"user"}"#).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn excluded_bash_run_is_not_in_context() {
        let m = AgentMessage::BashExecution(BashExecutionMessage {
            command: "ls".into(),
            exclude_from_context: Some(true),
            ..Default::default()
        });
        assert!(m.to_llm().is_none());
    }
}
