//! Between the agent's messages and the session file's messages, and the agent
//! hooks of a session (LLM conversion of pi's extra roles, per-call API keys).

use async_trait::async_trait;
use serde_json::Value;

use makai_agent::{AgentHooks, AgentMessage, default_convert_to_llm};
use makai_ai::{ApiKey, Message};
use makai_coding::session::AgentMessage as StoredMessage;

use crate::auth::KeyResolver;

/// The agent message as stored in a session file.
pub fn to_stored(m: &AgentMessage) -> Option<StoredMessage> {
    match m {
        AgentMessage::Llm(l) => Some(l.clone().into()),
        other => serde_json::to_value(other)
            .ok()
            .and_then(|v| serde_json::from_value(v).ok()),
    }
}

/// A stored message as the agent's message.
pub fn from_stored(m: &StoredMessage) -> Option<AgentMessage> {
    match m {
        StoredMessage::User(u) => Some(AgentMessage::Llm(Message::User(u.clone()))),
        StoredMessage::Assistant(a) => Some(AgentMessage::Llm(Message::Assistant(a.clone()))),
        StoredMessage::ToolResult(r) => Some(AgentMessage::Llm(Message::ToolResult(r.clone()))),
        other => serde_json::to_value(other)
            .ok()
            .and_then(|v| serde_json::from_value(v).ok()),
    }
}

/// Stored messages as agent messages (unconvertible ones are skipped).
pub fn from_stored_all(messages: &[StoredMessage]) -> Vec<AgentMessage> {
    messages.iter().filter_map(from_stored).collect()
}

/// The text parts of a user message content value (string or parts), joined.
pub fn user_text(content: &[makai_ai::UserContent]) -> String {
    content
        .iter()
        .filter_map(|c| match c {
            makai_ai::UserContent::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect()
}

/// The hooks every session run uses.
pub struct SessionHooks {
    /// Resolves keys before each model call.
    pub keys: KeyResolver,
}

#[async_trait]
impl AgentHooks for SessionHooks {
    fn convert_to_llm(&self, messages: &[AgentMessage]) -> Vec<Message> {
        let mut out = Vec::with_capacity(messages.len());
        for m in messages {
            match m {
                AgentMessage::Other(v) => {
                    if let Some(l) = other_to_llm(v) {
                        out.push(l);
                    }
                }
                _ => out.extend(default_convert_to_llm(std::slice::from_ref(m))),
            }
        }
        out
    }

    async fn get_api_key(&self, provider: &str) -> Option<ApiKey> {
        match self.keys.resolve(provider).await {
            Ok(found) => found.map(|(k, _)| k),
            Err(e) => {
                eprintln!("makai: {e}");
                None
            }
        }
    }
}

/// pi's extra roles (`bashExecution`, `branchSummary`, ...) as the model sees them.
fn other_to_llm(v: &Value) -> Option<Message> {
    serde_json::from_value::<StoredMessage>(v.clone())
        .ok()
        .and_then(|m| m.to_llm())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bash_executions_reach_the_model_as_user_text() {
        let hooks = SessionHooks {
            keys: KeyResolver::new(None, None, None),
        };
        let bash: AgentMessage = serde_json::from_value(json!({"role": "bashExecution",
            "command": "ls", "output": "a.txt", "exitCode": 0, "cancelled": false,
            "truncated": false, "timestamp": 1}))
        .unwrap();
        let out = hooks.convert_to_llm(&[AgentMessage::user("hi"), bash.clone()]);
        assert_eq!(out.len(), 2);
        let Message::User(u) = &out[1] else { panic!() };
        assert!(user_text(&u.content).contains("ls"));
        let stored = to_stored(&bash).unwrap();
        assert_eq!(stored.role(), "bashExecution");
        assert_eq!(from_stored(&stored).unwrap(), bash);
    }
}
