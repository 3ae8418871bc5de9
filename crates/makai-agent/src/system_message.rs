//! [`SystemMessage`]: pi 1.x's record of a change to the prompt and the
//! declared tools (`role: "system"`, `docs/message-types.md`).
//!
//! Replaying a transcript's system messages in order gives the tools added
//! and removed since the run's own ([`declared_tool_changes`]). The loop
//! writes one when a tool declares other tools for the next model call
//! ([`crate::ToolContext::declare_tools`]); a model never reads one as a
//! message.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use makai_ai::{Timestamp, ToolDefinition, now_ms};

use crate::message::{AgentMessage, MessageContent};

/// A tool named by a system message's `toolsRemoved`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolReference {
    /// The tool's name.
    pub name: String,
}

/// A change to the prompt and the declared tools (`role: "system"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SystemMessage {
    /// Instructions it appends (pi writes `""` for none).
    #[serde(default = "no_content")]
    pub content: MessageContent,
    /// Prompt sections it sets, by name (`null` removes one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sections: Option<BTreeMap<String, Option<String>>>,
    /// Tools declared from here on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_added: Option<Vec<ToolDefinition>>,
    /// Tools no longer declared from here on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_removed: Option<Vec<ToolReference>>,
    /// When it was written (Unix ms).
    #[serde(default)]
    pub timestamp: Timestamp,
}

fn no_content() -> MessageContent {
    MessageContent::Text(String::new())
}

impl SystemMessage {
    /// A system message declaring `tools` from here on, stamped now.
    pub fn tools_added(tools: Vec<ToolDefinition>) -> Self {
        SystemMessage {
            content: MessageContent::Text(String::new()),
            sections: None,
            tools_added: Some(tools),
            tools_removed: None,
            timestamp: now_ms(),
        }
    }
}

impl From<SystemMessage> for AgentMessage {
    fn from(m: SystemMessage) -> Self {
        AgentMessage::System(m)
    }
}

/// The names the system messages of `messages` leave declared, in the order
/// they were added: each `toolsAdded` adds, each `toolsRemoved` removes.
pub fn declared_tool_changes(messages: &[AgentMessage]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for m in messages {
        let AgentMessage::System(s) = m else {
            continue;
        };
        for t in s.tools_added.iter().flatten() {
            if !names.contains(&t.name) {
                names.push(t.name.clone());
            }
        }
        for t in s.tools_removed.iter().flatten() {
            names.retain(|n| *n != t.name);
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> AgentMessage {
        match serde_json::from_str(json) {
            Ok(m) => m,
            Err(e) => panic!("{json}: {e}"),
        }
    }

    #[test]
    fn pis_system_messages_read_in_every_shape_and_replay_in_order() {
        let first = parse(
            r#"{"role":"system","content":"","sections":{"preamble":"You are pi.","cwd":"/p"},"toolsAdded":[{"name":"read","description":"Read","parameters":{}},{"name":"mcp__s__q","label":"q","parameters":{"type":"object"}}],"timestamp":1}"#,
        );
        let later = parse(
            r#"{"role":"system","content":[{"type":"text","text":"Also be brief."}],"sections":{"cwd":null},"toolsRemoved":[{"name":"read"}],"timestamp":2}"#,
        );
        let bare = parse(r#"{"role":"system","timestamp":3}"#);
        let AgentMessage::System(s) = &later else {
            panic!("{later:?}");
        };
        assert_eq!(later.text(), "Also be brief.");
        assert_eq!(s.sections.as_ref().unwrap()["cwd"], None);
        assert_eq!(bare.role(), "system");
        assert!(first.to_llm().is_none());
        assert_eq!(
            declared_tool_changes(&[first.clone(), later, bare]),
            ["mcp__s__q"]
        );
        assert_eq!(declared_tool_changes(&[first]), ["read", "mcp__s__q"]);
    }
}
