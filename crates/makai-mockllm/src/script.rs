//! What one request gets: [`ScriptedResponse`] and its parts ([`Item`],
//! [`StopKind`], [`Usage`], [`ErrorKind`]).
//!
//! A scripted response is wire-format neutral: the same value is rendered as
//! Chat Completions, Responses, Anthropic Messages or Gemini events depending
//! on the route the request arrived on.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};

/// One piece of assistant output, rendered in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Item {
    /// Visible assistant text. JSON: `{"text": "Hello"}`.
    Text(String),
    /// Reasoning / thinking output. JSON: `{"thinking": {"text": "...", "signature": "..."}}`.
    Thinking {
        /// The thinking text.
        text: String,
        /// Provider signature (Anthropic `signature_delta`, Responses
        /// `encrypted_content`, Gemini `thoughtSignature`); `None` sends none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// A tool / function call.
    /// JSON: `{"tool_call": {"id": "call_1", "name": "read", "arguments": {"path": "a"}}}`
    /// (`arguments` may also be given as a string of raw JSON text).
    ToolCall {
        /// Call id (`call_id` on the Responses API, `tool_use.id` on Anthropic).
        id: String,
        /// Tool name.
        name: String,
        /// Raw JSON text of the arguments, streamed verbatim in pieces.
        #[serde(deserialize_with = "arguments_text")]
        arguments: String,
    },
}

impl Item {
    /// A text item.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(text.into())
    }

    /// A thinking item without a signature.
    pub fn thinking(text: impl Into<String>) -> Self {
        Self::Thinking {
            text: text.into(),
            signature: None,
        }
    }

    /// A thinking item with a signature.
    pub fn thinking_signed(text: impl Into<String>, signature: impl Into<String>) -> Self {
        Self::Thinking {
            text: text.into(),
            signature: Some(signature.into()),
        }
    }

    /// A tool call item; `arguments` is raw JSON text such as `{"path":"a.txt"}`.
    pub fn tool_call(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        Self::ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }
}

/// Accepts either a string (raw JSON text, kept verbatim) or any JSON value
/// (serialized compactly).
fn arguments_text<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    match serde_json::Value::deserialize(d)? {
        serde_json::Value::String(s) => Ok(s),
        other => Ok(other.to_string()),
    }
}

/// Why the response ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopKind {
    /// Natural end (`stop`, `end_turn`, `STOP`, Responses `completed`).
    Stop,
    /// Output token limit (`length`, `max_tokens`, `MAX_TOKENS`, Responses `incomplete`).
    Length,
    /// The model wants tools run (`tool_calls`, `tool_use`; Gemini `STOP`).
    ToolUse,
}

/// Token usage reported at the end of a stream.
///
/// Mapping: Chat `prompt_tokens` / Responses `input_tokens` / Gemini
/// `promptTokenCount` are `input + cache_read` (those APIs count cached tokens
/// inside the prompt total) with `cache_read` as the cached detail; Anthropic
/// reports `input_tokens = input`, `cache_read_input_tokens = cache_read`,
/// `cache_creation_input_tokens = cache_write`. `cache_write` only appears on
/// Anthropic.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Usage {
    /// Uncached input tokens.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read: u64,
    /// Input tokens written to the prompt cache.
    pub cache_write: u64,
}

impl Usage {
    /// Used when a [`ScriptedResponse`] has no `usage`: 10 input, 20 output, no cache.
    pub const SCRIPTED_DEFAULT: Usage = Usage {
        input: 10,
        output: 20,
        cache_read: 0,
        cache_write: 0,
    };

    /// Usage with the given input and output and no cache tokens.
    pub fn new(input: u64, output: u64) -> Self {
        Self {
            input,
            output,
            cache_read: 0,
            cache_write: 0,
        }
    }

    /// Sets the cache read / write counts.
    pub fn with_cache(mut self, cache_read: u64, cache_write: u64) -> Self {
        self.cache_read = cache_read;
        self.cache_write = cache_write;
        self
    }
}

/// Which in-stream error event to inject (see [`ScriptedResponse::error_after`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// Anthropic `overloaded_error`, OpenAI `server_error`, Gemini 503 `UNAVAILABLE`.
    Overloaded,
    /// Anthropic `rate_limit_error`, OpenAI `rate_limit_exceeded`, Gemini 429 `RESOURCE_EXHAUSTED`.
    RateLimit,
    /// Anthropic `api_error`, OpenAI `server_error`, Gemini 500 `INTERNAL`.
    Server,
    /// Anthropic `invalid_request_error`, OpenAI `invalid_request_error`, Gemini 400 `INVALID_ARGUMENT`.
    InvalidRequest,
}

/// The scripted answer to one request, rendered in the wire format of the
/// route it arrives on.
///
/// Deserializes from JSON with every field optional (unknown fields are
/// rejected); see the crate docs for the scenario file format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScriptedResponse {
    /// HTTP status (default 200). A non-2xx status without `body_override`
    /// gets the route's usual JSON error body.
    pub status: u16,
    /// Extra response headers, e.g. `("retry-after", "2")`. A `content-type`
    /// here replaces the default one.
    pub headers: Vec<(String, String)>,
    /// Send this body verbatim instead of an event stream (content type
    /// `application/json` when it parses as JSON, else `text/plain`).
    pub body_override: Option<String>,
    /// The output, in order.
    pub items: Vec<Item>,
    /// Why it stopped; `None` means `ToolUse` if any item is a tool call, else `Stop`.
    pub stop: Option<StopKind>,
    /// Usage to report; `None` means [`Usage::SCRIPTED_DEFAULT`].
    pub usage: Option<Usage>,
    /// Split text / thinking / argument deltas into pieces of at most N chars
    /// (replay: N bytes). `None`: text and thinking one word (plus its
    /// following whitespace) per delta, arguments 16 chars per delta, replay in
    /// one piece. `Some(0)` means no splitting at all.
    pub chunk_size: Option<usize>,
    /// Pace the SSE events this far apart, the first one included (JSON:
    /// milliseconds). The pace is kept against the clock: a late event is
    /// followed by the next one without a pause, as a provider's buffered tokens are.
    #[serde(with = "millis")]
    pub delay_per_event: Option<Duration>,
    /// Send N events, then abort the connection mid-body.
    pub disconnect_after_events: Option<usize>,
    /// Send N events, then raw garbage (broken JSON and invalid UTF-8), then end.
    pub garbage_after_events: Option<usize>,
    /// Send N events, then keep the connection open without sending anything
    /// until the client goes away, the server is dropped, or 10 minutes pass.
    pub stall_after_events: Option<usize>,
    /// Send N events, then end the body cleanly (a truncated stream that
    /// looks complete at the HTTP level).
    pub end_after_events: Option<usize>,
    /// Send N events, then the API's in-stream error event, then end.
    /// JSON: `[3, "overloaded"]`.
    pub error_event_after: Option<(usize, ErrorKind)>,
    /// End cleanly but without the terminal event (`[DONE]`, `message_stop`,
    /// `response.completed`, Gemini's `finishReason` chunk).
    pub omit_terminal: bool,
    /// Send this file's bytes verbatim as the body (read per request).
    pub replay_file: Option<PathBuf>,
    /// Send these bytes verbatim as the body.
    pub replay_bytes: Option<Vec<u8>>,
    /// Replay: send each event (everything up to and including a blank line,
    /// `\n\n`) as its own write, as a provider streaming token by token does,
    /// instead of in `chunk_size` pieces.
    pub split_events: bool,
}

impl Default for ScriptedResponse {
    fn default() -> Self {
        Self {
            status: 200,
            headers: Vec::new(),
            body_override: None,
            items: Vec::new(),
            stop: None,
            usage: None,
            chunk_size: None,
            delay_per_event: None,
            disconnect_after_events: None,
            garbage_after_events: None,
            stall_after_events: None,
            end_after_events: None,
            error_event_after: None,
            omit_terminal: false,
            replay_file: None,
            replay_bytes: None,
            split_events: false,
        }
    }
}

impl ScriptedResponse {
    /// An empty 200 response (no items; stops with `Stop`).
    pub fn new() -> Self {
        Self::default()
    }

    /// A response with one text item.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new().with_text(text)
    }

    /// A response with one tool call; `arguments` is raw JSON text.
    pub fn tool_call(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        Self::new().with_tool_call(id, name, arguments)
    }

    /// A response that sends `bytes` verbatim as the body.
    pub fn replay(bytes: impl Into<Vec<u8>>) -> Self {
        Self::new().replay_bytes(bytes)
    }

    /// Appends an item.
    pub fn with_item(mut self, item: Item) -> Self {
        self.items.push(item);
        self
    }

    /// Appends a text item.
    pub fn with_text(self, text: impl Into<String>) -> Self {
        self.with_item(Item::text(text))
    }

    /// Appends a thinking item without a signature.
    pub fn with_thinking(self, text: impl Into<String>) -> Self {
        self.with_item(Item::thinking(text))
    }

    /// Appends a thinking item with a signature.
    pub fn with_thinking_signed(
        self,
        text: impl Into<String>,
        signature: impl Into<String>,
    ) -> Self {
        self.with_item(Item::thinking_signed(text, signature))
    }

    /// Appends a tool call item; `arguments` is raw JSON text.
    pub fn with_tool_call(
        self,
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        self.with_item(Item::tool_call(id, name, arguments))
    }

    /// Sets the HTTP status.
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = status;
        self
    }

    /// Adds a response header.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sends `body` verbatim instead of an event stream.
    pub fn with_body(mut self, body: impl Into<String>) -> Self {
        self.body_override = Some(body.into());
        self
    }

    /// Sets the delta piece size (chars; bytes for replay). 0 = no splitting.
    pub fn chunk_size(mut self, n: usize) -> Self {
        self.chunk_size = Some(n);
        self
    }

    /// Sleeps `ms` milliseconds before each SSE event.
    pub fn delay(mut self, ms: u64) -> Self {
        self.delay_per_event = Some(Duration::from_millis(ms));
        self
    }

    /// Paces the events `delay` apart (any precision; the timer's is 1 ms).
    pub fn delay_each(mut self, delay: Duration) -> Self {
        self.delay_per_event = Some(delay);
        self
    }

    /// Replay: sends each SSE event as its own write (the field of the same name).
    pub fn split_events(mut self) -> Self {
        self.split_events = true;
        self
    }

    /// Aborts the connection after `n` events.
    pub fn disconnect_after(mut self, n: usize) -> Self {
        self.disconnect_after_events = Some(n);
        self
    }

    /// Sends garbage after `n` events, then ends.
    pub fn garbage_after(mut self, n: usize) -> Self {
        self.garbage_after_events = Some(n);
        self
    }

    /// Stops sending after `n` events, keeping the connection open.
    pub fn stall_after(mut self, n: usize) -> Self {
        self.stall_after_events = Some(n);
        self
    }

    /// Ends the body cleanly after `n` events (HTTP-level clean truncation).
    pub fn end_after(mut self, n: usize) -> Self {
        self.end_after_events = Some(n);
        self
    }

    /// Injects the API's in-stream error event after `n` events, then ends.
    pub fn error_after(mut self, n: usize, kind: ErrorKind) -> Self {
        self.error_event_after = Some((n, kind));
        self
    }

    /// Ends the stream without its terminal event.
    pub fn omit_terminal(mut self) -> Self {
        self.omit_terminal = true;
        self
    }

    /// Replays a file's bytes verbatim as the body.
    pub fn replay_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.replay_file = Some(path.into());
        self
    }

    /// Replays these bytes verbatim as the body.
    pub fn replay_bytes(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.replay_bytes = Some(bytes.into());
        self
    }

    /// Sets the reported usage.
    pub fn usage(mut self, usage: Usage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// Sets the stop kind explicitly.
    pub fn stop(mut self, kind: StopKind) -> Self {
        self.stop = Some(kind);
        self
    }

    /// The stop kind that will be sent (explicit, or derived from the items).
    pub fn effective_stop(&self) -> StopKind {
        self.stop.unwrap_or_else(|| {
            if self
                .items
                .iter()
                .any(|item| matches!(item, Item::ToolCall { .. }))
            {
                StopKind::ToolUse
            } else {
                StopKind::Stop
            }
        })
    }

    /// The usage that will be sent (explicit, or [`Usage::SCRIPTED_DEFAULT`]).
    pub fn effective_usage(&self) -> Usage {
        self.usage.unwrap_or(Usage::SCRIPTED_DEFAULT)
    }
}

/// `Option<Duration>` as an optional integer number of milliseconds.
mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(v: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(d) => s.serialize_some(&u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(Duration::from_millis))
    }
}
