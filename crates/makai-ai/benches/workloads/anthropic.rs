//! Anthropic Messages: named events, `content_block_delta`s.

use makai_ai::Api;

use super::{
    ARG_DELTAS, Body, Expect, TEXT_DELTAS, Workload, file_content, finish, json_str, pieces,
    prose_words, words, write_args,
};

const ANTHROPIC_START: &str = r#"{"type":"message_start","message":{"model":"claude-sonnet-4-5-20250929","id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":2095,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0},"output_tokens":1,"service_tier":"standard"}}}"#;

fn anthropic_end(body: &mut Body, stop: &str, output_tokens: usize) {
    body.event(
        "content_block_stop",
        r#"{"type":"content_block_stop","index":0}"#,
    );
    body.event(
        "message_delta",
        &format!(
            r#"{{"type":"message_delta","delta":{{"stop_reason":"{stop}","stop_sequence":null}},"usage":{{"input_tokens":2095,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":{output_tokens}}}}}"#
        ),
    );
    body.event("message_stop", r#"{"type":"message_stop"}"#);
}

pub(super) fn anthropic_text() -> Workload {
    anthropic_words("anthropic-messages/text", &words())
}

pub(super) fn anthropic_prose() -> Workload {
    anthropic_words("anthropic-messages/prose", &prose_words())
}

fn anthropic_words(name: &str, words: &[String]) -> Workload {
    let mut b = Body::default();
    b.event("message_start", ANTHROPIC_START);
    b.event(
        "content_block_start",
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
    );
    b.event("ping", r#"{"type": "ping"}"#);
    for w in words {
        b.event(
            "content_block_delta",
            &format!(
                r#"{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":{}}}}}"#,
                json_str(w)
            ),
        );
    }
    anthropic_end(&mut b, "end_turn", TEXT_DELTAS);
    finish(
        name,
        Api::AnthropicMessages,
        b,
        TEXT_DELTAS,
        Expect::Text(words.concat()),
    )
}

pub(super) fn anthropic_tool() -> Workload {
    let content = file_content();
    let args = write_args(&content);
    let mut b = Body::default();
    b.event("message_start", ANTHROPIC_START);
    b.event(
        "content_block_start",
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_01KFbKqPYSuAKujiL6mTfzYA","name":"write","input":{}}}"#,
    );
    b.event("ping", r#"{"type": "ping"}"#);
    let parts = pieces(&args, ARG_DELTAS);
    for p in &parts {
        b.event(
            "content_block_delta",
            &format!(
                r#"{{"type":"content_block_delta","index":0,"delta":{{"type":"input_json_delta","partial_json":{}}}}}"#,
                json_str(p)
            ),
        );
    }
    anthropic_end(&mut b, "tool_use", 250_000);
    finish(
        "anthropic-messages/tool-args",
        Api::AnthropicMessages,
        b,
        parts.len(),
        Expect::WriteCall(content),
    )
}
