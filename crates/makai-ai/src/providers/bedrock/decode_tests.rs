//! Decoding ConverseStream event streams built frame by frame.

use aws_smithy_eventstream::frame::write_message_to;
use aws_smithy_types::event_stream::{Header, HeaderValue, Message};

use crate::message::StopReason;
use crate::model::{Api, Model, ModelCost};
use crate::stream::decode_body;

fn model() -> Model {
    let mut m = Model::custom(
        Api::BedrockConverseStream,
        "amazon-bedrock",
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        "https://bedrock-runtime.us-east-1.amazonaws.com",
    );
    m.cost = ModelCost {
        input: 3.0,
        output: 15.0,
        cache_read: 0.3,
        cache_write: 3.75,
        tiers: Vec::new(),
    };
    m
}

fn frame(kind: &str, name: &str, payload: &str) -> Vec<u8> {
    let (type_header, name_header) = match kind {
        "exception" => (":exception-type", name),
        _ => (":event-type", name),
    };
    let message = Message::new(payload.as_bytes().to_vec())
        .add_header(Header::new(
            ":message-type",
            HeaderValue::String(kind.to_string().into()),
        ))
        .add_header(Header::new(
            type_header,
            HeaderValue::String(name_header.to_string().into()),
        ))
        .add_header(Header::new(
            ":content-type",
            HeaderValue::String("application/json".into()),
        ));
    let mut out = Vec::new();
    write_message_to(&message, &mut out).unwrap();
    out
}

fn event(name: &str, payload: &str) -> Vec<u8> {
    frame("event", name, payload)
}

/// A response with reasoning (signed), text, a tool call and cache usage.
fn full_stream() -> Vec<u8> {
    let mut body = Vec::new();
    for part in [
        event("messageStart", r#"{"role":"assistant","p":"abc"}"#),
        event(
            "contentBlockDelta",
            r#"{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"Let me "}}}"#,
        ),
        event(
            "contentBlockDelta",
            r#"{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"think."}}}"#,
        ),
        event(
            "contentBlockDelta",
            r#"{"contentBlockIndex":0,"delta":{"reasoningContent":{"signature":"sig-abc"}}}"#,
        ),
        event("contentBlockStop", r#"{"contentBlockIndex":0}"#),
        event(
            "contentBlockDelta",
            r#"{"contentBlockIndex":1,"delta":{"text":"Reading "}}"#,
        ),
        event(
            "contentBlockDelta",
            r#"{"contentBlockIndex":1,"delta":{"text":"the file."}}"#,
        ),
        event("contentBlockStop", r#"{"contentBlockIndex":1}"#),
        event(
            "contentBlockStart",
            r#"{"contentBlockIndex":2,"start":{"toolUse":{"toolUseId":"tooluse_1","name":"read"}}}"#,
        ),
        event(
            "contentBlockDelta",
            r#"{"contentBlockIndex":2,"delta":{"toolUse":{"input":"{\"path\":"}}}"#,
        ),
        event(
            "contentBlockDelta",
            r#"{"contentBlockIndex":2,"delta":{"toolUse":{"input":"\"a.txt\"}"}}}"#,
        ),
        event("contentBlockStop", r#"{"contentBlockIndex":2}"#),
        event("messageStop", r#"{"stopReason":"tool_use"}"#),
        event(
            "metadata",
            r#"{"usage":{"inputTokens":100,"outputTokens":50,"totalTokens":1150,"cacheReadInputTokens":1000,"cacheWriteInputTokens":0},"metrics":{"latencyMs":12}}"#,
        ),
    ] {
        body.extend(part);
    }
    body
}

#[test]
fn reasoning_text_tool_call_and_usage_with_cost() {
    let body = full_stream();
    for split in [body.len(), 7, 1] {
        let (_, msg) = decode_body(&model(), body.chunks(split));
        assert_eq!(
            msg.stop_reason,
            StopReason::ToolUse,
            "split {split}: {:?}",
            msg.error_message
        );
        assert_eq!(msg.thinking(), "Let me think.");
        assert_eq!(msg.text(), "Reading the file.");
        let calls: Vec<_> = msg.tool_calls().collect();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].id, "tooluse_1");
        assert_eq!(calls[0].arguments["path"], "a.txt");
        match &msg.content[0] {
            crate::message::AssistantContent::Thinking(t) => {
                assert_eq!(t.thinking_signature.as_deref(), Some("sig-abc"))
            }
            other => panic!("expected thinking first, got {other:?}"),
        }
        assert_eq!(
            (msg.usage.input, msg.usage.output, msg.usage.cache_read),
            (100, 50, 1000)
        );
        let want = (100.0 * 3.0 + 50.0 * 15.0 + 1000.0 * 0.3) / 1e6;
        assert!(
            (msg.usage.cost.total - want).abs() < 1e-12,
            "{}",
            msg.usage.cost.total
        );
    }
}

#[test]
fn a_corrupt_frame_is_a_clear_error() {
    let mut body = full_stream();
    // Flip one payload byte of the second frame: its message CRC no longer matches.
    let first_len = u32::from_be_bytes([body[0], body[1], body[2], body[3]]) as usize;
    body[first_len + 20] ^= 0x55;
    let (_, msg) = decode_body(&model(), [&body[..]]);
    assert_eq!(msg.stop_reason, StopReason::Error);
    let e = msg.error_message.unwrap();
    assert!(
        e.contains("corrupt AWS event-stream frame") && e.contains("checksum"),
        "{e}"
    );
}

#[test]
fn a_truncated_frame_is_a_clear_error() {
    let body = full_stream();
    let (_, msg) = decode_body(&model(), [&body[..body.len() - 5]]);
    assert_eq!(msg.stop_reason, StopReason::Error);
    let e = msg.error_message.unwrap();
    assert!(e.contains("ended inside a frame"), "{e}");
}

#[test]
fn exceptions_in_the_stream_end_the_message() {
    let mut body = event("messageStart", r#"{"role":"assistant"}"#);
    body.extend(event(
        "contentBlockDelta",
        r#"{"contentBlockIndex":0,"delta":{"text":"Hi"}}"#,
    ));
    body.extend(frame(
        "exception",
        "throttlingException",
        r#"{"message":"Too many tokens, please wait before trying again."}"#,
    ));
    let (_, msg) = decode_body(&model(), [&body[..]]);
    assert_eq!(msg.stop_reason, StopReason::Error);
    let e = msg.error_message.unwrap();
    assert!(
        e.contains("throttlingException") && e.contains("Too many tokens"),
        "{e}"
    );
}

#[test]
fn guardrail_stops_are_errors_and_max_tokens_is_length() {
    let mut body = event(
        "contentBlockDelta",
        r#"{"contentBlockIndex":0,"delta":{"text":"Hi"}}"#,
    );
    body.extend(event(
        "messageStop",
        r#"{"stopReason":"guardrail_intervened"}"#,
    ));
    let (_, msg) = decode_body(&model(), [&body[..]]);
    assert_eq!(msg.stop_reason, StopReason::Error);
    assert!(msg.error_message.unwrap().contains("guardrail"));

    let mut body = event(
        "contentBlockDelta",
        r#"{"contentBlockIndex":0,"delta":{"text":"Hi"}}"#,
    );
    body.extend(event("messageStop", r#"{"stopReason":"max_tokens"}"#));
    // No metadata event: the stop reason is enough at the end of the body.
    let (_, msg) = decode_body(&model(), [&body[..]]);
    assert_eq!(msg.stop_reason, StopReason::Length);
    assert_eq!(msg.text(), "Hi");
}

#[test]
fn redacted_reasoning_keeps_its_payload() {
    let mut body = event(
        "contentBlockDelta",
        r#"{"contentBlockIndex":0,"delta":{"reasoningContent":{"redactedContent":"b3BhcXVl"}}}"#,
    );
    body.extend(event("contentBlockStop", r#"{"contentBlockIndex":0}"#));
    body.extend(event("messageStop", r#"{"stopReason":"end_turn"}"#));
    let (_, msg) = decode_body(&model(), [&body[..]]);
    match &msg.content[0] {
        crate::message::AssistantContent::Thinking(t) => {
            assert!(t.redacted);
            assert_eq!(t.thinking_signature.as_deref(), Some("b3BhcXVl"));
        }
        other => panic!("{other:?}"),
    }
}
