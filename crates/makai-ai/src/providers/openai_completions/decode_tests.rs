use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::event::AssistantMessageEvent;
use crate::message::AssistantMessage;
use crate::model::Api;
use crate::providers::openai_completions::decode::hot::PlainDelta;

fn model() -> Model {
    Model::custom(
        Api::OpenAiCompletions,
        "local",
        "m",
        "http://127.0.0.1:8080/v1",
    )
}

fn decode(body: &str) -> (Vec<AssistantMessageEvent>, AssistantMessage) {
    crate::decode_body(&model(), [body.as_bytes()])
}

/// `data: <json>` frames for `chunks`, without `[DONE]`.
fn frames(chunks: &[Value]) -> String {
    chunks.iter().map(|c| format!("data: {c}\n\n")).collect()
}

/// A complete stream: the chunks, then `data: [DONE]`.
fn stream(chunks: &[Value]) -> String {
    frames(chunks) + "data: [DONE]\n\n"
}

fn delta(d: Value) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion.chunk",
           "choices": [{"index": 0, "delta": d, "finish_reason": null}]})
}

fn finish(reason: &str) -> Value {
    json!({"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
}

fn usage_chunk(u: Value) -> Value {
    json!({"id": "chatcmpl-1", "choices": [], "usage": u})
}

fn event_names(events: &[AssistantMessageEvent]) -> Vec<String> {
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

fn tool_call_delta(index: u64, id: Option<&str>, name: Option<&str>, args: &str) -> Value {
    let mut call = json!({"index": index, "function": {"arguments": args}});
    if let Some(id) = id {
        call["id"] = json!(id);
        call["type"] = json!("function");
    }
    if let Some(name) = name {
        call["function"]["name"] = json!(name);
    }
    delta(json!({"tool_calls": [call]}))
}

#[test]
fn text_stream_with_usage_chunk_after_finish() {
    let body = stream(&[
        delta(json!({"role": "assistant", "content": "", "refusal": null})),
        delta(json!({"content": "Hello"})),
        delta(json!({"content": " world"})),
        finish("stop"),
        usage_chunk(
            json!({"prompt_tokens": 14, "completion_tokens": 30, "total_tokens": 44,
                           "completion_tokens_details": {"reasoning_tokens": 12}}),
        ),
    ]);
    let (events, msg) = decode(&body);
    assert_eq!(
        event_names(&events),
        [
            "start",
            "text_start",
            "text_delta",
            "text_delta",
            "text_end",
            "done"
        ]
    );
    assert_eq!(msg.text(), "Hello world");
    assert_eq!(
        msg.content.len(),
        1,
        "no empty block for the empty first delta"
    );
    assert_eq!(msg.stop_reason, StopReason::Stop);
    assert_eq!(msg.response_id.as_deref(), Some("chatcmpl-1"));
    assert_eq!((msg.usage.input, msg.usage.output), (14, 30));
    assert_eq!(
        msg.usage.reasoning,
        Some(12),
        "a part of output, kept apart"
    );
    assert_eq!(msg.usage.total_tokens, 44);
}

#[test]
fn parallel_tool_calls_are_assembled_by_index() {
    let body = stream(&[
        delta(json!({"role": "assistant", "content": null})),
        tool_call_delta(0, Some("call_A"), Some("get_weather"), ""),
        tool_call_delta(0, None, None, "{\"city\": "),
        tool_call_delta(0, None, None, "\"Edinburgh\"}"),
        tool_call_delta(1, Some("call_B"), Some("get_stock"), ""),
        tool_call_delta(1, None, None, "{\"ticker\""),
        tool_call_delta(1, None, None, ": \"AAPL\"}"),
        finish("tool_calls"),
    ]);
    let (_, msg) = decode(&body);
    assert_eq!(msg.stop_reason, StopReason::ToolUse);
    let calls: Vec<_> = msg.tool_calls().collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (calls[0].id.as_str(), calls[0].name.as_str()),
        ("call_A", "get_weather")
    );
    assert_eq!(calls[0].arguments["city"], "Edinburgh");
    assert_eq!(
        (calls[1].id.as_str(), calls[1].name.as_str()),
        ("call_B", "get_stock")
    );
    assert_eq!(calls[1].arguments["ticker"], "AAPL");
    assert!(calls.iter().all(|c| c.arguments_complete()));
    assert_eq!(msg.usage.total_tokens, 0, "no usage reported");
}

#[test]
fn interleaved_parallel_calls_and_text_before_a_call_at_index_1() {
    let body = stream(&[
        delta(json!({"content": "Reading it."})),
        tool_call_delta(1, Some("toolu_1"), Some("read_file"), ""),
        tool_call_delta(2, Some("toolu_2"), Some("read_file"), "{\"path\": \"b\"}"),
        tool_call_delta(1, None, None, "{\"path\": \"a\"}"),
        finish("tool_calls"),
    ]);
    let (events, msg) = decode(&body);
    assert_eq!(msg.text(), "Reading it.");
    let calls: Vec<_> = msg.tool_calls().collect();
    assert_eq!(calls[0].arguments["path"], "a");
    assert_eq!(calls[1].arguments["path"], "b");
    // The text block is closed before the first call starts.
    let names = event_names(&events);
    let text_end = names.iter().position(|n| n == "text_end").unwrap();
    let call_start = names.iter().position(|n| n == "toolcall_start").unwrap();
    assert!(text_end < call_start, "{names:?}");
}

/// llama-cpp-python: every chunk repeats id, type and name, plus a legacy
/// `function_call`, explicit nulls and no usage.
#[test]
fn llamacpp_repeated_id_chunks_make_one_call() {
    let id = "call__0_read_file_cmpl-dd51";
    let chunk = |args: &str| {
        json!({"id": "cmpl-dd51", "object": "chat.completion.chunk", "choices": [{"index": 0,
            "finish_reason": null, "logprobs": null,
            "delta": {"role": null, "content": null,
                "function_call": {"name": "read_file", "arguments": args},
                "tool_calls": [{"index": 0, "id": id, "type": "function",
                    "function": {"name": "read_file", "arguments": args}}]}}]})
    };
    let mut chunks = vec![
        json!({"id": "cmpl-dd51", "choices": [{"index": 0, "finish_reason": null,
        "delta": {"role": "assistant", "content": null, "function_call": null, "tool_calls": null}}]}),
    ];
    for part in ["{\"", "path", "\":", " \"", "README", ".md", "\"}", ""] {
        chunks.push(chunk(part));
    }
    chunks.push(
        json!({"id": "cmpl-dd51", "choices": [{"index": 0, "finish_reason": "tool_calls",
        "delta": {"role": null, "content": null, "function_call": null, "tool_calls": null}}]}),
    );
    let body = format!(": ping - 2025-01-01\n\n{}", stream(&chunks));
    let (_, msg) = decode(&body);
    assert_eq!(
        msg.stop_reason,
        StopReason::ToolUse,
        "{:?}",
        msg.error_message
    );
    let calls: Vec<_> = msg.tool_calls().collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].id, id);
    assert_eq!(calls[0].name, "read_file");
    assert_eq!(calls[0].arguments["path"], "README.md");
    assert!(calls[0].arguments_complete());
    assert_eq!(msg.text(), "");
}

#[test]
fn legacy_function_call_alone_becomes_a_call_with_a_synthesized_id() {
    let body = stream(&[
        delta(json!({"function_call": {"name": "lookup", "arguments": ""}})),
        delta(json!({"function_call": {"arguments": "{\"q\":"}})),
        delta(json!({"function_call": {"arguments": "1}"}})),
        finish("function_call"),
    ]);
    let (_, msg) = decode(&body);
    assert_eq!(msg.stop_reason, StopReason::ToolUse);
    let call = msg.tool_calls().next().unwrap();
    assert_eq!(call.name, "lookup");
    assert_eq!(call.arguments["q"], 1);
    assert!(!call.id.is_empty());
}

#[test]
fn same_index_with_a_new_id_starts_a_new_call() {
    let body = stream(&[
        tool_call_delta(0, Some("a"), Some("one"), "{}"),
        tool_call_delta(0, Some("b"), Some("two"), "{\"x\":1}"),
        finish("tool_calls"),
    ]);
    let (_, msg) = decode(&body);
    let calls: Vec<_> = msg.tool_calls().collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (calls[0].name.as_str(), calls[1].name.as_str()),
        ("one", "two")
    );
    assert_eq!(calls[1].arguments["x"], 1);
}

#[test]
fn reasoning_content_then_text_with_deepseek_usage() {
    let body = stream(&[
        delta(json!({"role": "assistant", "content": null, "reasoning_content": "Count "})),
        delta(json!({"content": null, "reasoning_content": "the r's."})),
        delta(json!({"content": "Three.", "reasoning_content": null})),
        json!({"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 339, "completion_tokens": 83, "total_tokens": 422,
                         "prompt_cache_hit_tokens": 320, "prompt_cache_miss_tokens": 19}}),
    ]);
    let (events, msg) = decode(&body);
    assert_eq!(
        event_names(&events),
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
    assert_eq!(msg.thinking(), "Count the r's.");
    assert_eq!(msg.text(), "Three.");
    let AssistantContent::Thinking(t) = &msg.content[0] else {
        panic!("first block is not thinking")
    };
    assert_eq!(t.thinking_signature.as_deref(), Some("reasoning_content"));
    assert_eq!(
        (
            msg.usage.input,
            msg.usage.output,
            msg.usage.cache_read,
            msg.usage.cache_write
        ),
        (19, 83, 320, 0)
    );
}

#[test]
fn reasoning_field_is_thinking_and_refusal_is_not_text() {
    let body = stream(&[
        delta(json!({"reasoning": "hmm"})),
        delta(json!({"content": null, "refusal": "I can't help with that."})),
        finish("stop"),
    ]);
    let (_, msg) = decode(&body);
    assert_eq!(msg.thinking(), "hmm");
    assert_eq!(msg.text(), "");
    assert_eq!(msg.stop_reason, StopReason::Stop);
}

#[test]
fn usage_is_normalised_from_every_place_it_appears() {
    // OpenAI cached tokens and a cache-write count.
    let (_, msg) = decode(&stream(&[
        delta(json!({"content": "x"})),
        finish("stop"),
        usage_chunk(json!({"prompt_tokens": 1000, "completion_tokens": 5,
            "prompt_tokens_details": {"cached_tokens": 600, "cache_write_tokens": 100}})),
    ]));
    assert_eq!(
        (
            msg.usage.input,
            msg.usage.output,
            msg.usage.cache_read,
            msg.usage.cache_write
        ),
        (300, 5, 600, 100)
    );
    // Groq's x_groq.usage (without a top-level usage).
    let (_, msg) = decode(&stream(&[
        delta(json!({"content": "x"})),
        json!({"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
               "x_groq": {"usage": {"prompt_tokens": 210, "completion_tokens": 15}}}),
    ]));
    assert_eq!((msg.usage.input, msg.usage.output), (210, 15));
    // choices[].usage (Moonshot).
    let (_, msg) = decode(&stream(&[json!({"id": "c", "choices": [{"index": 0,
        "delta": {"content": "x"}, "finish_reason": "stop",
        "usage": {"prompt_tokens": 7, "completion_tokens": 2}}]})]));
    assert_eq!((msg.usage.input, msg.usage.output), (7, 2));
    // Cached more than prompt (a broken server): input saturates at 0.
    let (_, msg) = decode(&stream(&[
        finish("stop"),
        usage_chunk(json!({"prompt_tokens": 5, "completion_tokens": 1,
            "prompt_tokens_details": {"cached_tokens": 9}})),
    ]));
    assert_eq!((msg.usage.input, msg.usage.cache_read), (0, 9));
    // Explicit `usage: null` on every chunk is no usage.
    let (_, msg) = decode(&stream(&[json!({"id": "c", "usage": null,
        "choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": "stop"}]})]));
    assert_eq!(msg.usage.total_tokens, 0);
}

#[test]
fn only_choice_zero_is_read() {
    let choice = |i: u64, content: &str, finish: Option<&str>| json!({"id": "c", "choices": [{"index": i, "delta": {"content": content}, "finish_reason": finish}]});
    let (_, msg) = decode(&stream(&[
        choice(0, "{\"t\":65", None),
        choice(1, "{\"t\":61", None),
        choice(2, "{\"t\":59", None),
        choice(1, "}", Some("stop")),
        choice(0, "}", Some("stop")),
        choice(2, "}", Some("stop")),
    ]));
    assert_eq!(msg.text(), "{\"t\":65}");
    assert_eq!(msg.content.len(), 1);
}

#[test]
fn eof_without_finish_reason_or_done_is_an_error() {
    let body = frames(&[
        delta(json!({"content": "partial"})),
        tool_call_delta(0, Some("c1"), Some("write"), "{\"path\": \"a"),
    ]);
    let (events, msg) = decode(&body);
    assert_eq!(msg.stop_reason, StopReason::Error);
    let err = msg.error_message.clone().unwrap();
    assert!(err.contains("without a finish_reason"), "{err}");
    assert_eq!(msg.text(), "partial");
    // The unfinished call is kept but flagged.
    assert!(!msg.tool_calls().next().unwrap().arguments_complete());
    assert!(matches!(
        events.last(),
        Some(AssistantMessageEvent::Error { .. })
    ));
    // The fault is retryable (a cut connection).
    let mut d = Decoder::default();
    let m = model();
    let mut b = MessageBuilder::new(&m);
    assert!(d.on_eof(&mut b, &m).unwrap_err().retryable);
}

#[test]
fn eof_after_finish_reason_without_done_finishes_normally() {
    let body = frames(&[
        tool_call_delta(0, Some("c1"), Some("read"), "{\"path\": \"a\"}"),
        finish("tool_calls"),
    ]);
    let (_, msg) = decode(&body);
    assert_eq!(msg.stop_reason, StopReason::ToolUse);
    assert!(msg.tool_calls().next().unwrap().arguments_complete());
}

#[test]
fn done_without_finish_reason_is_an_error() {
    // Older llama.cpp: an `error:` line (ignored by SSE) followed by `[DONE]`.
    let body = format!(
        "{}error: {{\"code\":500,\"message\":\"boom\"}}\n\ndata: [DONE]\n\n",
        frames(&[delta(json!({"content": "par"}))])
    );
    let (_, msg) = decode(&body);
    assert_eq!(msg.stop_reason, StopReason::Error);
    assert!(
        msg.error_message
            .as_deref()
            .unwrap()
            .contains("without a finish_reason"),
        "{:?}",
        msg.error_message
    );
}

#[test]
fn error_chunk_mid_stream_fails_with_its_message() {
    let body = frames(&[
        delta(json!({"content": "Hel"})),
        json!({"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it",
                         "type": "exceed_context_size_error"}}),
    ]);
    let (_, msg) = decode(&body);
    assert_eq!(msg.stop_reason, StopReason::Error);
    let err = msg.error_message.clone().unwrap();
    assert!(err.contains("exceeds the available context size"), "{err}");
    assert_eq!(msg.text(), "Hel");
}

#[test]
fn error_faults_are_retryable_only_for_transient_errors() {
    let fault = |v: Value| error_fault(&v);
    assert!(
        !fault(json!({"code": 400, "message": "bad request", "type": "invalid_request_error"}))
            .retryable
    );
    assert!(fault(json!({"message": "The server had an error", "type": "server_error"})).retryable);
    assert!(fault(json!({"code": 502, "message": "upstream failed"})).retryable);
    assert!(fault(json!({"message": "Overloaded"})).retryable);
    assert!(
        fault(json!({"message": "Selected model is at capacity. Please try a different model."}))
            .retryable
    );
    assert!(
        fault(json!({"code": "server_busy", "message": "servers are currently busy"})).retryable
    );
    // Gateways that lost the upstream (pi's list).
    assert!(fault(json!({"message": "stream disconnected before completion"})).retryable);
    assert!(fault(json!({"message": "Unable to forward upstream stream"})).retryable);
    assert!(fault(json!({"message": "The service is temporarily unavailable"})).retryable);
    assert!(fault(json!({"message": "bad gateway", "code": "503"})).retryable);
    // Digits inside a request id are no status.
    assert!(
        !fault(json!({"message": "invalid tool schema (request req_5003a429)", "type": "invalid_request_error"}))
            .retryable
    );
    let rate = fault(json!({"type": "rate_limit_exceeded", "message": "Please try again in 2s."}));
    assert!(rate.retryable);
    assert_eq!(rate.retry_after, Some(std::time::Duration::from_secs(2)));
    assert!(
        fault(json!("an error was encountered while running the model"))
            .message
            .contains("running the model")
    );
    // An `event: error` frame.
    let f = error_fault_from_text(
        "{\"error\":{\"message\":\"Overloaded\",\"type\":\"overloaded_error\"}}",
    );
    assert!(
        f.retryable && f.message.contains("Overloaded"),
        "{}",
        f.message
    );
}

#[test]
fn finish_reasons_map_to_stop_reasons() {
    let run = |reason: &str, with_call: bool| {
        let mut chunks = vec![delta(json!({"content": "x"}))];
        if with_call {
            chunks.push(tool_call_delta(0, Some("c"), Some("t"), "{}"));
        }
        chunks.push(finish(reason));
        decode(&stream(&chunks)).1
    };
    assert_eq!(run("stop", false).stop_reason, StopReason::Stop);
    assert_eq!(run("length", false).stop_reason, StopReason::Length);
    assert_eq!(run("tool_calls", true).stop_reason, StopReason::ToolUse);
    // Some servers say `stop` after tool calls.
    assert_eq!(run("stop", true).stop_reason, StopReason::ToolUse);
    let filtered = run("content_filter", false);
    assert_eq!(filtered.stop_reason, StopReason::Error);
    assert!(filtered.error_message.unwrap().contains("content filter"));
    assert_eq!(filtered.content.len(), 1, "content so far is kept");
}

#[test]
fn malformed_chunk_is_an_error_that_shows_the_data() {
    let (_, msg) = decode("data: {not json\n\n");
    assert_eq!(msg.stop_reason, StopReason::Error);
    assert!(msg.error_message.unwrap().contains("{not json"));
}

#[test]
fn text_after_tool_calls_and_thinking_after_text_open_new_blocks() {
    let (_, msg) = decode(&stream(&[
        delta(json!({"reasoning_content": "a"})),
        delta(json!({"content": "b"})),
        delta(json!({"reasoning_content": "c"})),
        tool_call_delta(0, Some("id"), Some("t"), "{}"),
        delta(json!({"content": "d"})),
        finish("tool_calls"),
    ]));
    let kinds: Vec<&str> = msg
        .content
        .iter()
        .map(|c| match c {
            AssistantContent::Text(_) => "text",
            AssistantContent::Thinking(_) => "thinking",
            AssistantContent::ToolCall(_) => "call",
        })
        .collect();
    assert_eq!(kinds, ["thinking", "text", "thinking", "call", "text"]);
    assert_eq!(msg.stop_reason, StopReason::ToolUse);
}

#[path = "decode_fast_path_tests.rs"]
mod fast_path;
