//! Decodes the Responses event stream.
//!
//! Events are dispatched on their JSON `type` (the SSE `event:` line is optional).
//! Output items are tracked by `output_index` (falling back to `item_id`):
//! - `message`: a text block opens on the first text delta and closes at
//!   `output_item.done`, which also records the item id as the text signature;
//!   refusal deltas are kept apart (a refusal is not answer text);
//! - `function_call`: a tool call `call_id|fc_id` opens at `output_item.added`;
//!   arguments come from the deltas, else from `function_call_arguments.done` or
//!   the finished item (LM Studio sends no deltas);
//! - `reasoning`: a thinking block gets summary deltas (parts separated by a blank
//!   line) or raw `reasoning_text` deltas; the whole finished item is stored as the
//!   thinking signature so it can be replayed.
//!
//! `response.completed` / `response.incomplete` finish the message;
//! `response.failed` and `error` events end the attempt with a fault (both
//! mapped in [`outcome`](super::outcome)).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use super::outcome::{self, Output};
use super::str_at;
use crate::builder::MessageBuilder;
use crate::error::Fault;
use crate::message::AssistantContent;
use crate::model::Model;
use crate::provider::WireDecoder;
use crate::quote::bounded;
use crate::sse::SseEvent;

/// Decoder state of one response.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    items: Vec<Item>,
    /// Refusal text of message items (not answer text).
    refusal: String,
    saw_function_call: bool,
}

#[derive(Debug)]
struct Item {
    output_index: Option<u64>,
    id: Option<String>,
    kind: Kind,
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    /// A message; its text block opens on the first delta.
    Message { block: Option<usize> },
    /// A reasoning item (its thinking block, opened on first use) and the
    /// summary part currently streaming.
    Reasoning {
        block: Option<usize>,
        summary_index: Option<u64>,
    },
    /// A function call.
    Call { block: usize },
    /// An item makai does not use (web search calls, …) or one already finished.
    Ignored,
}

/// A string borrowed from the event data when it has no escapes (serde never
/// borrows into a bare `Option<Cow<str>>`: it allocates).
#[derive(Deserialize)]
struct Str<'a>(#[serde(borrow)] Cow<'a, str>);

impl std::ops::Deref for Str<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

/// The fields of a Responses event that the decoder reads (the large, rare ones
/// boxed: the struct is built for every delta).
#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Str<'a>>,
    #[serde(default)]
    output_index: Option<u64>,
    #[serde(default, borrow)]
    item_id: Option<Str<'a>>,
    #[serde(default)]
    summary_index: Option<u64>,
    #[serde(default, borrow)]
    delta: Option<Str<'a>>,
    #[serde(default, borrow)]
    arguments: Option<Str<'a>>,
    #[serde(default)]
    item: Option<Box<Value>>,
    #[serde(default)]
    response: Option<Box<Value>>,
    #[serde(default)]
    error: Option<Box<Value>>,
    #[serde(default)]
    code: Option<Box<Value>>,
    #[serde(default)]
    message: Option<String>,
}

impl WireDecoder for Decoder {
    fn on_event(
        &mut self,
        event: SseEvent<'_>,
        out: &mut MessageBuilder,
        model: &Model,
    ) -> Result<(), Fault> {
        let data = event.data.trim_ascii();
        if data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        let ev: Event<'_> = serde_json::from_str(data).map_err(|e| {
            Fault::fatal(format!(
                "the Responses stream sent an event that is not valid JSON ({e}): {}",
                bounded(data)
            ))
        })?;
        let kind = ev.kind.as_deref().unwrap_or(event.event);
        match kind {
            "response.created" | "response.in_progress" => {
                if let Some(id) = ev.response.as_deref().and_then(|r| str_at(r, "id")) {
                    out.set_response_id(id);
                }
                if let Some(model) = ev.response.as_deref().and_then(|r| str_at(r, "model")) {
                    out.set_response_model(model);
                }
            }
            "response.output_item.added" => {
                if let Some(item) = &ev.item {
                    self.item_added(ev.output_index, item, out);
                }
            }
            "response.output_text.delta" => {
                let delta = ev.delta.as_deref().unwrap_or("");
                let pos = self.find_or_add(&ev, || Kind::Message { block: None });
                if let Some(block) = self.text_block(pos, out) {
                    out.push_text(block, delta);
                }
            }
            "response.refusal.delta" => self.refusal.push_str(ev.delta.as_deref().unwrap_or("")),
            "response.function_call_arguments.delta" => {
                let pos = self.find_or_add_call(&ev, out);
                if let Some(Kind::Call { block }) = pos.map(|p| self.items[p].kind) {
                    out.push_tool_args(block, ev.delta.as_deref().unwrap_or(""));
                }
            }
            "response.function_call_arguments.done" => {
                let pos = self.find_or_add_call(&ev, out);
                if let Some(Kind::Call { block }) = pos.map(|p| self.items[p].kind)
                    && let Some(args) = ev.arguments.as_deref()
                {
                    settle_arguments(out, block, args);
                }
            }
            "response.reasoning_summary_text.delta" => {
                let pos = self.find_or_add(&ev, || Kind::Reasoning {
                    block: None,
                    summary_index: None,
                });
                self.push_summary(
                    pos,
                    ev.summary_index,
                    ev.delta.as_deref().unwrap_or(""),
                    out,
                );
            }
            "response.reasoning_text.delta" => {
                let pos = self.find_or_add(&ev, || Kind::Reasoning {
                    block: None,
                    summary_index: None,
                });
                if let Some(block) = self.thinking_block(pos, out) {
                    out.push_thinking(block, ev.delta.as_deref().unwrap_or(""));
                }
            }
            "response.output_item.done" => {
                if let Some(item) = &ev.item {
                    self.item_done(ev.output_index, item, out);
                }
            }
            "response.completed" | "response.incomplete" | "response.done" => {
                let status_hint = if kind == "response.incomplete" {
                    "incomplete"
                } else {
                    "completed"
                };
                let seen = Output {
                    saw_function_call: self.saw_function_call,
                    refusal: &self.refusal,
                };
                return outcome::complete(ev.response.as_deref(), status_hint, seen, out, model);
            }
            "response.failed" | "response.cancelled" => {
                return Err(outcome::failed(ev.response.as_deref(), kind, out));
            }
            "error" => {
                return Err(outcome::error_event(
                    ev.error.as_deref(),
                    ev.code.as_deref(),
                    ev.message.as_deref(),
                ));
            }
            _ => {}
        }
        Ok(())
    }

    fn on_eof(&mut self, _out: &mut MessageBuilder, _model: &Model) -> Result<(), Fault> {
        Err(Fault::retryable(
            "the Responses stream ended before its final event (response.completed, \
             response.incomplete or response.failed): the response is incomplete",
        ))
    }
}

impl Decoder {
    fn position(&self, output_index: Option<u64>, item_id: Option<&str>) -> Option<usize> {
        if let Some(oi) = output_index
            && let Some(pos) = self.items.iter().position(|i| i.output_index == Some(oi))
        {
            return Some(pos);
        }
        let id = item_id.filter(|s| !s.is_empty())?;
        self.items.iter().position(|i| i.id.as_deref() == Some(id))
    }

    /// The item an event refers to, registering it (as `make()`) when the server
    /// skipped its `output_item.added`.
    fn find_or_add(&mut self, ev: &Event<'_>, make: impl FnOnce() -> Kind) -> usize {
        if let Some(pos) = self.position(ev.output_index, ev.item_id.as_deref()) {
            return pos;
        }
        self.items.push(Item {
            output_index: ev.output_index,
            id: ev.item_id.as_deref().map(str::to_string),
            kind: make(),
        });
        self.items.len() - 1
    }

    /// Like `find_or_add` for a function call, opening a tool call named later.
    fn find_or_add_call(&mut self, ev: &Event<'_>, out: &mut MessageBuilder) -> Option<usize> {
        if let Some(pos) = self.position(ev.output_index, ev.item_id.as_deref()) {
            return Some(pos);
        }
        let id = ev.item_id.as_deref().unwrap_or("");
        let block = out.start_tool_call(id, "");
        self.saw_function_call = true;
        self.items.push(Item {
            output_index: ev.output_index,
            id: Some(id.to_string()),
            kind: Kind::Call { block },
        });
        Some(self.items.len() - 1)
    }

    fn item_added(&mut self, output_index: Option<u64>, item: &Value, out: &mut MessageBuilder) {
        let id = str_at(item, "id").map(str::to_string);
        let kind = match str_at(item, "type") {
            Some("message") => Kind::Message { block: None },
            Some("reasoning") => Kind::Reasoning {
                block: Some(out.start_thinking()),
                summary_index: None,
            },
            Some("function_call") => {
                self.saw_function_call = true;
                let call_id = str_at(item, "call_id").unwrap_or("");
                let name = str_at(item, "name").unwrap_or("");
                let block = out.start_tool_call(tool_call_id(call_id, id.as_deref()), name);
                Kind::Call { block }
            }
            _ => Kind::Ignored,
        };
        self.items.push(Item {
            output_index,
            id,
            kind,
        });
    }

    /// The text block of message item `pos`, opened on first use.
    fn text_block(&mut self, pos: usize, out: &mut MessageBuilder) -> Option<usize> {
        match self.items[pos].kind {
            Kind::Message { block: Some(b) } => Some(b),
            Kind::Message { block: None } => {
                let b = out.start_text();
                self.items[pos].kind = Kind::Message { block: Some(b) };
                Some(b)
            }
            _ => None,
        }
    }

    /// The thinking block of reasoning item `pos`, opened on first use.
    fn thinking_block(&mut self, pos: usize, out: &mut MessageBuilder) -> Option<usize> {
        match self.items[pos].kind {
            Kind::Reasoning { block: Some(b), .. } => Some(b),
            Kind::Reasoning {
                block: None,
                summary_index,
            } => {
                let b = out.start_thinking();
                self.items[pos].kind = Kind::Reasoning {
                    block: Some(b),
                    summary_index,
                };
                Some(b)
            }
            _ => None,
        }
    }

    fn push_summary(
        &mut self,
        pos: usize,
        summary_index: Option<u64>,
        delta: &str,
        out: &mut MessageBuilder,
    ) {
        let Some(block) = self.thinking_block(pos, out) else {
            return;
        };
        let Kind::Reasoning {
            summary_index: current,
            ..
        } = self.items[pos].kind
        else {
            return;
        };
        let index = summary_index.unwrap_or(0);
        if current.is_some_and(|c| c != index) && !thinking_text(out, block).is_empty() {
            out.push_thinking(block, "\n\n");
        }
        self.items[pos].kind = Kind::Reasoning {
            block: Some(block),
            summary_index: Some(index),
        };
        out.push_thinking(block, delta);
    }

    fn item_done(&mut self, output_index: Option<u64>, item: &Value, out: &mut MessageBuilder) {
        let id = str_at(item, "id");
        let pos = self.position(output_index, id);
        let kind = pos.map(|p| self.items[p].kind);
        match str_at(item, "type") {
            Some("message") => {
                let mut block = match kind {
                    Some(Kind::Message { block }) => block,
                    _ => None,
                };
                for part in item
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    match str_at(part, "type") {
                        Some("output_text") if block.is_none() => {
                            // No deltas were streamed: take the text from the finished item.
                            let text = str_at(part, "text").unwrap_or("");
                            if !text.is_empty() {
                                let b = out.start_text();
                                out.push_text(b, text);
                                block = Some(b);
                            }
                        }
                        Some("refusal") if self.refusal.is_empty() => {
                            self.refusal.push_str(str_at(part, "refusal").unwrap_or(""));
                        }
                        _ => {}
                    }
                }
                if let Some(b) = block {
                    if let Some(id) = id.filter(|s| !s.is_empty()) {
                        out.set_text_signature(b, id);
                    }
                    out.end_block(b);
                }
            }
            Some("function_call") => {
                let call_id = str_at(item, "call_id").unwrap_or("");
                let block = match kind {
                    Some(Kind::Call { block }) => {
                        if !call_id.is_empty() {
                            out.set_tool_call_identity(
                                block,
                                Some(&tool_call_id(call_id, id)),
                                str_at(item, "name"),
                            );
                        }
                        block
                    }
                    _ => {
                        self.saw_function_call = true;
                        out.start_tool_call(
                            tool_call_id(call_id, id),
                            str_at(item, "name").unwrap_or(""),
                        )
                    }
                };
                if let Some(args) = str_at(item, "arguments") {
                    settle_arguments(out, block, args);
                }
                out.end_block(block);
            }
            Some("reasoning") => {
                let block = match kind {
                    Some(Kind::Reasoning { block: Some(b), .. }) => b,
                    _ => out.start_thinking(),
                };
                if thinking_text(out, block).is_empty() {
                    out.push_thinking(block, &reasoning_text(item));
                }
                out.push_thinking_signature(block, &item.to_string());
                out.end_block(block);
            }
            _ => {}
        }
        if let Some(p) = pos {
            self.items[p].kind = Kind::Ignored;
        }
    }
}

/// `call_id|fc_id` (or just the call id when the item id is unknown).
fn tool_call_id(call_id: &str, item_id: Option<&str>) -> String {
    match item_id.filter(|s| !s.is_empty()) {
        Some(item) if !call_id.is_empty() => format!("{call_id}|{item}"),
        Some(item) => item.to_string(),
        None => call_id.to_string(),
    }
}

/// Makes `args` (the complete argument text) the arguments of `block`, unless the
/// deltas already delivered exactly that.
fn settle_arguments(out: &mut MessageBuilder, block: usize, args: &str) {
    let Some(current) = out.tool_args_text(block) else {
        return;
    };
    if current == args || args.is_empty() {
        return;
    }
    if current.is_empty() {
        out.push_tool_args(block, args);
        return;
    }
    // The deltas disagree with the final text: the final text wins.
    tracing::debug!(
        "Responses function call arguments differ from their deltas; using the final text"
    );
    match serde_json::from_str::<Value>(args) {
        Ok(Value::Object(map)) => out.set_tool_args_object(block, map),
        _ => {
            tracing::debug!("the final arguments are not a JSON object; keeping the streamed text")
        }
    }
}

fn thinking_text(out: &MessageBuilder, block: usize) -> &str {
    match out.message().content.get(block) {
        Some(AssistantContent::Thinking(t)) => &t.thinking,
        _ => "",
    }
}

/// The readable reasoning of a finished reasoning item: its summary parts joined by
/// a blank line, else its `reasoning_text` content.
fn reasoning_text(item: &Value) -> String {
    let collect = |key: &str| -> Vec<&str> {
        item.get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| str_at(p, "text"))
            .filter(|t| !t.is_empty())
            .collect()
    };
    let summary = collect("summary");
    if !summary.is_empty() {
        return summary.join("\n\n");
    }
    collect("content").join("\n\n")
}
