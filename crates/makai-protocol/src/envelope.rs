//! The wire envelope: `{v, stream, seq, type, payload}`, one JSON object per frame.
//!
//! `stream` names the stream (or RPC call) a message belongs to; 0 means the
//! connection itself. `seq` numbers the server's sequenced messages of a stream
//! (`event`, `agent_event`, `stream_end`) from 1 without holes; 0 means "not
//! sequenced". See `docs/protocol.md` for the full protocol.

use std::fmt;

use serde::de::{self, IgnoredAny, MapAccess, Visitor};
use serde::ser::SerializeStruct;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use makai_ai::AssistantMessageEvent;

use crate::payload::{
    Ack, ErrorBody, ErrorCode, Hello, Json, Ping, PreconnectRequest, Resume, StreamEnd,
    StreamRequest, Welcome,
};
use crate::transport::Frame;

/// The protocol version this crate speaks (the envelope's `v`).
pub const PROTOCOL_VERSION: u32 = 1;

/// One protocol message.
#[derive(Clone, Debug, PartialEq)]
pub struct Envelope {
    /// Protocol version ([`PROTOCOL_VERSION`]).
    pub v: u32,
    /// The stream or call id; 0 for connection-level messages.
    pub stream: u64,
    /// Sequence number within the stream (server's sequenced messages); 0 otherwise.
    pub seq: u64,
    /// The message type and its payload.
    pub body: Body,
}

/// The type of a message (the envelope's `type`) with its payload.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Body {
    /// Client → server, first frame: version check, token (raw transports), session to resume.
    Hello(Hello),
    /// Server → client: the hello was accepted.
    Welcome(Welcome),
    /// Client → server: run one model call on stream `stream`.
    StreamRequest(Box<StreamRequest>),
    /// Server → client, sequenced: one event of a model call.
    Event(Box<AssistantMessageEvent>),
    /// Server → client, sequenced, last message of a stream.
    StreamEnd(StreamEnd),
    /// Client → server: everything up to `seq` was consumed (flow-control credit, replay trimming).
    Ack(Ack),
    /// Client → server: stop the stream (cancels the provider request).
    Cancel,
    /// Client → server, after a reconnect: send the stream's messages after `lastSeq`.
    Resume(Resume),
    /// Either direction: something was refused or failed.
    Error(ErrorBody),
    /// Client → server: liveness check.
    Ping(Ping),
    /// Server → client: answer to a ping (same nonce).
    Pong(Ping),
    /// Client → server: one agent-session command (the RPC mode's JSON command).
    RpcCommand(Json),
    /// Server → client: the command's JSON response (same `stream` as the command).
    RpcResponse(Json),
    /// Client → server: open a stream of the agent session's events on `stream`.
    Subscribe,
    /// Server → client, sequenced: one agent-session event (JSON).
    AgentEvent(Json),
    /// Client → server: open the connection a model's next call will take
    /// (no request is sent, no answer comes back).
    Preconnect(Box<PreconnectRequest>),
}

/// The bare message type, as written in `type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// `hello`
    Hello,
    /// `welcome`
    Welcome,
    /// `stream_request`
    StreamRequest,
    /// `event`
    Event,
    /// `stream_end`
    StreamEnd,
    /// `ack`
    Ack,
    /// `cancel`
    Cancel,
    /// `resume`
    Resume,
    /// `error`
    Error,
    /// `ping`
    Ping,
    /// `pong`
    Pong,
    /// `rpc_command`
    RpcCommand,
    /// `rpc_response`
    RpcResponse,
    /// `subscribe`
    Subscribe,
    /// `agent_event`
    AgentEvent,
    /// `preconnect`
    Preconnect,
}

impl Kind {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Hello => "hello",
            Kind::Welcome => "welcome",
            Kind::StreamRequest => "stream_request",
            Kind::Event => "event",
            Kind::StreamEnd => "stream_end",
            Kind::Ack => "ack",
            Kind::Cancel => "cancel",
            Kind::Resume => "resume",
            Kind::Error => "error",
            Kind::Ping => "ping",
            Kind::Pong => "pong",
            Kind::RpcCommand => "rpc_command",
            Kind::RpcResponse => "rpc_response",
            Kind::Subscribe => "subscribe",
            Kind::AgentEvent => "agent_event",
            Kind::Preconnect => "preconnect",
        }
    }
}

impl Body {
    /// The message type.
    pub fn kind(&self) -> Kind {
        match self {
            Body::Hello(_) => Kind::Hello,
            Body::Welcome(_) => Kind::Welcome,
            Body::StreamRequest(_) => Kind::StreamRequest,
            Body::Event(_) => Kind::Event,
            Body::StreamEnd(_) => Kind::StreamEnd,
            Body::Ack(_) => Kind::Ack,
            Body::Cancel => Kind::Cancel,
            Body::Resume(_) => Kind::Resume,
            Body::Error(_) => Kind::Error,
            Body::Ping(_) => Kind::Ping,
            Body::Pong(_) => Kind::Pong,
            Body::RpcCommand(_) => Kind::RpcCommand,
            Body::RpcResponse(_) => Kind::RpcResponse,
            Body::Subscribe => Kind::Subscribe,
            Body::AgentEvent(_) => Kind::AgentEvent,
            Body::Preconnect(_) => Kind::Preconnect,
        }
    }
}

impl Envelope {
    /// An unsequenced message on `stream` (0 for the connection).
    pub fn new(stream: u64, body: Body) -> Self {
        Envelope {
            v: PROTOCOL_VERSION,
            stream,
            seq: 0,
            body,
        }
    }

    /// A sequenced message.
    pub fn sequenced(stream: u64, seq: u64, body: Body) -> Self {
        Envelope {
            v: PROTOCOL_VERSION,
            stream,
            seq,
            body,
        }
    }

    /// An `error` message.
    pub fn error(stream: u64, code: ErrorCode, message: impl Into<String>) -> Self {
        Envelope::new(
            stream,
            Body::Error(ErrorBody {
                code,
                message: message.into(),
            }),
        )
    }

    /// Serializes to one frame.
    pub fn to_frame(&self) -> Frame {
        match serde_json::to_string(self) {
            Ok(s) => Frame::from_string(s),
            // Serializing our own types cannot fail (no non-string map keys, no
            // failing Serialize impls); keep the connection alive regardless.
            Err(e) => Frame::from_string(format!(
                r#"{{"v":{PROTOCOL_VERSION},"type":"error","payload":{{"code":"internal","message":{}}}}}"#,
                Value::String(format!(
                    "cannot encode a {} message: {e}",
                    self.body.kind().as_str()
                ))
            )),
        }
    }

    /// Parses a frame. On failure the error says what is wrong (and carries
    /// the stream id when the frame had a readable one).
    pub fn from_frame(frame: &[u8]) -> Result<Envelope, DecodeError> {
        serde_json::from_slice(frame).map_err(|e| DecodeError {
            stream: stream_of(frame),
            message: e.to_string(),
        })
    }
}

/// Why a frame is not a valid envelope.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("malformed envelope: {message}")]
pub struct DecodeError {
    /// The frame's `stream`, when it could be read.
    pub stream: u64,
    /// What is wrong.
    pub message: String,
}

fn stream_of(frame: &[u8]) -> u64 {
    #[derive(Deserialize)]
    struct Probe {
        #[serde(default)]
        stream: u64,
    }
    serde_json::from_slice::<Probe>(frame).map_or(0, |p| p.stream)
}

impl Serialize for Envelope {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut st = serializer.serialize_struct("Envelope", 5)?;
        st.serialize_field("v", &self.v)?;
        if self.stream != 0 {
            st.serialize_field("stream", &self.stream)?;
        } else {
            st.skip_field("stream")?;
        }
        if self.seq != 0 {
            st.serialize_field("seq", &self.seq)?;
        } else {
            st.skip_field("seq")?;
        }
        st.serialize_field("type", self.body.kind().as_str())?;
        match &self.body {
            Body::Hello(p) => st.serialize_field("payload", p)?,
            Body::Welcome(p) => st.serialize_field("payload", p)?,
            Body::StreamRequest(p) => st.serialize_field("payload", p)?,
            Body::Preconnect(p) => st.serialize_field("payload", p)?,
            Body::Event(p) => st.serialize_field("payload", p)?,
            Body::StreamEnd(p) => st.serialize_field("payload", p)?,
            Body::Ack(p) => st.serialize_field("payload", p)?,
            Body::Resume(p) => st.serialize_field("payload", p)?,
            Body::Error(p) => st.serialize_field("payload", p)?,
            Body::Ping(p) | Body::Pong(p) => st.serialize_field("payload", p)?,
            Body::RpcCommand(p) | Body::RpcResponse(p) | Body::AgentEvent(p) => {
                st.serialize_field("payload", p)?
            }
            Body::Cancel | Body::Subscribe => st.skip_field("payload")?,
        }
        st.end()
    }
}

/// The payload of `kind`, read straight from the map (the fast path: `type` came first).
fn payload_from_map<'de, A: MapAccess<'de>>(kind: Kind, map: &mut A) -> Result<Body, A::Error> {
    Ok(match kind {
        Kind::Hello => Body::Hello(map.next_value()?),
        Kind::Welcome => Body::Welcome(map.next_value()?),
        Kind::StreamRequest => Body::StreamRequest(map.next_value()?),
        Kind::Preconnect => Body::Preconnect(map.next_value()?),
        Kind::Event => Body::Event(map.next_value()?),
        Kind::StreamEnd => Body::StreamEnd(map.next_value()?),
        Kind::Ack => Body::Ack(map.next_value()?),
        Kind::Resume => Body::Resume(map.next_value()?),
        Kind::Error => Body::Error(map.next_value()?),
        Kind::Ping => Body::Ping(map.next_value()?),
        Kind::Pong => Body::Pong(map.next_value()?),
        Kind::RpcCommand => Body::RpcCommand(map.next_value()?),
        Kind::RpcResponse => Body::RpcResponse(map.next_value()?),
        Kind::AgentEvent => Body::AgentEvent(map.next_value()?),
        Kind::Cancel => {
            map.next_value::<IgnoredAny>()?;
            Body::Cancel
        }
        Kind::Subscribe => {
            map.next_value::<IgnoredAny>()?;
            Body::Subscribe
        }
    })
}

/// A session payload buffered before `type` was seen, as JSON text again.
fn raw(kind: Kind, value: Option<Value>) -> Result<Json, String> {
    let v = value.ok_or_else(|| format!("a '{}' message needs a payload", kind.as_str()))?;
    Json::encode(&v).map_err(|e| format!("bad '{}' payload: {e}", kind.as_str()))
}

/// The payload of `kind` from a value buffered before `type` was seen (or absent).
fn payload_from_value(kind: Kind, value: Option<Value>) -> Result<Body, String> {
    fn typed<T: serde::de::DeserializeOwned>(kind: Kind, v: Option<Value>) -> Result<T, String> {
        let v = v.ok_or_else(|| format!("a '{}' message needs a payload", kind.as_str()))?;
        serde_json::from_value(v).map_err(|e| format!("bad '{}' payload: {e}", kind.as_str()))
    }
    Ok(match kind {
        Kind::Hello => Body::Hello(value.map_or(Ok(Hello::default()), |v| typed(kind, Some(v)))?),
        Kind::Welcome => Body::Welcome(typed(kind, value)?),
        Kind::StreamRequest => Body::StreamRequest(typed(kind, value)?),
        Kind::Preconnect => Body::Preconnect(typed(kind, value)?),
        Kind::Event => Body::Event(typed(kind, value)?),
        Kind::StreamEnd => Body::StreamEnd(typed(kind, value)?),
        Kind::Ack => Body::Ack(typed(kind, value)?),
        Kind::Resume => Body::Resume(typed(kind, value)?),
        Kind::Error => Body::Error(typed(kind, value)?),
        Kind::Ping => Body::Ping(value.map_or(Ok(Ping::default()), |v| typed(kind, Some(v)))?),
        Kind::Pong => Body::Pong(value.map_or(Ok(Ping::default()), |v| typed(kind, Some(v)))?),
        Kind::RpcCommand => Body::RpcCommand(raw(kind, value)?),
        Kind::RpcResponse => Body::RpcResponse(raw(kind, value)?),
        Kind::AgentEvent => Body::AgentEvent(raw(kind, value)?),
        Kind::Cancel => Body::Cancel,
        Kind::Subscribe => Body::Subscribe,
    })
}

impl<'de> Deserialize<'de> for Envelope {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EnvelopeVisitor;

        impl<'de> Visitor<'de> for EnvelopeVisitor {
            type Value = Envelope;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an envelope object {v, stream, seq, type, payload}")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope, A::Error> {
                let mut v: Option<u32> = None;
                let mut stream = 0u64;
                let mut seq = 0u64;
                let mut kind: Option<Kind> = None;
                let mut body: Option<Body> = None;
                let mut early_payload: Option<Value> = None;
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    match key.as_ref() {
                        "v" => v = Some(map.next_value()?),
                        "stream" => stream = map.next_value()?,
                        "seq" => seq = map.next_value()?,
                        "type" => kind = Some(map.next_value()?),
                        "payload" => match kind {
                            Some(k) => body = Some(payload_from_map(k, &mut map)?),
                            None => early_payload = Some(map.next_value()?),
                        },
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                let v = v.ok_or_else(|| de::Error::missing_field("v"))?;
                let kind = kind.ok_or_else(|| de::Error::missing_field("type"))?;
                let body = match body {
                    Some(b) => b,
                    None => payload_from_value(kind, early_payload).map_err(de::Error::custom)?,
                };
                Ok(Envelope {
                    v,
                    stream,
                    seq,
                    body,
                })
            }
        }

        deserializer.deserialize_map(EnvelopeVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::payload::EndReason;
    use serde_json::json;

    fn round_trip(e: &Envelope) -> Envelope {
        let frame = e.to_frame();
        Envelope::from_frame(frame.as_bytes()).unwrap()
    }

    #[test]
    fn event_envelope_shape() {
        let e = Envelope::sequenced(
            7,
            3,
            Body::Event(Box::new(AssistantMessageEvent::TextDelta {
                content_index: 0,
                delta: "hi".into(),
            })),
        );
        let v: Value = serde_json::from_slice(e.to_frame().as_bytes()).unwrap();
        assert_eq!(
            v,
            json!({"v": 1, "stream": 7, "seq": 3, "type": "event",
                   "payload": {"type": "text_delta", "contentIndex": 0, "delta": "hi"}})
        );
        assert_eq!(round_trip(&e), e);
    }

    #[test]
    fn zero_stream_and_seq_are_omitted_and_units_have_no_payload() {
        let e = Envelope::new(0, Body::Cancel);
        assert_eq!(e.to_frame().as_str(), r#"{"v":1,"type":"cancel"}"#);
        assert_eq!(round_trip(&e), e);
    }

    #[test]
    fn payload_before_type_is_accepted() {
        let text = r#"{"payload":{"seq":5},"stream":2,"type":"ack","v":1}"#;
        let e = Envelope::from_frame(text.as_bytes()).unwrap();
        assert_eq!(e.stream, 2);
        assert_eq!(e.body, Body::Ack(Ack { seq: 5 }));
        let text = r#"{"payload":{"reason":"complete"},"type":"stream_end","v":1,"seq":9}"#;
        let e = Envelope::from_frame(text.as_bytes()).unwrap();
        assert_eq!(
            e.body,
            Body::StreamEnd(StreamEnd {
                reason: EndReason::Complete,
                message: None
            })
        );
    }

    #[test]
    fn a_preconnect_round_trips_in_either_field_order() {
        let model = makai_ai::Model::custom(
            makai_ai::Api::OpenAiCompletions,
            "mock",
            "mock-model",
            "http://127.0.0.1:9/v1",
        );
        let e = Envelope::new(
            0,
            Body::Preconnect(Box::new(PreconnectRequest {
                model,
                options: crate::payload::WireOptions::from(&makai_ai::StreamOptions {
                    connect_timeout: Some(std::time::Duration::from_secs(3)),
                    ..Default::default()
                }),
            })),
        );
        assert_eq!(round_trip(&e), e);
        let text = e.to_frame().as_str().to_string();
        let payload = text
            .strip_prefix(r#"{"v":1,"type":"preconnect","payload":"#)
            .and_then(|rest| rest.strip_suffix('}'))
            .unwrap();
        assert!(payload.contains(r#""connectTimeoutMs":3000"#), "{payload}");
        let reordered = format!(r#"{{"payload":{payload},"type":"preconnect","v":1}}"#);
        assert_eq!(Envelope::from_frame(reordered.as_bytes()).unwrap(), e);
    }

    #[test]
    fn unknown_fields_are_ignored_and_optional_payloads_default() {
        let e = Envelope::from_frame(br#"{"v":1,"type":"ping","extra":[1,2]}"#).unwrap();
        assert_eq!(e.body, Body::Ping(Ping::default()));
    }

    #[test]
    fn errors_name_the_problem_and_the_stream() {
        let err = Envelope::from_frame(br#"{"v":1,"stream":4,"type":"warp"}"#).unwrap_err();
        assert_eq!(err.stream, 4);
        assert!(err.message.contains("warp"), "{err}");
        let err = Envelope::from_frame(br#"{"stream":4,"type":"cancel"}"#).unwrap_err();
        assert!(err.message.contains("`v`"), "{err}");
        let err = Envelope::from_frame(b"not json").unwrap_err();
        assert_eq!(err.stream, 0);
        let err = Envelope::from_frame(br#"{"v":1,"type":"resume","stream":3}"#).unwrap_err();
        assert!(err.message.contains("needs a payload"), "{err}");
    }
}
