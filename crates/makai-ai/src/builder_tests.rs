//! Tests of [`super`] (`builder.rs`).

use super::*;
use crate::model::Api;

fn model() -> Model {
    Model::custom(Api::OpenAiCompletions, "test", "m", "http://x")
}

#[test]
fn emits_events_in_contract_order() {
    let m = model();
    let mut b = MessageBuilder::new(&m);
    let t = b.start_text();
    b.push_text(t, "Hel");
    b.push_text(t, "lo");
    b.end_block(t);
    let c = b.start_tool_call("c1", "read");
    b.push_tool_args(c, "{\"path\":");
    b.push_tool_args(c, "\"a\"}");
    b.end_block(c);
    b.finish(StopReason::ToolUse, &m);
    let names: Vec<String> = b
        .drain_events()
        .map(|e| {
            serde_json::to_value(&e).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        names,
        [
            "start",
            "text_start",
            "text_delta",
            "text_delta",
            "text_end",
            "toolcall_start",
            "toolcall_delta",
            "toolcall_delta",
            "toolcall_end",
            "done"
        ]
    );
    let msg = b.into_message();
    assert_eq!(msg.text(), "Hello");
    let call = msg.tool_calls().next().unwrap();
    assert_eq!(call.arguments["path"], "a");
    assert!(call.arguments_complete());
}

/// `(type, contentIndex, delta)` of each pending event.
fn pending(b: &mut MessageBuilder) -> Vec<(String, Option<usize>, Option<String>)> {
    b.drain_events()
        .map(|e| {
            let v = serde_json::to_value(&e).unwrap();
            (
                v["type"].as_str().unwrap().to_string(),
                v["contentIndex"].as_u64().map(|i| i as usize),
                v["delta"].as_str().map(str::to_string),
            )
        })
        .collect()
}

#[test]
fn merged_deltas_join_the_pending_delta_of_the_same_block_only() {
    let m = model();
    let mut b = MessageBuilder::new(&m).merge_deltas(true);
    let think = b.start_thinking();
    b.push_thinking(think, "Let ");
    b.push_thinking(think, "me see");
    b.end_block(think);
    let t = b.start_text();
    b.push_text(t, "Hel");
    b.push_text(t, "lo");
    let c = b.start_tool_call("c1", "read");
    // A delta of another block sits between two text deltas: not merged.
    b.push_text(t, "!");
    b.push_tool_args(c, "{\"path\":");
    b.push_tool_args(c, "\"a\"}");
    b.end_block(c);
    let first = pending(&mut b);
    let kinds = |events: &[(String, Option<usize>, Option<String>)]| {
        events.iter().map(|e| e.0.clone()).collect::<Vec<_>>()
    };
    assert_eq!(
        kinds(&first),
        [
            "start",
            "thinking_start",
            "thinking_delta",
            "thinking_end",
            "text_start",
            "text_delta",
            "toolcall_start",
            "text_delta",
            "toolcall_delta",
            "toolcall_end"
        ]
    );
    let deltas: Vec<_> = first.iter().filter_map(|e| e.2.clone()).collect();
    assert_eq!(deltas, ["Let me see", "Hello", "!", "{\"path\":\"a\"}"]);
    // Once the pending events are taken, the next delta starts a new event.
    b.push_text(t, "more");
    b.push_text(t, " text");
    assert_eq!(
        pending(&mut b),
        [(
            "text_delta".to_string(),
            Some(t),
            Some("more text".to_string())
        )]
    );
    b.end_block(t);
    b.finish(StopReason::ToolUse, &m);
    let msg = b.into_message();
    assert_eq!(msg.text(), "Hello!more text");
    assert_eq!(msg.tool_calls().next().unwrap().arguments["path"], "a");
}

#[test]
fn merging_survives_a_retry_and_is_off_by_default() {
    let m = model();
    let mut b = MessageBuilder::new(&m).merge_deltas(true);
    b.reset_for_retry(1, 0, "again".into(), &m);
    let t = b.start_text();
    b.push_text(t, "a");
    b.push_text(t, "b");
    let deltas = |events: Vec<(String, Option<usize>, Option<String>)>| {
        events.into_iter().filter_map(|e| e.2).collect::<Vec<_>>()
    };
    assert_eq!(deltas(pending(&mut b)), ["ab"]);
    let mut plain = MessageBuilder::new(&m);
    let t = plain.start_text();
    plain.push_text(t, "a");
    plain.push_text(t, "b");
    assert_eq!(deltas(pending(&mut plain)), ["a", "b"]);
}

#[test]
fn unclosed_tool_call_is_flagged_truncated() {
    let m = model();
    let mut b = MessageBuilder::new(&m);
    let c = b.start_tool_call("c1", "write");
    b.push_tool_args(c, "{\"path\": \"a.txt\", \"content\": \"hal");
    b.finish(StopReason::Length, &m);
    let msg = b.into_message();
    let call = msg.tool_calls().next().unwrap();
    assert!(!call.arguments_complete());
    assert_eq!(call.arguments["path"], "a.txt");
    assert_eq!(
        call.raw_arguments.as_deref(),
        Some("{\"path\": \"a.txt\", \"content\": \"hal")
    );
}

/// pi's #10868: `\usepackage` in a LaTeX file's content (a stray
/// backslash, an invalid JSON escape) made the arguments unreadable.
#[test]
fn stray_backslashes_in_arguments_are_read_as_written() {
    let m = model();
    let mut b = MessageBuilder::new(&m);
    let c = b.start_tool_call("c1", "write");
    b.push_tool_args(
        c,
        r#"{"path": "a.tex", "content": "\usepackage{x}\n\d+ \"q\" \u00e9 \\", "note": "\ux"}"#,
    );
    b.end_block(c);
    b.finish(StopReason::ToolUse, &m);
    let msg = b.into_message();
    let call = msg.tool_calls().next().unwrap();
    assert!(call.arguments_complete(), "{:?}", call.arguments_error);
    assert_eq!(call.arguments["path"], "a.tex");
    assert_eq!(
        call.arguments["content"],
        "\\usepackage{x}\n\\d+ \"q\" é \\"
    );
    assert_eq!(call.arguments["note"], "\\ux");
    // Still invalid after that: flagged, as before.
    let mut b = MessageBuilder::new(&m);
    let c = b.start_tool_call("c2", "write");
    b.push_tool_args(c, r#"{"path": "a.tex", "content": "\q" oops}"#);
    b.end_block(c);
    b.finish(StopReason::ToolUse, &m);
    let msg = b.into_message();
    let call = msg.tool_calls().next().unwrap();
    assert!(!call.arguments_complete());
}

#[test]
fn non_object_arguments_are_flagged() {
    let m = model();
    let mut b = MessageBuilder::new(&m);
    let c = b.start_tool_call("c1", "x");
    b.push_tool_args(c, "[1,2]");
    b.end_block(c);
    b.finish(StopReason::ToolUse, &m);
    let msg = b.into_message();
    let err = msg
        .tool_calls()
        .next()
        .unwrap()
        .arguments_error
        .clone()
        .unwrap();
    assert!(err.contains("not an object"), "{err}");
}

#[test]
fn empty_arguments_are_an_empty_object() {
    let m = model();
    let mut b = MessageBuilder::new(&m);
    let c = b.start_tool_call("c1", "x");
    b.end_block(c);
    b.finish(StopReason::ToolUse, &m);
    let msg = b.into_message();
    let call = msg.tool_calls().next().unwrap();
    assert!(call.arguments_complete());
    assert!(call.arguments.is_empty());
}

#[test]
fn fail_keeps_partial_text() {
    let m = model();
    let mut b = MessageBuilder::new(&m);
    let t = b.start_text();
    b.push_text(t, "Hello");
    b.fail(StopReason::Error, "Overloaded", &m);
    let events: Vec<_> = b.drain_events().collect();
    let Some(AssistantMessageEvent::Error { error, reason }) = events.last() else {
        panic!()
    };
    assert_eq!(*reason, StopReason::Error);
    assert_eq!(error.text(), "Hello");
    assert_eq!(error.error_message.as_deref(), Some("Overloaded"));
}
