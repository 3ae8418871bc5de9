//! Google Gemini: `GenerateContentResponse` chunks with `usageMetadata` on each.

use makai_ai::Api;

use super::{
    ARG_DELTAS, Body, Expect, TEXT_DELTAS, Workload, file_content, finish, json_str, pieces, words,
    write_args,
};

fn gemini_usage(candidates: usize) -> String {
    format!(
        r#""usageMetadata":{{"promptTokenCount":2095,"candidatesTokenCount":{candidates},"totalTokenCount":{},"promptTokensDetails":[{{"modality":"TEXT","tokenCount":2095}}]}},"modelVersion":"gemini-2.5-flash","responseId":"bH6LaZW8Fp_3nsEPqtaSwQ4""#,
        2095 + candidates
    )
}

pub(super) fn gemini_text() -> Workload {
    let words = words();
    let mut b = Body::default();
    for (i, w) in words.iter().enumerate() {
        let finish = if i + 1 == words.len() {
            r#","finishReason":"STOP""#
        } else {
            ""
        };
        b.data(&format!(
            r#"{{"candidates":[{{"content":{{"parts":[{{"text":"{w}"}}],"role":"model"}}{finish},"index":0}}],{}}}"#,
            gemini_usage(i + 1)
        ));
    }
    finish(
        "google-generative-ai/text",
        Api::GoogleGenerativeAi,
        b,
        TEXT_DELTAS,
        Expect::Text(words.concat()),
    )
}

/// Vertex `streamFunctionCallArguments`: the call opens with its name, the
/// `content` string arrives in [`ARG_DELTAS`] `partialArgs` pieces.
pub(super) fn gemini_tool_partial() -> Workload {
    let content = file_content();
    let usage = gemini_usage(1);
    let mut b = Body::default();
    let chunk = |fc: &str| {
        format!(
            r#"{{"candidates":[{{"content":{{"role":"model","parts":[{{"functionCall":{fc}}}]}}}}],{usage}}}"#
        )
    };
    b.data(&chunk(r#"{"name":"write","willContinue":true}"#));
    b.data(&chunk(
        r#"{"partialArgs":[{"jsonPath":"$.path","stringValue":"src/generated/big_file.rs"}],"willContinue":true}"#,
    ));
    let parts = pieces(&content, ARG_DELTAS);
    for p in &parts {
        b.data(&chunk(&format!(
            r#"{{"partialArgs":[{{"jsonPath":"$.content","stringValue":{},"willContinue":true}}],"willContinue":true}}"#,
            json_str(p)
        )));
    }
    b.data(&format!(
        r#"{{"candidates":[{{"content":{{"role":"model","parts":[{{"functionCall":{{}}}}]}},"finishReason":"STOP"}}],{}}}"#,
        gemini_usage(250_000)
    ));
    finish(
        "google-generative-ai/tool-args-partial",
        Api::GoogleGenerativeAi,
        b,
        parts.len(),
        Expect::WriteCall(content),
    )
}

/// The public Gemini API: the whole call in one chunk.
pub(super) fn gemini_tool_whole() -> Workload {
    let content = file_content();
    let mut b = Body::default();
    b.data(&format!(
        r#"{{"candidates":[{{"content":{{"role":"model","parts":[{{"functionCall":{{"name":"write","args":{}}}}}]}},"finishReason":"STOP","index":0}}],{}}}"#,
        write_args(&content),
        gemini_usage(250_000)
    ));
    finish(
        "google-generative-ai/tool-args-whole",
        Api::GoogleGenerativeAi,
        b,
        1,
        Expect::WriteCall(content),
    )
}
