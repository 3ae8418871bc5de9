//! [`AgentMessage`]: the one message type above the provider layer.
//!
//! pi's `AgentMessage` is `Message | custom roles`. Here it is an LLM
//! [`Message`] or one of the roles pi's coding agent adds: a custom
//! (extension) message, a user-run shell command, a branch summary, a
//! compaction summary, and pi 1.x's system message (a change to the prompt
//! and the declared tools, [`crate::SystemMessage`]). A role this version does not know is kept verbatim
//! ([`AgentMessage::Other`]), so a transcript or session written by a newer pi
//! still loads and is written back unchanged. The JSON is pi's, field for
//! field (`docs/message-types.md`); it is read tag-first (see
//! [`makai_ai::tagged`]) with no intermediate tree.
//!
//! The agent loop, the session files, the RPC and JSON modes and the protocol
//! all carry this one type; [`AgentMessage::to_llm`] is the one conversion to
//! what a model sees.

use serde::de::{MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use makai_ai::tagged::{
    TagDispatch, deserialize_tagged, rest_with_tag, variant, variant_from_object,
};
use makai_ai::{
    AssistantMessage, Message, Timestamp, ToolResultMessage, UserContent, UserMessage, now_ms,
};

/// Content that pi stores either as a plain string or as a list of parts
/// (custom messages, `custom_message` session entries).
///
/// Kept in the form it was read, so a message or entry is written back
/// unchanged.
#[derive(Clone, Debug, PartialEq, Serialize)]
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

    /// The text: the string, or the text parts joined with newlines (images
    /// skipped).
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

impl From<Vec<UserContent>> for MessageContent {
    fn from(parts: Vec<UserContent>) -> Self {
        MessageContent::Parts(parts)
    }
}

impl<'de> Deserialize<'de> for MessageContent {
    /// A string or a list of parts, read without buffering (serde's untagged
    /// enums copy every string into an intermediate tree first).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MessageContent;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or a list of content parts")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(MessageContent::Text(v.to_string()))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(MessageContent::Text(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(1).min(64));
                while let Some(part) = seq.next_element()? {
                    out.push(part);
                }
                Ok(MessageContent::Parts(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// An application-defined message (pi's extension message, `role: "custom"`;
/// pi before format v3 called the role `hookMessage`).
///
/// The model sees its content as a user message; `details` never reach it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomMessage {
    /// The application's name for this kind of message.
    pub custom_type: String,
    /// A string, or text and image parts (kept in the form it was read).
    pub content: MessageContent,
    /// Whether a UI should show it.
    #[serde(default)]
    pub display: bool,
    /// Application data; never sent to a model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// When the message was created (Unix ms).
    #[serde(default)]
    pub timestamp: Timestamp,
}

impl CustomMessage {
    /// A displayed custom message with one text part, stamped now.
    pub fn text(custom_type: impl Into<String>, text: impl Into<String>) -> Self {
        CustomMessage {
            custom_type: custom_type.into(),
            content: MessageContent::Parts(vec![UserContent::text(text)]),
            display: true,
            details: None,
            timestamp: now_ms(),
        }
    }
}

/// A summary that replaced older messages when the context was compacted
/// (`role: "compactionSummary"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionSummaryMessage {
    /// The summary text.
    pub summary: String,
    /// Estimated context tokens before compaction.
    #[serde(default)]
    pub tokens_before: u64,
    /// When the summary was made (Unix ms).
    #[serde(default)]
    pub timestamp: Timestamp,
}

/// The summary of a branch the conversation came back from
/// (`role: "branchSummary"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BranchSummaryMessage {
    /// The summary text.
    pub summary: String,
    /// The entry the conversation branched from (`null` in pi for none).
    #[serde(default)]
    pub from_id: Option<String>,
    /// When it was created (Unix ms).
    #[serde(default)]
    pub timestamp: Timestamp,
}

/// A shell command the user ran directly (pi's `!command` and the RPC `bash`
/// command), with its output (`role: "bashExecution"`). Not a tool result.
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

/// One message of an agent transcript or a session.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum AgentMessage {
    /// A message the model understands as is (`user`, `assistant`, `toolResult`).
    Llm(Message),
    /// An application-defined message (`role: "custom"`).
    Custom(CustomMessage),
    /// A compaction summary (`role: "compactionSummary"`).
    CompactionSummary(CompactionSummaryMessage),
    /// A branch summary (`role: "branchSummary"`).
    BranchSummary(BranchSummaryMessage),
    /// A shell command the user ran (`role: "bashExecution"`).
    BashExecution(BashExecutionMessage),
    /// A change to the prompt and the declared tools (`role: "system"`);
    /// never sent to a model as a message.
    System(crate::system_message::SystemMessage),
    /// Any other role, kept verbatim; never sent to a model.
    Other(Value),
}

/// What the model reads in place of a compaction summary: this, the summary,
/// then [`SUMMARY_SUFFIX`].
pub const COMPACTION_SUMMARY_PREFIX: &str = "Earlier parts of this conversation were condensed to save space. Summary of what happened so far:\n\n<summary>\n";
/// What the model reads in place of a branch summary: this, the summary, then
/// [`SUMMARY_SUFFIX`].
pub const BRANCH_SUMMARY_PREFIX: &str =
    "The conversation returned here from another branch. Summary of that branch:\n\n<summary>\n";
/// Closes a summary the model reads.
pub const SUMMARY_SUFFIX: &str = "\n</summary>";

impl AgentMessage {
    /// A user message holding one text part, stamped now.
    pub fn user(text: impl Into<String>) -> Self {
        AgentMessage::Llm(Message::User(UserMessage::text(text)))
    }

    /// The `role` as written in JSON.
    pub fn role(&self) -> &str {
        match self {
            AgentMessage::Llm(m) => m.role(),
            AgentMessage::Custom(_) => "custom",
            AgentMessage::CompactionSummary(_) => "compactionSummary",
            AgentMessage::BranchSummary(_) => "branchSummary",
            AgentMessage::BashExecution(_) => "bashExecution",
            AgentMessage::System(_) => "system",
            AgentMessage::Other(v) => v.get("role").and_then(Value::as_str).unwrap_or("unknown"),
        }
    }

    /// The message's timestamp (Unix ms; 0 when unknown).
    pub fn timestamp(&self) -> Timestamp {
        match self {
            AgentMessage::Llm(m) => m.timestamp(),
            AgentMessage::Custom(m) => m.timestamp,
            AgentMessage::CompactionSummary(m) => m.timestamp,
            AgentMessage::BranchSummary(m) => m.timestamp,
            AgentMessage::BashExecution(m) => m.timestamp,
            AgentMessage::System(m) => m.timestamp,
            AgentMessage::Other(v) => v.get("timestamp").and_then(Value::as_i64).unwrap_or(0),
        }
    }

    /// The LLM message, when this is one.
    pub fn as_llm(&self) -> Option<&Message> {
        match self {
            AgentMessage::Llm(m) => Some(m),
            _ => None,
        }
    }

    /// The assistant message, when this is one.
    pub fn as_assistant(&self) -> Option<&AssistantMessage> {
        match self {
            AgentMessage::Llm(Message::Assistant(a)) => Some(a),
            _ => None,
        }
    }

    /// The tool result, when this is one.
    pub fn as_tool_result(&self) -> Option<&ToolResultMessage> {
        match self {
            AgentMessage::Llm(Message::ToolResult(r)) => Some(r),
            _ => None,
        }
    }

    /// The user message, when this is one.
    pub fn as_user(&self) -> Option<&UserMessage> {
        match self {
            AgentMessage::Llm(Message::User(u)) => Some(u),
            _ => None,
        }
    }

    /// True for assistant messages.
    pub fn is_assistant(&self) -> bool {
        self.as_assistant().is_some()
    }

    /// The visible text: user/custom text parts (joined with newlines),
    /// assistant text, tool result text, a summary, a shell command's output.
    /// Used for queue listings, size estimates and session lists.
    pub fn text(&self) -> String {
        match self {
            AgentMessage::Llm(Message::User(u)) => parts_text(&u.content),
            AgentMessage::Llm(Message::Assistant(a)) => a.text(),
            AgentMessage::Llm(Message::ToolResult(r)) => r.text_content(),
            AgentMessage::Custom(c) => c.content.text(),
            AgentMessage::CompactionSummary(s) => s.summary.clone(),
            AgentMessage::BranchSummary(s) => s.summary.clone(),
            AgentMessage::BashExecution(b) => b.output.clone(),
            AgentMessage::System(s) => s.content.text(),
            _ => String::new(),
        }
    }

    /// The message as the model sees it, or `None` when it is not part of the
    /// model's context (`!!` shell runs, unknown roles).
    ///
    /// LLM messages pass through; a custom message becomes a user message with
    /// its content; a shell run and the two summaries become one user text part
    /// describing them.
    pub fn to_llm(&self) -> Option<Message> {
        let user = |text: String, timestamp| {
            Some(Message::User(UserMessage {
                content: vec![UserContent::text(text)],
                timestamp,
            }))
        };
        match self {
            AgentMessage::Llm(m) => Some(m.clone()),
            AgentMessage::Custom(c) => Some(Message::User(UserMessage {
                content: c.content.to_parts(),
                timestamp: c.timestamp,
            })),
            AgentMessage::CompactionSummary(s) => user(
                format!("{COMPACTION_SUMMARY_PREFIX}{}{SUMMARY_SUFFIX}", s.summary),
                s.timestamp,
            ),
            AgentMessage::BranchSummary(s) => user(
                format!("{BRANCH_SUMMARY_PREFIX}{}{SUMMARY_SUFFIX}", s.summary),
                s.timestamp,
            ),
            AgentMessage::BashExecution(b) => {
                if b.exclude_from_context == Some(true) {
                    return None;
                }
                user(bash_execution_text(b), b.timestamp)
            }
            AgentMessage::System(_) | AgentMessage::Other(_) => None,
        }
    }
}

/// The text parts of a content list, joined with newlines (images skipped).
pub fn parts_text(content: &[UserContent]) -> String {
    let mut out = String::new();
    for c in content {
        if let UserContent::Text(t) = c {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&t.text);
        }
    }
    out
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

/// The default `convert_to_llm`: every message's [`AgentMessage::to_llm`].
pub fn default_convert_to_llm(messages: &[AgentMessage]) -> Vec<Message> {
    messages.iter().filter_map(AgentMessage::to_llm).collect()
}

impl From<&str> for AgentMessage {
    /// A user message with this text.
    fn from(text: &str) -> Self {
        AgentMessage::user(text)
    }
}

impl From<String> for AgentMessage {
    /// A user message with this text.
    fn from(text: String) -> Self {
        AgentMessage::user(text)
    }
}

impl From<Message> for AgentMessage {
    fn from(m: Message) -> Self {
        AgentMessage::Llm(m)
    }
}

impl From<UserMessage> for AgentMessage {
    fn from(m: UserMessage) -> Self {
        AgentMessage::Llm(Message::User(m))
    }
}

impl From<AssistantMessage> for AgentMessage {
    fn from(m: AssistantMessage) -> Self {
        AgentMessage::Llm(Message::Assistant(m))
    }
}

impl From<ToolResultMessage> for AgentMessage {
    fn from(m: ToolResultMessage) -> Self {
        AgentMessage::Llm(Message::ToolResult(m))
    }
}

impl From<CustomMessage> for AgentMessage {
    fn from(m: CustomMessage) -> Self {
        AgentMessage::Custom(m)
    }
}

impl From<CompactionSummaryMessage> for AgentMessage {
    fn from(m: CompactionSummaryMessage) -> Self {
        AgentMessage::CompactionSummary(m)
    }
}

impl From<BranchSummaryMessage> for AgentMessage {
    fn from(m: BranchSummaryMessage) -> Self {
        AgentMessage::BranchSummary(m)
    }
}

impl From<BashExecutionMessage> for AgentMessage {
    fn from(m: BashExecutionMessage) -> Self {
        AgentMessage::BashExecution(m)
    }
}

/// Writes a pi role tag in front of a role struct's fields.
#[derive(Serialize)]
struct Tagged<'a, T> {
    role: &'static str,
    #[serde(flatten)]
    body: &'a T,
}

impl Serialize for AgentMessage {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            AgentMessage::Llm(m) => m.serialize(s),
            AgentMessage::Custom(body) => Tagged {
                role: "custom",
                body,
            }
            .serialize(s),
            AgentMessage::CompactionSummary(body) => Tagged {
                role: "compactionSummary",
                body,
            }
            .serialize(s),
            AgentMessage::BranchSummary(body) => Tagged {
                role: "branchSummary",
                body,
            }
            .serialize(s),
            AgentMessage::BashExecution(body) => Tagged {
                role: "bashExecution",
                body,
            }
            .serialize(s),
            AgentMessage::System(body) => Tagged {
                role: "system",
                body,
            }
            .serialize(s),
            AgentMessage::Other(v) => v.serialize(s),
        }
    }
}

impl TagDispatch for AgentMessage {
    const TAG: &'static str = "role";
    const EXPECTING: &'static str = "a message object";

    fn from_rest<'de, M: MapAccess<'de>>(role: &str, rest: M) -> Result<Self, M::Error> {
        Ok(match role {
            "user" => AgentMessage::Llm(Message::User(variant(rest)?)),
            "assistant" => AgentMessage::Llm(Message::Assistant(variant(rest)?)),
            "toolResult" => AgentMessage::Llm(Message::ToolResult(variant(rest)?)),
            "custom" | "hookMessage" => AgentMessage::Custom(variant(rest)?),
            "compactionSummary" => AgentMessage::CompactionSummary(variant(rest)?),
            "branchSummary" => AgentMessage::BranchSummary(variant(rest)?),
            "bashExecution" => AgentMessage::BashExecution(variant(rest)?),
            "system" => AgentMessage::System(variant(rest)?),
            other => AgentMessage::Other(Value::Object(rest_with_tag("role", other, rest)?)),
        })
    }

    fn from_object<E: serde::de::Error>(object: Map<String, Value>) -> Result<Self, E> {
        let role = object
            .get("role")
            .and_then(Value::as_str)
            .ok_or_else(|| E::custom("an agent message needs a string field `role`"))?;
        Ok(match role {
            "user" | "assistant" | "toolResult" => {
                AgentMessage::Llm(variant_from_object::<Message, E>(object)?)
            }
            "custom" | "hookMessage" => AgentMessage::Custom(variant_from_object(object)?),
            "compactionSummary" => AgentMessage::CompactionSummary(variant_from_object(object)?),
            "branchSummary" => AgentMessage::BranchSummary(variant_from_object(object)?),
            "bashExecution" => AgentMessage::BashExecution(variant_from_object(object)?),
            "system" => AgentMessage::System(variant_from_object(object)?),
            _ => AgentMessage::Other(Value::Object(object)),
        })
    }
}

impl<'de> Deserialize<'de> for AgentMessage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_tagged(d)
    }
}

#[cfg(test)]
#[path = "message_tests.rs"]
mod tests;
