//! OpenAI Chat Completions: `chat.completion.chunk`s ending in `[DONE]`.

use makai_ai::Api;

use super::{
    ARG_DELTAS, Body, Expect, TEXT_DELTAS, Workload, file_content, finish, json_str, pieces,
    prose_words, words, write_args,
};

const CHAT_HEAD: &str = r#"{"id":"chatcmpl-ABfw031mOJeYCSHe4yI2ZjOA6kMJL","object":"chat.completion.chunk","created":1727346168,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_5050236cbd","choices":[{"index":0,"delta":"#;

fn chat_chunk(delta: &str, finish: &str) -> String {
    format!(r#"{CHAT_HEAD}{delta},"logprobs":null,"finish_reason":{finish}}}]}}"#)
}

fn chat_end(b: &mut Body, finish: &str, completion_tokens: usize) {
    b.data(&chat_chunk("{}", finish));
    b.data(&format!(
        r#"{{"id":"chatcmpl-ABfw031mOJeYCSHe4yI2ZjOA6kMJL","object":"chat.completion.chunk","created":1727346168,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_5050236cbd","choices":[],"usage":{{"prompt_tokens":2095,"completion_tokens":{completion_tokens},"total_tokens":{},"prompt_tokens_details":{{"cached_tokens":0}},"completion_tokens_details":{{"reasoning_tokens":0}}}}}}"#,
        2095 + completion_tokens
    ));
    b.data("[DONE]");
}

pub(super) fn chat_text() -> Workload {
    chat_words("openai-completions/text", &words())
}

pub(super) fn chat_prose() -> Workload {
    chat_words("openai-completions/prose", &prose_words())
}

fn chat_words(name: &str, words: &[String]) -> Workload {
    let mut b = Body::default();
    b.data(&chat_chunk(
        r#"{"role":"assistant","content":"","refusal":null}"#,
        "null",
    ));
    for w in words {
        b.data(&chat_chunk(
            &format!(r#"{{"content":{}}}"#, json_str(w)),
            "null",
        ));
    }
    chat_end(&mut b, r#""stop""#, TEXT_DELTAS);
    finish(
        name,
        Api::OpenAiCompletions,
        b,
        TEXT_DELTAS,
        Expect::Text(words.concat()),
    )
}

pub(super) fn chat_tool() -> Workload {
    let content = file_content();
    let args = write_args(&content);
    let mut b = Body::default();
    b.data(&chat_chunk(
        r#"{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_CTf1nWJLqSeRgDqaCG27xZ74","type":"function","function":{"name":"write","arguments":""}}],"refusal":null}"#,
        "null",
    ));
    let parts = pieces(&args, ARG_DELTAS);
    for p in &parts {
        b.data(&chat_chunk(
            &format!(
                r#"{{"tool_calls":[{{"index":0,"function":{{"arguments":{}}}}}]}}"#,
                json_str(p)
            ),
            "null",
        ));
    }
    chat_end(&mut b, r#""tool_calls""#, 250_000);
    finish(
        "openai-completions/tool-args",
        Api::OpenAiCompletions,
        b,
        parts.len(),
        Expect::WriteCall(content),
    )
}
