//! Decoder tests on in-memory response bodies.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use serde_json::{Value, json};

use super::decode::Decoder;
use crate::builder::MessageBuilder;
use crate::event::AssistantMessageEvent;
use crate::message::{AssistantContent, AssistantMessage, StopReason};
use crate::model::{Api, Model};
use crate::provider::WireDecoder;
use crate::sse::SseEvent;

fn model() -> Model {
    Model::custom(
        Api::AnthropicMessages,
        "anthropic",
        "claude-test",
        "http://127.0.0.1:9/v1",
    )
}

/// Frames events as Anthropic does: `event: <type>` then `data: <json>`.
fn sse(events: &[Value]) -> String {
    let mut out = String::new();
    for e in events {
        let kind = e["type"].as_str().unwrap_or("");
        out.push_str(&format!("event: {kind}\ndata: {e}\n\n"));
    }
    out
}

fn decode(body: &str) -> (Vec<AssistantMessageEvent>, AssistantMessage) {
    crate::decode_body(&model(), [body.as_bytes()])
}

fn message_start(input: u64, output: u64) -> Value {
    json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
        "content": [], "model": "claude-test", "stop_reason": null,
        "usage": {"input_tokens": input, "output_tokens": output}}})
}

fn block_start(index: u64, block: Value) -> Value {
    json!({"type": "content_block_start", "index": index, "content_block": block})
}

fn delta(index: u64, delta: Value) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": delta})
}

fn text_delta(index: u64, text: &str) -> Value {
    delta(index, json!({"type": "text_delta", "text": text}))
}

fn json_delta(index: u64, part: &str) -> Value {
    delta(
        index,
        json!({"type": "input_json_delta", "partial_json": part}),
    )
}

fn block_stop(index: u64) -> Value {
    json!({"type": "content_block_stop", "index": index})
}

fn message_delta(stop_reason: &str, usage: Value) -> Value {
    json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null}, "usage": usage})
}

fn message_stop() -> Value {
    json!({"type": "message_stop"})
}

fn event_types(events: &[AssistantMessageEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            serde_json::to_value(e).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

#[test]
fn decodes_a_text_response() {
    let body = sse(&[
        message_start(11, 1),
        block_start(0, json!({"type": "text", "text": ""})),
        json!({"type": "ping"}),
        text_delta(0, "Hello"),
        text_delta(0, " there!"),
        block_stop(0),
        message_delta("end_turn", json!({"output_tokens": 6})),
        message_stop(),
    ]);
    let (events, msg) = decode(&body);
    assert_eq!(msg.text(), "Hello there!");
    assert_eq!(msg.stop_reason, StopReason::Stop);
    assert_eq!(msg.error_message, None);
    assert_eq!(msg.response_id.as_deref(), Some("msg_1"));
    assert_eq!((msg.usage.input, msg.usage.output), (11, 6));
    assert_eq!(msg.usage.total_tokens, 17);
    assert_eq!(
        event_types(&events),
        [
            "start",
            "text_start",
            "text_delta",
            "text_delta",
            "text_end",
            "done"
        ]
    );
}

#[test]
fn usage_fields_in_message_delta_replace_earlier_values_and_cache_is_split_out() {
    let start = json!({"type": "message_start", "message": {"id": "m", "usage": {
        "input_tokens": 43, "output_tokens": 1, "cache_read_input_tokens": 1000,
        "cache_creation_input_tokens": 200, "cache_creation": {"ephemeral_5m_input_tokens": 200}}}});
    let body = sse(&[
        start,
        block_start(0, json!({"type": "text", "text": ""})),
        text_delta(0, "pong"),
        block_stop(0),
        message_delta("end_turn", json!({"input_tokens": 61, "output_tokens": 2})),
        message_stop(),
    ]);
    let (_, msg) = decode(&body);
    assert_eq!(msg.usage.input, 61);
    assert_eq!(msg.usage.output, 2);
    assert_eq!(msg.usage.cache_read, 1000, "absent fields keep their value");
    assert_eq!(msg.usage.cache_write, 200);
    assert_eq!(msg.usage.total_tokens, 61 + 2 + 1000 + 200);
}

#[test]
fn one_hour_cache_writes_are_counted_apart_and_priced_at_twice_the_input_rate() {
    let start = json!({"type": "message_start", "message": {"id": "m", "usage": {
        "input_tokens": 10, "output_tokens": 1, "cache_creation_input_tokens": 3000,
        "cache_creation": {"ephemeral_5m_input_tokens": 1000, "ephemeral_1h_input_tokens": 2000}}}});
    let body = sse(&[
        start,
        block_start(0, json!({"type": "text", "text": ""})),
        text_delta(0, "ok"),
        block_stop(0),
        message_delta("end_turn", json!({"output_tokens": 2})),
        message_stop(),
    ]);
    let mut priced = model();
    priced.cost.input = 3.0;
    priced.cost.cache_write = 3.75;
    let (_, msg) = crate::decode_body(&priced, [body.as_bytes()]);
    assert_eq!(msg.usage.cache_write, 3000);
    assert_eq!(msg.usage.cache_write_1h, Some(2000));
    let expected = (1000.0 * 3.75 + 2000.0 * 6.0) / 1e6;
    assert!((msg.usage.cost.cache_write - expected).abs() < 1e-12);
    // Without the split every write is a five-minute one.
    let (_, plain) = decode(&sse(&[message_start(10, 1), message_stop()]));
    assert_eq!(plain.usage.cache_write_1h, None);
}

#[test]
fn decodes_thinking_with_signature_then_text() {
    let body = sse(&[
        message_start(69, 2),
        block_start(
            0,
            json!({"type": "thinking", "thinking": "", "signature": ""}),
        ),
        delta(0, json!({"type": "thinking_delta", "thinking": "925 ÷ 5"})),
        delta(0, json!({"type": "thinking_delta", "thinking": ""})),
        delta(0, json!({"type": "thinking_delta", "thinking": " = 185"})),
        delta(
            0,
            json!({"type": "signature_delta", "signature": "EvQBsig=="}),
        ),
        block_stop(0),
        block_start(1, json!({"type": "text", "text": ""})),
        text_delta(1, "185"),
        block_stop(1),
        message_delta("end_turn", json!({"output_tokens": 53})),
        message_stop(),
    ]);
    let (events, msg) = decode(&body);
    let AssistantContent::Thinking(t) = &msg.content[0] else {
        panic!("{:?}", msg.content)
    };
    assert_eq!(t.thinking, "925 ÷ 5 = 185");
    assert_eq!(t.thinking_signature.as_deref(), Some("EvQBsig=="));
    assert!(!t.redacted);
    assert_eq!(msg.text(), "185");
    assert_eq!(
        event_types(&events),
        [
            "start",
            "thinking_start",
            "thinking_delta",
            "thinking_delta",
            "thinking_end",
            "text_start",
            "text_delta",
            "text_end",
            "done"
        ]
    );
}

#[test]
fn decodes_redacted_thinking() {
    let body = sse(&[
        message_start(1, 1),
        block_start(0, json!({"type": "redacted_thinking", "data": "ENCRYPTED"})),
        block_stop(0),
        block_start(1, json!({"type": "text", "text": ""})),
        text_delta(1, "ok"),
        block_stop(1),
        message_delta("end_turn", json!({"output_tokens": 3})),
        message_stop(),
    ]);
    let (_, msg) = decode(&body);
    let AssistantContent::Thinking(t) = &msg.content[0] else {
        panic!()
    };
    assert!(t.redacted);
    assert_eq!(t.thinking, "");
    assert_eq!(t.thinking_signature.as_deref(), Some("ENCRYPTED"));
}

#[test]
fn tool_arguments_split_mid_token_are_joined() {
    let body = sse(&[
        message_start(377, 1),
        block_start(0, json!({"type": "text", "text": ""})),
        text_delta(0, "Checking."),
        block_stop(0),
        block_start(
            1,
            json!({"type": "tool_use", "id": "toolu_1", "name": "get_weather", "caller": {"type": "direct"}, "input": {}}),
        ),
        json_delta(1, ""),
        json_delta(1, "{\"locati"),
        json_delta(1, "on\": \"P"),
        json_delta(1, "ar"),
        json_delta(1, "is\"}"),
        block_stop(1),
        message_delta("tool_use", json!({"output_tokens": 65})),
        message_stop(),
    ]);
    let (events, msg) = decode(&body);
    assert_eq!(msg.stop_reason, StopReason::ToolUse);
    let call = msg.tool_calls().next().unwrap();
    assert_eq!(call.id, "toolu_1");
    assert_eq!(call.name, "get_weather");
    assert!(call.arguments_complete());
    assert_eq!(
        Value::Object(call.arguments.clone()),
        json!({"location": "Paris"})
    );
    let deltas = events
        .iter()
        .filter(|e| matches!(e, AssistantMessageEvent::ToolcallDelta { .. }))
        .count();
    assert_eq!(deltas, 4, "the empty first fragment emits no delta");
    assert!(events.iter().any(|e| matches!(
        e,
        AssistantMessageEvent::ToolcallStart { content_index: 1, id, name } if id == "toolu_1" && name == "get_weather"
    )));
}

#[test]
fn tool_call_without_arguments_gets_an_empty_object() {
    let body = sse(&[
        message_start(5, 1),
        block_start(
            0,
            json!({"type": "tool_use", "id": "toolu_2", "name": "list", "input": {}}),
        ),
        json_delta(0, ""),
        block_stop(0),
        message_delta("tool_use", json!({"output_tokens": 4})),
        message_stop(),
    ]);
    let (_, msg) = decode(&body);
    let call = msg.tool_calls().next().unwrap();
    assert!(call.arguments_complete());
    assert!(call.arguments.is_empty());
}

#[test]
fn tool_input_given_whole_in_the_start_event_is_used() {
    let body = sse(&[
        message_start(5, 1),
        block_start(
            0,
            json!({"type": "tool_use", "id": "t", "name": "read", "input": {"path": "a.txt"}}),
        ),
        block_stop(0),
        message_delta("tool_use", json!({"output_tokens": 4})),
        message_stop(),
    ]);
    let (_, msg) = decode(&body);
    let call = msg.tool_calls().next().unwrap();
    assert!(call.arguments_complete());
    assert_eq!(call.arguments["path"], "a.txt");
}

#[test]
fn truncated_tool_call_is_flagged_and_not_parsed_as_complete() {
    let partial = "{\"filename\": \"taxes.txt\", \"lines\": [\n\"# GUIDE\",\n\"Filing taxes";
    let body = sse(&[
        message_start(450, 1),
        block_start(0, json!({"type": "text", "text": ""})),
        text_delta(0, "Let me write it."),
        block_stop(0),
        block_start(
            1,
            json!({"type": "tool_use", "id": "toolu_3", "name": "make_file", "input": {}}),
        ),
        json_delta(1, &partial[..20]),
        json_delta(1, &partial[20..]),
        // No content_block_stop: the output limit cut the call.
        message_delta("max_tokens", json!({"output_tokens": 124})),
        message_stop(),
    ]);
    let (events, msg) = decode(&body);
    assert_eq!(msg.stop_reason, StopReason::Length);
    assert_eq!(msg.text(), "Let me write it.");
    let call = msg.tool_calls().next().unwrap();
    assert!(!call.arguments_complete());
    assert_eq!(call.raw_arguments.as_deref(), Some(partial));
    assert_eq!(call.arguments["filename"], "taxes.txt");
    assert!(matches!(
        events.last(),
        Some(AssistantMessageEvent::Done {
            reason: StopReason::Length,
            ..
        })
    ));
}

#[test]
fn skipped_blocks_do_not_shift_content_indexes() {
    let body = sse(&[
        message_start(5, 1),
        block_start(
            0,
            json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}),
        ),
        json_delta(0, "{\"query\": \"rust\"}"),
        block_stop(0),
        block_start(
            1,
            json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}),
        ),
        block_stop(1),
        block_start(2, json!({"type": "text", "text": ""})),
        text_delta(2, "Found it."),
        delta(
            2,
            json!({"type": "citations_delta", "citation": {"type": "web_search_result_location"}}),
        ),
        block_stop(2),
        message_delta("end_turn", json!({"output_tokens": 9})),
        message_stop(),
    ]);
    let (events, msg) = decode(&body);
    assert_eq!(msg.content.len(), 1);
    assert_eq!(msg.text(), "Found it.");
    assert!(
        events
            .iter()
            .all(|e| e.content_index().is_none_or(|i| i == 0))
    );
}

#[test]
fn data_only_events_dispatch_on_their_json_type() {
    let body = format!(
        "data: {}\n\ndata: {}\n\ndata: {}\n\ndata: {}\n\ndata: {}\n\ndata: {}\n\n",
        message_start(3, 1),
        block_start(0, json!({"text": "", "type": "text"})),
        text_delta(0, "hi"),
        block_stop(0),
        message_delta("stop_sequence", json!({"output_tokens": 2})),
        message_stop()
    );
    let (_, msg) = decode(&body);
    assert_eq!(msg.text(), "hi");
    assert_eq!(msg.stop_reason, StopReason::Stop);
}

/// A stream exercising every block kind, with escapes and multi-byte characters.
fn rich_stream() -> String {
    sse(&[
        message_start(12, 1),
        block_start(
            0,
            json!({"type": "thinking", "thinking": "", "signature": ""}),
        ),
        delta(
            0,
            json!({"type": "thinking_delta", "thinking": "Plan: ÷ and “quotes” 🦀"}),
        ),
        delta(
            0,
            json!({"type": "signature_delta", "signature": "c2lnbmF0dXJl"}),
        ),
        block_stop(0),
        block_start(1, json!({"type": "text", "text": ""})),
        text_delta(1, "Line one\nline \"two\" — ü"),
        text_delta(1, " end"),
        block_stop(1),
        block_start(
            2,
            json!({"type": "tool_use", "id": "toolu_9", "name": "write", "input": {}}),
        ),
        json_delta(2, "{\"path\": \"ä.txt\", "),
        json_delta(2, "\"content\": \"x\\ny\"}"),
        block_stop(2),
        json!({"type": "ping"}),
        message_delta(
            "tool_use",
            json!({"output_tokens": 40, "cache_read_input_tokens": 7}),
        ),
        message_stop(),
    ])
}

fn normalized(mut msg: AssistantMessage) -> AssistantMessage {
    msg.timestamp = 0;
    msg
}

#[test]
fn rich_stream_decodes_fully() {
    let (_, msg) = decode(&rich_stream());
    assert_eq!(msg.content.len(), 3);
    assert_eq!(msg.thinking(), "Plan: ÷ and “quotes” 🦀");
    assert_eq!(msg.text(), "Line one\nline \"two\" — ü end");
    let call = msg.tool_calls().next().unwrap();
    assert_eq!(call.arguments["content"], "x\ny");
    assert_eq!(msg.usage.cache_read, 7);
}

proptest! {
    #[test]
    fn any_split_of_the_stream_gives_the_same_message(a in 0usize..4000, b in 0usize..4000) {
        let body = rich_stream();
        let bytes = body.as_bytes();
        let (a, b) = (a % (bytes.len() + 1), b % (bytes.len() + 1));
        let (lo, hi) = (a.min(b), a.max(b));
        let m = model();
        let (_, whole) = crate::decode_body(&m, [bytes]);
        let (events, split) = crate::decode_body(&m, [&bytes[..lo], &bytes[lo..hi], &bytes[hi..]]);
        prop_assert_eq!(whole.stop_reason, StopReason::ToolUse);
        prop_assert_eq!(normalized(whole), normalized(split));
        let done = matches!(events.last(), Some(AssistantMessageEvent::Done { .. }));
        prop_assert!(done, "the last event must be done");
    }
}

/// Decodes `events` (JSON texts, each sent with `event:` set to its type) with
/// every fast path on, and again with the delta template forgotten after each
/// event, so that every event is parsed; asserts both agree, and returns the
/// message and how many events the template recognised.
fn assert_template_agrees(events: &[String]) -> (AssistantMessage, usize) {
    let m = model();
    let run = |use_template: bool| {
        let mut decoder = Decoder::default();
        let mut out = MessageBuilder::new(&m);
        out.start();
        let mut replayed = 0;
        for data in events {
            let kind: Value = serde_json::from_str(data).unwrap();
            let event = SseEvent {
                event: kind["type"].as_str().unwrap_or(""),
                data,
            };
            if decoder.template_matches(data) {
                replayed += 1;
            }
            if !use_template {
                decoder.forget_template();
            }
            decoder.on_event(event, &mut out, &m).unwrap();
        }
        decoder.on_eof(&mut out, &m).unwrap();
        let events: Vec<_> = out.drain_events().collect();
        (events, normalized(out.into_message()), replayed)
    };
    let (fast_events, fast, replayed) = run(true);
    let (slow_events, slow, _) = run(false);
    assert_eq!(fast, slow);
    assert_eq!(fast_events.len(), slow_events.len());
    for (a, b) in fast_events.iter().zip(&slow_events) {
        if !matches!(a, AssistantMessageEvent::Done { .. }) {
            assert_eq!(a, b);
        }
    }
    (fast, replayed)
}

#[test]
fn replayed_text_and_thinking_deltas_decode_exactly_like_parsed_ones() {
    let texts = ["a", "b c", r"d\\e", r#"f\"g"#, "", "wörld"];
    let mut events = vec![
        message_start(3, 1).to_string(),
        block_start(
            0,
            json!({"type": "thinking", "thinking": "", "signature": ""}),
        )
        .to_string(),
    ];
    for t in texts {
        events.push(format!(r#"{{"type":"content_block_delta","index":0,"delta":{{"type":"thinking_delta","thinking":"{t}"}}}}"#));
    }
    events.push(delta(0, json!({"type": "signature_delta", "signature": "sig"})).to_string());
    events.push(block_stop(0).to_string());
    events.push(block_start(1, json!({"type": "text", "text": ""})).to_string());
    for t in texts.iter().chain(&texts) {
        events.push(format!(r#"{{"type":"content_block_delta","index":1,"delta":{{"type":"text_delta","text":"{t}"}}}}"#));
    }
    // A delta for a block that is not open is ignored either way.
    events.push(text_delta(5, "x").to_string());
    events.push(text_delta(5, "y").to_string());
    events.push(block_stop(1).to_string());
    events.push(text_delta(1, "late").to_string());
    events.push(message_delta("end_turn", json!({"output_tokens": 9})).to_string());
    events.push(message_stop().to_string());
    let (msg, replayed) = assert_template_agrees(&events);
    // A plain delta is replayed when the one before it was a plain delta of the
    // same block: "b c" (thinking), "b c" and "a" then "b c" (text), "y".
    assert_eq!(replayed, 5);
    assert_eq!(msg.text(), r#"ab cd\ef"gwörldab cd\ef"gwörld"#);
    assert_eq!(msg.thinking(), r#"ab cd\ef"gwörld"#);
}

proptest! {
    #[test]
    fn any_sequence_of_deltas_decodes_like_parsed_ones(
        picks in proptest::collection::vec((0..6usize, 0..4usize), 1..30)
    ) {
        let texts = ["x", "y z", r"\\", ""];
        let mut events = vec![
            message_start(3, 1).to_string(),
            block_start(0, json!({"type": "text", "text": ""})).to_string(),
            block_start(1, json!({"type": "thinking", "thinking": ""})).to_string(),
        ];
        for (kind, t) in picks {
            let t = texts[t];
            events.push(match kind {
                0 => format!(r#"{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"{t}"}}}}"#),
                1 => format!(r#"{{"type":"content_block_delta","index":1,"delta":{{"type":"thinking_delta","thinking":"{t}"}}}}"#),
                2 => format!(r#"{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"{t}","extra":1}}}}"#),
                3 => format!(r#"{{"type":"content_block_delta","index":1,"delta":{{"type":"signature_delta","signature":"{t}"}}}}"#),
                4 => format!(r#"{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"{t}"}},"usage":{{"output_tokens":2}}}}"#),
                _ => json!({"type": "ping"}).to_string(),
            });
        }
        events.push(block_stop(0).to_string());
        events.push(block_stop(1).to_string());
        events.push(message_delta("end_turn", json!({"output_tokens": 9})).to_string());
        events.push(message_stop().to_string());
        assert_template_agrees(&events);
    }
}

#[path = "decode_fault_tests.rs"]
mod faults;
