//! Keeping the transcript valid: tool calls left without results, and loop detection.

use std::collections::HashSet;

use serde_json::Value;

use makai_ai::{Message, ToolResultMessage};

use crate::message::AgentMessage;

/// The result text given to a tool call that never got a result (e.g. after a crash).
pub const INTERRUPTED_TOOL_TEXT: &str =
    "No result: this tool call was interrupted before it finished, so it has no output.";

/// Synthetic error results for the calls of the transcript's last assistant
/// message that have no result yet (only when nothing but tool results follow it).
pub(crate) fn tail_orphan_results(messages: &[AgentMessage]) -> Vec<AgentMessage> {
    let Some(pos) = messages.iter().rposition(|m| m.is_assistant()) else {
        return Vec::new();
    };
    if messages[pos + 1..]
        .iter()
        .any(|m| m.as_tool_result().is_none())
    {
        return Vec::new();
    }
    let Some(assistant) = messages[pos].as_assistant() else {
        return Vec::new();
    };
    let answered: HashSet<&str> = messages[pos + 1..]
        .iter()
        .filter_map(|m| m.as_tool_result().map(|r| r.tool_call_id.as_str()))
        .collect();
    assistant
        .tool_calls()
        .filter(|c| !answered.contains(c.id.as_str()))
        .map(|c| ToolResultMessage::text(&c.id, &c.name, INTERRUPTED_TOOL_TEXT, true).into())
        .collect()
}

/// Inserts a synthetic error result for every call in `messages` that is not
/// answered before the next user or assistant message.
pub(crate) fn answer_orphans(messages: &mut Vec<Message>) {
    let mut pending: Vec<(String, String)> = Vec::new();
    let mut i = 0;
    while i <= messages.len() {
        let boundary = match messages.get(i) {
            None | Some(Message::User(_)) | Some(Message::Assistant(_)) => true,
            Some(Message::ToolResult(r)) => {
                pending.retain(|(id, _)| *id != r.tool_call_id);
                false
            }
            Some(_) => false,
        };
        if boundary {
            let n = pending.len();
            for (offset, (id, name)) in pending.drain(..).enumerate() {
                messages.insert(
                    i + offset,
                    Message::ToolResult(ToolResultMessage::text(
                        id,
                        name,
                        INTERRUPTED_TOOL_TEXT,
                        true,
                    )),
                );
            }
            i += n;
            if let Some(Message::Assistant(a)) = messages.get(i) {
                pending = a
                    .tool_calls()
                    .map(|c| (c.id.clone(), c.name.clone()))
                    .collect();
            }
        }
        i += 1;
    }
}

/// Counts identical consecutive tool calls (same name, same arguments).
#[derive(Debug, Default)]
pub(crate) struct LoopTracker {
    last: Option<String>,
    count: u32,
}

impl LoopTracker {
    /// Records a call; returns how many identical calls in a row there now are.
    pub(crate) fn observe(&mut self, name: &str, args: &Value) -> u32 {
        let mut key = String::with_capacity(name.len() + 64);
        key.push_str(name);
        key.push('\0');
        canonical(args, &mut key);
        if self.last.as_deref() == Some(key.as_str()) {
            self.count += 1;
        } else {
            self.last = Some(key);
            self.count = 1;
        }
        self.count
    }
}

/// JSON with object keys sorted, so argument order does not matter.
fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (n, k) in keys.into_iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                if let Some(v) = map.get(k) {
                    canonical(v, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use makai_ai::{AssistantContent, AssistantMessage, ToolCall, UserMessage};
    use serde_json::json;

    fn assistant(ids: &[&str]) -> AssistantMessage {
        AssistantMessage {
            content: ids
                .iter()
                .map(|id| AssistantContent::ToolCall(ToolCall::new(*id, "t", Default::default())))
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn tail_orphans_are_answered() {
        let msgs: Vec<AgentMessage> = vec![
            AgentMessage::user("x"),
            assistant(&["a", "b"]).into(),
            ToolResultMessage::text("a", "t", "ok", false).into(),
        ];
        let fixes = tail_orphan_results(&msgs);
        assert_eq!(fixes.len(), 1);
        assert_eq!(fixes[0].as_tool_result().unwrap().tool_call_id, "b");
        assert!(fixes[0].as_tool_result().unwrap().is_error);
        assert!(tail_orphan_results(&msgs[..1]).is_empty());
    }

    #[test]
    fn orphans_in_the_middle_get_results_before_the_next_message() {
        let mut msgs = vec![
            Message::Assistant(assistant(&["a", "b"])),
            Message::ToolResult(ToolResultMessage::text("b", "t", "ok", false)),
            Message::User(UserMessage::text("next")),
            Message::Assistant(assistant(&["c"])),
        ];
        answer_orphans(&mut msgs);
        let roles: Vec<_> = msgs
            .iter()
            .map(|m| match m {
                Message::ToolResult(r) => format!("result:{}", r.tool_call_id),
                other => other.role().to_string(),
            })
            .collect();
        assert_eq!(
            roles,
            [
                "assistant",
                "result:b",
                "result:a",
                "user",
                "assistant",
                "result:c"
            ]
        );
    }

    #[test]
    fn loop_tracker_ignores_key_order() {
        let mut t = LoopTracker::default();
        assert_eq!(
            t.observe("read", &json!({"a": 1, "b": [1, {"y": 2, "x": 1}]})),
            1
        );
        assert_eq!(
            t.observe("read", &json!({"b": [1, {"x": 1, "y": 2}], "a": 1})),
            2
        );
        assert_eq!(t.observe("read", &json!({"a": 2})), 1);
        assert_eq!(t.observe("write", &json!({"a": 2})), 1);
    }
}
