//! The conversation as Anthropic turns.
//!
//! Anthropic has two roles. Tool results travel as `tool_result` blocks in a user
//! turn; consecutive turns of one role are merged (the API requires alternation),
//! so a run of tool results, or tool results followed by a user message, becomes
//! one user turn with the `tool_result` blocks first. Empty and whitespace-only
//! text blocks are dropped (the API rejects them) and turns left empty vanish.

use serde_json::{Value, json};

use crate::message::{
    AssistantContent, AssistantMessage, ImageContent, Message, ThinkingContent, ToolResultMessage,
    UserContent,
};

/// One Anthropic turn before serialization.
#[derive(Debug)]
pub(super) struct Turn {
    /// `user` or `assistant`.
    pub role: &'static str,
    /// Content blocks.
    pub content: Vec<Value>,
}

/// Converts messages already passed through [`crate::transform::prepare_messages`].
pub(super) fn to_turns(messages: &[Message]) -> Vec<Turn> {
    let mut turns: Vec<Turn> = Vec::with_capacity(messages.len());
    for message in messages {
        let (role, content) = match message {
            Message::User(u) => ("user", user_blocks(&u.content)),
            Message::Assistant(a) => ("assistant", assistant_blocks(a)),
            Message::ToolResult(r) => ("user", vec![tool_result_block(r)]),
        };
        if content.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some(last) if last.role == role => last.content.extend(content),
            _ => turns.push(Turn { role, content }),
        }
    }
    turns
}

fn text_block(text: &str) -> Option<Value> {
    (!text.trim().is_empty()).then(|| json!({"type": "text", "text": text}))
}

fn image_block(image: &ImageContent) -> Value {
    json!({
        "type": "image",
        "source": {"type": "base64", "media_type": image.mime_type, "data": image.data},
    })
}

fn user_blocks(content: &[UserContent]) -> Vec<Value> {
    content
        .iter()
        .filter_map(|c| match c {
            UserContent::Text(t) => text_block(&t.text),
            UserContent::Image(i) => Some(image_block(i)),
        })
        .collect()
}

fn tool_result_block(result: &ToolResultMessage) -> Value {
    let mut block = json!({
        "type": "tool_result",
        "tool_use_id": result.tool_call_id,
        "is_error": result.is_error,
    });
    let content = user_blocks(&result.content);
    if !content.is_empty() {
        block["content"] = Value::Array(content);
    }
    block
}

fn thinking_block(t: &ThinkingContent) -> Option<Value> {
    let signature = t.thinking_signature.as_deref().filter(|s| !s.is_empty());
    match signature {
        Some(data) if t.redacted => Some(json!({"type": "redacted_thinking", "data": data})),
        // A redacted block without its payload cannot be replayed.
        None if t.redacted => None,
        Some(signature) => Some(json!({
            "type": "thinking",
            "thinking": t.thinking,
            "signature": signature,
        })),
        // Without a signature the API would reject the block: send the reasoning as text.
        None => text_block(&t.thinking),
    }
}

fn assistant_blocks(message: &AssistantMessage) -> Vec<Value> {
    message
        .content
        .iter()
        .filter_map(|c| match c {
            AssistantContent::Text(t) => text_block(&t.text),
            AssistantContent::Thinking(t) => thinking_block(t),
            AssistantContent::ToolCall(call) => Some(json!({
                "type": "tool_use",
                "id": call.id,
                "name": call.name,
                "input": Value::Object(call.arguments.clone()),
            })),
        })
        .collect()
}
