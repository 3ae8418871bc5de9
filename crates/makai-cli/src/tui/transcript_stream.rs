//! The streaming assistant message of a [`Transcript`]: each content block
//! (text, thinking, a tool call) becomes its item as it starts and grows
//! with its deltas; the finished message settles them.

use std::collections::HashMap;

use makai_ai::{AssistantContent, AssistantMessageEvent};
use serde_json::Value;

use super::{ItemKind, Level, Streaming, ToolCallView, ToolState, Transcript};

impl Transcript {
    /// The item of a content block of the streaming message, created on demand.
    fn block(&mut self, index: usize, make: impl FnOnce() -> ItemKind) -> usize {
        if self.streaming.is_none() {
            self.streaming = Some(Streaming {
                start: self.items.len(),
                blocks: HashMap::new(),
            });
        }
        if let Some(&i) = self.streaming.as_ref().and_then(|s| s.blocks.get(&index)) {
            return i;
        }
        let i = self.push(make());
        if let Some(item) = self.items.get_mut(i) {
            item.open = true;
        }
        if let Some(s) = &mut self.streaming {
            s.blocks.insert(index, i);
        }
        i
    }

    pub(super) fn stream_event(&mut self, ev: &AssistantMessageEvent) {
        use AssistantMessageEvent as E;
        match ev {
            E::TextStart { content_index } => {
                self.block(*content_index, || ItemKind::Text(String::new()));
            }
            E::TextDelta {
                content_index,
                delta,
            } => {
                let i = self.block(*content_index, || ItemKind::Text(String::new()));
                self.edit(i, |k| {
                    if let ItemKind::Text(t) = k {
                        t.push_str(delta);
                    }
                });
            }
            E::ThinkingStart { content_index } => {
                self.block(*content_index, || ItemKind::Thinking(String::new()));
            }
            E::ThinkingDelta {
                content_index,
                delta,
            } => {
                let i = self.block(*content_index, || ItemKind::Thinking(String::new()));
                self.edit(i, |k| {
                    if let ItemKind::Thinking(t) = k {
                        t.push_str(delta);
                    }
                });
            }
            E::ToolcallStart {
                content_index,
                id,
                name,
            } => {
                self.block(*content_index, || {
                    ItemKind::Tool(ToolCallView {
                        id: id.clone(),
                        name: name.clone(),
                        args: Value::Null,
                        partial_args: String::new(),
                        result: None,
                        is_error: false,
                        diff: None,
                        state: ToolState::Streaming,
                    })
                });
            }
            E::ToolcallDelta {
                content_index,
                delta,
            } => {
                if let Some(&i) = self
                    .streaming
                    .as_ref()
                    .and_then(|s| s.blocks.get(content_index))
                {
                    self.edit(i, |k| {
                        if let ItemKind::Tool(t) = k {
                            t.partial_args.push_str(delta);
                        }
                    });
                }
            }
            E::ToolcallEnd { tool_call, .. } => {
                let args = Value::Object(tool_call.arguments.clone());
                self.edit_tool(&tool_call.id, |t| {
                    t.args = args;
                    t.partial_args.clear();
                });
            }
            E::Retry {
                attempt,
                delay_ms,
                error_message,
            } => {
                // The attempt is void: drop what it streamed.
                let start = self
                    .streaming
                    .as_ref()
                    .map_or(self.items.len(), |s| s.start);
                self.items.truncate(start);
                self.tools.retain(|_, i| *i < start);
                self.notice(
                    Level::Warning,
                    format!(
                        "Retrying (attempt {attempt}) in {:.1}s: {error_message}",
                        *delay_ms as f64 / 1000.0
                    ),
                );
                self.streaming = Some(Streaming {
                    start: self.items.len(),
                    blocks: HashMap::new(),
                });
            }
            _ => {}
        }
    }

    /// Makes the streamed blocks match the final message (in case deltas were missed).
    pub(super) fn finish_blocks(&mut self, a: &makai_ai::AssistantMessage) {
        let Some(s) = &self.streaming else { return };
        let pairs: Vec<(usize, usize)> = s.blocks.iter().map(|(c, i)| (*c, *i)).collect();
        let blocks: Vec<usize> = s.blocks.values().copied().collect();
        for &i in &blocks {
            let rev = self.rev();
            if let Some(item) = self.items.get_mut(i).filter(|item| item.open) {
                item.open = false;
                item.rev = rev;
            }
        }
        for (ci, i) in pairs {
            let Some(content) = a.content.get(ci) else {
                continue;
            };
            let same = match (content, self.items.get(i).map(|x| &x.kind)) {
                (AssistantContent::Text(t), Some(ItemKind::Text(s))) => t.text == *s,
                (AssistantContent::Thinking(t), Some(ItemKind::Thinking(s))) => t.thinking == *s,
                _ => true,
            };
            if !same {
                let content = content.clone();
                self.edit(i, |k| match (k, content) {
                    (ItemKind::Text(s), AssistantContent::Text(t)) => *s = t.text,
                    (ItemKind::Thinking(s), AssistantContent::Thinking(t)) => *s = t.thinking,
                    _ => {}
                });
            }
        }
        // Trailing empty blocks (e.g. an aborted message that never got text) are noise.
        while let Some(last) = self.items.len().checked_sub(1) {
            let empty = matches!(&self.items[last].kind,
                ItemKind::Text(t) | ItemKind::Thinking(t) if t.trim().is_empty());
            if empty && blocks.contains(&last) {
                self.items.pop();
            } else {
                break;
            }
        }
    }
}
