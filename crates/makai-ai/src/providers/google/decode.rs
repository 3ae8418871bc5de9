//! Decodes Gemini's stream of `GenerateContentResponse` chunks.
//!
//! Only the first candidate is read. Its parts, in order:
//! - `text` with `thought: true` → thinking, other `text` → answer text; a
//!   `thoughtSignature` on a text part becomes the text signature, on a thought
//!   part the thinking signature (a new block starts after a signed one, so each
//!   signature stays with the text it signs);
//! - `functionCall` → a tool call, whole (`args`) or streamed (`partialArgs`,
//!   see [`super::args`]); the call id is `functionCall.id` or, since the public
//!   API sends none, a synthesized `call_<random>_<n>`.
//!
//! `usageMetadata` counts are cumulative (the last value of each wins);
//! `finishReason` may repeat on every chunk, so the message is only finished at
//! the end of the body. An `{"error": …}` chunk ends the attempt with a fault.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::args::{ArgsBuilder, PartialArg};
use crate::builder::MessageBuilder;
use crate::error::{Fault, retry_hint_in_text};
use crate::message::StopReason;
use crate::model::Model;
use crate::provider::WireDecoder;
use crate::quote::bounded;
use crate::sse::SseEvent;

/// Decoder state of one response.
#[derive(Debug)]
pub(crate) struct Decoder {
    open: Option<Open>,
    call: Option<StreamedCall>,
    finish_reason: Option<String>,
    finish_message: Option<String>,
    block_reason: Option<String>,
    saw_call: bool,
    calls: u32,
    /// Random part of synthesized call ids, unique per response.
    id_salt: u32,
    counts: Counts,
}

#[derive(Debug, Clone, Copy)]
enum Open {
    Text { block: usize, signed: bool },
    Thinking { block: usize, signed: bool },
}

#[derive(Debug)]
struct StreamedCall {
    block: usize,
    args: ArgsBuilder,
}

#[derive(Debug, Default)]
struct Counts {
    prompt: Option<u64>,
    candidates: Option<u64>,
    thoughts: Option<u64>,
    cached: Option<u64>,
}

/// A string borrowed from the chunk when it has no escapes (a bare
/// `Option<Cow<str>>` or `String` field would allocate for every chunk).
#[derive(Deserialize)]
struct Str<'a>(#[serde(borrow)] Cow<'a, str>);

impl std::ops::Deref for Str<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Chunk<'a> {
    #[serde(default, borrow)]
    candidates: Vec<Candidate<'a>>,
    #[serde(default)]
    usage_metadata: Option<UsageMetadata>,
    #[serde(default, borrow)]
    response_id: Option<Str<'a>>,
    #[serde(default, borrow)]
    model_version: Option<Str<'a>>,
    #[serde(default)]
    prompt_feedback: Option<PromptFeedback>,
    #[serde(default)]
    error: Option<Box<Value>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate<'a> {
    #[serde(default, borrow)]
    content: Option<Content<'a>>,
    #[serde(default)]
    finish_reason: Option<String>,
    #[serde(default)]
    finish_message: Option<String>,
    #[serde(default)]
    index: Option<u32>,
}

#[derive(Deserialize)]
struct Content<'a> {
    #[serde(default, borrow)]
    parts: Vec<Part<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Part<'a> {
    #[serde(default, borrow)]
    text: Option<Str<'a>>,
    #[serde(default)]
    thought: bool,
    #[serde(default)]
    thought_signature: Option<String>,
    #[serde(default)]
    function_call: Option<FunctionCall>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FunctionCall {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    args: Option<Value>,
    #[serde(default)]
    partial_args: Vec<PartialArg>,
    #[serde(default)]
    will_continue: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UsageMetadata {
    #[serde(default)]
    prompt_token_count: Option<u64>,
    #[serde(default)]
    candidates_token_count: Option<u64>,
    #[serde(default)]
    thoughts_token_count: Option<u64>,
    #[serde(default)]
    cached_content_token_count: Option<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptFeedback {
    #[serde(default)]
    block_reason: Option<String>,
}

impl Decoder {
    pub(crate) fn new() -> Self {
        Decoder {
            open: None,
            call: None,
            finish_reason: None,
            finish_message: None,
            block_reason: None,
            saw_call: false,
            calls: 0,
            id_salt: fastrand::u32(..),
            counts: Counts::default(),
        }
    }
}

impl WireDecoder for Decoder {
    fn on_event(
        &mut self,
        event: SseEvent<'_>,
        out: &mut MessageBuilder,
        _model: &Model,
    ) -> Result<(), Fault> {
        let data = event.data.trim_ascii();
        if data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        let chunk: Chunk<'_> = serde_json::from_str(data).map_err(|e| {
            Fault::fatal(format!(
                "the Gemini stream sent a chunk that is not a valid GenerateContentResponse ({e}): {}",
                bounded(data)
            ))
        })?;
        if let Some(error) = &chunk.error {
            return Err(fault_from_error(error, data));
        }
        // Every chunk repeats the id: set it once rather than allocate per chunk.
        if let Some(id) = chunk.response_id.as_deref()
            && out.message().response_id.as_deref() != Some(id)
        {
            out.set_response_id(id);
        }
        if let Some(model) = chunk.model_version.as_deref() {
            out.set_response_model(model);
        }
        if let Some(reason) = chunk.prompt_feedback.and_then(|f| f.block_reason) {
            self.block_reason = Some(reason);
        }
        let candidate = chunk
            .candidates
            .iter()
            .find(|c| c.index.unwrap_or(0) == 0)
            .or(chunk.candidates.first());
        if let Some(candidate) = candidate {
            for part in candidate.content.iter().flat_map(|c| &c.parts) {
                self.on_part(part, out)?;
            }
            if let Some(reason) = candidate.finish_reason.as_deref().filter(|r| !r.is_empty()) {
                self.finish_reason = Some(reason.to_string());
                self.finish_message = candidate.finish_message.clone();
                out.set_raw_stop_reason(reason);
            }
        }
        if let Some(u) = chunk.usage_metadata {
            self.read_usage(u, out);
        }
        Ok(())
    }

    fn on_eof(&mut self, out: &mut MessageBuilder, model: &Model) -> Result<(), Fault> {
        if let Some(call) = self.call.take() {
            // Never closed: `finish` flags it as truncated, keeping what arrived.
            out.set_tool_args_object(call.block, call.args.into_map());
        }
        match self.finish_reason.as_deref() {
            Some("STOP") => {
                let reason = if self.saw_call {
                    StopReason::ToolUse
                } else {
                    StopReason::Stop
                };
                out.finish(reason, model);
            }
            Some("MAX_TOKENS") => out.finish(StopReason::Length, model),
            Some(other) => {
                let mut msg = format!("Gemini stopped the response with finish reason {other}");
                if let Some(detail) = self.finish_message.as_deref().filter(|s| !s.is_empty()) {
                    msg.push_str(": ");
                    msg.push_str(detail);
                }
                out.fail(StopReason::Error, msg, model);
            }
            None => match self.block_reason.as_deref() {
                Some(reason) => out.fail(
                    StopReason::Error,
                    format!("Gemini blocked the prompt (block reason {reason}); rephrase it or remove the flagged content"),
                    model,
                ),
                None => {
                    return Err(Fault::retryable(
                        "the Gemini stream ended before a finish reason: the response is incomplete",
                    ));
                }
            },
        }
        Ok(())
    }
}

impl Decoder {
    fn on_part(&mut self, part: &Part<'_>, out: &mut MessageBuilder) -> Result<(), Fault> {
        let signature = part.thought_signature.as_deref().filter(|s| !s.is_empty());
        if let Some(fc) = &part.function_call {
            return self.on_function_call(fc, signature, out);
        }
        let Some(text) = part.text.as_deref() else {
            return Ok(());
        };
        if part.thought {
            let block = match self.open {
                Some(Open::Thinking {
                    block,
                    signed: false,
                }) => block,
                _ => {
                    self.close_open(out);
                    out.start_thinking()
                }
            };
            out.push_thinking(block, text);
            if let Some(sig) = signature {
                out.push_thinking_signature(block, sig);
            }
            self.open = Some(Open::Thinking {
                block,
                signed: signature.is_some(),
            });
        } else {
            if text.is_empty() && signature.is_none() {
                return Ok(());
            }
            let block = match self.open {
                Some(Open::Text { block, signed }) if !(signed && signature.is_some()) => block,
                _ => {
                    self.close_open(out);
                    out.start_text()
                }
            };
            out.push_text(block, text);
            let mut signed =
                matches!(self.open, Some(Open::Text { block: b, signed: true }) if b == block);
            if let Some(sig) = signature {
                out.set_text_signature(block, sig);
                signed = true;
            }
            self.open = Some(Open::Text { block, signed });
        }
        Ok(())
    }

    fn close_open(&mut self, out: &mut MessageBuilder) {
        if let Some(open) = self.open.take() {
            let (Open::Text { block, .. } | Open::Thinking { block, .. }) = open;
            out.end_block(block);
        }
    }

    fn on_function_call(
        &mut self,
        fc: &FunctionCall,
        signature: Option<&str>,
        out: &mut MessageBuilder,
    ) -> Result<(), Fault> {
        let name = fc.name.as_deref().filter(|n| !n.is_empty());
        if self.call.is_some() && name.is_some() {
            // A new call starts while the previous one never said it was complete.
            self.end_call(out);
        }
        let initial = match &fc.args {
            Some(Value::Object(map)) => map.clone(),
            _ => Map::new(),
        };
        if let Some(call) = self.call.as_mut() {
            // Continuation of a streamed call.
            call.args.merge(initial);
            if let Some(sig) = signature {
                out.set_thought_signature(call.block, sig);
            }
            apply_partial(&mut call.args, &fc.partial_args)?;
            if !fc.will_continue {
                self.end_call(out);
            }
            return Ok(());
        }
        let Some(name) = name else {
            tracing::debug!(
                "ignoring a Gemini functionCall part without a name outside a streamed call"
            );
            return Ok(());
        };
        self.close_open(out);
        self.calls += 1;
        self.saw_call = true;
        let id = match fc.id.as_deref().filter(|s| !s.is_empty()) {
            Some(id) => id.to_string(),
            None => format!("call_{:08x}_{}", self.id_salt, self.calls),
        };
        let block = out.start_tool_call(id, name);
        if let Some(sig) = signature {
            out.set_thought_signature(block, sig);
        }
        let mut args = ArgsBuilder::new(initial);
        apply_partial(&mut args, &fc.partial_args)?;
        self.call = Some(StreamedCall { block, args });
        if !fc.will_continue {
            self.end_call(out);
        }
        Ok(())
    }

    fn end_call(&mut self, out: &mut MessageBuilder) {
        if let Some(call) = self.call.take() {
            out.set_tool_args_object(call.block, call.args.into_map());
            out.end_block(call.block);
        }
    }

    fn read_usage(&mut self, u: UsageMetadata, out: &mut MessageBuilder) {
        let c = &mut self.counts;
        c.prompt = u.prompt_token_count.or(c.prompt);
        c.candidates = u.candidates_token_count.or(c.candidates);
        c.thoughts = u.thoughts_token_count.or(c.thoughts);
        c.cached = u.cached_content_token_count.or(c.cached);
        if c.prompt.is_none() && c.candidates.is_none() && c.thoughts.is_none() {
            return;
        }
        let cached = c.cached.unwrap_or(0);
        let input = c.prompt.unwrap_or(0).saturating_sub(cached);
        let output = c.candidates.unwrap_or(0) + c.thoughts.unwrap_or(0);
        let usage = out.usage_mut();
        usage.cache_read = cached;
        usage.input = input;
        usage.output = output;
        usage.reasoning = c.thoughts;
    }
}

fn apply_partial(args: &mut ArgsBuilder, entries: &[PartialArg]) -> Result<(), Fault> {
    for entry in entries {
        args.apply(entry).map_err(|e| {
            Fault::fatal(format!(
                "Gemini streamed function-call arguments makai cannot assemble: {e}"
            ))
        })?;
    }
    Ok(())
}

/// The fault for an `{"error": {code, message, status, details}}` chunk.
fn fault_from_error(error: &Value, raw: &str) -> Fault {
    let code = error.get("code").and_then(Value::as_u64);
    let status = error.get("status").and_then(Value::as_str).unwrap_or("");
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or("Gemini reported an error without a message");
    let mut text = message.to_string();
    match (status.is_empty(), code) {
        (false, Some(c)) => text.push_str(&format!(" ({status}, code {c})")),
        (false, None) => text.push_str(&format!(" ({status})")),
        (true, Some(c)) => text.push_str(&format!(" (code {c})")),
        (true, None) => {}
    }
    let retryable = matches!(code, Some(429 | 500 | 502 | 503 | 504))
        || matches!(
            status,
            "UNAVAILABLE" | "RESOURCE_EXHAUSTED" | "INTERNAL" | "DEADLINE_EXCEEDED"
        );
    if !retryable {
        return Fault::fatal(text);
    }
    let mut fault = Fault::retryable(text);
    fault.retry_after = retry_delay(error).or_else(|| retry_hint_in_text(raw));
    fault
}

/// `details[].retryDelay` (`"20s"`, `"1.5s"`) of a `google.rpc.RetryInfo`.
fn retry_delay(error: &Value) -> Option<std::time::Duration> {
    error
        .get("details")?
        .as_array()?
        .iter()
        .filter_map(|d| d.get("retryDelay").and_then(Value::as_str))
        .find_map(|s| {
            let secs: f64 = s.trim().strip_suffix('s')?.parse().ok()?;
            (secs.is_finite() && secs >= 0.0)
                .then(|| std::time::Duration::from_secs_f64(secs.min(86_400.0)))
        })
}
