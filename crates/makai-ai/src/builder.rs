//! Builds an assistant message block by block and emits the matching events.
//!
//! Every provider decoder drives one [`MessageBuilder`]: it translates wire events
//! into `start_text`/`push_text`/`end_block` calls, and the builder keeps the
//! message, the event order contract and the tool-argument bookkeeping in one place.

use serde_json::{Map, Value};

use crate::event::{AssistantMessageEvent, Delta};
use crate::message::{
    AssistantContent, AssistantMessage, AssistantMessageDiagnostic, StopReason, TextContent,
    ThinkingContent, ToolCall, now_ms,
};
use crate::model::Model;
use crate::usage::Usage;

/// The reason recorded on a tool call whose stream ended before the call was closed.
pub const TRUNCATED_ARGUMENTS: &str =
    "the stream ended before the tool call's arguments were complete";

#[derive(Debug)]
struct OpenBlock {
    index: usize,
    /// Raw argument text, for tool calls.
    args: Option<String>,
}

/// Which delta event a block's new text is.
#[derive(Clone, Copy)]
enum DeltaKind {
    Text,
    Thinking,
    ToolCall,
}

/// Accumulates one assistant message and the events describing it.
#[derive(Debug)]
pub struct MessageBuilder {
    message: AssistantMessage,
    open: Vec<OpenBlock>,
    events: Vec<AssistantMessageEvent>,
    started: bool,
    finished: bool,
    usage_seen: bool,
    merge_deltas: bool,
    one_hour_cache: bool,
}

impl MessageBuilder {
    /// A builder for a response of `model`.
    pub fn new(model: &Model) -> Self {
        MessageBuilder {
            message: AssistantMessage {
                api: model.api.as_str().to_string(),
                provider: model.provider.clone(),
                model: model.id.clone(),
                stop_reason: StopReason::Pending,
                timestamp: now_ms(),
                ..Default::default()
            },
            open: Vec::new(),
            events: Vec::new(),
            started: false,
            finished: false,
            usage_seen: false,
            merge_deltas: false,
            one_hour_cache: false,
        }
    }

    /// Appends each delta to the pending delta of the same block, when the
    /// event emitted last is one, instead of emitting a new event
    /// ([`crate::StreamOptions::merge_deltas`]): a consumer that takes the
    /// pending events once per read gets one delta per block per read.
    pub fn merge_deltas(mut self, merge: bool) -> Self {
        self.merge_deltas = merge;
        self
    }

    /// The message so far.
    pub fn message(&self) -> &AssistantMessage {
        &self.message
    }

    /// True once a terminal event was emitted.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// True when any content block was started.
    pub fn has_content(&self) -> bool {
        !self.message.content.is_empty()
    }

    /// True when the stream reported usage.
    pub fn usage_seen(&self) -> bool {
        self.usage_seen
    }

    /// Takes the events emitted since the last call.
    pub fn drain_events(&mut self) -> std::vec::Drain<'_, AssistantMessageEvent> {
        self.events.drain(..)
    }

    /// Moves the pending events into `out`.
    pub fn take_events_into(&mut self, out: &mut Vec<AssistantMessageEvent>) {
        out.append(&mut self.events);
    }

    /// Emits `start` once.
    pub fn start(&mut self) {
        if !self.started {
            self.started = true;
            self.events.push(AssistantMessageEvent::Start);
        }
    }

    /// Records the provider's own effort value the request carried (pi's
    /// `providerThinkingLevel`).
    pub fn set_provider_thinking_level(&mut self, level: Option<&str>) {
        self.message.provider_thinking_level = level.map(Into::into);
    }

    /// Records what went wrong with an attempt (pi's `diagnostics`); the
    /// records are kept through a retry.
    pub fn add_diagnostic(&mut self, diagnostic: AssistantMessageDiagnostic) {
        let mut all = std::mem::take(&mut self.message.diagnostics).into_vec();
        all.push(diagnostic);
        self.message.diagnostics = all.into_boxed_slice();
    }

    /// Says that every cache write of the request lasts an hour: writes the
    /// response reports without a split by lifetime count as one-hour
    /// writes (pi's `cacheWrite1h`) when the cost is computed.
    pub fn cache_writes_last_an_hour(&mut self, yes: bool) {
        self.one_hour_cache = yes;
    }

    /// Records the provider's response id.
    pub fn set_response_id(&mut self, id: impl Into<String>) {
        let id = id.into();
        if !id.is_empty() {
            self.message.response_id = Some(id);
        }
    }

    /// Records the thinking level the response is requested with.
    pub fn thinking_level(mut self, level: crate::ThinkingLevel) -> Self {
        self.message.thinking_level = Some(level);
        self
    }

    /// Records the concrete model the provider says answered (the last one
    /// said wins; an empty one is none).
    pub fn set_response_model(&mut self, model: &str) {
        if !model.is_empty() && self.message.response_model.as_deref() != Some(model) {
            self.message.response_model = Some(model.to_string());
        }
    }

    /// Records the provider's own stop reason (the last one said wins; an
    /// empty one is none).
    pub fn set_raw_stop_reason(&mut self, reason: &str) {
        if !reason.is_empty() && self.message.raw_stop_reason.as_deref() != Some(reason) {
            self.message.raw_stop_reason = Some(reason.to_string());
        }
    }

    /// Mutable access to the usage counts (the builder recomputes totals at the end).
    pub fn usage_mut(&mut self) -> &mut Usage {
        self.usage_seen = true;
        &mut self.message.usage
    }

    /// Emits a `kind` delta of block `index`, or appends it to the pending
    /// delta of that block when merging and the last event is one.
    fn emit_delta(&mut self, kind: DeltaKind, index: usize, text: &str) {
        if self.merge_deltas
            && let Some(pending) = self.pending_delta(kind, index)
        {
            pending.push_str(text);
            return;
        }
        let content_index = index;
        let delta = Delta::from(text);
        self.events.push(match kind {
            DeltaKind::Text => AssistantMessageEvent::TextDelta {
                content_index,
                delta,
            },
            DeltaKind::Thinking => AssistantMessageEvent::ThinkingDelta {
                content_index,
                delta,
            },
            DeltaKind::ToolCall => AssistantMessageEvent::ToolcallDelta {
                content_index,
                delta,
            },
        });
    }

    /// The delta of the last event when it is a `kind` delta of block `index`.
    fn pending_delta(&mut self, kind: DeltaKind, index: usize) -> Option<&mut Delta> {
        match (kind, self.events.last_mut()?) {
            (
                DeltaKind::Text,
                AssistantMessageEvent::TextDelta {
                    content_index,
                    delta,
                },
            )
            | (
                DeltaKind::Thinking,
                AssistantMessageEvent::ThinkingDelta {
                    content_index,
                    delta,
                },
            )
            | (
                DeltaKind::ToolCall,
                AssistantMessageEvent::ToolcallDelta {
                    content_index,
                    delta,
                },
            ) => (*content_index == index).then_some(delta),
            _ => None,
        }
    }

    /// Opens a text block; returns its content index.
    pub fn start_text(&mut self) -> usize {
        self.start();
        let index = self.push_block(AssistantContent::Text(TextContent::default()), None);
        self.events.push(AssistantMessageEvent::TextStart {
            content_index: index,
        });
        index
    }

    /// Opens a thinking block; returns its content index.
    pub fn start_thinking(&mut self) -> usize {
        self.start();
        let index = self.push_block(AssistantContent::Thinking(ThinkingContent::default()), None);
        self.events.push(AssistantMessageEvent::ThinkingStart {
            content_index: index,
        });
        index
    }

    /// Opens a tool call; returns its content index.
    pub fn start_tool_call(&mut self, id: impl Into<String>, name: impl Into<String>) -> usize {
        self.start();
        let id = id.into();
        let name = name.into();
        let call = ToolCall {
            id: id.clone(),
            name: name.clone(),
            ..Default::default()
        };
        let index = self.push_block(AssistantContent::ToolCall(call), Some(String::new()));
        self.events.push(AssistantMessageEvent::ToolcallStart {
            content_index: index,
            id,
            name,
        });
        index
    }

    fn push_block(&mut self, block: AssistantContent, args: Option<String>) -> usize {
        let index = self.message.content.len();
        self.message.content.push(block);
        self.open.push(OpenBlock { index, args });
        index
    }

    /// True when block `index` is open.
    pub fn is_open(&self, index: usize) -> bool {
        self.open.iter().any(|b| b.index == index)
    }

    /// Appends text to text block `index` (ignored for a closed or non-text block).
    pub fn push_text(&mut self, index: usize, delta: &str) {
        if delta.is_empty() || !self.is_open(index) {
            return;
        }
        if let Some(AssistantContent::Text(t)) = self.message.content.get_mut(index) {
            t.text.push_str(delta);
            self.emit_delta(DeltaKind::Text, index, delta);
        }
    }

    /// Appends reasoning to thinking block `index`.
    pub fn push_thinking(&mut self, index: usize, delta: &str) {
        if delta.is_empty() || !self.is_open(index) {
            return;
        }
        if let Some(AssistantContent::Thinking(t)) = self.message.content.get_mut(index) {
            t.thinking.push_str(delta);
            self.emit_delta(DeltaKind::Thinking, index, delta);
        }
    }

    /// Appends to (or sets) the signature of thinking block `index`.
    pub fn push_thinking_signature(&mut self, index: usize, signature: &str) {
        if let Some(AssistantContent::Thinking(t)) = self.message.content.get_mut(index) {
            t.thinking_signature
                .get_or_insert_with(String::new)
                .push_str(signature);
        }
    }

    /// Marks thinking block `index` as redacted, keeping the opaque payload.
    pub fn set_redacted_thinking(&mut self, index: usize, payload: &str) {
        if let Some(AssistantContent::Thinking(t)) = self.message.content.get_mut(index) {
            t.redacted = true;
            t.thinking_signature = Some(payload.to_string());
        }
    }

    /// Sets the text signature of text block `index`.
    pub fn set_text_signature(&mut self, index: usize, signature: &str) {
        if let Some(AssistantContent::Text(t)) = self.message.content.get_mut(index) {
            t.text_signature = Some(signature.to_string());
        }
    }

    /// Sets Gemini's thought signature on tool call `index`.
    pub fn set_thought_signature(&mut self, index: usize, signature: &str) {
        if let Some(AssistantContent::ToolCall(c)) = self.message.content.get_mut(index) {
            c.thought_signature = Some(signature.to_string());
        }
    }

    /// Renames tool call `index` (some servers send the id or name late).
    pub fn set_tool_call_identity(&mut self, index: usize, id: Option<&str>, name: Option<&str>) {
        if let Some(AssistantContent::ToolCall(c)) = self.message.content.get_mut(index) {
            if let Some(id) = id.filter(|s| !s.is_empty()) {
                c.id = id.to_string();
            }
            if let Some(name) = name.filter(|s| !s.is_empty()) {
                c.name = name.to_string();
            }
        }
    }

    /// Appends argument JSON text to tool call `index`.
    pub fn push_tool_args(&mut self, index: usize, delta: &str) {
        if delta.is_empty() {
            return;
        }
        if let Some(block) = self.open.iter_mut().find(|b| b.index == index)
            && let Some(args) = block.args.as_mut()
        {
            args.push_str(delta);
            self.emit_delta(DeltaKind::ToolCall, index, delta);
        }
    }

    /// Replaces the arguments of tool call `index` with a complete object (Gemini sends whole args).
    pub fn set_tool_args_object(&mut self, index: usize, args: Map<String, Value>) {
        let text = Value::Object(args).to_string();
        if let Some(block) = self.open.iter_mut().find(|b| b.index == index)
            && let Some(buf) = block.args.as_mut()
        {
            buf.clear();
        }
        self.push_tool_args(index, &text);
    }

    /// The raw argument text of open tool call `index`.
    pub fn tool_args_text(&self, index: usize) -> Option<&str> {
        self.open
            .iter()
            .find(|b| b.index == index)
            .and_then(|b| b.args.as_deref())
    }

    /// Closes block `index`, emitting its `*_end` event. A tool call's arguments
    /// are parsed here: empty text is `{}`, anything that is not a JSON object is
    /// flagged in `arguments_error`.
    pub fn end_block(&mut self, index: usize) {
        self.close(index, None);
    }

    fn close(&mut self, index: usize, truncated: Option<&str>) {
        let Some(pos) = self.open.iter().position(|b| b.index == index) else {
            return;
        };
        let block = self.open.remove(pos);
        let Some(content) = self.message.content.get_mut(index) else {
            return;
        };
        match content {
            AssistantContent::Text(t) => self.events.push(AssistantMessageEvent::TextEnd {
                content_index: index,
                content: t.text.clone(),
            }),
            AssistantContent::Thinking(t) => self.events.push(AssistantMessageEvent::ThinkingEnd {
                content_index: index,
                content: t.thinking.clone(),
            }),
            AssistantContent::ToolCall(call) => {
                let raw = block.args.unwrap_or_default();
                finish_arguments(call, raw, truncated);
                self.events.push(AssistantMessageEvent::ToolcallEnd {
                    content_index: index,
                    tool_call: Box::new(call.clone()),
                });
            }
        }
    }

    /// Closes every open block. Tool calls still open are flagged as truncated when `truncated` is true.
    pub fn close_all(&mut self, truncated: bool) {
        let indexes: Vec<usize> = self.open.iter().map(|b| b.index).collect();
        for index in indexes {
            self.close(index, truncated.then_some(TRUNCATED_ARGUMENTS));
        }
    }

    /// Ends the message normally: closes open blocks (a tool call still open is
    /// flagged truncated), computes totals and cost, emits `done`.
    pub fn finish(&mut self, reason: StopReason, model: &Model) {
        if self.finished {
            return;
        }
        self.start();
        self.close_all(true);
        self.finalize_usage(model);
        self.message.stop_reason = reason;
        self.finished = true;
        self.events.push(AssistantMessageEvent::Done {
            reason,
            message: Box::new(self.message.clone()),
        });
    }

    /// Ends the message with an error (`reason` is `error` or `aborted`), keeping
    /// the content received so far.
    pub fn fail(&mut self, reason: StopReason, error_message: impl Into<String>, model: &Model) {
        if self.finished {
            return;
        }
        self.start();
        self.close_all(true);
        self.finalize_usage(model);
        self.message.stop_reason = reason;
        self.message.error_message = Some(error_message.into());
        self.finished = true;
        self.events.push(AssistantMessageEvent::Error {
            reason,
            error: Box::new(self.message.clone()),
        });
    }

    fn finalize_usage(&mut self, model: &Model) {
        let usage = &mut self.message.usage;
        if self.one_hour_cache && usage.cache_write_1h.is_none() && usage.cache_write > 0 {
            usage.cache_write_1h = Some(usage.cache_write);
        }
        usage.recompute_total();
        usage.apply_cost(&model.cost);
    }

    /// Discards everything for a retry, emitting a `retry` event; the next attempt
    /// emits a fresh `start`.
    pub fn reset_for_retry(
        &mut self,
        attempt: u32,
        delay_ms: u64,
        error_message: String,
        model: &Model,
    ) {
        let thinking_level = self.message.thinking_level;
        let provider_thinking_level = self.message.provider_thinking_level.take();
        let diagnostics = std::mem::take(&mut self.message.diagnostics);
        let one_hour_cache = self.one_hour_cache;
        *self = MessageBuilder::new(model).merge_deltas(self.merge_deltas);
        self.one_hour_cache = one_hour_cache;
        self.message.thinking_level = thinking_level;
        self.message.provider_thinking_level = provider_thinking_level;
        self.message.diagnostics = diagnostics;
        self.events.push(AssistantMessageEvent::Retry {
            attempt,
            delay_ms,
            error_message,
        });
    }

    /// The finished message (or the message so far).
    pub fn into_message(self) -> AssistantMessage {
        self.message
    }
}

/// Parses `raw` into `call.arguments`, flagging anything that is not a complete JSON object.
fn finish_arguments(call: &mut ToolCall, raw: String, truncated: Option<&str>) {
    if let Some(reason) = truncated {
        call.arguments = crate::partial_json::parse_partial_object(&raw);
        call.arguments_error = Some(reason.to_string());
        call.raw_arguments = Some(raw);
        return;
    }
    if raw.trim().is_empty() {
        call.arguments = Map::new();
        return;
    }
    // A stray backslash (`\usepackage` in LaTeX, `\d` in a regular
    // expression) is an invalid escape no reading but the literal one
    // makes sense of: the arguments are read with it escaped (pi's #10868).
    let parsed = serde_json::from_str::<Value>(&raw).or_else(|e| {
        escape_stray_backslashes(&raw)
            .and_then(|fixed| serde_json::from_str::<Value>(&fixed).ok())
            .ok_or(e)
    });
    match parsed {
        Ok(Value::Object(map)) => call.arguments = map,
        Ok(other) => {
            call.arguments = Map::new();
            call.arguments_error = Some(format!(
                "the arguments are JSON but not an object (got {})",
                json_kind(&other)
            ));
            call.raw_arguments = Some(raw);
        }
        Err(e) => {
            call.arguments = crate::partial_json::parse_partial_object(&raw);
            call.arguments_error = Some(format!("the arguments are not valid JSON: {e}"));
            call.raw_arguments = Some(raw);
        }
    }
}

/// `raw` with each backslash inside a string that starts no valid JSON
/// escape (`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`, `\u` and four hex
/// digits) escaped itself; `None` when there is none.
fn escape_stray_backslashes(raw: &str) -> Option<String> {
    let bytes = raw.as_bytes();
    let mut out = String::with_capacity(raw.len() + 8);
    let mut changed = false;
    let mut in_string = false;
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => in_string = !in_string,
            b'\\' if in_string => {
                let valid = match bytes.get(i + 1) {
                    Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => true,
                    Some(b'u') => bytes
                        .get(i + 2..i + 6)
                        .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)),
                    _ => false,
                };
                if valid {
                    // The escaped character is skipped: an escaped quote
                    // does not end the string.
                    i += 2;
                    continue;
                }
                out.push_str(&raw[copied..i]);
                out.push_str("\\\\");
                copied = i + 1;
                changed = true;
            }
            _ => {}
        }
        i += 1;
    }
    out.push_str(&raw[copied..]);
    changed.then_some(out)
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
#[path = "builder_tests.rs"]
mod tests;
