//! Decoding tests for Gemini, on chunks shaped like recorded Gemini/Vertex streams.

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
        Api::GoogleGenerativeAi,
        "google",
        "gemini-3-pro-preview",
        "https://generativelanguage.googleapis.com/v1beta",
    )
}

fn sse(chunks: &[Value]) -> String {
    chunks
        .iter()
        .map(|c| format!("data: {c}\r\n\r\n"))
        .collect()
}

fn decode(body: &str) -> (Vec<AssistantMessageEvent>, AssistantMessage) {
    decode_body(&model(), [body.as_bytes()])
}

fn chunk(parts: Value, finish: Option<&str>, usage: Value) -> Value {
    let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
    if let Some(f) = finish {
        candidate["finishReason"] = json!(f);
    }
    json!({"candidates": [candidate], "usageMetadata": usage, "modelVersion": "gemini-3-pro-preview",
           "responseId": "resp_g1"})
}

fn counts(prompt: u64, candidates: u64, thoughts: u64) -> Value {
    json!({"promptTokenCount": prompt, "candidatesTokenCount": candidates,
           "totalTokenCount": prompt + candidates + thoughts, "thoughtsTokenCount": thoughts})
}

fn partial(path: &str, value: &str, cont: bool) -> Value {
    let mut p = json!({"jsonPath": path, "stringValue": value});
    if cont {
        p["willContinue"] = json!(true);
    }
    json!([{"functionCall": {"partialArgs": [p], "willContinue": true}}])
}

fn traffic() -> Value {
    json!({"trafficType": "ON_DEMAND"})
}

/// Two streamed calls, as Vertex sends them with `streamFunctionCallArguments`.
fn streamed_calls() -> Vec<Value> {
    vec![
        chunk(
            json!([{"functionCall": {"name": "getWeather", "willContinue": true}, "thoughtSignature": "c2ln"}]),
            None,
            traffic(),
        ),
        chunk(partial("$.location", "Bos", true), None, traffic()),
        chunk(partial("$.location", "ton", true), None, traffic()),
        chunk(partial("$.location", "", false), None, traffic()),
        chunk(json!([{"functionCall": {}}]), None, traffic()),
        chunk(
            json!([{"functionCall": {"name": "getWeather", "willContinue": true}}]),
            None,
            traffic(),
        ),
        chunk(
            partial("$.location", "San Francisco", true),
            None,
            traffic(),
        ),
        chunk(partial("$.location", "", false), None, traffic()),
        chunk(
            json!([{"functionCall": {}}]),
            Some("STOP"),
            counts(26, 23, 132),
        ),
    ]
}

#[test]
fn text_with_signature_on_final_empty_part_and_cumulative_usage() {
    let body = sse(&[
        chunk(
            json!([{"text": "There are **3**"}]),
            None,
            counts(9, 5, 185),
        ),
        chunk(
            json!([{"text": " \"r\"s in strawberry."}]),
            None,
            counts(9, 23, 185),
        ),
        chunk(
            json!([{"text": "", "thoughtSignature": "EqsFCqgF"}]),
            Some("STOP"),
            counts(9, 23, 185),
        ),
    ]);
    let (events, msg) = decode(&body);
    assert_eq!(msg.stop_reason, StopReason::Stop, "{:?}", msg.error_message);
    assert_eq!(msg.text(), "There are **3** \"r\"s in strawberry.");
    assert_eq!(msg.content.len(), 1);
    let AssistantContent::Text(t) = &msg.content[0] else {
        panic!()
    };
    assert_eq!(t.text_signature.as_deref(), Some("EqsFCqgF"));
    assert_eq!(
        (msg.usage.input, msg.usage.output, msg.usage.cache_read),
        (9, 208, 0)
    );
    assert_eq!(msg.usage.total_tokens, 217);
    assert_eq!(msg.response_id.as_deref(), Some("resp_g1"));
    assert!(matches!(
        events.last(),
        Some(AssistantMessageEvent::Done { .. })
    ));
}

#[test]
fn finish_reason_on_every_chunk_does_not_stop_early() {
    let body = format!(
        "data: {}\r\n\ndata: {}\n\ndata: {}\n\n",
        chunk(
            json!([{"text": "In the quaint"}]),
            Some("STOP"),
            Value::Null
        ),
        chunk(json!([{"text": ", sunlit"}]), Some("STOP"), Value::Null),
        chunk(json!([{"text": " cottage."}]), Some("STOP"), Value::Null),
    );
    let (_, msg) = decode(&body);
    assert_eq!(msg.text(), "In the quaint, sunlit cottage.");
    assert_eq!(msg.stop_reason, StopReason::Stop);
    assert_eq!(msg.usage.total_tokens, 0, "no usage reported");
}

#[test]
fn whole_function_call_gets_a_synthesized_id_and_its_signature() {
    let body = sse(&[
        chunk(
            json!([{"functionCall": {"name": "weather", "args": {"location": "San Francisco"}}, "thoughtSignature": "EqUC"}]),
            None,
            counts(29, 15, 45),
        ),
        chunk(json!([{"text": ""}]), Some("STOP"), counts(29, 15, 45)),
    ]);
    let (_, msg) = decode(&body);
    assert_eq!(msg.stop_reason, StopReason::ToolUse);
    assert_eq!(
        msg.content.len(),
        1,
        "no empty text block: {:?}",
        msg.content
    );
    let call = msg.tool_calls().next().unwrap();
    assert_eq!(call.name, "weather");
    assert!(call.id.starts_with("call_"), "{}", call.id);
    assert_eq!(call.arguments["location"], "San Francisco");
    assert_eq!(call.thought_signature.as_deref(), Some("EqUC"));
    assert!(call.arguments_complete());
    assert_eq!((msg.usage.input, msg.usage.output), (29, 60));
}

#[test]
fn api_call_ids_are_kept() {
    let body = sse(&[chunk(
        json!([{"functionCall": {"id": "fc-77", "name": "ls", "args": {}}}]),
        Some("STOP"),
        counts(1, 1, 0),
    )]);
    let (_, msg) = decode(&body);
    assert_eq!(msg.tool_calls().next().unwrap().id, "fc-77");
}

#[test]
fn streamed_partial_arguments_are_assembled() {
    let (events, msg) = decode(&sse(&streamed_calls()));
    assert_eq!(
        msg.stop_reason,
        StopReason::ToolUse,
        "{:?}",
        msg.error_message
    );
    let calls: Vec<_> = msg.tool_calls().collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        Value::Object(calls[0].arguments.clone()),
        json!({"location": "Boston"})
    );
    assert_eq!(
        Value::Object(calls[1].arguments.clone()),
        json!({"location": "San Francisco"})
    );
    assert_ne!(calls[0].id, calls[1].id);
    assert!(calls.iter().all(|c| c.arguments_complete()));
    assert_eq!(calls[0].thought_signature.as_deref(), Some("c2ln"));
    assert_eq!((msg.usage.input, msg.usage.output), (26, 155));
    let ends = events
        .iter()
        .filter(|e| matches!(e, AssistantMessageEvent::ToolcallEnd { .. }))
        .count();
    assert_eq!(ends, 2);
}

#[test]
fn thought_part_then_no_argument_call_then_streamed_call() {
    let body = sse(&[
        chunk(
            json!([{"text": "**Planning**\n\nRead the theme first.", "thought": true}]),
            None,
            traffic(),
        ),
        chunk(
            json!([{"functionCall": {"name": "read_theme"}, "thoughtSignature": "AY89"}]),
            None,
            traffic(),
        ),
        chunk(
            json!([{"functionCall": {"name": "read_screen", "willContinue": true}}]),
            None,
            traffic(),
        ),
        chunk(partial("$.id", "A", true), None, traffic()),
        chunk(partial("$.id", "", false), None, traffic()),
        chunk(json!([{"functionCall": {}}]), None, traffic()),
        chunk(json!([{"text": ""}]), Some("STOP"), counts(249, 58, 183)),
    ]);
    let (_, msg) = decode(&body);
    assert_eq!(msg.thinking(), "**Planning**\n\nRead the theme first.");
    assert_eq!(msg.text(), "");
    let calls: Vec<_> = msg.tool_calls().collect();
    assert_eq!(calls[0].name, "read_theme");
    assert!(calls[0].arguments.is_empty() && calls[0].arguments_complete());
    assert_eq!(calls[1].arguments["id"], "A");
    assert_eq!(msg.stop_reason, StopReason::ToolUse);
    assert_eq!((msg.usage.input, msg.usage.output), (249, 241));
}

#[test]
fn each_signature_stays_with_its_thought() {
    let body = sse(&[
        chunk(
            json!([{"text": "first ", "thought": true}]),
            None,
            Value::Null,
        ),
        chunk(
            json!([{"text": "thought", "thought": true, "thoughtSignature": "S1"}]),
            None,
            Value::Null,
        ),
        chunk(
            json!([{"text": "second", "thought": true, "thoughtSignature": "S2"}]),
            None,
            Value::Null,
        ),
        chunk(json!([{"text": "Answer"}]), Some("STOP"), counts(3, 1, 2)),
    ]);
    let (_, msg) = decode(&body);
    let thinking: Vec<(&str, Option<&str>)> = msg
        .content
        .iter()
        .filter_map(|c| match c {
            AssistantContent::Thinking(t) => {
                Some((t.thinking.as_str(), t.thinking_signature.as_deref()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        thinking,
        [("first thought", Some("S1")), ("second", Some("S2"))]
    );
    assert_eq!(msg.text(), "Answer");
}

#[test]
fn usage_subtracts_cached_tokens() {
    let body = sse(&[chunk(
        json!([{"text": "hi"}]),
        Some("STOP"),
        json!({"promptTokenCount": 1000, "cachedContentTokenCount": 800, "candidatesTokenCount": 10,
               "thoughtsTokenCount": 5, "totalTokenCount": 1015}),
    )]);
    let (_, msg) = decode(&body);
    assert_eq!(
        (
            msg.usage.input,
            msg.usage.cache_read,
            msg.usage.output,
            msg.usage.total_tokens
        ),
        (200, 800, 15, 1015)
    );
    assert_eq!(
        msg.usage.reasoning,
        Some(5),
        "the thoughts, a part of output"
    );
}

#[test]
fn finish_reasons_map_to_stop_reasons() {
    let (_, msg) = decode(&sse(&[chunk(
        json!([{"text": "cut"}]),
        Some("MAX_TOKENS"),
        counts(1, 1, 0),
    )]));
    assert_eq!(msg.stop_reason, StopReason::Length);
    let body = sse(&[
        json!({"candidates": [{"content": {"parts": [{"text": "so"}]}, "finishReason": "SAFETY",
                                             "finishMessage": "flagged"}]}),
    ]);
    let (_, msg) = decode(&body);
    assert_eq!(msg.stop_reason, StopReason::Error);
    let err = msg.error_message.unwrap();
    assert!(
        err.contains("finish reason SAFETY") && err.contains("flagged"),
        "{err}"
    );
    assert_eq!(msg.content.len(), 1, "partial text is kept");
}

#[test]
fn blocked_prompt_is_an_error() {
    let body = sse(&[
        json!({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
                            "usageMetadata": {"promptTokenCount": 7, "totalTokenCount": 7}}),
    ]);
    let (_, msg) = decode(&body);
    assert_eq!(msg.stop_reason, StopReason::Error);
    assert!(msg.error_message.unwrap().contains("PROHIBITED_CONTENT"));
    assert_eq!(msg.usage.input, 7);
}

#[test]
fn missing_finish_reason_is_an_error() {
    let mut chunks = streamed_calls();
    chunks.truncate(3);
    let (_, msg) = decode(&sse(&chunks));
    assert_eq!(msg.stop_reason, StopReason::Error);
    assert!(
        msg.error_message
            .as_deref()
            .unwrap()
            .contains("before a finish reason")
    );
    let call = msg.tool_calls().next().unwrap();
    assert!(
        !call.arguments_complete(),
        "an unfinished call must not look runnable"
    );
    assert_eq!(call.arguments["location"], "Boston");
}

#[test]
fn error_chunks_are_faults_with_retry_hints() {
    let m = model();
    let run = |v: Value| {
        let mut d = Decoder::new();
        let mut b = MessageBuilder::new(&m);
        let data = v.to_string();
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
    let busy = run(
        json!({"error": {"code": 429, "message": "Resource exhausted", "status": "RESOURCE_EXHAUSTED",
        "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "20s"}]}}),
    );
    assert!(busy.retryable);
    assert_eq!(busy.retry_after, Some(std::time::Duration::from_secs(20)));
    assert!(
        busy.message.contains("Resource exhausted") && busy.message.contains("RESOURCE_EXHAUSTED")
    );
    let unavailable = run(
        json!({"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}),
    );
    assert!(unavailable.retryable);
    let bad = run(
        json!({"error": {"code": 400, "message": "Invalid argument", "status": "INVALID_ARGUMENT"}}),
    );
    assert!(!bad.retryable);

    let body = sse(&[
        chunk(json!([{"text": "Hel"}]), None, Value::Null),
        json!({"error": {"code": 500, "message": "Internal error", "status": "INTERNAL"}}),
    ]);
    let (_, msg) = decode(&body);
    assert_eq!(msg.stop_reason, StopReason::Error);
    assert!(msg.error_message.unwrap().starts_with("Internal error"));
}

#[test]
fn bad_json_path_is_reported() {
    let body = sse(&[
        chunk(
            json!([{"functionCall": {"name": "f", "willContinue": true}}]),
            None,
            Value::Null,
        ),
        chunk(
            json!([{"functionCall": {"partialArgs": [{"jsonPath": "location", "stringValue": "x"}], "willContinue": true}}]),
            None,
            Value::Null,
        ),
    ]);
    let (_, msg) = decode(&body);
    assert_eq!(msg.stop_reason, StopReason::Error);
    assert!(msg.error_message.unwrap().contains("jsonPath"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Splitting the body at arbitrary byte positions changes nothing.
    #[test]
    fn split_points_do_not_matter(cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..12)) {
        let mut chunks = vec![
            chunk(json!([{"text": "Ünïcödé thought ", "thought": true, "thoughtSignature": "T1"}]), None, traffic()),
            chunk(json!([{"text": "answer – "}]), None, counts(5, 2, 1)),
        ];
        chunks.extend(streamed_calls());
        let body = sse(&chunks);
        let bytes = body.as_bytes();
        let (_, whole) = decode_body(&model(), [bytes]);
        let mut points: Vec<usize> = cuts.iter().map(|i| i.index(bytes.len() + 1)).collect();
        points.sort_unstable();
        let mut parts = Vec::new();
        let mut start = 0;
        for p in points {
            parts.push(&bytes[start..p]);
            start = p;
        }
        parts.push(&bytes[start..]);
        let (_, split) = decode_body(&model(), parts);
        prop_assert_eq!(whole.stop_reason, StopReason::ToolUse);
        prop_assert_eq!(split.stop_reason, whole.stop_reason);
        prop_assert_eq!(split.text(), whole.text());
        prop_assert_eq!(split.thinking(), whole.thinking());
        let args = |m: &AssistantMessage| m.tool_calls().map(|c| c.arguments.clone()).collect::<Vec<_>>();
        prop_assert_eq!(args(&split), args(&whole));
        prop_assert_eq!(split.usage, whole.usage);
    }
}
