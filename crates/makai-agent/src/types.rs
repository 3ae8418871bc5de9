//! The context a run works on and the queue delivery modes.

use serde::{Deserialize, Serialize};

use crate::message::AgentMessage;
use crate::tool::ToolSet;

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
    fn queue_mode_names_match_pi() {
        assert_eq!(
            serde_json::to_value(QueueMode::OneAtATime).unwrap(),
            json!("one-at-a-time")
        );
    }
}
