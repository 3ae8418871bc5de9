//! Decoding tests for the Responses API, on hand-written and recorded-shape streams.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::decode::Decoder;
use crate::event::AssistantMessageEvent;
use crate::message::{AssistantContent, AssistantMessage, StopReason};
use crate::model::{Api, Model};
use crate::provider::WireDecoder;
use crate::sse::SseEvent;
use crate::{MessageBuilder, decode_body};

fn model() -> Model {
    Model::custom(
        Api::OpenAiResponses,
        "openai",
        "gpt-5.1-codex-max",
        "https://api.openai.com/v1",
    )
}

/// Frames events as the API does: `event: <type>` plus `data: <json>`.
fn framed(events: &[Value]) -> String {
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {}\n\n", e["type"].as_str().unwrap(), e))
        .collect()
}

/// Frames events with data lines only (dispatch must use the JSON `type`).
fn data_only(events: &[Value]) -> String {
    events.iter().map(|e| format!("data: {e}\n\n")).collect()
}

fn decode(body: &str) -> (Vec<AssistantMessageEvent>, AssistantMessage) {
    decode_body(&model(), [body.as_bytes()])
}

fn created(id: &str) -> Value {
    json!({"type": "response.created", "sequence_number": 0,
           "response": {"id": id, "status": "in_progress", "output": [], "usage": null}})
}

fn completed(status: &str, usage: Value) -> Value {
    json!({"type": if status == "incomplete" { "response.incomplete" } else { "response.completed" },
           "response": {"id": "resp_1", "status": status, "usage": usage,
                        "incomplete_details": if status == "incomplete" { json!({"reason": "max_output_tokens"}) } else { Value::Null }}})
}

fn usage(input: u64, cached: u64, output: u64) -> Value {
    json!({"input_tokens": input, "input_tokens_details": {"cached_tokens": cached},
           "output_tokens": output, "output_tokens_details": {"reasoning_tokens": 0},
           "total_tokens": input + output})
}

fn text_stream() -> Vec<Value> {
    vec![
        created("resp_1"),
        json!({"type": "response.in_progress", "response": {"id": "resp_1"}}),
        json!({"type": "response.output_item.added", "output_index": 0,
               "item": {"id": "msg_abc", "type": "message", "status": "in_progress", "content": [], "role": "assistant"}}),
        json!({"type": "response.content_part.added", "item_id": "msg_abc", "output_index": 0, "content_index": 0,
               "part": {"type": "output_text", "text": ""}}),
        json!({"type": "response.output_text.delta", "item_id": "msg_abc", "output_index": 0, "content_index": 0, "delta": "The result "}),
        json!({"type": "response.output_text.delta", "item_id": "msg_abc", "output_index": 0, "content_index": 0, "delta": "is **570** – ünïcode."}),
        json!({"type": "response.output_text.done", "item_id": "msg_abc", "output_index": 0, "content_index": 0,
               "text": "The result is **570** – ünïcode."}),
        json!({"type": "response.output_item.done", "output_index": 0,
               "item": {"id": "msg_abc", "type": "message", "status": "completed", "role": "assistant",
                        "content": [{"type": "output_text", "text": "The result is **570** – ünïcode.", "annotations": []}]}}),
        completed("completed", usage(299, 40, 12)),
    ]
}

fn reasoning_then_call_stream() -> Vec<Value> {
    let reasoning_done = json!({"id": "rs_1", "type": "reasoning", "encrypted_content": "gAAAA-secret",
        "summary": [{"type": "summary_text", "text": "**Plan**"}, {"type": "summary_text", "text": "Add 12 and 7."}]});
    vec![
        created("resp_2"),
        json!({"type": "response.output_item.added", "output_index": 0,
               "item": {"id": "rs_1", "type": "reasoning", "encrypted_content": "gAAAA-early", "summary": []}}),
        json!({"type": "response.reasoning_summary_part.added", "item_id": "rs_1", "output_index": 0, "summary_index": 0,
               "part": {"type": "summary_text", "text": ""}}),
        json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": 0, "summary_index": 0, "delta": "**Pl"}),
        json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": 0, "summary_index": 0, "delta": "an**"}),
        json!({"type": "response.reasoning_summary_part.added", "item_id": "rs_1", "output_index": 0, "summary_index": 1,
               "part": {"type": "summary_text", "text": ""}}),
        json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": 0, "summary_index": 1, "delta": "Add 12 and 7."}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": reasoning_done}),
        json!({"type": "response.output_item.added", "output_index": 1,
               "item": {"id": "fc_9", "type": "function_call", "status": "in_progress", "arguments": "",
                        "call_id": "call_AB", "name": "calculator"}}),
        json!({"type": "response.function_call_arguments.delta", "item_id": "fc_9", "output_index": 1, "delta": "{\"a\":"}),
        json!({"type": "response.function_call_arguments.delta", "item_id": "fc_9", "output_index": 1, "delta": "12,\"b\":7}"}),
        json!({"type": "response.function_call_arguments.done", "item_id": "fc_9", "output_index": 1, "arguments": "{\"a\":12,\"b\":7}"}),
        json!({"type": "response.output_item.done", "output_index": 1,
               "item": {"id": "fc_9", "type": "function_call", "status": "completed", "arguments": "{\"a\":12,\"b\":7}",
                        "call_id": "call_AB", "name": "calculator"}}),
        completed("completed", usage(134, 0, 28)),
    ]
}

#[test]
fn decodes_text_with_signature_usage_and_response_id() {
    let (events, msg) = decode(&framed(&text_stream()));
    assert_eq!(msg.stop_reason, StopReason::Stop, "{:?}", msg.error_message);
    assert_eq!(msg.text(), "The result is **570** – ünïcode.");
    assert_eq!(msg.response_id.as_deref(), Some("resp_1"));
    let AssistantContent::Text(t) = &msg.content[0] else {
        panic!("{:?}", msg.content)
    };
    assert_eq!(t.text_signature.as_deref(), Some("msg_abc"));
    assert_eq!(
        (msg.usage.input, msg.usage.cache_read, msg.usage.output),
        (259, 40, 12)
    );
    assert_eq!(msg.usage.total_tokens, 311);
    let deltas = events
        .iter()
        .filter(|e| matches!(e, AssistantMessageEvent::TextDelta { .. }))
        .count();
    assert_eq!(deltas, 2);
    assert!(matches!(
        events.last(),
        Some(AssistantMessageEvent::Done { .. })
    ));
}

#[test]
fn dispatches_on_json_type_without_event_lines() {
    let (_, framed_msg) = decode(&framed(&text_stream()));
    let (_, bare_msg) = decode(&data_only(&text_stream()));
    assert_eq!(bare_msg.content, framed_msg.content);
    assert_eq!(bare_msg.stop_reason, StopReason::Stop);
}

#[test]
fn decodes_reasoning_summary_parts_and_function_call() {
    let (_, msg) = decode(&framed(&reasoning_then_call_stream()));
    assert_eq!(
        msg.stop_reason,
        StopReason::ToolUse,
        "{:?}",
        msg.error_message
    );
    assert_eq!(msg.thinking(), "**Plan**\n\nAdd 12 and 7.");
    let AssistantContent::Thinking(t) = &msg.content[0] else {
        panic!()
    };
    let item: Value = serde_json::from_str(t.thinking_signature.as_deref().unwrap()).unwrap();
    assert_eq!(item["type"], "reasoning");
    assert_eq!(item["id"], "rs_1");
    assert_eq!(
        item["encrypted_content"], "gAAAA-secret",
        "the finished item is kept"
    );
    let call = msg.tool_calls().next().unwrap();
    assert_eq!(call.id, "call_AB|fc_9");
    assert_eq!(call.name, "calculator");
    assert_eq!(
        call.arguments,
        *json!({"a": 12, "b": 7}).as_object().unwrap()
    );
    assert!(call.arguments_complete());
    assert_eq!((msg.usage.input, msg.usage.output), (134, 28));
}

/// LM Studio's `/v1/responses`: raw reasoning text, and a function call whose
/// arguments arrive only in `function_call_arguments.done` and `output_item.done`.
#[test]
fn function_call_without_argument_deltas() {
    let events = vec![
        json!({"type": "response.created", "response": {"id": "resp_cc7", "status": "in_progress"}}),
        json!({"type": "response.output_item.added", "output_index": 0,
               "item": {"id": "rs_3y", "type": "reasoning", "summary": [], "content": []}}),
        json!({"type": "response.reasoning_text.delta", "item_id": "rs_3y", "output_index": 0, "content_index": 0, "delta": "The user wants"}),
        json!({"type": "response.reasoning_text.delta", "item_id": "rs_3y", "output_index": 0, "content_index": 0, "delta": " the weather."}),
        json!({"type": "response.output_item.done", "output_index": 0,
               "item": {"id": "rs_3y", "type": "reasoning", "summary": [],
                        "content": [{"type": "reasoning_text", "text": "The user wants the weather."}]}}),
        json!({"type": "response.output_item.added", "output_index": 1,
               "item": {"id": "msg_y4", "type": "message", "content": [], "role": "assistant"}}),
        json!({"type": "response.output_text.delta", "item_id": "msg_y4", "output_index": 1, "content_index": 0,
               "delta": "Checking.", "logprobs": [{"token": "Checking", "logprob": 0, "bytes": [67], "top_logprobs": []}]}),
        json!({"type": "response.output_item.done", "output_index": 1,
               "item": {"id": "msg_y4", "type": "message", "role": "assistant",
                        "content": [{"type": "output_text", "text": "Checking.", "annotations": []}]}}),
        json!({"type": "response.output_item.added", "output_index": 2,
               "item": {"id": "fc_z9", "type": "function_call", "status": "in_progress", "arguments": "",
                        "call_id": "call_2025", "name": "weather"}}),
        json!({"type": "response.function_call_arguments.done", "item_id": "fc_z9", "output_index": 2,
               "arguments": "{\"location\":\"San Francisco\"}"}),
        json!({"type": "response.output_item.done", "output_index": 2,
               "item": {"id": "fc_z9", "type": "function_call", "status": "completed",
                        "arguments": "{\"location\":\"San Francisco\"}", "call_id": "call_2025", "name": "weather"}}),
        json!({"type": "response.completed", "response": {"id": "resp_cc7", "status": "completed",
               "usage": {"input_tokens": 182, "output_tokens": 61, "total_tokens": 243,
                         "input_tokens_details": {"cached_tokens": 2}, "output_tokens_details": {"reasoning_tokens": 48}}}}),
    ];
    let (_, msg) = decode(&framed(&events));
    assert_eq!(msg.stop_reason, StopReason::ToolUse);
    assert_eq!(msg.thinking(), "The user wants the weather.");
    assert_eq!(msg.text(), "Checking.");
    let call = msg.tool_calls().next().unwrap();
    assert_eq!(call.id, "call_2025|fc_z9");
    assert_eq!(call.arguments["location"], "San Francisco");
    assert!(call.arguments_complete());
    assert!(call.raw_arguments.is_none());
    assert_eq!(
        (msg.usage.input, msg.usage.cache_read, msg.usage.output),
        (180, 2, 61)
    );
    assert_eq!(
        msg.usage.reasoning,
        Some(48),
        "a part of output, kept apart"
    );
}

#[test]
fn arguments_only_in_the_finished_item() {
    let events = vec![
        created("r"),
        json!({"type": "response.output_item.added", "output_index": 0,
               "item": {"id": "fc_1", "type": "function_call", "arguments": "", "call_id": "call_1", "name": "ls"}}),
        json!({"type": "response.output_item.done", "output_index": 0,
               "item": {"id": "fc_1", "type": "function_call", "arguments": "{\"path\":\".\"}", "call_id": "call_1", "name": "ls"}}),
        completed("completed", usage(1, 0, 1)),
    ];
    let (events, msg) = decode(&framed(&events));
    let call = msg.tool_calls().next().unwrap();
    assert_eq!(call.arguments["path"], ".");
    // The arguments were streamed exactly once.
    let deltas: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AssistantMessageEvent::ToolcallDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, ["{\"path\":\".\"}"]);
}

#[test]
fn error_event_and_failed_response_end_with_the_provider_message() {
    let msg_text = "You exceeded your current quota, please check your plan and billing details.";
    let events = vec![
        created("resp_q"),
        json!({"type": "error", "sequence_number": 2,
               "error": {"type": "insufficient_quota", "code": "insufficient_quota", "message": msg_text, "param": null}}),
        json!({"type": "response.failed", "response": {"id": "resp_q", "status": "failed",
               "error": {"code": "insufficient_quota", "message": msg_text}, "usage": null}}),
    ];
    let (events, msg) = decode(&framed(&events));
    assert_eq!(msg.stop_reason, StopReason::Error);
    assert_eq!(msg.error_message.as_deref(), Some(msg_text));
    assert!(msg.content.is_empty());
    assert!(matches!(
        events.last(),
        Some(AssistantMessageEvent::Error { .. })
    ));
}

#[test]
fn failure_retryability_follows_the_error_code() {
    let m = model();
    let run = |event: Value| {
        let mut d = Decoder::default();
        let mut b = MessageBuilder::new(&m);
        let data = event.to_string();
        d.on_event(
            SseEvent {
                event: "",
                data: &data,
            },
            &mut b,
            &m,
        )
        .unwrap_err()
    };
    let quota =
        run(json!({"type": "error", "error": {"code": "insufficient_quota", "message": "quota"}}));
    assert!(!quota.retryable);
    let server = run(
        json!({"type": "response.failed", "response": {"status": "failed",
        "error": {"code": "server_error", "message": "The server had an error. Please try again in 2s."}}}),
    );
    assert!(server.retryable);
    assert_eq!(server.retry_after, Some(std::time::Duration::from_secs(2)));
    let flat = run(
        json!({"type": "error", "code": "rate_limit_exceeded", "message": "Slow down", "param": null}),
    );
    assert!(flat.retryable);
    assert_eq!(flat.message, "Slow down");
}

#[test]
fn incomplete_response_stops_for_length() {
    let mut events = text_stream();
    events.pop();
    events.push(completed("incomplete", usage(10, 0, 5)));
    let (_, msg) = decode(&framed(&events));
    assert_eq!(msg.stop_reason, StopReason::Length);
    assert_eq!(msg.usage.output, 5);
}

#[test]
fn content_filter_stop_is_an_error_not_a_length_stop() {
    let mut events = text_stream();
    events.pop();
    events.push(json!({"type": "response.incomplete",
        "response": {"id": "resp_cf", "status": "incomplete", "usage": usage(10, 4, 5),
                     "incomplete_details": {"reason": "content_filter"}}}));
    let (_, msg) = decode(&framed(&events));
    assert_eq!(msg.stop_reason, StopReason::Error);
    let err = msg.error_message.as_deref().unwrap();
    assert!(err.contains("content filter"), "{err}");
    // The usage and id of the stopped response are still recorded.
    assert_eq!(
        (msg.usage.input, msg.usage.cache_read, msg.usage.output),
        (6, 4, 5)
    );
    assert_eq!(msg.response_id.as_deref(), Some("resp_cf"));
}

#[test]
fn missing_terminal_event_is_an_error() {
    let mut events = reasoning_then_call_stream();
    events.truncate(10); // cut inside the function call's arguments
    let (_, msg) = decode(&framed(&events));
    assert_eq!(msg.stop_reason, StopReason::Error);
    let err = msg.error_message.as_deref().unwrap();
    assert!(err.contains("ended before"), "{err}");
    let call = msg.tool_calls().next().unwrap();
    assert!(
        !call.arguments_complete(),
        "an unfinished call must not look runnable"
    );
}

#[test]
fn refusal_is_not_answer_text() {
    let events = vec![
        created("r"),
        json!({"type": "response.output_item.added", "output_index": 0,
               "item": {"id": "msg_r", "type": "message", "content": [], "role": "assistant"}}),
        json!({"type": "response.refusal.delta", "item_id": "msg_r", "output_index": 0, "content_index": 0, "delta": "I can't help"}),
        json!({"type": "response.refusal.delta", "item_id": "msg_r", "output_index": 0, "content_index": 0, "delta": " with that."}),
        json!({"type": "response.output_item.done", "output_index": 0,
               "item": {"id": "msg_r", "type": "message", "role": "assistant",
                        "content": [{"type": "refusal", "refusal": "I can't help with that."}]}}),
        completed("completed", usage(5, 0, 6)),
    ];
    let (_, msg) = decode(&framed(&events));
    assert_eq!(msg.text(), "");
    assert_eq!(msg.stop_reason, StopReason::Error);
    assert_eq!(
        msg.error_message.as_deref(),
        Some("the model refused to answer: I can't help with that.")
    );
}

#[test]
fn invalid_json_is_reported() {
    let body = format!("{}data: {{not json\n\n", framed(&text_stream()[..3]));
    let (_, msg) = decode(&body);
    assert_eq!(msg.stop_reason, StopReason::Error);
    assert!(msg.error_message.unwrap().contains("not valid JSON"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Splitting the body at arbitrary byte positions changes nothing.
    #[test]
    fn split_points_do_not_matter(cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..12)) {
        let mut all = text_stream();
        all.pop();
        all.extend(reasoning_then_call_stream().into_iter().skip(1));
        let body = framed(&all);
        let bytes = body.as_bytes();
        let (_, whole) = decode_body(&model(), [bytes]);
        let mut points: Vec<usize> = cuts.iter().map(|i| i.index(bytes.len() + 1)).collect();
        points.sort_unstable();
        let mut chunks = Vec::new();
        let mut start = 0;
        for p in points {
            chunks.push(&bytes[start..p]);
            start = p;
        }
        chunks.push(&bytes[start..]);
        let (_, split) = decode_body(&model(), chunks);
        prop_assert_eq!(&split.content, &whole.content);
        prop_assert_eq!(split.stop_reason, StopReason::ToolUse);
        prop_assert_eq!(split.usage, whole.usage);
    }
}
