//! The conversation as Anthropic turns.
//!
//! Anthropic has two roles. Tool results travel as `tool_result` blocks in a user
//! turn; consecutive turns of one role are merged (the API requires alternation),
//! so a run of tool results, or tool results followed by a user message, becomes
//! one user turn with the `tool_result` blocks first. Empty and whitespace-only
//! text blocks are dropped (the API rejects them) and turns left empty vanish.

use serde::Serialize;
use serde_json::{Map, Value};
use std::borrow::Cow;

use crate::message::{
    AssistantContent, AssistantMessage, ImageContent, Message, ThinkingContent, ToolResultMessage,
    UserContent,
};

/// One Anthropic turn, borrowing from the messages it was made of.
#[derive(Debug, Serialize)]
pub(super) struct Turn<'a> {
    /// `user` or `assistant`.
    pub role: &'static str,
    /// Content blocks.
    pub content: Vec<Block<'a>>,
}

/// A content block as the Messages API reads it.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Block<'a> {
    Text {
        text: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<&'a Value>,
    },
    Image {
        source: ImageSource<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<&'a Value>,
    },
    ToolResult {
        tool_use_id: &'a str,
        is_error: bool,
        #[serde(skip_serializing_if = "<[_]>::is_empty")]
        content: Vec<Block<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<&'a Value>,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: &'a Map<String, Value>,
    },
}

/// A base64 image.
#[derive(Debug, Serialize)]
pub(super) struct ImageSource<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    media_type: &'a str,
    data: &'a str,
}

impl<'a> Block<'a> {
    /// A text block: `None` for empty or whitespace-only text (the API rejects it).
    pub(super) fn text(text: &'a str) -> Option<Self> {
        (!text.trim().is_empty()).then_some(Block::Text {
            text,
            cache_control: None,
        })
    }

    /// Marks the block as a prompt-cache breakpoint (blocks of user turns only:
    /// text, image and tool results).
    pub(super) fn set_cache_control(&mut self, cache: &'a Value) {
        match self {
            Block::Text { cache_control, .. }
            | Block::Image { cache_control, .. }
            | Block::ToolResult { cache_control, .. } => *cache_control = Some(cache),
            Block::Thinking { .. } | Block::RedactedThinking { .. } | Block::ToolUse { .. } => {}
        }
    }
}

/// Converts messages already passed through [`crate::transform::prepare_messages`].
/// The images of a failed tool result go after the turn's tool results
/// (the API refuses images in an error result; pi's #10794).
pub(super) fn to_turns<'a>(messages: &'a [Cow<'_, Message>]) -> Vec<Turn<'a>> {
    let mut turns: Vec<Turn<'a>> = Vec::with_capacity(messages.len());
    let mut deferred: Vec<Block<'a>> = Vec::new();
    for message in messages {
        if !matches!(&**message, Message::ToolResult(_)) && !deferred.is_empty() {
            push(&mut turns, "user", std::mem::take(&mut deferred));
        }
        let (role, content) = match &**message {
            Message::User(u) => ("user", user_blocks(&u.content)),
            Message::Assistant(a) => ("assistant", assistant_blocks(a)),
            Message::ToolResult(r) => ("user", vec![tool_result_block(r, &mut deferred)]),
        };
        if content.is_empty() {
            continue;
        }
        push(&mut turns, role, content);
    }
    if !deferred.is_empty() {
        push(&mut turns, "user", deferred);
    }
    turns
}

/// Appends to the last turn when it has the same role.
fn push<'a>(turns: &mut Vec<Turn<'a>>, role: &'static str, content: Vec<Block<'a>>) {
    match turns.last_mut() {
        Some(last) if last.role == role => last.content.extend(content),
        _ => turns.push(Turn { role, content }),
    }
}

fn image_block(image: &ImageContent) -> Block<'_> {
    Block::Image {
        source: ImageSource {
            kind: "base64",
            media_type: &image.mime_type,
            data: &image.data,
        },
        cache_control: None,
    }
}

fn user_blocks(content: &[UserContent]) -> Vec<Block<'_>> {
    content
        .iter()
        .filter_map(|c| match c {
            UserContent::Text(t) => Block::text(&t.text),
            UserContent::Image(i) => Some(image_block(i)),
        })
        .collect()
}

/// A tool result's block; a failed one's images go to `deferred` instead,
/// its text saying so.
fn tool_result_block<'a>(
    result: &'a ToolResultMessage,
    deferred: &mut Vec<Block<'a>>,
) -> Block<'a> {
    let mut content = user_blocks(&result.content);
    if result.is_error && content.iter().any(|b| matches!(b, Block::Image { .. })) {
        let (images, mut text): (Vec<Block<'a>>, Vec<Block<'a>>) = content
            .into_iter()
            .partition(|b| matches!(b, Block::Image { .. }));
        deferred.extend(images);
        text.extend(Block::text(IMAGES_AFTER));
        content = text;
    }
    Block::ToolResult {
        tool_use_id: &result.tool_call_id,
        is_error: result.is_error,
        content,
        cache_control: None,
    }
}

/// What a failed tool result whose images were moved says.
pub(crate) const IMAGES_AFTER: &str =
    "(the tool returned the image(s) attached after the tool results)";

fn thinking_block(t: &ThinkingContent) -> Option<Block<'_>> {
    let signature = t.thinking_signature.as_deref().filter(|s| !s.is_empty());
    match signature {
        Some(data) if t.redacted => Some(Block::RedactedThinking { data }),
        // A redacted block without its payload cannot be replayed.
        None if t.redacted => None,
        Some(signature) => Some(Block::Thinking {
            thinking: &t.thinking,
            signature,
        }),
        // Without a signature the API would reject the block: send the reasoning as text.
        None => Block::text(&t.thinking),
    }
}

fn assistant_blocks(message: &AssistantMessage) -> Vec<Block<'_>> {
    message
        .content
        .iter()
        .filter_map(|c| match c {
            AssistantContent::Text(t) => Block::text(&t.text),
            AssistantContent::Thinking(t) => thinking_block(t),
            AssistantContent::ToolCall(call) => Some(Block::ToolUse {
                id: &call.id,
                name: &call.name,
                input: &call.arguments,
            }),
        })
        .collect()
}
