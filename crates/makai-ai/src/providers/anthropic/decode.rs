//! The event stream of one response, as [`MessageBuilder`] calls.
//!
//! Events: `message_start` (id, input and cache usage, a placeholder output
//! count), `content_block_start`/`_delta`/`_stop` per block, `message_delta`
//! (stop reason and cumulative usage), `message_stop`, `ping` and `error`. An
//! event without an `event:` line is dispatched on its JSON `type`. Blocks this
//! client does not model (server tool use and its results, unknown types) are
//! skipped, so Anthropic's block index is mapped to the builder's content index.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::builder::MessageBuilder;
use crate::error::{Fault, retry_hint_in_text};
use crate::message::{AssistantContent, StopReason};
use crate::model::Model;
use crate::provider::WireDecoder;
use crate::providers::delta_template::DeltaTemplate;
use crate::quote::bounded;
use crate::sse::SseEvent;

/// A string borrowed from the event data when it has no escapes.
#[derive(Deserialize)]
struct Str<'a>(#[serde(borrow)] Cow<'a, str>);

impl Str<'_> {
    fn as_str(&self) -> &str {
        &self.0
    }
}

fn text<'s>(s: &'s Option<Str<'_>>) -> &'s str {
    s.as_ref().map_or("", Str::as_str)
}

/// Every field any event may carry; each event uses a few. The fields of the
/// rare events are boxed: the struct is built and moved for every delta, and
/// copying a large struct was a fifth of the decoding time.
#[derive(Deserialize)]
struct RawEvent<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Str<'a>>,
    #[serde(default)]
    index: Option<u64>,
    #[serde(borrow, default)]
    message: Option<Box<RawMessage<'a>>>,
    #[serde(borrow, default)]
    content_block: Option<Box<RawBlock<'a>>>,
    #[serde(borrow, default)]
    delta: Option<RawDelta<'a>>,
    #[serde(default)]
    usage: Option<Box<RawUsage>>,
    #[serde(default)]
    error: Option<Box<Value>>,
}

#[derive(Deserialize)]
struct RawMessage<'a> {
    #[serde(borrow, default)]
    id: Option<Str<'a>>,
    #[serde(borrow, default)]
    model: Option<Str<'a>>,
    #[serde(default)]
    usage: Option<RawUsage>,
}

#[derive(Deserialize)]
struct RawBlock<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Str<'a>>,
    #[serde(borrow, default)]
    text: Option<Str<'a>>,
    #[serde(borrow, default)]
    thinking: Option<Str<'a>>,
    #[serde(borrow, default)]
    signature: Option<Str<'a>>,
    #[serde(borrow, default)]
    data: Option<Str<'a>>,
    #[serde(borrow, default)]
    id: Option<Str<'a>>,
    #[serde(borrow, default)]
    name: Option<Str<'a>>,
    #[serde(default)]
    input: Option<Value>,
}

#[derive(Deserialize)]
struct RawDelta<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Str<'a>>,
    #[serde(borrow, default)]
    text: Option<Str<'a>>,
    #[serde(borrow, default)]
    thinking: Option<Str<'a>>,
    #[serde(borrow, default)]
    signature: Option<Str<'a>>,
    #[serde(borrow, default)]
    partial_json: Option<Str<'a>>,
    #[serde(borrow, default)]
    stop_reason: Option<Str<'a>>,
}

#[derive(Deserialize)]
struct RawUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    /// The writes by lifetime; the one-hour part is priced apart.
    #[serde(default)]
    cache_creation: Option<RawCacheCreation>,
}

#[derive(Deserialize)]
struct RawCacheCreation {
    #[serde(default)]
    ephemeral_1h_input_tokens: Option<u64>,
}

/// Decoder state of one response.
#[derive(Default)]
pub(super) struct Decoder {
    /// Open blocks: Anthropic index -> builder content index.
    blocks: Vec<(u64, usize)>,
    /// Tool calls whose start carried a complete, non-empty `input` and that have
    /// had no argument delta yet: the input is used when the block closes.
    start_inputs: Vec<(usize, Map<String, Value>)>,
    /// The stop reason from `message_delta` (`None` for an unknown one).
    stop_reason: Option<StopReason>,
    /// `message_delta` carried a stop reason: the content is complete.
    stop_reason_seen: bool,
    /// Any event was decoded.
    any_event: bool,
    /// The last event, when it only appended text or thinking to a block (see
    /// `delta_template.rs`).
    template: DeltaTemplate<PlainDelta>,
}

#[cfg(test)]
impl Decoder {
    /// Whether the template recognises `data`.
    pub(super) fn template_matches(&self, data: &str) -> bool {
        self.template.matches(data).is_some()
    }

    /// Forgets the template, so that the next event is parsed.
    pub(super) fn forget_template(&mut self) {
        self.template.forget();
    }
}

/// What an event that only appends one string appends, and to which block.
#[derive(Debug, Clone, Copy, PartialEq)]
enum PlainDelta {
    /// A `text_delta` for the block with this Anthropic index.
    Text(u64),
    /// A `thinking_delta` for the block with this Anthropic index.
    Thinking(u64),
}

impl RawEvent<'_> {
    /// The one string the event appends, when appending it is all the event does:
    /// a `content_block_delta` (named by its `type`) whose delta is a text or
    /// thinking delta and nothing else.
    fn plain_delta(&self) -> Option<(PlainDelta, &str)> {
        let plain = matches!(&self.kind, Some(k) if k.as_str() == "content_block_delta")
            && self.message.is_none()
            && self.content_block.is_none()
            && self.usage.is_none()
            && self.error.is_none();
        let (index, delta) = (self.index?, self.delta.as_ref()?);
        if !plain
            || delta.signature.is_some()
            || delta.partial_json.is_some()
            || delta.stop_reason.is_some()
        {
            return None;
        }
        let (kind, value) = match (text(&delta.kind), &delta.text, &delta.thinking) {
            ("text_delta", Some(t), None) => (PlainDelta::Text(index), t),
            ("thinking_delta", None, Some(t)) => (PlainDelta::Thinking(index), t),
            _ => return None,
        };
        match &value.0 {
            Cow::Borrowed(s) => Some((kind, s)),
            Cow::Owned(_) => None,
        }
    }
}

/// Maps Anthropic's `stop_reason` (see the fixtures' SOURCES.md for the rules).
fn map_stop_reason(reason: &str) -> Option<StopReason> {
    Some(match reason {
        "end_turn" | "stop_sequence" | "pause_turn" => StopReason::Stop,
        "max_tokens" | "model_context_window_exceeded" => StopReason::Length,
        "tool_use" => StopReason::ToolUse,
        // A refusal carries no error text; the message ends as `error`.
        "refusal" => StopReason::Error,
        _ => return None,
    })
}

/// The fault for an in-stream `error` event.
fn error_fault(error: Option<&Value>) -> Fault {
    let kind = error
        .and_then(|e| e.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let message = error
        .and_then(|e| e.get("message").or(Some(e)))
        .and_then(Value::as_str)
        .filter(|m| !m.trim().is_empty());
    let text = match (message, kind) {
        (Some(m), _) => m.to_string(),
        (None, "") => "the provider reported an error mid-stream without saying what".to_string(),
        (None, k) => format!("the provider reported an error mid-stream ({k})"),
    };
    let retryable = matches!(kind, "overloaded_error" | "rate_limit_error" | "api_error");
    Fault {
        retry_after: if retryable {
            retry_hint_in_text(&text)
        } else {
            None
        },
        message: text,
        retryable,
        status: None,
        request_id: None,
    }
}

impl Decoder {
    fn builder_index(&self, index: Option<u64>) -> Option<usize> {
        let index = index?;
        self.blocks
            .iter()
            .find(|(a, _)| *a == index)
            .map(|(_, b)| *b)
    }

    fn apply_usage(out: &mut MessageBuilder, usage: &RawUsage) {
        let u = out.usage_mut();
        if let Some(n) = usage.input_tokens {
            u.input = n;
        }
        if let Some(n) = usage.output_tokens {
            u.output = n;
        }
        if let Some(n) = usage.cache_read_input_tokens {
            u.cache_read = n;
        }
        if let Some(n) = usage.cache_creation_input_tokens {
            u.cache_write = n;
        }
        if let Some(n) = usage
            .cache_creation
            .as_ref()
            .and_then(|c| c.ephemeral_1h_input_tokens)
        {
            u.cache_write_1h = Some(n);
        }
    }

    fn block_start(
        &mut self,
        index: Option<u64>,
        block: Option<&RawBlock<'_>>,
        out: &mut MessageBuilder,
    ) {
        let (Some(index), Some(block)) = (index, block) else {
            tracing::debug!("content_block_start without index or content_block ignored");
            return;
        };
        self.blocks.retain(|(a, _)| *a != index);
        let started = match text(&block.kind) {
            "text" => {
                let i = out.start_text();
                out.push_text(i, text(&block.text));
                Some(i)
            }
            "thinking" => {
                let i = out.start_thinking();
                out.push_thinking(i, text(&block.thinking));
                let signature = text(&block.signature);
                if !signature.is_empty() {
                    out.push_thinking_signature(i, signature);
                }
                Some(i)
            }
            "redacted_thinking" => {
                let i = out.start_thinking();
                out.set_redacted_thinking(i, text(&block.data));
                Some(i)
            }
            "tool_use" => {
                let i = out.start_tool_call(text(&block.id), text(&block.name));
                if let Some(Value::Object(input)) = &block.input
                    && !input.is_empty()
                {
                    self.start_inputs.push((i, input.clone()));
                }
                Some(i)
            }
            other => {
                tracing::debug!(block_type = other, "content block not modelled; skipped");
                None
            }
        };
        if let Some(i) = started {
            self.blocks.push((index, i));
        }
    }

    fn block_delta(
        &mut self,
        index: Option<u64>,
        delta: Option<&RawDelta<'_>>,
        out: &mut MessageBuilder,
    ) {
        let (Some(i), Some(delta)) = (self.builder_index(index), delta) else {
            return;
        };
        match text(&delta.kind) {
            "text_delta" => out.push_text(i, text(&delta.text)),
            "thinking_delta" => out.push_thinking(i, text(&delta.thinking)),
            "signature_delta" => out.push_thinking_signature(i, text(&delta.signature)),
            "input_json_delta" => {
                let part = text(&delta.partial_json);
                if !part.is_empty() {
                    self.start_inputs.retain(|(b, _)| *b != i);
                    out.push_tool_args(i, part);
                }
            }
            _ => {}
        }
    }

    fn block_stop(&mut self, index: Option<u64>, out: &mut MessageBuilder) {
        let Some(index) = index else { return };
        let Some(pos) = self.blocks.iter().position(|(a, _)| *a == index) else {
            return;
        };
        let (_, i) = self.blocks.remove(pos);
        if let Some(pos) = self.start_inputs.iter().position(|(b, _)| *b == i) {
            let (_, input) = self.start_inputs.remove(pos);
            out.set_tool_args_object(i, input);
        }
        out.end_block(i);
    }

    fn finish(&mut self, out: &mut MessageBuilder, model: &Model) {
        let reason = self.stop_reason.unwrap_or_else(|| {
            let has_calls = out
                .message()
                .content
                .iter()
                .any(|c| matches!(c, AssistantContent::ToolCall(_)));
            if has_calls {
                StopReason::ToolUse
            } else {
                StopReason::Stop
            }
        });
        if reason == StopReason::Error {
            // Only a refusal maps to `error`: end with an error event that says so.
            out.fail(
                StopReason::Error,
                "the model refused to answer (stop reason: refusal)",
                model,
            );
        } else {
            out.finish(reason, model);
        }
    }
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
        // Most events of a long answer are the last one with other text.
        if let Some((delta, text)) = self.template.matches(data) {
            let (PlainDelta::Text(index) | PlainDelta::Thinking(index)) = delta;
            if let Some(i) = self.builder_index(Some(index)) {
                match delta {
                    PlainDelta::Text(_) => out.push_text(i, text),
                    PlainDelta::Thinking(_) => out.push_thinking(i, text),
                }
            }
            return Ok(());
        }
        let raw: RawEvent<'_> = match serde_json::from_str(data) {
            Ok(raw) => raw,
            Err(_) if event.event == "error" => {
                return Err(Fault::fatal(format!(
                    "the provider reported an error mid-stream: {}",
                    bounded(data)
                )));
            }
            Err(e) => {
                return Err(Fault::fatal(format!(
                    "the Anthropic stream sent an event that is not valid JSON of the Messages API ({e}): {}; the server is not speaking anthropic-messages correctly",
                    bounded(data)
                )));
            }
        };
        self.any_event = true;
        match raw.plain_delta() {
            Some((delta, text)) => self.template.remember(data, data, text, delta),
            None => self.template.forget(),
        }
        let kind = raw.kind.as_ref().map_or(event.event, Str::as_str);
        match kind {
            "message_start" => {
                if let Some(message) = &raw.message {
                    if let Some(id) = &message.id {
                        out.set_response_id(id.as_str());
                    }
                    if let Some(model) = &message.model {
                        out.set_response_model(model.as_str());
                    }
                    if let Some(usage) = &message.usage {
                        Self::apply_usage(out, usage);
                    }
                }
            }
            "content_block_start" => self.block_start(raw.index, raw.content_block.as_deref(), out),
            "content_block_delta" => self.block_delta(raw.index, raw.delta.as_ref(), out),
            "content_block_stop" => self.block_stop(raw.index, out),
            "message_delta" => {
                if let Some(reason) = raw.delta.as_ref().and_then(|d| d.stop_reason.as_ref()) {
                    self.stop_reason = map_stop_reason(reason.as_str());
                    self.stop_reason_seen = true;
                    out.set_raw_stop_reason(reason.as_str());
                    if self.stop_reason.is_none() {
                        tracing::debug!(
                            stop_reason = reason.as_str(),
                            "unknown Anthropic stop reason"
                        );
                    }
                }
                if let Some(usage) = &raw.usage {
                    Self::apply_usage(out, usage);
                }
            }
            "message_stop" => self.finish(out, model),
            "error" => return Err(error_fault(raw.error.as_deref())),
            "ping" => {}
            other => tracing::debug!(event = other, "unknown Anthropic event ignored"),
        }
        Ok(())
    }

    fn on_eof(&mut self, out: &mut MessageBuilder, model: &Model) -> Result<(), Fault> {
        if out.is_finished() {
            return Ok(());
        }
        // `message_delta` carries the final stop reason and usage after every block
        // closed: only the terminator is missing, so the message is complete.
        if self.stop_reason_seen {
            self.finish(out, model);
            return Ok(());
        }
        let what = if self.any_event {
            "the connection closed mid-response"
        } else {
            "no event was received"
        };
        Err(Fault::retryable(format!(
            "the stream ended before message_stop ({what})"
        )))
    }
}
