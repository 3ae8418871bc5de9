//! Tests of [`super`] (`message.rs`).

use super::*;
use serde_json::json;

#[test]
fn custom_message_round_trips_with_pi_fields() {
    let json = json!({"role": "custom", "customType": "note", "content": "hi",
        "display": true, "details": {"a": 1}, "timestamp": 3});
    let m: AgentMessage = serde_json::from_value(json).unwrap();
    let AgentMessage::Custom(c) = &m else {
        panic!("not custom: {m:?}")
    };
    assert_eq!(c.content.to_parts(), vec![UserContent::text("hi")]);
    // The string form is kept.
    assert_eq!(
        serde_json::to_value(&m).unwrap(),
        json!({"role": "custom", "customType": "note",
            "content": "hi",
            "display": true, "details": {"a": 1}, "timestamp": 3})
    );
    let parts = json!({"role": "custom", "customType": "note",
        "content": [{"type": "text", "text": "hi"}], "display": false, "timestamp": 3});
    let m: AgentMessage = serde_json::from_value(parts.clone()).unwrap();
    assert_eq!(serde_json::to_value(&m).unwrap(), parts);
}

#[test]
fn hook_message_reads_as_custom() {
    let m: AgentMessage = serde_json::from_value(json!({
        "role": "hookMessage", "customType": "x", "content": "hi", "display": true, "timestamp": 1
    }))
    .unwrap();
    assert!(matches!(m, AgentMessage::Custom(_)));
    assert_eq!(serde_json::to_value(&m).unwrap()["role"], "custom");
}

#[test]
fn unknown_roles_are_kept_verbatim_and_never_reach_the_model() {
    let json = json!({"role": "futureThing", "x": 1, "timestamp": 2});
    let m: AgentMessage = serde_json::from_value(json.clone()).unwrap();
    assert_eq!(m.role(), "futureThing");
    assert_eq!(m.timestamp(), 2);
    assert_eq!(serde_json::to_value(&m).unwrap(), json);
    assert!(default_convert_to_llm(&[m]).is_empty());
    // The same with the role written last.
    let m: AgentMessage = serde_json::from_str(r#"{"x":1,"role":"futureThing"}"#).unwrap();
    assert_eq!(m.role(), "futureThing");
}

#[test]
fn every_pi_role_round_trips_in_any_key_order() {
    let cases = [
        json!({"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1}),
        json!({"role": "toolResult", "toolCallId": "c", "toolName": "read",
            "content": [{"type": "text", "text": "x"}], "isError": false, "timestamp": 2}),
        json!({"role": "bashExecution", "command": "ls", "output": "a", "exitCode": 0,
            "cancelled": false, "truncated": false, "timestamp": 3}),
        json!({"role": "branchSummary", "summary": "s", "fromId": "ab12", "timestamp": 4}),
        json!({"role": "compactionSummary", "summary": "s", "tokensBefore": 9, "timestamp": 5}),
    ];
    for json in cases {
        let m: AgentMessage = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(serde_json::to_value(&m).unwrap(), json);
        let mut object = json.as_object().cloned().unwrap();
        let role = object.remove("role").unwrap();
        object.insert("role".into(), role);
        let late: AgentMessage = serde_json::from_value(Value::Object(object)).unwrap();
        assert_eq!(late, m);
    }
}

#[test]
fn summaries_and_shell_runs_reach_the_model_as_user_text() {
    let msgs = vec![
        AgentMessage::user("a"),
        CompactionSummaryMessage {
            summary: "did x".into(),
            tokens_before: 10,
            timestamp: 1,
        }
        .into(),
        BranchSummaryMessage {
            summary: "tried y".into(),
            from_id: None,
            timestamp: 1,
        }
        .into(),
        CustomMessage::text("t", "c").into(),
        BashExecutionMessage {
            command: "ls".into(),
            output: "a.txt".into(),
            exit_code: Some(2),
            ..Default::default()
        }
        .into(),
        BashExecutionMessage {
            command: "secret".into(),
            exclude_from_context: Some(true),
            ..Default::default()
        }
        .into(),
    ];
    let out = default_convert_to_llm(&msgs);
    assert_eq!(out.len(), 5, "the excluded shell run is dropped");
    let text = |m: &Message| match m {
        Message::User(u) => parts_text(&u.content),
        other => panic!("not a user message: {other:?}"),
    };
    assert_eq!(
        text(&out[1]),
        format!("{COMPACTION_SUMMARY_PREFIX}did x{SUMMARY_SUFFIX}")
    );
    assert_eq!(
        text(&out[2]),
        format!("{BRANCH_SUMMARY_PREFIX}tried y{SUMMARY_SUFFIX}")
    );
    assert_eq!(text(&out[3]), "c");
    assert!(text(&out[4]).contains("`ls`") && text(&out[4]).contains("code 2"));
}

#[test]
fn missing_role_and_bad_fields_are_clear_errors() {
    let e = serde_json::from_value::<AgentMessage>(json!({"content": "x"})).unwrap_err();
    assert!(e.to_string().contains("role"), "{e}");
    let e = serde_json::from_value::<AgentMessage>(json!({"role": "user"})).unwrap_err();
    assert!(e.to_string().contains("content"), "{e}");
    let e =
        serde_json::from_str::<AgentMessage>(r#"{"timestamp": 1, "role": "user"}"#).unwrap_err();
    assert!(e.to_string().contains("content"), "{e}");
}
