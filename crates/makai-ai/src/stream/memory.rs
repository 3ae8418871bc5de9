//! [`decode_body`]: a response body held in memory, decoded as `stream` would.

use crate::builder::MessageBuilder;
use crate::error::Fault;
use crate::event::AssistantMessageEvent;
use crate::framing::Framer;
use crate::message::{AssistantMessage, StopReason};
use crate::model::Model;
use crate::provider::wire_api;

/// Decodes a complete response body held in memory, split into `chunks` at any
/// byte boundaries, exactly as `stream` would. No retries, no I/O: for tests,
/// benchmarks and replaying recorded transcripts.
pub fn decode_body<'a>(
    model: &Model,
    chunks: impl IntoIterator<Item = &'a [u8]>,
) -> (Vec<AssistantMessageEvent>, AssistantMessage) {
    let api = wire_api(model.api);
    let mut decoder = api.decoder();
    let mut builder = MessageBuilder::new(model);
    let mut events = Vec::new();
    builder.start();
    let mut parser = Framer::new(api.framing());
    let mut fault: Option<Fault> = None;
    let mut failed_framing: Option<String> = None;
    for chunk in chunks {
        let mut on_event = |ev: crate::sse::SseEvent<'_>| {
            if fault.is_none()
                && !builder.is_finished()
                && let Err(f) = decoder.on_event(ev, &mut builder, model)
            {
                fault = Some(f);
            }
        };
        if let Err(e) = parser.feed(chunk, &mut on_event) {
            failed_framing = Some(format!("malformed stream: {e}"));
            break;
        }
        builder.take_events_into(&mut events);
        if fault.is_some() || builder.is_finished() {
            break;
        }
    }
    if fault.is_none() && failed_framing.is_none() && !builder.is_finished() {
        let mut on_event = |ev: crate::sse::SseEvent<'_>| {
            if fault.is_none()
                && !builder.is_finished()
                && let Err(f) = decoder.on_event(ev, &mut builder, model)
            {
                fault = Some(f);
            }
        };
        if let Err(e) = parser.finish(&mut on_event) {
            failed_framing = Some(format!("malformed stream: {e}"));
        }
    }
    if let Some(message) = failed_framing {
        builder.fail(StopReason::Error, message, model);
    } else if let Some(f) = fault {
        builder.fail(StopReason::Error, f.message, model);
    } else if !builder.is_finished() {
        if let Err(f) = decoder.on_eof(&mut builder, model) {
            builder.fail(StopReason::Error, f.message, model);
        } else if !builder.is_finished() {
            builder.fail(
                StopReason::Error,
                "the stream ended before the response was complete",
                model,
            );
        }
    }
    builder.take_events_into(&mut events);
    (events, builder.into_message())
}
