//! How the transcript is sent: tool rounds, images, replayed thinking,
//! turns left out and tool call ids.

use super::*;

/// The roles of a request body's messages, in order.
fn roles(b: &Value) -> Vec<&str> {
    b["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect()
}

#[test]
fn assistant_turn_is_inserted_after_tool_results_when_required() {
    let mut m = local();
    m.compat = Some(CompatFlags {
        requires_assistant_after_tool_result: Some(true),
        requires_tool_result_name: Some(true),
        ..Default::default()
    });
    let c = Context {
        messages: tool_round(&m),
        ..Default::default()
    };
    let b = body(&m, &c, &opts());
    let roles = roles(&b);
    assert_eq!(roles, ["user", "assistant", "tool", "assistant", "user"]);
    assert_eq!(b["messages"][2]["name"], "read_file");
    assert_eq!(b["messages"][3]["content"], TOOL_RESULTS_PROCESSED);
    // Without the flag: no insertion, no name.
    let b = body(&local(), &c, &opts());
    assert_eq!(b["messages"].as_array().unwrap().len(), 4);
    assert!(b["messages"][2].get("name").is_none());
}

#[test]
fn images_become_data_url_parts_and_tool_result_images_follow_as_user_message() {
    let mut m = local();
    m.input = vec![Modality::Text, Modality::Image];
    let mut u = UserMessage::text("what is this?");
    u.content.push(UserContent::image("AAAA", "image/png"));
    let mut result = ToolResultMessage::text("call_1", "screenshot", "", false);
    result.content = vec![UserContent::image("BBBB", "image/jpeg")];
    let c = Context {
        messages: vec![
            Message::User(u),
            from_model(
                &m,
                vec![call("call_1", "screenshot", json!({}))],
                StopReason::ToolUse,
            ),
            Message::ToolResult(result),
        ],
        ..Default::default()
    };
    let b = body(&m, &c, &opts());
    let msgs = b["messages"].as_array().unwrap();
    assert_eq!(
        msgs[0]["content"],
        json!([
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
        ])
    );
    assert_eq!(msgs[1]["tool_calls"][0]["function"]["arguments"], "{}");
    assert_eq!(
        msgs[2],
        json!({"role": "tool", "tool_call_id": "call_1", "content": SEE_ATTACHED_IMAGE})
    );
    assert_eq!(
        msgs[3],
        json!({"role": "user", "content": [
            {"type": "text", "text": TOOL_RESULT_IMAGES},
            {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,BBBB"}}
        ]})
    );
    // A text-only model gets a note instead of the image, as a plain string.
    let b = body(&local(), &c, &opts());
    let content = b["messages"][0]["content"].as_str().unwrap();
    assert!(
        content.starts_with("what is this?\n") && !content.contains("AAAA"),
        "{content}"
    );
    assert_eq!(b["messages"].as_array().unwrap().len(), 3);
}

#[test]
fn same_model_thinking_is_replayed_only_where_accepted() {
    let conversation = |m: &Model| Context {
        messages: vec![
            user("2+2?"),
            from_model(
                m,
                vec![thinking("add them", Some("reasoning")), text("4")],
                StopReason::Stop,
            ),
            user("and 3+3?"),
        ],
        ..Default::default()
    };
    // A local server (Ollama streams `reasoning`): replayed in the same field.
    let m = local();
    let b = body(&m, &conversation(&m), &opts());
    assert_eq!(
        b["messages"][1],
        json!({"role": "assistant", "content": "4", "reasoning": "add them"})
    );
    // OpenAI does not take reasoning back: dropped.
    let o = openai();
    let b = body(&o, &conversation(&o), &opts());
    assert_eq!(
        b["messages"][1],
        json!({"role": "assistant", "content": "4"})
    );
    // Thinking as text.
    let mut t = local();
    t.compat = Some(CompatFlags {
        requires_thinking_as_text: Some(true),
        ..Default::default()
    });
    let b = body(&t, &conversation(&t), &opts());
    assert_eq!(b["messages"][1]["content"], "add them\n\n4");
    assert!(b["messages"][1].get("reasoning").is_none());
    // Thinking from another model is plain text after the hand-off.
    let other = model("http://127.0.0.1:9999/v1");
    let mut c = conversation(&other);
    if let Message::Assistant(a) = &mut c.messages[1] {
        a.model = "someone-else".into();
    }
    let b = body(&m, &c, &opts());
    assert_eq!(
        b["messages"][1],
        json!({"role": "assistant", "content": "add them\n\n4"})
    );
}

#[test]
fn deepseek_reasoning_model_always_gets_reasoning_content() {
    let mut m = model("https://api.deepseek.com");
    m.provider = "deepseek".into();
    m.reasoning = true;
    let c = Context {
        messages: tool_round(&m),
        ..Default::default()
    };
    let b = body(&m, &c, &opts());
    assert_eq!(b["messages"][1]["reasoning_content"], "");
    assert!(b["messages"][1].get("content").is_none());
}

#[test]
fn empty_and_failed_assistant_turns_are_not_sent() {
    let m = local();
    let c = Context {
        messages: vec![
            user("a"),
            from_model(&m, vec![], StopReason::Stop),
            user("b"),
            from_model(&m, vec![text("partial")], StopReason::Error),
            user("c"),
        ],
        ..Default::default()
    };
    let b = body(&m, &c, &opts());
    let roles = roles(&b);
    assert_eq!(roles, ["user", "user", "user"]);
}

#[test]
fn long_and_foreign_tool_call_ids_are_normalised() {
    let m = local();
    let long = "call_abc|fc_0123456789abcdef0123456789abcdef0123456789";
    let c = Context {
        messages: vec![
            user("x"),
            from_model(
                &m,
                vec![call(long, "read_file", json!({}))],
                StopReason::ToolUse,
            ),
            Message::ToolResult(ToolResultMessage::text(long, "read_file", "ok", false)),
        ],
        ..Default::default()
    };
    let b = body(&m, &c, &opts());
    let id = b["messages"][1]["tool_calls"][0]["id"].as_str().unwrap();
    assert!(id.len() <= 40 && !id.contains('|'), "{id}");
    assert_eq!(b["messages"][2]["tool_call_id"], id);

    // Mistral: exactly 9 letters and digits, the same for the call and its result.
    let mut mistral = model("https://api.mistral.ai/v1");
    mistral.provider = "mistral".into();
    let b = body(&mistral, &c, &opts());
    let id = b["messages"][1]["tool_calls"][0]["id"].as_str().unwrap();
    assert!(
        id.len() == 9 && id.bytes().all(|b| b.is_ascii_alphanumeric()),
        "{id}"
    );
    assert_eq!(b["messages"][2]["tool_call_id"], id);
    // A valid Mistral id stays as it is; distinct ids stay distinct.
    assert_eq!(alnum_id("a", 9).len(), 9);
    assert_ne!(alnum_id("call_1", 9), alnum_id("call_2", 9));
    let kept = from_model(
        &mistral,
        vec![call("Ab3dE6gH9", "x", json!({}))],
        StopReason::ToolUse,
    );
    let mut msgs = vec![std::borrow::Cow::Borrowed(&kept)];
    exact_alnum_ids(&mut msgs, 9);
    assert!(matches!(msgs[0], std::borrow::Cow::Borrowed(_)));
    let Message::Assistant(a) = &*msgs[0] else {
        panic!()
    };
    assert_eq!(a.tool_calls().next().unwrap().id, "Ab3dE6gH9");
}
