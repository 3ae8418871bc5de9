//! The streaming event model: what a provider stream yields.

use serde::{Deserialize, Serialize};

use crate::message::{AssistantMessage, StopReason, ToolCall};

/// The text of a delta event: a string kept inline up to 24 bytes, so the
/// usual delta (a token or a few) costs no allocation. It reads as a `&str`
/// (`Deref`) and serializes as a JSON string.
pub type Delta = compact_str::CompactString;

/// One event of an assistant message stream.
///
/// Order contract: `start` first; then for each content block `*_start`, any
/// number of `*_delta`, `*_end` (blocks are numbered by `content_index`, their
/// position in the final message's `content`); exactly one terminal event,
/// `done` or `error`, last. A `retry` event means the provider is retrying after
/// a failure (it may come before any `start`, e.g. after an HTTP 429): everything
/// streamed since `start` is void, and the next attempt begins with a fresh
/// `start` (the final message never repeats text).
///
/// The JSON form is pi-ai's `AssistantMessageEvent` without the per-event
/// `partial` snapshot (use [`crate::MessageAccumulator`] to keep one).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum AssistantMessageEvent {
    /// The response has begun.
    Start,
    /// A text block opened.
    TextStart {
        /// Position of the block in the message content.
        content_index: usize,
    },
    /// More text.
    TextDelta {
        /// Position of the block.
        content_index: usize,
        /// The new text.
        delta: Delta,
    },
    /// A text block closed.
    TextEnd {
        /// Position of the block.
        content_index: usize,
        /// The whole text of the block.
        content: String,
    },
    /// A thinking block opened.
    ThinkingStart {
        /// Position of the block.
        content_index: usize,
    },
    /// More reasoning text.
    ThinkingDelta {
        /// Position of the block.
        content_index: usize,
        /// The new reasoning text.
        delta: Delta,
    },
    /// A thinking block closed.
    ThinkingEnd {
        /// Position of the block.
        content_index: usize,
        /// The whole reasoning text of the block.
        content: String,
    },
    /// A tool call opened.
    ToolcallStart {
        /// Position of the block.
        content_index: usize,
        /// The call id.
        id: String,
        /// The tool name.
        name: String,
    },
    /// More argument JSON text.
    ToolcallDelta {
        /// Position of the block.
        content_index: usize,
        /// The new argument text.
        delta: Delta,
    },
    /// A tool call closed; carries the complete call.
    ToolcallEnd {
        /// Position of the block.
        content_index: usize,
        /// The complete call (check [`ToolCall::arguments_error`]); boxed, as
        /// the message of `done`, so that every event stays small.
        tool_call: Box<ToolCall>,
    },
    /// The attempt failed and is being retried; discard what was streamed since `start`.
    Retry {
        /// The retry number (1 for the first retry).
        attempt: u32,
        /// How long makai waits before retrying, in milliseconds.
        delay_ms: u64,
        /// What went wrong.
        error_message: String,
    },
    /// The response ended normally.
    Done {
        /// `stop`, `length` or `toolUse`.
        reason: StopReason,
        /// The final message (boxed, so that the frequent delta events stay small).
        message: Box<AssistantMessage>,
    },
    /// The response failed or was aborted; the message keeps the content received so far.
    Error {
        /// `error` or `aborted`.
        reason: StopReason,
        /// The message so far, with `errorMessage` set (boxed, as in `Done`).
        error: Box<AssistantMessage>,
    },
}

impl AssistantMessageEvent {
    /// True for `done` and `error`.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            AssistantMessageEvent::Done { .. } | AssistantMessageEvent::Error { .. }
        )
    }

    /// The content index, for block events.
    pub fn content_index(&self) -> Option<usize> {
        use AssistantMessageEvent::*;
        match self {
            TextStart { content_index }
            | TextDelta { content_index, .. }
            | TextEnd { content_index, .. }
            | ThinkingStart { content_index }
            | ThinkingDelta { content_index, .. }
            | ThinkingEnd { content_index, .. }
            | ToolcallStart { content_index, .. }
            | ToolcallDelta { content_index, .. }
            | ToolcallEnd { content_index, .. } => Some(*content_index),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_use_pi_names() {
        let e = AssistantMessageEvent::TextDelta {
            content_index: 2,
            delta: "hi".into(),
        };
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            json!({"type": "text_delta", "contentIndex": 2, "delta": "hi"})
        );
        let e = AssistantMessageEvent::ToolcallStart {
            content_index: 0,
            id: "a".into(),
            name: "b".into(),
        };
        assert_eq!(serde_json::to_value(&e).unwrap()["type"], "toolcall_start");
    }
}
