//! How the transcript is sent: images, replayed thinking, merged turns,
//! tool call ids and the tool results' images.

use super::*;

#[test]
fn user_images_become_base64_sources() {
    let m = model("claude-sonnet-4-5");
    let ctx = Context {
        messages: vec![
            UserMessage {
                content: vec![
                    UserContent::text("What is this?"),
                    UserContent::image("AAAA", "image/jpeg"),
                ],
                timestamp: 0,
            }
            .into(),
        ],
        ..Default::default()
    };
    let mut o = options();
    o.cache_retention = CacheRetention::None;
    let body = build(&m, &ctx, &o).body;
    assert_eq!(
        body["messages"][0]["content"][1],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "AAAA"}})
    );
}

#[test]
fn thinking_is_replayed_with_signatures_and_redacted_data() {
    let m = model("claude-sonnet-4-5");
    let thinking = |t: &str, sig: Option<&str>, redacted| {
        AssistantContent::Thinking(ThinkingContent {
            thinking: t.into(),
            thinking_signature: sig.map(String::from),
            redacted,
        })
    };
    let ctx = Context {
        messages: vec![
            user("Q"),
            assistant(
                &m,
                vec![
                    thinking("step one", Some("SIG1"), false),
                    thinking("", Some("OPAQUE"), true),
                    thinking("unsigned musing", None, false),
                    thinking("", None, true),
                    text("A"),
                ],
                StopReason::Stop,
            ),
            user("Next"),
        ],
        ..Default::default()
    };
    let mut o = options();
    o.cache_retention = CacheRetention::None;
    let body = build(&m, &ctx, &o).body;
    assert_eq!(
        body["messages"][1]["content"],
        json!([
            {"type": "thinking", "thinking": "step one", "signature": "SIG1"},
            {"type": "redacted_thinking", "data": "OPAQUE"},
            {"type": "text", "text": "unsigned musing"},
            {"type": "text", "text": "A"},
        ])
    );
}

#[test]
fn empty_blocks_are_dropped_and_same_role_turns_merge() {
    let m = model("claude-sonnet-4-5");
    let ctx = Context {
        messages: vec![
            user("one"),
            user("   "),
            user("two"),
            assistant(&m, vec![text(""), text("answer")], StopReason::Stop),
            assistant(&m, vec![text("")], StopReason::Stop),
            assistant(&m, vec![text("more")], StopReason::Stop),
            user("three"),
        ],
        ..Default::default()
    };
    let mut o = options();
    o.cache_retention = CacheRetention::None;
    let body = build(&m, &ctx, &o).body;
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "answer"}, {"type": "text", "text": "more"}]},
            {"role": "user", "content": [{"type": "text", "text": "three"}]},
        ])
    );
}

#[test]
fn foreign_tool_call_ids_are_normalized_for_anthropic() {
    let m = model("claude-sonnet-4-5");
    let other = AssistantMessage {
        content: vec![call("call_1|fc_abc", "read", json!({"path": "x"}))],
        api: "openai-responses".into(),
        provider: "openai".into(),
        model: "gpt-5".into(),
        stop_reason: StopReason::ToolUse,
        ..Default::default()
    };
    let ctx = Context {
        messages: vec![
            user("go"),
            other.into(),
            ToolResultMessage::text("call_1|fc_abc", "read", "ok", false).into(),
        ],
        ..Default::default()
    };
    let body = build(&m, &ctx, &options()).body;
    let id = body["messages"][1]["content"][0]["id"].as_str().unwrap();
    assert!(!id.contains('|'), "{id}");
    assert_eq!(body["messages"][2]["content"][0]["tool_use_id"], id);
}

#[test]
fn an_empty_conversation_is_an_invalid_request() {
    let m = model("claude-sonnet-4-5");
    let ctx = Context {
        messages: vec![user("  ")],
        ..Default::default()
    };
    let err = crate::build_request(&m, &ctx, &options()).unwrap_err();
    assert!(err.to_string().contains("no message with content"), "{err}");
}

/// pi's `supportsLongCacheRetention`: long retention is asked as short where
/// the endpoint does not take it (set so in `models.json`, or Fireworks).
#[test]
fn long_retention_is_short_where_the_endpoint_does_not_take_it() {
    let ctx = Context {
        system_prompt: Some("sys".into()),
        messages: vec![user("hi")],
        tools: Vec::new(),
    };
    let mut o = options();
    o.cache_retention = CacheRetention::Long;
    let system_cache = |m: &Model| build(m, &ctx, &o).body["system"][0]["cache_control"].clone();
    let mut m = model("claude-sonnet-4-5");
    assert_eq!(system_cache(&m), json!({"type": "ephemeral", "ttl": "1h"}));
    m.compat = Some(crate::model::CompatFlags {
        supports_long_cache_retention: Some(false),
        ..Default::default()
    });
    assert_eq!(system_cache(&m), json!({"type": "ephemeral"}));
    let mut fireworks = model("accounts/fireworks/models/glm-5p2");
    fireworks.provider = "fireworks".into();
    assert_eq!(system_cache(&fireworks), json!({"type": "ephemeral"}));
    fireworks.compat = Some(crate::model::CompatFlags {
        supports_long_cache_retention: Some(true),
        ..Default::default()
    });
    assert_eq!(
        system_cache(&fireworks),
        json!({"type": "ephemeral", "ttl": "1h"})
    );
}

/// pi's #10794: the API refuses images in a failed tool result; they go
/// after the turn's tool results, the result saying so.
#[test]
fn a_failed_tool_results_images_follow_the_turns_tool_results() {
    let m = model("claude-sonnet-4-5");
    let mut failed = ToolResultMessage::text("toolu_a", "render", "render failed", true);
    failed
        .content
        .push(UserContent::image("iVBORw0KGgo=", "image/png"));
    let ctx = Context {
        messages: vec![
            user("Render it"),
            assistant(
                &m,
                vec![
                    call("toolu_a", "render", json!({})),
                    call("toolu_b", "read", json!({"path": "a"})),
                ],
                StopReason::ToolUse,
            ),
            failed.into(),
            ToolResultMessage::text("toolu_b", "read", "fine", false).into(),
            user("Thanks"),
        ],
        ..Default::default()
    };
    let mut o = options();
    o.cache_retention = CacheRetention::None;
    let body = build(&m, &ctx, &o).body;
    assert_eq!(
        body["messages"][2]["content"],
        json!([
            {"type": "tool_result", "tool_use_id": "toolu_a", "is_error": true,
             "content": [{"type": "text", "text": "render failed"},
                         {"type": "text", "text": super::super::messages::IMAGES_AFTER}]},
            {"type": "tool_result", "tool_use_id": "toolu_b", "is_error": false,
             "content": [{"type": "text", "text": "fine"}]},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
            {"type": "text", "text": "Thanks"},
        ])
    );
}
