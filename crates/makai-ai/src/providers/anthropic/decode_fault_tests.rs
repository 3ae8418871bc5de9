//! Errors in and of the stream: error events, refusals, garbage, a stream
//! cut short.

use super::*;

#[test]
fn error_event_mid_stream_keeps_partial_text() {
    let body = format!(
        "data: {}\n\ndata: {}\n\ndata: {}\n\nevent: error\ndata: {}\n\n",
        message_start(17, 1),
        block_start(0, json!({"type": "text", "text": ""})),
        text_delta(0, "Hello"),
        json!({"type": "error", "error": {"details": null, "type": "overloaded_error", "message": "Overloaded"}})
    );
    let (events, msg) = decode(&body);
    assert_eq!(msg.stop_reason, StopReason::Error);
    assert_eq!(msg.error_message.as_deref(), Some("Overloaded"));
    assert_eq!(msg.text(), "Hello");
    assert_eq!((msg.usage.input, msg.usage.output), (17, 1));
    assert!(matches!(
        events.last(),
        Some(AssistantMessageEvent::Error { .. })
    ));
}

fn fault_for(data: &str, event: &str) -> crate::error::Fault {
    let m = model();
    let mut out = MessageBuilder::new(&m);
    let mut decoder = Decoder::default();
    decoder
        .on_event(SseEvent { event, data }, &mut out, &m)
        .expect_err("the event must fail the stream")
}

#[test]
fn overload_rate_limit_and_api_errors_are_retryable_others_fatal() {
    for (kind, retryable) in [
        ("overloaded_error", true),
        ("rate_limit_error", true),
        ("api_error", true),
        ("invalid_request_error", false),
        ("authentication_error", false),
    ] {
        let data = json!({"type": "error", "error": {"type": kind, "message": "boom"}}).to_string();
        let f = fault_for(&data, "error");
        assert_eq!(f.retryable, retryable, "{kind}");
        assert_eq!(f.message, "boom");
    }
    let data = json!({"type": "error", "error": {"type": "rate_limit_error", "message": "Slow down; try again in 1.5s"}}).to_string();
    assert_eq!(
        fault_for(&data, "error").retry_after,
        Some(std::time::Duration::from_millis(1500))
    );
    let f = fault_for(r#"{"type":"error","error":{"type":"api_error"}}"#, "");
    assert!(f.message.contains("api_error"), "{}", f.message);
}

#[test]
fn garbage_data_line_is_a_fatal_error_quoting_the_data() {
    let body = format!(
        "{}data: {{\"type\": \"content_block_delta\", oops\n\n",
        sse(&[
            message_start(1, 1),
            block_start(0, json!({"type": "text", "text": ""})),
            text_delta(0, "part")
        ])
    );
    let (_, msg) = decode(&body);
    assert_eq!(msg.stop_reason, StopReason::Error);
    assert_eq!(msg.text(), "part");
    let err = msg.error_message.unwrap();
    assert!(err.contains("not valid JSON"), "{err}");
    assert!(err.contains("oops"), "{err}");
    let f = fault_for(&"x".repeat(5000), "");
    assert!(!f.retryable);
    assert!(
        f.message.len() < 600,
        "long data is shortened: {}",
        f.message.len()
    );
}

#[test]
fn non_json_error_event_reports_its_text() {
    let f = fault_for("upstream connect error", "error");
    assert!(
        f.message.contains("upstream connect error"),
        "{}",
        f.message
    );
}

#[test]
fn refusal_ends_as_an_error_event_that_names_the_refusal() {
    let body = sse(&[
        message_start(28, 5),
        block_start(0, json!({"type": "text", "text": ""})),
        text_delta(0, "Hi"),
        block_stop(0),
        json!({"type": "message_delta", "delta": {"stop_reason": "refusal", "stop_details": {"type": "refusal"}}, "usage": {"output_tokens": 106}}),
        message_stop(),
    ]);
    let (_, msg) = decode(&body);
    assert_eq!(msg.stop_reason, StopReason::Error);
    assert!(msg.error_message.as_deref().unwrap().contains("refusal"));
    assert_eq!(msg.text(), "Hi");
}

#[test]
fn stream_cut_before_message_stop_is_a_retryable_fault() {
    let body = sse(&[
        message_start(1, 1),
        block_start(0, json!({"type": "text", "text": ""})),
        text_delta(0, "Hel"),
    ]);
    let (_, msg) = decode(&body);
    assert_eq!(msg.stop_reason, StopReason::Error);
    assert!(
        msg.error_message
            .as_deref()
            .unwrap()
            .contains("message_stop")
    );
    assert_eq!(msg.text(), "Hel");

    let m = model();
    let mut out = MessageBuilder::new(&m);
    let mut decoder = Decoder::default();
    let f = decoder.on_eof(&mut out, &m).unwrap_err();
    assert!(f.retryable);
    assert!(f.message.contains("no event"), "{}", f.message);
}

#[test]
fn missing_message_stop_after_the_final_message_delta_still_completes() {
    let body = sse(&[
        message_start(1, 1),
        block_start(0, json!({"type": "text", "text": ""})),
        text_delta(0, "done"),
        block_stop(0),
        message_delta("end_turn", json!({"output_tokens": 2})),
    ]);
    let (_, msg) = decode(&body);
    assert_eq!(msg.stop_reason, StopReason::Stop);
    assert_eq!(msg.text(), "done");
    assert_eq!(msg.usage.output, 2);
}

#[test]
fn last_event_without_trailing_blank_line_and_padded_json_is_dispatched() {
    let body = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":2,\"output_tokens\":1}}}     \n\n\
event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}   }\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n\
event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n\
event: message_stop\ndata: {\"type\":\"message_stop\"}";
    let (_, msg) = decode(body);
    assert_eq!(msg.stop_reason, StopReason::Stop);
    assert_eq!(msg.text(), "x");
}
