//! The message model shared by every provider.
//!
//! The JSON form follows pi-ai's message schema field for field (roles `user`,
//! `assistant`, `toolResult`; content types `text`, `thinking`, `image`,
//! `toolCall`; camelCase fields), so transcripts and session files written by
//! pi load here and vice versa.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::usage::Usage;

mod de;
mod deferred;
mod diagnostic;
mod nested_calls;

pub use de::{assistant_parts, user_parts};
pub use deferred::DeferredHandle;
pub use diagnostic::{AssistantMessageDiagnostic, DiagnosticCode, DiagnosticError};
pub use nested_calls::{NestedCallStatus, NestedToolCall, NestedToolCalls};

/// Milliseconds since the Unix epoch, as pi stores timestamps.
pub type Timestamp = i64;

/// The current time as a [`Timestamp`]. Never panics: a clock before 1970 yields 0.
pub fn now_ms() -> Timestamp {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// A text part.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Provider metadata needed to replay this text (OpenAI Responses message id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_signature: Option<String>,
}

/// A reasoning ("thinking") part of an assistant message.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThinkingContent {
    /// The reasoning text (empty for redacted thinking).
    pub thinking: String,
    /// Opaque provider data needed to replay the reasoning (Anthropic signature,
    /// the encrypted payload of redacted thinking, a Responses reasoning item).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_signature: Option<String>,
    /// True when the provider redacted the reasoning; the payload is in `thinking_signature`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub redacted: bool,
}

/// An image part: base64 data plus its MIME type.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    /// Base64-encoded image bytes.
    pub data: String,
    /// MIME type, e.g. `image/png`.
    pub mime_type: String,
}

/// A tool call requested by the model.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// The id the tool result must answer.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as a JSON object. When [`ToolCall::arguments_error`] is set
    /// this is only a best-effort parse of what arrived and must not be executed.
    #[serde(default = "empty_object", deserialize_with = "object_or_empty")]
    pub arguments: Map<String, Value>,
    /// Gemini's opaque thought signature, replayed with the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_signature: Option<String>,
    /// The OpenAI Responses namespace of a tool loaded or namespaced there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Set when the streamed arguments were truncated or not a JSON object:
    /// says what was wrong. The agent layer never runs such a call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments_error: Option<String>,
    /// The raw argument text as received, kept only when `arguments_error` is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_arguments: Option<String>,
}

impl ToolCall {
    /// A complete, valid tool call.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: Map<String, Value>,
    ) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
            ..Default::default()
        }
    }

    /// True when the arguments arrived whole and parsed as a JSON object.
    pub fn arguments_complete(&self) -> bool {
        self.arguments_error.is_none()
    }
}

fn empty_object() -> Map<String, Value> {
    Map::new()
}

fn object_or_empty<'de, D: Deserializer<'de>>(d: D) -> Result<Map<String, Value>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Object(m) => m,
        _ => Map::new(),
    })
}

/// Content allowed in user messages and tool results.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
#[non_exhaustive]
pub enum UserContent {
    /// Text.
    Text(TextContent),
    /// An image.
    Image(ImageContent),
}

impl UserContent {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        UserContent::Text(TextContent {
            text: text.into(),
            text_signature: None,
        })
    }

    /// An image part.
    pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        UserContent::Image(ImageContent {
            data: data.into(),
            mime_type: mime_type.into(),
        })
    }
}

/// Content of an assistant message.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
#[non_exhaustive]
pub enum AssistantContent {
    /// Answer text.
    Text(TextContent),
    /// Reasoning.
    Thinking(ThinkingContent),
    /// A tool call.
    ToolCall(ToolCall),
}

/// Why an assistant message ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    /// The message is still streaming: a partial message's reason, never a
    /// finished one's.
    Pending,
    /// The model finished its answer.
    #[default]
    Stop,
    /// The output token limit was reached.
    Length,
    /// The model asked for tool calls.
    ToolUse,
    /// The request or stream failed; `errorMessage` says why.
    Error,
    /// The request was cancelled.
    Aborted,
    /// The provider finishes the response later; the message's `deferred`
    /// handle fetches it.
    Deferred,
}

impl StopReason {
    /// True for a finished answer the model can be shown again (`stop`,
    /// `length`, `toolUse`); false for a failed, aborted, still streaming or
    /// deferred one, which requests leave out.
    pub fn is_answer(self) -> bool {
        matches!(
            self,
            StopReason::Stop | StopReason::Length | StopReason::ToolUse
        )
    }

    /// The stable wire name (`pending`, `stop`, `length`, `toolUse`,
    /// `error`, `aborted`, `deferred`).
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Pending => "pending",
            StopReason::Stop => "stop",
            StopReason::Length => "length",
            StopReason::ToolUse => "toolUse",
            StopReason::Error => "error",
            StopReason::Aborted => "aborted",
            StopReason::Deferred => "deferred",
        }
    }
}

/// A message from the user.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserMessage {
    /// Text and image parts. A plain JSON string is accepted and read as one text part.
    #[serde(deserialize_with = "user_parts")]
    pub content: Vec<UserContent>,
    /// When the message was created.
    #[serde(default)]
    pub timestamp: Timestamp,
}

impl UserMessage {
    /// A user message holding one text part, stamped now.
    pub fn text(text: impl Into<String>) -> Self {
        UserMessage {
            content: vec![UserContent::text(text)],
            timestamp: now_ms(),
        }
    }
}

/// A message produced by a model.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessage {
    /// Text, thinking and tool-call parts in stream order.
    #[serde(deserialize_with = "assistant_parts")]
    pub content: Vec<AssistantContent>,
    /// The wire API that produced it (e.g. `anthropic-messages`).
    pub api: String,
    /// The provider (e.g. `anthropic`).
    pub provider: String,
    /// The model id requested.
    pub model: String,
    /// The concrete model the provider says answered, when it says one (pi
    /// 1.5's `responseModel`; it may equal `model`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_model: Option<String>,
    /// The provider's id for this response, when it gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
    /// The provider's own effort value this response was asked for
    /// (`xhigh`, `max`…; pi's `providerThinkingLevel`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_thinking_level: Option<Box<str>>,
    /// The thinking level requested for this response, as the model takes
    /// it (pi's `thinkingLevel`; absent in messages of older sessions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_level: Option<crate::ThinkingLevel>,
    /// What the provider boundary or the runtime recorded about how the
    /// response went (pi's `diagnostics`); never sent to a model.
    #[serde(default, skip_serializing_if = "<[_]>::is_empty")]
    pub diagnostics: Box<[AssistantMessageDiagnostic]>,
    /// Token counts and cost.
    #[serde(default)]
    pub usage: Box<Usage>,
    /// Why the message ended.
    pub stop_reason: StopReason,
    /// How to fetch the response when `stop_reason` is `deferred`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deferred: Option<Box<DeferredHandle>>,
    /// What went wrong, when `stop_reason` is `error` or `aborted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// The provider's own word for why it stopped (`end_turn`,
    /// `tool_calls`, `STOP`…), when it gave one (pi's `rawStopReason`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_stop_reason: Option<String>,
    /// The provider's own end-of-turn signal, when it sends one (OpenAI
    /// Codex's `end_turn`; pi's `endTurn`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_turn: Option<bool>,
    /// When the message was created.
    #[serde(default)]
    pub timestamp: Timestamp,
}

impl AssistantMessage {
    /// All text parts joined, in order.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for c in &self.content {
            if let AssistantContent::Text(t) = c {
                out.push_str(&t.text);
            }
        }
        out
    }

    /// All thinking parts joined, in order.
    pub fn thinking(&self) -> String {
        let mut out = String::new();
        for c in &self.content {
            if let AssistantContent::Thinking(t) = c {
                out.push_str(&t.thinking);
            }
        }
        out
    }

    /// The tool calls, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|c| match c {
            AssistantContent::ToolCall(t) => Some(t),
            _ => None,
        })
    }
}

/// The result of one tool call, sent back to the model.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultMessage {
    /// The id of the call this answers.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// Text and image parts (a plain JSON string is read as one text part).
    #[serde(deserialize_with = "user_parts")]
    pub content: Vec<UserContent>,
    /// Application data for UIs; never sent to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// Model usage of work the tool did itself (a sub-agent's calls, say):
    /// counted in the session's totals, never part of a model call's usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Box<Usage>>,
    /// The calls this tool made to other tools, bounded (pi's `nestedCalls`);
    /// never sent to a model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nested_calls: Option<Box<NestedToolCalls>>,
    /// True when the tool failed; the content says why.
    #[serde(default)]
    pub is_error: bool,
    /// When the result was created.
    #[serde(default)]
    pub timestamp: Timestamp,
}

impl ToolResultMessage {
    /// A result holding one text part.
    pub fn text(
        tool_call_id: impl Into<String>,
        tool_name: impl Into<String>,
        text: impl Into<String>,
        is_error: bool,
    ) -> Self {
        ToolResultMessage {
            tool_call_id: tool_call_id.into(),
            tool_name: tool_name.into(),
            content: vec![UserContent::text(text)],
            details: None,
            usage: None,
            nested_calls: None,
            is_error,
            timestamp: now_ms(),
        }
    }

    /// All text parts joined with newlines.
    pub fn text_content(&self) -> String {
        let mut parts = Vec::new();
        for c in &self.content {
            if let UserContent::Text(t) = c {
                parts.push(t.text.as_str());
            }
        }
        parts.join("\n")
    }
}

/// One message of a conversation.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "role", rename_all = "camelCase")]
#[non_exhaustive]
pub enum Message {
    /// From the user.
    User(UserMessage),
    /// From the model.
    Assistant(AssistantMessage),
    /// A tool's answer to a call.
    ToolResult(ToolResultMessage),
}

impl Message {
    /// The role name as on the wire.
    pub fn role(&self) -> &'static str {
        match self {
            Message::User(_) => "user",
            Message::Assistant(_) => "assistant",
            Message::ToolResult(_) => "toolResult",
        }
    }

    /// The message's timestamp.
    pub fn timestamp(&self) -> Timestamp {
        match self {
            Message::User(m) => m.timestamp,
            Message::Assistant(m) => m.timestamp,
            Message::ToolResult(m) => m.timestamp,
        }
    }
}

impl From<UserMessage> for Message {
    fn from(m: UserMessage) -> Self {
        Message::User(m)
    }
}

impl From<AssistantMessage> for Message {
    fn from(m: AssistantMessage) -> Self {
        Message::Assistant(m)
    }
}

impl From<ToolResultMessage> for Message {
    fn from(m: ToolResultMessage) -> Self {
        Message::ToolResult(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn assistant_message_matches_pi_schema() {
        let json = json!({
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm", "thinkingSignature": "sig"},
                {"type": "text", "text": "hi"},
                {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a"}}
            ],
            "api": "anthropic-messages",
            "provider": "anthropic",
            "model": "claude",
            "usage": {"input": 1, "output": 2, "cacheRead": 3, "cacheWrite": 4, "totalTokens": 10,
                      "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.0}},
            "stopReason": "toolUse",
            "timestamp": 5
        });
        let m: Message = serde_json::from_value(json.clone()).unwrap();
        let Message::Assistant(a) = &m else {
            panic!("not assistant")
        };
        assert_eq!(a.stop_reason, StopReason::ToolUse);
        assert_eq!(a.usage.cache_write, 4);
        assert_eq!(a.tool_calls().next().unwrap().arguments["path"], "a");
        assert_eq!(serde_json::to_value(&m).unwrap(), json);
    }

    #[test]
    fn user_message_accepts_string_content() {
        let m: Message =
            serde_json::from_value(json!({"role": "user", "content": "hello", "timestamp": 1}))
                .unwrap();
        let Message::User(u) = m else {
            panic!("not user")
        };
        assert_eq!(u.content, vec![UserContent::text("hello")]);
    }

    #[test]
    fn tool_result_round_trips() {
        let json = json!({"role": "toolResult", "toolCallId": "c1", "toolName": "read",
            "content": [{"type": "text", "text": "x"}, {"type": "image", "data": "AA==", "mimeType": "image/png"}],
            "isError": true, "timestamp": 2});
        let m: Message = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(serde_json::to_value(&m).unwrap(), json);
    }
}
