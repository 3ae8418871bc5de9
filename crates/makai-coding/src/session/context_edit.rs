//! `context_edit` entries: an append-only edit of one earlier message in
//! future model context (pi 1.x, `docs/session-format.md`). The edited entry
//! stays unchanged in the file; [`super::SessionTree::context_at`] applies the
//! latest edit of each target on the branch.

use serde::{Deserialize, Serialize};

use makai_agent::MessageContent;
use makai_ai::{AssistantContent, TextContent, UserContent};

/// An append-only edit of one earlier message in future model context
/// (`type: "context_edit"`). The target entry stays as it is in the file, UIs,
/// exports and accounting; only the context rebuilt on a branch holding this
/// entry changes. The latest edit of a target on the branch wins.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextEditEntry {
    /// Entry id.
    pub id: String,
    /// Parent entry id.
    pub parent_id: Option<String>,
    /// When (ISO 8601).
    pub timestamp: String,
    /// The edited entry: a user, assistant, tool-result or custom-message entry.
    pub target_id: String,
    /// `None` (`null`) leaves the target out of the context; otherwise its new
    /// content (the role and other fields stay).
    pub replacement: Option<ContentReplacement>,
}

/// The new content of a [`ContextEditEntry`]: a string or content blocks, as
/// the target's role allows (kept in the form it was read).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ContentReplacement {
    /// A plain string (one text block for roles that need blocks).
    Text(String),
    /// Content blocks.
    Blocks(Vec<ReplacementBlock>),
}

/// One block of a [`ContentReplacement`]: any block a message can hold.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ReplacementBlock {
    /// Text or an image.
    User(UserContent),
    /// Thinking or a tool call.
    Assistant(AssistantContent),
}

impl ContentReplacement {
    /// The replacement as user/tool-result parts (thinking and tool calls dropped).
    pub fn user_parts(&self) -> Vec<UserContent> {
        match self {
            ContentReplacement::Text(t) => vec![UserContent::text(t.clone())],
            ContentReplacement::Blocks(blocks) => blocks
                .iter()
                .filter_map(|b| match b {
                    ReplacementBlock::User(u) => Some(u.clone()),
                    ReplacementBlock::Assistant(AssistantContent::Text(t)) => {
                        Some(UserContent::Text(t.clone()))
                    }
                    ReplacementBlock::Assistant(_) => None,
                })
                .collect(),
        }
    }

    /// The replacement as assistant parts (images dropped).
    pub fn assistant_parts(&self) -> Vec<AssistantContent> {
        match self {
            ContentReplacement::Text(t) => vec![AssistantContent::Text(TextContent {
                text: t.clone(),
                text_signature: None,
            })],
            ContentReplacement::Blocks(blocks) => blocks
                .iter()
                .filter_map(|b| match b {
                    ReplacementBlock::Assistant(a) => Some(a.clone()),
                    ReplacementBlock::User(UserContent::Text(t)) => {
                        Some(AssistantContent::Text(t.clone()))
                    }
                    ReplacementBlock::User(_) => None,
                })
                .collect(),
        }
    }

    /// The replacement as custom-message content (kept a string when it is one).
    pub fn message_content(&self) -> MessageContent {
        match self {
            ContentReplacement::Text(t) => MessageContent::Text(t.clone()),
            ContentReplacement::Blocks(_) => MessageContent::Parts(self.user_parts()),
        }
    }
}
