//! How a response body is cut into events: server-sent events for most APIs,
//! the AWS binary event stream for Bedrock.
//!
//! Both hand the decoder the same [`SseEvent`] view, so every decoder keeps
//! one contract. An AWS event-stream message becomes an event named by its
//! `:event-type` header (`messageStart`, `contentBlockDelta`, ...) with the JSON
//! payload as data; an exception message is named by its `:exception-type`
//! (`throttlingException`, ...); an `error` message becomes an event named
//! `error` whose data is `{"code": ..., "message": ...}`.
//!
//! The event-stream frames are decoded by `aws-smithy-eventstream` (the AWS
//! SDK's own decoder): prelude, headers, payload, and both CRC32 checks. A frame
//! that fails a check, or bytes left over at the end of the body, are a clear
//! framing error (the stream is not retried: the same bytes would come again).

use aws_smithy_eventstream::frame::{DecodedFrame, MessageFrameDecoder};
use aws_smithy_types::event_stream::{HeaderValue, Message};
use bytes::{Buf, BytesMut};

use crate::sse::{SseEvent, SseParser};

/// The framing of a wire API's response body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Framing {
    /// `text/event-stream`.
    Sse,
    /// `application/vnd.amazon.eventstream`.
    AwsEventStream,
}

/// A stateful splitter of one body into events.
pub(crate) enum Framer {
    Sse(SseParser),
    Aws(AwsEventStream),
}

impl Framer {
    pub(crate) fn new(framing: Framing) -> Self {
        match framing {
            Framing::Sse => Framer::Sse(SseParser::new()),
            Framing::AwsEventStream => Framer::Aws(AwsEventStream::default()),
        }
    }

    /// Feeds bytes split anywhere. `Err` is a framing error (the text says what).
    pub(crate) fn feed(
        &mut self,
        chunk: &[u8],
        on_event: &mut dyn FnMut(SseEvent<'_>),
    ) -> Result<(), String> {
        match self {
            Framer::Sse(p) => p.feed(chunk, on_event).map_err(|e| e.to_string()),
            Framer::Aws(p) => p.feed(chunk, on_event),
        }
    }

    /// The body ended.
    pub(crate) fn finish(&mut self, on_event: &mut dyn FnMut(SseEvent<'_>)) -> Result<(), String> {
        match self {
            Framer::Sse(p) => p.finish(on_event).map_err(|e| e.to_string()),
            Framer::Aws(p) => p.finish(),
        }
    }
}

/// The AWS event-stream decoder state.
#[derive(Default)]
pub(crate) struct AwsEventStream {
    buffer: BytesMut,
    decoder: MessageFrameDecoder,
    /// Bytes of the body consumed so far, for error messages.
    offset: usize,
    /// The decoder holds the prelude of a frame whose rest has not come yet.
    in_frame: bool,
}

fn header_str<'a>(message: &'a Message, name: &str) -> Option<&'a str> {
    message
        .headers()
        .iter()
        .find(|h| h.name().as_str() == name)
        .and_then(|h| match h.value() {
            HeaderValue::String(s) => Some(s.as_str()),
            _ => None,
        })
}

impl AwsEventStream {
    fn feed(&mut self, chunk: &[u8], on_event: &mut dyn FnMut(SseEvent<'_>)) -> Result<(), String> {
        self.buffer.extend_from_slice(chunk);
        loop {
            let before = self.buffer.remaining();
            let frame = self.decoder.decode_frame(&mut self.buffer).map_err(|e| {
                format!(
                    "corrupt AWS event-stream frame near byte {}: {e}",
                    self.offset
                )
            })?;
            self.offset += before - self.buffer.remaining();
            match frame {
                DecodedFrame::Incomplete => {
                    self.in_frame |= self.buffer.remaining() < before;
                    return Ok(());
                }
                DecodedFrame::Complete(message) => {
                    self.in_frame = false;
                    dispatch(&message, on_event)?;
                }
            }
        }
    }

    fn finish(&mut self) -> Result<(), String> {
        if self.buffer.is_empty() && !self.in_frame {
            Ok(())
        } else {
            Err(format!(
                "the AWS event stream ended inside a frame (after byte {})",
                self.offset
            ))
        }
    }
}

fn dispatch(message: &Message, on_event: &mut dyn FnMut(SseEvent<'_>)) -> Result<(), String> {
    let payload = std::str::from_utf8(message.payload())
        .map_err(|_| "an AWS event-stream payload is not UTF-8".to_string())?;
    match header_str(message, ":message-type").unwrap_or("event") {
        "event" => {
            let event = header_str(message, ":event-type").unwrap_or("");
            on_event(SseEvent {
                event,
                data: payload,
            });
        }
        "exception" => {
            let event = header_str(message, ":exception-type").unwrap_or("exception");
            on_event(SseEvent {
                event,
                data: payload,
            });
        }
        _ => {
            let data = serde_json::json!({
                "code": header_str(message, ":error-code").unwrap_or("error"),
                "message": header_str(message, ":error-message").unwrap_or(payload),
            })
            .to_string();
            on_event(SseEvent {
                event: "error",
                data: &data,
            });
        }
    }
    Ok(())
}
