//! Rebuilds the partial message from events, for consumers that show progress.

use serde_json::{Map, Value};

use crate::event::AssistantMessageEvent;
use crate::message::{AssistantContent, AssistantMessage, TextContent, ThinkingContent, ToolCall};

/// Applies events to a partial [`AssistantMessage`], the way a UI sees a response grow.
///
/// A `retry` or `start` event resets it. Tool-call arguments are kept as raw text
/// while streaming; [`MessageAccumulator::partial_arguments`] gives a best-effort
/// parse of them at any moment (so a UI can show a file being written as it streams).
#[derive(Debug, Default, Clone)]
pub struct MessageAccumulator {
    message: AssistantMessage,
    raw_args: Vec<(usize, String)>,
}

impl MessageAccumulator {
    /// An empty accumulator whose message carries this api/provider/model.
    pub fn new(api: &str, provider: &str, model: &str) -> Self {
        MessageAccumulator {
            message: AssistantMessage {
                api: api.to_string(),
                provider: provider.to_string(),
                model: model.to_string(),
                stop_reason: crate::StopReason::Pending,
                timestamp: crate::message::now_ms(),
                ..Default::default()
            },
            raw_args: Vec::new(),
        }
    }

    /// The message so far. Tool calls still streaming have their best-effort arguments
    /// only after [`MessageAccumulator::refresh_partial_arguments`].
    pub fn message(&self) -> &AssistantMessage {
        &self.message
    }

    /// Applies one event.
    pub fn apply(&mut self, event: &AssistantMessageEvent) {
        use AssistantMessageEvent as E;
        match event {
            E::Start | E::Retry { .. } => {
                self.message.content.clear();
                self.raw_args.clear();
            }
            E::TextStart { content_index } => self.put(
                *content_index,
                AssistantContent::Text(TextContent::default()),
            ),
            E::ThinkingStart { content_index } => self.put(
                *content_index,
                AssistantContent::Thinking(ThinkingContent::default()),
            ),
            E::ToolcallStart {
                content_index,
                id,
                name,
            } => {
                self.put(
                    *content_index,
                    AssistantContent::ToolCall(ToolCall::new(id.clone(), name.clone(), Map::new())),
                );
                self.raw_args.push((*content_index, String::new()));
            }
            E::TextDelta {
                content_index,
                delta,
            } => {
                if let Some(AssistantContent::Text(t)) =
                    self.message.content.get_mut(*content_index)
                {
                    t.text.push_str(delta);
                }
            }
            E::ThinkingDelta {
                content_index,
                delta,
            } => {
                if let Some(AssistantContent::Thinking(t)) =
                    self.message.content.get_mut(*content_index)
                {
                    t.thinking.push_str(delta);
                }
            }
            E::ToolcallDelta {
                content_index,
                delta,
            } => {
                if let Some((_, raw)) = self.raw_args.iter_mut().find(|(i, _)| i == content_index) {
                    raw.push_str(delta);
                }
            }
            E::TextEnd {
                content_index,
                content,
            } => {
                if let Some(AssistantContent::Text(t)) =
                    self.message.content.get_mut(*content_index)
                {
                    t.text.clone_from(content);
                }
            }
            E::ThinkingEnd {
                content_index,
                content,
            } => {
                if let Some(AssistantContent::Thinking(t)) =
                    self.message.content.get_mut(*content_index)
                {
                    t.thinking.clone_from(content);
                }
            }
            E::ToolcallEnd {
                content_index,
                tool_call,
            } => {
                self.raw_args.retain(|(i, _)| i != content_index);
                self.put(
                    *content_index,
                    AssistantContent::ToolCall(ToolCall::clone(tool_call)),
                );
            }
            E::Done { message, .. } => {
                self.message = (**message).clone();
                self.raw_args.clear();
            }
            E::Error { error, .. } => {
                self.message = (**error).clone();
                self.raw_args.clear();
            }
        }
    }

    fn put(&mut self, index: usize, block: AssistantContent) {
        let content = &mut self.message.content;
        if index < content.len() {
            content[index] = block;
        } else {
            while content.len() < index {
                content.push(AssistantContent::Text(TextContent::default()));
            }
            content.push(block);
        }
    }

    /// Best-effort parse of the arguments of the tool call at `content_index` as they stand now.
    pub fn partial_arguments(&self, content_index: usize) -> Option<Map<String, Value>> {
        self.raw_args
            .iter()
            .find(|(i, _)| *i == content_index)
            .map(|(_, raw)| crate::partial_json::parse_partial_object(raw))
    }

    /// Writes the best-effort parse of every streaming call's arguments into the message.
    pub fn refresh_partial_arguments(&mut self) {
        for (index, raw) in &self.raw_args {
            if let Some(AssistantContent::ToolCall(c)) = self.message.content.get_mut(*index) {
                c.arguments = crate::partial_json::parse_partial_object(raw);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_arguments_grow_with_deltas() {
        let mut acc = MessageAccumulator::new("a", "p", "m");
        acc.apply(&AssistantMessageEvent::Start);
        acc.apply(&AssistantMessageEvent::ToolcallStart {
            content_index: 0,
            id: "c".into(),
            name: "write".into(),
        });
        acc.apply(&AssistantMessageEvent::ToolcallDelta {
            content_index: 0,
            delta: "{\"path\": \"a.rs\", \"content\": \"fn ma".into(),
        });
        let args = acc.partial_arguments(0).unwrap();
        assert_eq!(args["content"], "fn ma");
        acc.refresh_partial_arguments();
        let AssistantContent::ToolCall(c) = &acc.message().content[0] else {
            panic!()
        };
        assert_eq!(c.arguments["path"], "a.rs");
    }

    #[test]
    fn retry_discards_streamed_text() {
        let mut acc = MessageAccumulator::new("a", "p", "m");
        acc.apply(&AssistantMessageEvent::TextStart { content_index: 0 });
        acc.apply(&AssistantMessageEvent::TextDelta {
            content_index: 0,
            delta: "dup".into(),
        });
        acc.apply(&AssistantMessageEvent::Retry {
            attempt: 1,
            delay_ms: 0,
            error_message: "x".into(),
        });
        assert!(acc.message().content.is_empty());
    }
}
