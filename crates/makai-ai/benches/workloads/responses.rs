//! OpenAI Responses: typed events; the `*.done` events and `response.completed`
//! repeat the whole text or arguments, as the real API does.

use makai_ai::Api;

use super::{
    ARG_DELTAS, Body, Expect, TEXT_DELTAS, Workload, file_content, finish, json_str, pieces, words,
    write_args,
};

const RESP_ID: &str = "resp_01830d662ab3856501693c3215903881909b710d150ff65014";
const MSG_ID: &str = "msg_01830d662ab3856501693c32183a488190a612c410a0a39823";
const FC_ID: &str = "fc_01830d662ab3856501693c32165be4819098c08f205f8932ef";

/// The `response` object; `output` is the JSON of its output array.
fn response_object(status: &str, output: &str, output_tokens: usize) -> String {
    let usage = if status == "in_progress" {
        "null".to_string()
    } else {
        format!(
            r#"{{"input_tokens":2095,"input_tokens_details":{{"cached_tokens":0}},"output_tokens":{output_tokens},"output_tokens_details":{{"reasoning_tokens":0}},"total_tokens":{}}}"#,
            2095 + output_tokens
        )
    };
    format!(
        r#"{{"id":"{RESP_ID}","object":"response","created_at":1765552661,"status":"{status}","background":false,"error":null,"incomplete_details":null,"instructions":null,"max_output_tokens":null,"max_tool_calls":null,"model":"gpt-5.1-codex-max","output":{output},"parallel_tool_calls":true,"previous_response_id":null,"prompt_cache_key":null,"reasoning":{{"effort":"medium","summary":null}},"service_tier":"auto","store":false,"temperature":1,"text":{{"format":{{"type":"text"}},"verbosity":"medium"}},"tool_choice":"auto","tools":[],"top_p":1,"truncation":"disabled","usage":{usage},"user":null,"metadata":{{}}}}"#
    )
}

/// `response.created` and `response.in_progress`; returns the next sequence number.
fn responses_begin(b: &mut Body) -> u64 {
    for (seq, kind) in ["response.created", "response.in_progress"]
        .into_iter()
        .enumerate()
    {
        b.event(
            kind,
            &format!(
                r#"{{"type":"{kind}","sequence_number":{seq},"response":{}}}"#,
                response_object("in_progress", "[]", 0)
            ),
        );
    }
    2
}

/// A 15-character obfuscation pad, varied per event like the real one.
fn obfuscation(seq: u64) -> String {
    format!(
        "h0EQGlYs{:07x}",
        seq.wrapping_mul(2_654_435_761) & 0x0fff_ffff
    )
}

pub(super) fn responses_text() -> Workload {
    let words = words();
    let text = words.concat();
    let text_json = json_str(&text);
    let mut b = Body::default();
    let mut seq = responses_begin(&mut b);
    b.event(
        "response.output_item.added",
        &format!(
            r#"{{"type":"response.output_item.added","sequence_number":{seq},"output_index":0,"item":{{"id":"{MSG_ID}","type":"message","status":"in_progress","content":[],"role":"assistant"}}}}"#
        ),
    );
    seq += 1;
    b.event(
        "response.content_part.added",
        &format!(
            r#"{{"type":"response.content_part.added","sequence_number":{seq},"item_id":"{MSG_ID}","output_index":0,"content_index":0,"part":{{"type":"output_text","annotations":[],"logprobs":[],"text":""}}}}"#
        ),
    );
    seq += 1;
    for w in &words {
        b.event(
            "response.output_text.delta",
            &format!(
                r#"{{"type":"response.output_text.delta","sequence_number":{seq},"item_id":"{MSG_ID}","output_index":0,"content_index":0,"delta":"{w}","logprobs":[],"obfuscation":"{}"}}"#,
                obfuscation(seq)
            ),
        );
        seq += 1;
    }
    b.event(
        "response.output_text.done",
        &format!(
            r#"{{"type":"response.output_text.done","sequence_number":{seq},"item_id":"{MSG_ID}","output_index":0,"content_index":0,"text":{text_json},"logprobs":[]}}"#
        ),
    );
    seq += 1;
    let part =
        format!(r#"{{"type":"output_text","annotations":[],"logprobs":[],"text":{text_json}}}"#);
    b.event(
        "response.content_part.done",
        &format!(
            r#"{{"type":"response.content_part.done","sequence_number":{seq},"item_id":"{MSG_ID}","output_index":0,"content_index":0,"part":{part}}}"#
        ),
    );
    seq += 1;
    let item = format!(
        r#"{{"id":"{MSG_ID}","type":"message","status":"completed","content":[{part}],"role":"assistant"}}"#
    );
    b.event(
        "response.output_item.done",
        &format!(
            r#"{{"type":"response.output_item.done","sequence_number":{seq},"output_index":0,"item":{item}}}"#
        ),
    );
    seq += 1;
    b.event(
        "response.completed",
        &format!(
            r#"{{"type":"response.completed","sequence_number":{seq},"response":{}}}"#,
            response_object("completed", &format!("[{item}]"), TEXT_DELTAS)
        ),
    );
    finish(
        "openai-responses/text",
        Api::OpenAiResponses,
        b,
        TEXT_DELTAS,
        Expect::Text(text),
    )
}

pub(super) fn responses_tool() -> Workload {
    let content = file_content();
    let args = write_args(&content);
    let args_json = json_str(&args);
    let mut b = Body::default();
    let mut seq = responses_begin(&mut b);
    b.event(
        "response.output_item.added",
        &format!(
            r#"{{"type":"response.output_item.added","sequence_number":{seq},"output_index":0,"item":{{"id":"{FC_ID}","type":"function_call","status":"in_progress","arguments":"","call_id":"call_Q6pW65MUgW9vF59BmItYGos3","name":"write"}}}}"#
        ),
    );
    seq += 1;
    let parts = pieces(&args, ARG_DELTAS);
    for p in &parts {
        b.event(
            "response.function_call_arguments.delta",
            &format!(
                r#"{{"type":"response.function_call_arguments.delta","sequence_number":{seq},"item_id":"{FC_ID}","output_index":0,"delta":{},"obfuscation":"{}"}}"#,
                json_str(p),
                obfuscation(seq)
            ),
        );
        seq += 1;
    }
    b.event(
        "response.function_call_arguments.done",
        &format!(
            r#"{{"type":"response.function_call_arguments.done","sequence_number":{seq},"item_id":"{FC_ID}","output_index":0,"arguments":{args_json}}}"#
        ),
    );
    seq += 1;
    let item = format!(
        r#"{{"id":"{FC_ID}","type":"function_call","status":"completed","arguments":{args_json},"call_id":"call_Q6pW65MUgW9vF59BmItYGos3","name":"write"}}"#
    );
    b.event(
        "response.output_item.done",
        &format!(
            r#"{{"type":"response.output_item.done","sequence_number":{seq},"output_index":0,"item":{item}}}"#
        ),
    );
    seq += 1;
    b.event(
        "response.completed",
        &format!(
            r#"{{"type":"response.completed","sequence_number":{seq},"response":{}}}"#,
            response_object("completed", &format!("[{item}]"), 250_000)
        ),
    );
    finish(
        "openai-responses/tool-args",
        Api::OpenAiResponses,
        b,
        parts.len(),
        Expect::WriteCall(content),
    )
}
