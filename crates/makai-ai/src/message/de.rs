//! Tag-first deserialization of messages and content parts (see
//! [`crate::tagged`]): a session of thousands of messages is read without
//! serde buffering each object before looking at its `role` or `type`.

use serde::de::{MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use super::{
    AssistantContent, AssistantMessage, ImageContent, Message, TextContent, ThinkingContent,
    ToolCall, ToolResultMessage, UserContent, UserMessage,
};
use crate::tagged::{TagDispatch, deserialize_tagged, tag_of, variant, variant_from_object};

impl TagDispatch for UserContent {
    const TAG: &'static str = "type";
    const EXPECTING: &'static str = "a text or image part";

    fn from_rest<'de, M: MapAccess<'de>>(tag: &str, rest: M) -> Result<Self, M::Error> {
        match tag {
            "text" => variant(rest).map(UserContent::Text),
            "image" => variant(rest).map(UserContent::Image),
            other => Err(serde::de::Error::unknown_variant(other, &["text", "image"])),
        }
    }

    fn from_object<E: serde::de::Error>(object: Map<String, Value>) -> Result<Self, E> {
        match tag_of::<E>(&object, "type")? {
            "text" => variant_from_object::<TextContent, E>(object).map(UserContent::Text),
            "image" => variant_from_object::<ImageContent, E>(object).map(UserContent::Image),
            other => Err(E::unknown_variant(other, &["text", "image"])),
        }
    }
}

impl<'de> Deserialize<'de> for UserContent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_tagged(d)
    }
}

const ASSISTANT_PARTS: &[&str] = &["text", "thinking", "toolCall"];

impl TagDispatch for AssistantContent {
    const TAG: &'static str = "type";
    const EXPECTING: &'static str = "a text, thinking or toolCall part";

    fn from_rest<'de, M: MapAccess<'de>>(tag: &str, rest: M) -> Result<Self, M::Error> {
        match tag {
            "text" => variant(rest).map(AssistantContent::Text),
            "thinking" => variant(rest).map(AssistantContent::Thinking),
            "toolCall" => variant(rest).map(AssistantContent::ToolCall),
            other => Err(serde::de::Error::unknown_variant(other, ASSISTANT_PARTS)),
        }
    }

    fn from_object<E: serde::de::Error>(object: Map<String, Value>) -> Result<Self, E> {
        match tag_of::<E>(&object, "type")? {
            "text" => variant_from_object::<TextContent, E>(object).map(AssistantContent::Text),
            "thinking" => {
                variant_from_object::<ThinkingContent, E>(object).map(AssistantContent::Thinking)
            }
            "toolCall" => {
                variant_from_object::<ToolCall, E>(object).map(AssistantContent::ToolCall)
            }
            other => Err(E::unknown_variant(other, ASSISTANT_PARTS)),
        }
    }
}

impl<'de> Deserialize<'de> for AssistantContent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_tagged(d)
    }
}

/// The roles of [`Message`].
pub(crate) const LLM_ROLES: &[&str] = &["user", "assistant", "toolResult"];

impl TagDispatch for Message {
    const TAG: &'static str = "role";
    const EXPECTING: &'static str = "a message object";

    fn from_rest<'de, M: MapAccess<'de>>(role: &str, rest: M) -> Result<Self, M::Error> {
        match role {
            "user" => variant::<UserMessage, M>(rest).map(Message::User),
            "assistant" => variant::<AssistantMessage, M>(rest).map(Message::Assistant),
            "toolResult" => variant::<ToolResultMessage, M>(rest).map(Message::ToolResult),
            other => Err(serde::de::Error::unknown_variant(other, LLM_ROLES)),
        }
    }

    fn from_object<E: serde::de::Error>(object: Map<String, Value>) -> Result<Self, E> {
        match tag_of::<E>(&object, "role")? {
            "user" => variant_from_object::<UserMessage, E>(object).map(Message::User),
            "assistant" => {
                variant_from_object::<AssistantMessage, E>(object).map(Message::Assistant)
            }
            "toolResult" => {
                variant_from_object::<ToolResultMessage, E>(object).map(Message::ToolResult)
            }
            other => Err(E::unknown_variant(other, LLM_ROLES)),
        }
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_tagged(d)
    }
}

/// Reads user content (pi's `string | (TextContent | ImageContent)[]`): a
/// plain string becomes one text part. For `#[serde(deserialize_with)]`.
pub fn user_parts<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<UserContent>, D::Error> {
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
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(1).min(64));
            while let Some(part) = seq.next_element()? {
                out.push(part);
            }
            Ok(out)
        }
    }
    d.deserialize_any(V)
}

/// Reads an assistant message's content list. For `#[serde(deserialize_with)]`.
pub fn assistant_parts<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<AssistantContent>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Vec<AssistantContent>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a list of content parts")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(2).min(64));
            while let Some(part) = seq.next_element()? {
                out.push(part);
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

    /// Reads `v` from text with its keys in the written order and with the tag
    /// moved last (the fallback path); both must agree.
    fn both_orders<T: for<'a> Deserialize<'a> + PartialEq + std::fmt::Debug>(
        v: &Value,
        tag: &str,
    ) -> Result<T, String> {
        let first = serde_json::from_str::<T>(&v.to_string()).map_err(|e| e.to_string());
        let mut object = v.as_object().cloned().unwrap_or_default();
        let moved = object.remove(tag);
        if let Some(t) = moved {
            object.insert(tag.to_string(), t);
        }
        let last = serde_json::from_str::<T>(&Value::Object(object).to_string())
            .map_err(|e| e.to_string());
        match (&first, &last) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{v}"),
            (Err(_), Err(_)) => {}
            _ => panic!("key orders disagree on {v}: {first:?} vs {last:?}"),
        }
        first
    }

    #[test]
    fn every_part_and_role_reads_in_any_key_order() {
        let user = json!({"role": "user", "content": [
            {"type": "text", "text": "a", "textSignature": "s"},
            {"mimeType": "image/png", "type": "image", "data": "AA=="}], "timestamp": 1});
        let Message::User(u) = both_orders::<Message>(&user, "role").unwrap() else {
            panic!("not a user message")
        };
        assert_eq!(u.content[1], UserContent::image("AA==", "image/png"));
        let assistant = json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "t", "thinkingSignature": "x", "redacted": true},
            {"type": "text", "text": "hi"},
            {"type": "toolCall", "id": "c", "name": "n", "arguments": "oops", "argumentsError": "bad", "rawArguments": "{"},
            {"name": "late", "id": "d", "arguments": {"a": 1}, "type": "toolCall", "thoughtSignature": "g"}],
            "api": "a", "provider": "p", "model": "m", "responseId": "r",
            "usage": {"input": 1, "output": 2, "cacheRead": 3, "cacheWrite": 4, "totalTokens": 10,
                      "cost": {"input": 0.5, "output": 0.25, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.75}},
            "stopReason": "error", "errorMessage": "e", "timestamp": 9});
        let Message::Assistant(a) = both_orders::<Message>(&assistant, "role").unwrap() else {
            panic!("not an assistant message")
        };
        assert_eq!(a.content.len(), 4);
        assert_eq!(a.tool_calls().nth(1).map(|c| c.name.as_str()), Some("late"));
        assert!(
            a.tool_calls()
                .next()
                .is_some_and(|c| c.arguments.is_empty())
        );
        let tool = json!({"role": "toolResult", "toolCallId": "c", "toolName": "read", "content": "x",
            "isError": true, "details": {"k": [1]}, "timestamp": 4});
        let Message::ToolResult(r) = both_orders::<Message>(&tool, "role").unwrap() else {
            panic!("not a tool result")
        };
        assert_eq!(r.content, vec![UserContent::text("x")]);
    }

    #[test]
    fn bad_parts_and_roles_are_errors_naming_what_was_wrong() {
        let cases = [
            (
                json!({"role": "user", "content": [{"type": "video"}]}),
                "video",
            ),
            (json!({"role": "user", "timestamp": 3}), "content"),
            (json!({"role": "system", "content": "x"}), "system"),
            (
                json!({"role": "assistant", "content": [{"type": "image", "data": "x", "mimeType": "y"}],
                       "api": "a", "provider": "p", "model": "m", "stopReason": "stop"}),
                "image",
            ),
            (
                json!({"role": "toolResult", "toolName": "read", "content": []}),
                "toolCallId",
            ),
            (json!({"content": "x"}), "role"),
        ];
        for (v, needle) in cases {
            let e = both_orders::<Message>(&v, "role").unwrap_err();
            assert!(e.contains(needle), "{v}: {e}");
        }
    }
}
