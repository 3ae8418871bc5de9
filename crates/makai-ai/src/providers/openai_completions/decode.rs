//! Decodes a streamed Chat Completions response (`chat.completion.chunk`s).
//!
//! Tolerates what real OpenAI-compatible servers send: explicit `null`s
//! everywhere, tool-call chunks that repeat the call's id and name
//! (llama-cpp-python), a first tool call at `index` 1, a legacy `function_call`
//! beside `tool_calls`, reasoning in `reasoning_content` or `reasoning`, usage on
//! the finish chunk, in a usage-only chunk after it, in `x_groq.usage` or not at
//! all, and several choices (only choice 0 is read).
//!
//! Ending: `finish_reason` is recorded but the message is finished at `[DONE]`
//! (usage may still follow the finish chunk). A stream that ends without a
//! `finish_reason` is incomplete and becomes a fault.

use serde_json::Value;

use self::envelope::Envelope;
use self::hot::{HotChunk, PlainDelta};
use super::request::REASONING_FIELDS;
use crate::builder::MessageBuilder;
use crate::error::{Fault, error_message_from_body, retry_hint_in_text};
use crate::message::{AssistantContent, StopReason};
use crate::model::Model;
use crate::provider::WireDecoder;
use crate::providers::delta_template::DeltaTemplate;
use crate::quote::bounded;
use crate::sse::SseEvent;

/// One tool call being streamed.
#[derive(Debug)]
struct CallSlot {
    /// The `index` the server gave it.
    wire_index: Option<u64>,
    /// The id the server gave it (empty while none arrived).
    wire_id: String,
    /// The builder's content index.
    block: usize,
}

/// Decoder state for one response.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    /// Open text block.
    text: Option<usize>,
    /// Open thinking block.
    thinking: Option<usize>,
    calls: Vec<CallSlot>,
    /// A legacy `function_call` being streamed (only when no `tool_calls` appear).
    legacy_call: Option<usize>,
    saw_tool_calls: bool,
    /// The `finish_reason` of choice 0, once it arrived.
    finish_reason: Option<String>,
    /// Text the model sent in `delta.refusal` (not answer text).
    refusal: String,
    response_id: Option<String>,
    /// The envelope of the last chunk decoded in full (see `decode_envelope.rs`).
    envelope: Envelope,
    /// Reused buffer for a chunk without its envelope.
    stripped: String,
    /// The last chunk, when it only appended text or thinking (see
    /// `delta_template.rs`).
    template: DeltaTemplate<PlainDelta>,
}

impl WireDecoder for Decoder {
    fn on_event(
        &mut self,
        event: SseEvent<'_>,
        out: &mut MessageBuilder,
        model: &Model,
    ) -> Result<(), Fault> {
        let data = event.data.trim_ascii();
        if event.event == "error" {
            return Err(error_fault_from_text(data));
        }
        if data.is_empty() {
            return Ok(());
        }
        if data == "[DONE]" {
            return self.on_done(out, model);
        }
        // Most chunks of a long answer are the last one with other text.
        if let Some((delta, text)) = self.template.matches(data) {
            self.replay(delta, text, out);
            return Ok(());
        }
        // After the first chunk, most arrive with the same envelope as the last
        // one: decode only what follows it.
        let mut stripped = std::mem::take(&mut self.stripped);
        if self.envelope.strip_known(data, &mut stripped)
            && let Ok(chunk) = serde_json::from_str::<HotChunk<'_>>(&stripped)
        {
            let result = self.on_hot_chunk(&chunk, out);
            self.remember_template(data, &stripped, &chunk);
            self.stripped = stripped;
            return result;
        }
        self.stripped = stripped;
        // Nearly every chunk parses into the borrowed hot-path structs; only
        // chunks of an unusual shape pay for a `Value` tree.
        if let Ok(chunk) = serde_json::from_str::<HotChunk<'_>>(data) {
            self.envelope.remember(data, chunk.reads_beyond_choices());
            let result = self.on_hot_chunk(&chunk, out);
            self.remember_template(data, data, &chunk);
            return result;
        }
        self.template.forget();
        self.envelope.remember(data, true);
        let chunk: Value = serde_json::from_str(data).map_err(|e| {
            Fault::fatal(format!(
                "the server sent a stream chunk that is not JSON ({e}): {}",
                bounded(data)
            ))
        })?;
        self.on_chunk(&chunk, out)
    }

    fn on_eof(&mut self, out: &mut MessageBuilder, model: &Model) -> Result<(), Fault> {
        if self.finish_reason.is_some() {
            // Some servers omit `[DONE]`; the finish chunk already said it was complete.
            return self.finish(out, model);
        }
        Err(Fault::retryable(format!(
            "the stream ended without a finish_reason or [DONE], so the response is incomplete \
             (received {}); the server or a proxy cut the connection or failed mid-response",
            self.received(out)
        )))
    }
}

impl Decoder {
    fn on_chunk(&mut self, chunk: &Value, out: &mut MessageBuilder) -> Result<(), Fault> {
        if let Some(err) = chunk.get("error").filter(|e| !e.is_null()) {
            return Err(error_fault(err));
        }
        self.on_response_id(chunk.get("id").and_then(Value::as_str), out);
        if let Some(model) = chunk.get("model").and_then(Value::as_str) {
            out.set_response_model(model);
        }
        let choice = chunk
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|choices| {
                choices
                    .iter()
                    .find(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)
            });
        let usage = [
            chunk.get("usage"),
            chunk.pointer("/x_groq/usage"),
            choice.and_then(|c| c.get("usage")),
        ]
        .into_iter()
        .flatten()
        .find(|u| u.is_object());
        if let Some(u) = usage {
            apply_usage(u, out);
        }
        let Some(choice) = choice else {
            return Ok(());
        };
        if let Some(delta) = choice.get("delta").filter(|d| d.is_object()) {
            self.on_delta(delta, out);
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.on_finish_reason(reason, out);
        }
        Ok(())
    }

    /// Records choice 0's `finish_reason` (the first non-empty one wins).
    fn on_finish_reason(&mut self, reason: &str, out: &mut MessageBuilder) {
        if reason.is_empty() || self.finish_reason.is_some() {
            return;
        }
        self.finish_reason = Some(reason.to_string());
        out.set_raw_stop_reason(reason);
        // The calls are complete: close them now so their arguments count as whole.
        for slot in &self.calls {
            out.end_block(slot.block);
        }
        if let Some(b) = self.legacy_call {
            out.end_block(b);
        }
    }

    /// Records the response id of the first chunk that has one.
    fn on_response_id(&mut self, id: Option<&str>, out: &mut MessageBuilder) {
        if self.response_id.is_none()
            && let Some(id) = id.filter(|s| !s.is_empty())
        {
            self.response_id = Some(id.to_string());
            out.set_response_id(id);
        }
    }

    fn on_delta(&mut self, delta: &Value, out: &mut MessageBuilder) {
        if let Some(reasoning) = REASONING_FIELDS.into_iter().find_map(|field| {
            delta
                .get(field)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(|s| (field, s))
        }) {
            self.push_thinking(reasoning.0, reasoning.1, out);
        }
        match delta.get("content") {
            Some(Value::String(s)) => self.push_text(s, out),
            // Mistral's reasoning models send content as typed parts.
            Some(Value::Array(parts)) => {
                for part in parts {
                    match part.get("type").and_then(Value::as_str) {
                        Some("text") => {
                            if let Some(t) = part.get("text").and_then(Value::as_str) {
                                self.push_text(t, out);
                            }
                        }
                        Some("thinking") => {
                            for t in part
                                .get("thinking")
                                .and_then(Value::as_array)
                                .into_iter()
                                .flatten()
                                .filter_map(|p| p.get("text").and_then(Value::as_str))
                            {
                                self.push_thinking("", t, out);
                            }
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        if let Some(r) = delta.get("refusal").and_then(Value::as_str) {
            self.refusal.push_str(r);
        }
        match delta.get("tool_calls").and_then(Value::as_array) {
            Some(calls) if !calls.is_empty() => {
                self.saw_tool_calls = true;
                for call in calls {
                    self.on_tool_call(call, out);
                }
            }
            _ => {
                if !self.saw_tool_calls
                    && let Some(f) = delta.get("function_call").filter(|f| f.is_object())
                {
                    self.on_legacy_call(f, out);
                }
            }
        }
    }

    fn close_text_and_thinking(&mut self, out: &mut MessageBuilder) {
        if let Some(b) = self.text.take() {
            out.end_block(b);
        }
        if let Some(b) = self.thinking.take() {
            out.end_block(b);
        }
    }

    fn push_text(&mut self, delta: &str, out: &mut MessageBuilder) {
        if delta.is_empty() {
            return;
        }
        if let Some(b) = self.thinking.take() {
            out.end_block(b);
        }
        let block = match self.text {
            Some(b) => b,
            None => {
                let b = out.start_text();
                self.text = Some(b);
                b
            }
        };
        out.push_text(block, delta);
    }

    /// `field` is the wire field the reasoning came in, kept as the block's
    /// signature so the same server gets it back in that field.
    fn push_thinking(&mut self, field: &str, delta: &str, out: &mut MessageBuilder) {
        if delta.is_empty() {
            return;
        }
        if let Some(b) = self.text.take() {
            out.end_block(b);
        }
        let block = match self.thinking {
            Some(b) => b,
            None => {
                let b = out.start_thinking();
                if !field.is_empty() {
                    out.push_thinking_signature(b, field);
                }
                self.thinking = Some(b);
                b
            }
        };
        out.push_thinking(block, delta);
    }

    fn on_tool_call(&mut self, call: &Value, out: &mut MessageBuilder) {
        let wire_index = call.get("index").and_then(Value::as_u64);
        let id = call
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let function = call.get("function");
        let name = function
            .and_then(|f| f.get("name"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let args = function.and_then(|f| f.get("arguments"));
        let block = self.tool_call_block(wire_index, id, name, out);
        push_args(out, block, args);
    }

    /// The builder block of the tool call a `tool_calls` entry continues, or of
    /// the call it starts. `id` and `name` are `None` when absent or empty.
    fn tool_call_block(
        &mut self,
        wire_index: Option<u64>,
        id: Option<&str>,
        name: Option<&str>,
        out: &mut MessageBuilder,
    ) -> usize {
        let existing = match (wire_index, id) {
            // Same index: the same call, unless it now carries a different id
            // (servers that give every call index 0).
            (Some(index), _) => self
                .calls
                .iter()
                .rposition(|s| s.wire_index == Some(index))
                .filter(|&pos| match id {
                    Some(id) => self.calls[pos].wire_id.is_empty() || self.calls[pos].wire_id == id,
                    None => true,
                }),
            (None, Some(id)) => self.calls.iter().rposition(|s| s.wire_id == id),
            (None, None) => self.calls.len().checked_sub(1),
        };
        match existing {
            Some(pos) => {
                let slot = &mut self.calls[pos];
                if slot.wire_id.is_empty()
                    && let Some(id) = id
                {
                    slot.wire_id = id.to_string();
                    out.set_tool_call_identity(slot.block, Some(id), None);
                }
                if let Some(name) = name
                    && current_name(out, slot.block).is_empty()
                {
                    out.set_tool_call_identity(slot.block, None, Some(name));
                }
                slot.block
            }
            None => {
                self.close_text_and_thinking(out);
                let call_id = match id {
                    Some(id) => id.to_string(),
                    None => self.synthetic_id(),
                };
                let block = out.start_tool_call(call_id, name.unwrap_or(""));
                self.calls.push(CallSlot {
                    wire_index,
                    wire_id: id.unwrap_or("").to_string(),
                    block,
                });
                block
            }
        }
    }

    fn on_legacy_call(&mut self, f: &Value, out: &mut MessageBuilder) {
        let name = f
            .get("name")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let block = match self.legacy_call {
            Some(b) => {
                if let Some(name) = name
                    && current_name(out, b).is_empty()
                {
                    out.set_tool_call_identity(b, None, Some(name));
                }
                b
            }
            None => {
                self.close_text_and_thinking(out);
                let id = self.synthetic_id();
                let b = out.start_tool_call(id, name.unwrap_or(""));
                self.legacy_call = Some(b);
                b
            }
        };
        push_args(out, block, f.get("arguments"));
    }

    /// An id for a call the server sent without one, unique within the conversation
    /// as far as the response id is.
    fn synthetic_id(&self) -> String {
        let n = self.calls.len() + usize::from(self.legacy_call.is_some());
        match &self.response_id {
            Some(r) => format!("call_{n}_{r}"),
            None => format!("call_{n}"),
        }
    }

    fn on_done(&mut self, out: &mut MessageBuilder, model: &Model) -> Result<(), Fault> {
        if self.finish_reason.is_none() {
            return Err(Fault::fatal(format!(
                "the server ended the stream ([DONE]) without a finish_reason, so the response \
                 is incomplete (received {}); the server failed mid-response (llama.cpp, for \
                 one, reports such errors only in an `error:` line and its log)",
                self.received(out)
            )));
        }
        self.finish(out, model)
    }

    /// Ends the message as `finish_reason` says; a response the provider
    /// ended with an error (Mistral's `finish_reason: "error"`) is a
    /// retryable fault (pi 1.3).
    fn finish(&mut self, out: &mut MessageBuilder, model: &Model) -> Result<(), Fault> {
        let reason = self.finish_reason.as_deref().unwrap_or("stop");
        if matches!(reason, "error" | "network_error") {
            return Err(Fault::retryable(format!(
                "the provider ended the response with finish_reason {reason} (received {})",
                self.received(out)
            )));
        }
        self.close_text_and_thinking(out);
        let reason = self.finish_reason.as_deref().unwrap_or("stop");
        let has_calls = out
            .message()
            .content
            .iter()
            .any(|c| matches!(c, AssistantContent::ToolCall(_)));
        let by_content = if has_calls {
            StopReason::ToolUse
        } else {
            StopReason::Stop
        };
        match reason {
            "length" | "max_tokens" => out.finish(StopReason::Length, model),
            "content_filter" => out.fail(
                StopReason::Error,
                "the provider's content filter stopped the response (finish_reason content_filter)",
                model,
            ),
            // `stop`, `tool_calls`, `function_call` and anything unknown: tool
            // calls decide (some servers say `stop` after tool calls).
            _ => {
                if !self.refusal.is_empty() && !has_calls && out.message().text().is_empty() {
                    tracing::debug!(refusal = %self.refusal, "the model refused");
                }
                out.finish(by_content, model)
            }
        }
        Ok(())
    }

    /// What arrived so far, for error messages.
    fn received(&self, out: &MessageBuilder) -> String {
        let m = out.message();
        let text = m.text().chars().count();
        let thinking = m.thinking().chars().count();
        let calls = m.tool_calls().count();
        if text == 0 && thinking == 0 && calls == 0 {
            return "no content".to_string();
        }
        format!("{text} characters of text, {thinking} of reasoning and {calls} tool call(s)")
    }
}

fn current_name(out: &MessageBuilder, block: usize) -> &str {
    match out.message().content.get(block) {
        Some(AssistantContent::ToolCall(c)) => &c.name,
        _ => "",
    }
}

fn push_args(out: &mut MessageBuilder, block: usize, args: Option<&Value>) {
    match args {
        Some(Value::String(s)) => out.push_tool_args(block, s),
        // Some servers send the arguments as an object rather than JSON text.
        Some(v @ Value::Object(_)) => out.push_tool_args(block, &v.to_string()),
        _ => {}
    }
}

fn count(v: Option<&Value>) -> Option<u64> {
    let v = v?;
    v.as_u64().or_else(|| {
        v.as_f64()
            .filter(|f| f.is_finite() && *f >= 0.0)
            .map(|f| f as u64)
    })
}

/// Normalises a usage object: `input` is uncached input.
fn apply_usage(u: &Value, out: &mut MessageBuilder) {
    let prompt = count(u.get("prompt_tokens")).unwrap_or(0);
    let completion = count(u.get("completion_tokens")).unwrap_or(0);
    let cache_read = count(u.pointer("/prompt_tokens_details/cached_tokens"))
        .or_else(|| count(u.get("prompt_cache_hit_tokens")))
        .unwrap_or(0);
    let cache_write = count(u.pointer("/prompt_tokens_details/cache_write_tokens")).unwrap_or(0);
    let usage = out.usage_mut();
    usage.input = prompt
        .saturating_sub(cache_read)
        .saturating_sub(cache_write);
    usage.output = completion;
    usage.cache_read = cache_read;
    usage.cache_write = cache_write;
    usage.reasoning = count(u.pointer("/completion_tokens_details/reasoning_tokens"));
}

/// A fault for an `{"error": ...}` value inside the stream.
fn error_fault(err: &Value) -> Fault {
    let wrapped = serde_json::json!({ "error": err }).to_string();
    let message = match err {
        Value::Object(_) | Value::String(_) => error_message_from_body(&wrapped),
        other => other.to_string(),
    };
    let mut signals = message.to_ascii_lowercase();
    for key in ["type", "code", "status"] {
        if let Some(v) = err.get(key) {
            signals.push(' ');
            signals.push_str(&v.to_string().to_ascii_lowercase());
        }
    }
    let retryable = [
        "server_error",
        "server error",
        "internal",
        "overloaded",
        "rate_limit",
        "rate limit",
        "too many requests",
        "unavailable",
        "timeout",
        "timed out",
        "try again",
        // Gateways and proxies that lost the upstream stream, busy and
        // full servers (pi's).
        "disconnected",
        "upstream",
        "busy",
        "at capacity",
    ]
    .iter()
    .any(|s| signals.contains(s))
        // A status as a number of its own: not the digits of a request id
        // (pi retried `req_5003…` as a 500).
        || signals
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|word| matches!(word, "429" | "500" | "502" | "503" | "504" | "529"));
    Fault {
        retry_after: retry_hint_in_text(&message),
        message: format!("the server reported an error mid-stream: {message}"),
        retryable,
        status: None,
        request_id: None,
    }
}

fn error_fault_from_text(data: &str) -> Fault {
    match serde_json::from_str::<Value>(data) {
        Ok(v) => error_fault(v.get("error").filter(|e| !e.is_null()).unwrap_or(&v)),
        Err(_) => error_fault(&Value::String(data.to_string())),
    }
}

#[path = "decode_envelope.rs"]
mod envelope;
#[path = "decode_hot.rs"]
mod hot;

#[cfg(test)]
#[path = "decode_tests.rs"]
mod tests;
