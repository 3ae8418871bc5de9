//! Faster deserialization of the LLM messages stored in sessions.
//!
//! makai-ai's message types read their content lists through serde's
//! buffering (untagged string-or-parts, internally tagged parts), which copies
//! every string two or three times. Sessions load thousands of messages, so
//! here the same JSON is read with the tag-first reader of [`super::tagged`].
//!
//! The mirrors use serde's `remote` derive: it builds the makai-ai structs
//! with struct literals, so a field added to them upstream is a compile error
//! here rather than silently dropped data. A test checks both readers agree.

use makai_ai::{
    AssistantContent, AssistantMessage, ImageContent, StopReason, TextContent, ThinkingContent,
    Timestamp, ToolCall, ToolResultMessage, Usage, UserContent, UserMessage,
};
use serde::de::{MapAccess, SeqAccess, Visitor, value::MapAccessDeserializer};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use super::tagged::{TagDispatch, deserialize_tagged};

#[derive(Deserialize)]
#[serde(remote = "UserMessage", rename_all = "camelCase")]
pub(crate) struct UserMessageDef {
    #[serde(deserialize_with = "user_parts")]
    content: Vec<UserContent>,
    #[serde(default)]
    timestamp: Timestamp,
}

#[derive(Deserialize)]
#[serde(remote = "AssistantMessage", rename_all = "camelCase")]
pub(crate) struct AssistantMessageDef {
    #[serde(deserialize_with = "assistant_parts")]
    content: Vec<AssistantContent>,
    api: String,
    provider: String,
    model: String,
    #[serde(default)]
    response_id: Option<String>,
    #[serde(default)]
    usage: Usage,
    stop_reason: StopReason,
    #[serde(default)]
    error_message: Option<String>,
    #[serde(default)]
    timestamp: Timestamp,
}

#[derive(Deserialize)]
#[serde(remote = "ToolResultMessage", rename_all = "camelCase")]
pub(crate) struct ToolResultMessageDef {
    tool_call_id: String,
    tool_name: String,
    #[serde(deserialize_with = "user_parts")]
    content: Vec<UserContent>,
    #[serde(default)]
    details: Option<Value>,
    #[serde(default)]
    is_error: bool,
    #[serde(default)]
    timestamp: Timestamp,
}

struct UserPart(UserContent);

impl TagDispatch for UserPart {
    const TAG: &'static str = "type";
    const EXPECTING: &'static str = "a text or image part";

    fn from_rest<'de, M: MapAccess<'de>>(tag: &str, rest: M) -> Result<Self, M::Error> {
        let de = MapAccessDeserializer::new(rest);
        match tag {
            "text" => TextContent::deserialize(de).map(|t| UserPart(UserContent::Text(t))),
            "image" => ImageContent::deserialize(de).map(|i| UserPart(UserContent::Image(i))),
            other => Err(<M::Error as serde::de::Error>::unknown_variant(
                other,
                &["text", "image"],
            )),
        }
    }

    fn from_object<E: serde::de::Error>(object: Map<String, Value>) -> Result<Self, E> {
        serde_json::from_value(Value::Object(object))
            .map(UserPart)
            .map_err(E::custom)
    }
}

impl<'de> Deserialize<'de> for UserPart {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_tagged(d)
    }
}

struct AssistantPart(AssistantContent);

impl TagDispatch for AssistantPart {
    const TAG: &'static str = "type";
    const EXPECTING: &'static str = "a text, thinking or toolCall part";

    fn from_rest<'de, M: MapAccess<'de>>(tag: &str, rest: M) -> Result<Self, M::Error> {
        let de = MapAccessDeserializer::new(rest);
        let part = match tag {
            "text" => AssistantContent::Text(TextContent::deserialize(de)?),
            "thinking" => AssistantContent::Thinking(ThinkingContent::deserialize(de)?),
            "toolCall" => AssistantContent::ToolCall(ToolCall::deserialize(de)?),
            other => {
                return Err(<M::Error as serde::de::Error>::unknown_variant(
                    other,
                    &["text", "thinking", "toolCall"],
                ));
            }
        };
        Ok(AssistantPart(part))
    }

    fn from_object<E: serde::de::Error>(object: Map<String, Value>) -> Result<Self, E> {
        serde_json::from_value(Value::Object(object))
            .map(AssistantPart)
            .map_err(E::custom)
    }
}

impl<'de> Deserialize<'de> for AssistantPart {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_tagged(d)
    }
}

/// A string (one text part) or a list of text and image parts.
fn user_parts<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<UserContent>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Vec<UserContent>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a string or a list of content parts")
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(vec![UserContent::text(v)])
        }
        fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Self::Value, E> {
            Ok(vec![UserContent::text(v)])
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(1));
            while let Some(UserPart(p)) = seq.next_element()? {
                out.push(p);
            }
            Ok(out)
        }
    }
    d.deserialize_any(V)
}

fn assistant_parts<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<AssistantContent>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Vec<AssistantContent>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a list of content parts")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(2));
            while let Some(AssistantPart(p)) = seq.next_element()? {
                out.push(p);
            }
            Ok(out)
        }
    }
    d.deserialize_seq(V)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn both<T: PartialEq + std::fmt::Debug>(
        v: &Value,
        fast: impl Fn(&str) -> Result<T, serde_json::Error>,
        slow: impl Fn(&str) -> Result<T, serde_json::Error>,
    ) {
        let text = v.to_string();
        let (a, b) = (fast(&text), slow(&text));
        match (&a, &b) {
            (Ok(x), Ok(y)) => assert_eq!(x, y, "{text}"),
            (Err(_), Err(_)) => {}
            _ => panic!("readers disagree on {text}: {a:?} vs {b:?}"),
        }
    }

    #[test]
    fn fast_readers_agree_with_makai_ai() {
        let user = [
            json!({"content": "plain", "timestamp": 1}),
            json!({"content": [{"type": "text", "text": "a", "textSignature": "s"},
                               {"mimeType": "image/png", "type": "image", "data": "AA=="}]}),
            json!({"content": [{"type": "video"}]}),
            json!({"timestamp": 3}),
        ];
        for v in &user {
            both(
                v,
                |t: &str| UserMessageDef::deserialize(&mut serde_json::Deserializer::from_str(t)),
                |t: &str| serde_json::from_str::<UserMessage>(t),
            );
        }
        let assistant = [
            json!({"content": [{"type": "thinking", "thinking": "t", "thinkingSignature": "x", "redacted": true},
                               {"type": "text", "text": "hi"},
                               {"type": "toolCall", "id": "c", "name": "n", "arguments": "oops", "argumentsError": "bad", "rawArguments": "{"},
                               {"name": "late", "id": "d", "arguments": {"a": 1}, "type": "toolCall", "thoughtSignature": "g"}],
                   "api": "a", "provider": "p", "model": "m", "responseId": "r",
                   "usage": {"input": 1, "output": 2, "cacheRead": 3, "cacheWrite": 4, "totalTokens": 10,
                             "cost": {"input": 0.5, "output": 0.25, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.75}},
                   "stopReason": "error", "errorMessage": "e", "timestamp": 9}),
            json!({"content": [], "api": "a", "provider": "p", "model": "m", "stopReason": "stop"}),
            json!({"content": [], "provider": "p", "model": "m", "stopReason": "stop"}),
            json!({"content": [{"type": "image", "data": "x", "mimeType": "y"}], "api": "a", "provider": "p", "model": "m", "stopReason": "stop"}),
        ];
        for v in &assistant {
            both(
                v,
                |t: &str| {
                    AssistantMessageDef::deserialize(&mut serde_json::Deserializer::from_str(t))
                },
                |t: &str| serde_json::from_str::<AssistantMessage>(t),
            );
        }
        let tool = [
            json!({"toolCallId": "c", "toolName": "read", "content": "x", "isError": true, "details": {"k": [1]}, "timestamp": 4}),
            json!({"toolCallId": "c", "toolName": "read", "content": [{"type": "image", "data": "d", "mimeType": "m"}]}),
            json!({"toolName": "read", "content": []}),
        ];
        for v in &tool {
            both(
                v,
                |t: &str| {
                    ToolResultMessageDef::deserialize(&mut serde_json::Deserializer::from_str(t))
                },
                |t: &str| serde_json::from_str::<ToolResultMessage>(t),
            );
        }
    }
}
