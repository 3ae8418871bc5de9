//! The payloads of the envelope types (JSON field names in camelCase, like pi).

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use makai_ai::{
    CacheRetention, Context, Model, RetryPolicy, StreamOptions, ThinkingBudgets, ThinkingLevel,
    ToolChoice,
};
use tokio_util::sync::CancellationToken;

/// JSON the transport carries without reading it: an agent session's command,
/// response or event (their types belong to the session, see
/// [`crate::SessionHandler`]). Encoded once by its producer and copied into
/// the frame as is.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Json(pub Box<serde_json::value::RawValue>);

impl Json {
    /// Encodes `value`.
    pub fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Json, serde_json::Error> {
        serde_json::value::to_raw_value(value).map(Json)
    }

    /// The JSON text.
    pub fn get(&self) -> &str {
        self.0.get()
    }

    /// Parses the text as `T`.
    pub fn decode<'a, T: Deserialize<'a>>(&'a self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.0.get())
    }
}

impl PartialEq for Json {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

/// `hello`: the client's first frame.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hello {
    /// The bearer token; required on raw TCP / Unix connections and on WebSocket
    /// connections whose upgrade request had no `Authorization` header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// The session to re-attach after a reconnect (from an earlier `welcome`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Free-form client name, for logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
}

impl fmt::Debug for Hello {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hello")
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("session", &self.session)
            .field("client", &self.client)
            .finish()
    }
}

/// `welcome`: the server accepted the hello.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Welcome {
    /// The session id; send it in the next `hello` to resume streams after a reconnect.
    pub session: String,
    /// True when the `hello`'s session was found and re-attached.
    pub resumed: bool,
    /// Server name and version, e.g. `makai/0.1.0`.
    pub server: String,
    /// The limits this server enforces.
    pub limits: WireLimits,
}

/// Limits announced in `welcome`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireLimits {
    /// Largest frame the server accepts, in bytes.
    pub max_message_bytes: usize,
    /// Unacknowledged messages the server keeps per stream for `resume`.
    pub replay_capacity: usize,
    /// Messages the server sends on a stream beyond the client's last `ack`.
    pub send_window: usize,
}

/// `stream_request`: one model call. Never carries credentials: the server
/// resolves provider keys from its own environment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StreamRequest {
    /// The model to call.
    pub model: Model,
    /// The conversation.
    pub context: Context,
    /// Request options (no API key, no extra headers).
    #[serde(default)]
    pub options: WireOptions,
}

/// `preconnect`: open the connection the model's next call will take. The
/// options name its connect timeout; nothing else of them is used.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PreconnectRequest {
    /// The model whose server to connect to.
    pub model: Model,
    /// Request options (no API key, no extra headers).
    #[serde(default)]
    pub options: WireOptions,
}

/// The parts of [`StreamOptions`] that cross the wire.
///
/// Left out on purpose: `apiKey` and `headers` (credentials stay on the
/// server) and `cancel` (replaced by the `cancel` message).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireOptions {
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Output token limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Reasoning effort.
    #[serde(default)]
    pub thinking: ThinkingLevel,
    /// Token budgets per thinking level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_budgets: Option<ThinkingBudgets>,
    /// Session id for prompt caching.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Prompt cache retention.
    #[serde(default)]
    pub cache_retention: CacheRetention,
    /// Which tool the model must or may call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Retry policy of the server-side request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<WireRetry>,
    /// Connect timeout in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_timeout_ms: Option<u64>,
    /// Idle timeout in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout_ms: Option<u64>,
    /// Read interval of the server-side request in milliseconds
    /// ([`StreamOptions::read_interval`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_interval_ms: Option<u64>,
    /// The deltas of one block one read delivered go out as one event
    /// ([`StreamOptions::merge_deltas`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub merge_deltas: bool,
}

/// [`RetryPolicy`] on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireRetry {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// First backoff, milliseconds.
    pub initial_delay_ms: u64,
    /// Longest backoff accepted, milliseconds.
    pub max_delay_ms: u64,
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl From<&StreamOptions> for WireOptions {
    fn from(o: &StreamOptions) -> Self {
        WireOptions {
            temperature: o.temperature,
            max_tokens: o.max_tokens,
            thinking: o.thinking,
            thinking_budgets: (o.thinking_budgets != ThinkingBudgets::default())
                .then_some(o.thinking_budgets),
            session_id: o.session_id.clone(),
            cache_retention: o.cache_retention,
            tool_choice: o.tool_choice.clone(),
            retry: Some(WireRetry {
                max_retries: o.retry.max_retries,
                initial_delay_ms: millis(o.retry.initial_delay),
                max_delay_ms: millis(o.retry.max_delay),
            }),
            connect_timeout_ms: o.connect_timeout.map(millis),
            idle_timeout_ms: o.idle_timeout.map(millis),
            read_interval_ms: o.read_interval.map(millis),
            merge_deltas: o.merge_deltas,
        }
    }
}

impl WireOptions {
    /// Server side: the [`StreamOptions`] to run with (no key: the server resolves its own).
    pub fn to_stream_options(&self, cancel: CancellationToken) -> StreamOptions {
        StreamOptions {
            api_key: None,
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            thinking: self.thinking,
            thinking_budgets: self.thinking_budgets.unwrap_or_default(),
            session_id: self.session_id.clone(),
            cache_retention: self.cache_retention,
            tool_choice: self.tool_choice.clone(),
            headers: Default::default(),
            cancel,
            retry: self
                .retry
                .map_or_else(RetryPolicy::default, |r| RetryPolicy {
                    max_retries: r.max_retries,
                    initial_delay: Duration::from_millis(r.initial_delay_ms),
                    max_delay: Duration::from_millis(r.max_delay_ms),
                }),
            connect_timeout: self.connect_timeout_ms.map(Duration::from_millis),
            idle_timeout: self.idle_timeout_ms.map(Duration::from_millis),
            read_interval: self.read_interval_ms.map(Duration::from_millis),
            merge_deltas: self.merge_deltas,
            // Like the key, the client's environment never crosses the wire.
            env: Default::default(),
        }
    }
}

/// `stream_end`: the last (sequenced) message of a stream.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StreamEnd {
    /// Why the stream ended.
    pub reason: EndReason,
    /// Details for `shutdown` and `failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Why a stream ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    /// The stream delivered its terminal event (`done` or `error`) / the subscription ended.
    Complete,
    /// The client cancelled it.
    Cancelled,
    /// The server shut down before the stream finished; the events so far are all there is.
    Shutdown,
    /// The stream broke (e.g. the provider stream ended without a terminal event).
    Failed,
}

/// `ack`: the client consumed every message of the stream up to `seq`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ack {
    /// Highest consumed sequence number.
    pub seq: u64,
}

/// `resume`: after a reconnect, re-send the stream's messages after `last_seq`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resume {
    /// The last sequence number the client received (0: none).
    pub last_seq: u64,
}

/// `ping` / `pong`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ping {
    /// Echoed back in the `pong`.
    #[serde(default)]
    pub nonce: u64,
}

/// `error`: what was refused or failed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorBody {
    /// Machine-readable reason.
    pub code: ErrorCode,
    /// What happened, to what, and what to do.
    pub message: String,
}

/// Machine-readable error reasons.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorCode {
    /// Missing or wrong token; the connection is closed.
    Unauthorized,
    /// The token already has the maximum number of connections; the connection is closed.
    TooManyConnections,
    /// The first frame was not a `hello`, or a second `hello` came.
    HelloRequired,
    /// The envelope's `v` is not supported; the connection is closed.
    UnsupportedVersion,
    /// The frame is not a valid envelope; the connection stays open.
    MalformedEnvelope,
    /// The frame exceeds the server's `maxMessageBytes`; it was skipped.
    MessageTooLarge,
    /// The message type is not one this side accepts.
    UnexpectedType,
    /// No such stream (finished and acknowledged, expired, or never opened).
    UnknownStream,
    /// The stream id is already in use in this session.
    DuplicateStream,
    /// The session has the maximum number of open streams.
    TooManyStreams,
    /// `resume` asked for messages the server no longer keeps.
    ResumeGapTooOld,
    /// `resume` named a sequence number the server never sent.
    ResumeInvalid,
    /// The server is shutting down and takes no new work.
    ShuttingDown,
    /// This server has no agent session (`rpc_command` / `subscribe` unavailable).
    NoSession,
    /// The session's shared store could not be reached; retry later.
    Unavailable,
    /// A server bug.
    Internal,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wire_options_round_trip_without_secrets() {
        let o = StreamOptions {
            api_key: Some("sk-never-on-the-wire".into()),
            temperature: Some(0.5),
            max_tokens: Some(100),
            thinking: ThinkingLevel::High,
            session_id: Some("s1".into()),
            cache_retention: CacheRetention::Long,
            tool_choice: Some(ToolChoice::Tool("read".into())),
            headers: [("authorization".to_string(), "Bearer x".to_string())].into(),
            retry: RetryPolicy::none(),
            idle_timeout: Some(Duration::from_secs(5)),
            read_interval: Some(Duration::from_millis(8)),
            merge_deltas: true,
            ..Default::default()
        };
        let w = WireOptions::from(&o);
        let text = serde_json::to_string(&w).unwrap();
        assert!(!text.contains("sk-never"), "{text}");
        assert!(!text.to_lowercase().contains("authorization"), "{text}");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["toolChoice"], json!("read"));
        assert_eq!(v["idleTimeoutMs"], json!(5000));
        assert_eq!(v["readIntervalMs"], json!(8));
        assert_eq!(v["mergeDeltas"], json!(true));
        let back = w.to_stream_options(CancellationToken::new());
        assert_eq!(back.temperature, Some(0.5));
        assert_eq!(back.thinking, ThinkingLevel::High);
        assert_eq!(back.retry, RetryPolicy::none());
        assert_eq!(back.idle_timeout, Some(Duration::from_secs(5)));
        assert_eq!(back.read_interval, Some(Duration::from_millis(8)));
        assert!(back.merge_deltas);
        assert!(back.api_key.is_none() && back.headers.is_empty());
    }

    #[test]
    fn hello_debug_hides_the_token() {
        let h = Hello {
            token: Some("secret-token".into()),
            ..Default::default()
        };
        assert!(!format!("{h:?}").contains("secret-token"));
    }
}
