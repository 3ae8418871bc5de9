//! The agent's message type and the context a run works on.
//!
//! [`AgentMessage`] is an LLM [`Message`] or an application-defined message (a
//! custom message, a compaction summary, or any other role kept verbatim). The JSON
//! form follows pi's `AgentMessage`: LLM messages carry `role` `user`, `assistant`
//! or `toolResult`; custom messages carry `role: "custom"` with `customType`,
//! `content`, `display`, `details` and `timestamp`; compaction summaries carry
//! `role: "compactionSummary"` with `summary` and `tokensBefore`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use makai_ai::{
    AssistantMessage, Message, Timestamp, ToolResultMessage, UserContent, UserMessage, now_ms,
};

use crate::tool::ToolSet;

/// An application-defined message: shown to users, stored in transcripts, and
/// turned into LLM input (or dropped) by `convert_to_llm`.
///
/// The default conversion sends its content as a user message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename = "custom", rename_all = "camelCase")]
pub struct CustomMessage {
    /// The application's name for this kind of message.
    pub custom_type: String,
    /// Text and image parts. A plain JSON string is read as one text part.
    #[serde(deserialize_with = "string_or_parts")]
    pub content: Vec<UserContent>,
    /// Whether a UI should show it.
    #[serde(default)]
    pub display: bool,
    /// Application data; never sent to a model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// When the message was created.
    #[serde(default)]
    pub timestamp: Timestamp,
}

impl CustomMessage {
    /// A displayed custom message with one text part, stamped now.
    pub fn text(custom_type: impl Into<String>, text: impl Into<String>) -> Self {
        CustomMessage {
            custom_type: custom_type.into(),
            content: vec![UserContent::text(text)],
            display: true,
            details: None,
            timestamp: now_ms(),
        }
    }
}

/// A summary that replaced older messages when the context was compacted.
///
/// The default conversion sends it to the model as a user message that says the
/// earlier conversation was summarized.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename = "compactionSummary", rename_all = "camelCase")]
pub struct CompactionSummaryMessage {
    /// The summary text.
    pub summary: String,
    /// Estimated context tokens before compaction.
    #[serde(default)]
    pub tokens_before: u64,
    /// When the summary was made.
    #[serde(default)]
    pub timestamp: Timestamp,
}

/// One message of an agent transcript.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum AgentMessage {
    /// A message the model understands as is.
    Llm(Message),
    /// An application-defined message (`role: "custom"`).
    Custom(CustomMessage),
    /// A compaction summary (`role: "compactionSummary"`).
    CompactionSummary(CompactionSummaryMessage),
    /// Any other role (e.g. pi's `bashExecution` or `branchSummary`), kept verbatim.
    /// The default conversion drops it.
    Other(Value),
}

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
            AgentMessage::Other(v) => v.get("role").and_then(Value::as_str).unwrap_or("unknown"),
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

    /// The visible text: user/custom text parts, assistant text, tool result text,
    /// or the summary. Used for queue listings and size estimates.
    pub fn text(&self) -> String {
        fn parts(content: &[UserContent]) -> String {
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
        match self {
            AgentMessage::Llm(Message::User(u)) => parts(&u.content),
            AgentMessage::Llm(Message::Assistant(a)) => a.text(),
            AgentMessage::Llm(Message::ToolResult(r)) => r.text_content(),
            AgentMessage::Custom(c) => parts(&c.content),
            AgentMessage::CompactionSummary(s) => s.summary.clone(),
            _ => String::new(),
        }
    }
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

impl Serialize for AgentMessage {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            AgentMessage::Llm(m) => m.serialize(s),
            AgentMessage::Custom(m) => m.serialize(s),
            AgentMessage::CompactionSummary(m) => m.serialize(s),
            AgentMessage::Other(v) => v.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for AgentMessage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let value = Value::deserialize(d)?;
        let role = value
            .get("role")
            .and_then(Value::as_str)
            .ok_or_else(|| D::Error::custom("an agent message needs a string field `role`"))?;
        match role {
            "user" | "assistant" | "toolResult" => serde_json::from_value(value)
                .map(AgentMessage::Llm)
                .map_err(D::Error::custom),
            "custom" => serde_json::from_value(value)
                .map(AgentMessage::Custom)
                .map_err(D::Error::custom),
            "compactionSummary" => serde_json::from_value(value)
                .map(AgentMessage::CompactionSummary)
                .map_err(D::Error::custom),
            _ => Ok(AgentMessage::Other(value)),
        }
    }
}

fn string_or_parts<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<UserContent>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        Text(String),
        Parts(Vec<UserContent>),
    }
    Ok(match Either::deserialize(d)? {
        Either::Text(t) => vec![UserContent::text(t)],
        Either::Parts(p) => p,
    })
}

/// The opening of the user message that carries a compaction summary to the model.
pub const SUMMARY_PREFIX: &str = "Earlier parts of this conversation were condensed to save space. Summary of what happened:\n\n";

/// The default `convert_to_llm`: LLM messages pass through, custom messages become
/// user messages, compaction summaries become a user message introducing the
/// summary, and any other role is dropped.
pub fn default_convert_to_llm(messages: &[AgentMessage]) -> Vec<Message> {
    let mut out = Vec::with_capacity(messages.len());
    for m in messages {
        match m {
            AgentMessage::Llm(m) => out.push(m.clone()),
            AgentMessage::Custom(c) => out.push(Message::User(UserMessage {
                content: c.content.clone(),
                timestamp: c.timestamp,
            })),
            AgentMessage::CompactionSummary(s) => out.push(Message::User(UserMessage {
                content: vec![UserContent::text(format!("{SUMMARY_PREFIX}{}", s.summary))],
                timestamp: s.timestamp,
            })),
            AgentMessage::Other(_) => {}
        }
    }
    out
}

/// How many queued messages are delivered at each delivery point.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum QueueMode {
    /// Every queued message at once.
    All,
    /// The oldest queued message only; the rest wait for later delivery points.
    #[default]
    OneAtATime,
}

/// What one run works on: the system prompt, the transcript and the tools.
#[derive(Clone, Debug, Default)]
pub struct AgentContext {
    /// The system prompt (empty for none).
    pub system_prompt: String,
    /// The transcript.
    pub messages: Vec<AgentMessage>,
    /// The tools the model may call.
    pub tools: ToolSet,
}

impl AgentContext {
    /// A context with this system prompt, no messages and no tools.
    pub fn new(system_prompt: impl Into<String>) -> Self {
        AgentContext {
            system_prompt: system_prompt.into(),
            ..Default::default()
        }
    }

    /// Sets the tools.
    pub fn with_tools(mut self, tools: ToolSet) -> Self {
        self.tools = tools;
        self
    }

    /// Sets the messages.
    pub fn with_messages(mut self, messages: Vec<AgentMessage>) -> Self {
        self.messages = messages;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn custom_message_round_trips_with_pi_fields() {
        let json = json!({"role": "custom", "customType": "note", "content": "hi",
            "display": true, "details": {"a": 1}, "timestamp": 3});
        let m: AgentMessage = serde_json::from_value(json).unwrap();
        let AgentMessage::Custom(c) = &m else {
            panic!("not custom: {m:?}")
        };
        assert_eq!(c.content, vec![UserContent::text("hi")]);
        assert_eq!(
            serde_json::to_value(&m).unwrap(),
            json!({"role": "custom", "customType": "note",
                "content": [{"type": "text", "text": "hi"}],
                "display": true, "details": {"a": 1}, "timestamp": 3})
        );
    }

    #[test]
    fn unknown_roles_are_kept_verbatim_and_dropped_for_the_model() {
        let json = json!({"role": "bashExecution", "command": "ls", "output": "", "timestamp": 1});
        let m: AgentMessage = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(m.role(), "bashExecution");
        assert_eq!(serde_json::to_value(&m).unwrap(), json);
        assert!(default_convert_to_llm(&[m]).is_empty());
    }

    #[test]
    fn llm_messages_and_summaries_convert() {
        let msgs = vec![
            AgentMessage::user("a"),
            CompactionSummaryMessage {
                summary: "did x".into(),
                tokens_before: 10,
                timestamp: 1,
            }
            .into(),
            CustomMessage::text("t", "c").into(),
        ];
        let out = default_convert_to_llm(&msgs);
        assert_eq!(out.len(), 3);
        let Message::User(u) = &out[1] else { panic!() };
        let UserContent::Text(t) = &u.content[0] else {
            panic!()
        };
        assert!(t.text.starts_with(SUMMARY_PREFIX) && t.text.ends_with("did x"));
        let v = serde_json::to_value(&msgs[1]).unwrap();
        assert_eq!(v["role"], "compactionSummary");
        assert_eq!(v["tokensBefore"], 10);
    }

    #[test]
    fn missing_role_is_a_clear_error() {
        let e = serde_json::from_value::<AgentMessage>(json!({"content": "x"})).unwrap_err();
        assert!(e.to_string().contains("role"), "{e}");
    }

    #[test]
    fn queue_mode_names_match_pi() {
        assert_eq!(
            serde_json::to_value(QueueMode::OneAtATime).unwrap(),
            json!("one-at-a-time")
        );
    }
}
