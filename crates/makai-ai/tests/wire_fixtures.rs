//! Every recorded provider transcript in `shared/fixtures/wire/` is replayed byte
//! for byte over real HTTP and must parse to the result `expected.json` lists.
//! The files are read at run time: a transcript added later is tested without
//! code changes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use common::contract;

use std::path::{Path, PathBuf};

use makai_ai::{
    Api, AssistantMessage, Context, Model, RetryPolicy, StreamOptions, UserMessage, stream,
};
use makai_mockllm::{MockServer, Scenario, ScriptedResponse};
use serde_json::Value;

fn fixtures_dir() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.join("../../../shared/fixtures/wire")
}

fn model_for(api: Api, server: &MockServer) -> Model {
    let base = match api {
        Api::GoogleGenerativeAi => format!("{}/v1beta", server.url()),
        Api::GoogleVertex | Api::AnthropicVertex => {
            format!("{}/v1/projects/p/locations/us-east5", server.url())
        }
        Api::BedrockConverseStream | Api::AzureOpenAiResponses => server.url(),
        Api::OpenAiCodexResponses => format!("{}/backend-api", server.url()),
        _ => server.base_url_v1(),
    };
    Model::custom(api, "fixture", "fixture-model", base)
}

/// The cloud APIs that speak the same stream as `api`: Vertex AI's Gemini and
/// Claude, Azure's and the Codex endpoint's Responses.
fn cloud_twins(api: Api) -> &'static [Api] {
    match api {
        Api::GoogleGenerativeAi => &[Api::GoogleVertex],
        Api::AnthropicMessages => &[Api::AnthropicVertex],
        Api::OpenAiResponses => &[Api::AzureOpenAiResponses, Api::OpenAiCodexResponses],
        _ => &[],
    }
}

async fn replay(api: Api, path: &Path, chunk: Option<usize>) -> AssistantMessage {
    let mut response = ScriptedResponse::new().replay_file(path);
    if let Some(n) = chunk {
        response = response.chunk_size(n);
    }
    let server = MockServer::start(Scenario::new().push(response))
        .await
        .unwrap();
    let model = model_for(api, &server);
    let context = Context {
        messages: vec![UserMessage::text("hi").into()],
        ..Default::default()
    };
    let options = StreamOptions {
        retry: RetryPolicy::none(),
        ..Default::default()
    };
    contract::finish(stream(&model, &context, options)).await
}

fn check(name: &str, expected: &Value, got: &AssistantMessage) -> Vec<String> {
    let mut problems = Vec::new();
    fn eq(problems: &mut Vec<String>, name: &str, what: &str, want: &Value, have: &Value) {
        if want != have {
            problems.push(format!("{name}: {what}: expected {want}, got {have}"));
        }
    }
    eq(
        &mut problems,
        name,
        "api",
        &expected["api"],
        &Value::from(got.api.clone()),
    );
    eq(
        &mut problems,
        name,
        "stopReason",
        &expected["stopReason"],
        &Value::from(got.stop_reason.as_str()),
    );
    eq(
        &mut problems,
        name,
        "text",
        &expected["text"],
        &Value::from(got.text()),
    );
    eq(
        &mut problems,
        name,
        "thinking",
        &expected["thinking"],
        &Value::from(got.thinking()),
    );
    if !expected["errorMessage"].is_null() {
        let have = got.error_message.clone().unwrap_or_default();
        let want = expected["errorMessage"].as_str().unwrap_or_default();
        if !have.contains(want) {
            problems.push(format!(
                "{name}: errorMessage: expected to contain {want:?}, got {have:?}"
            ));
        }
    }
    let calls: Vec<_> = got.tool_calls().collect();
    let want_calls = expected["toolCalls"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if calls.len() != want_calls.len() {
        problems.push(format!(
            "{name}: {} tool calls, expected {}",
            calls.len(),
            want_calls.len()
        ));
    }
    for (i, (want, have)) in want_calls.iter().zip(calls.iter()).enumerate() {
        if !want["id"].is_null() {
            eq(
                &mut problems,
                name,
                &format!("toolCalls[{i}].id"),
                &want["id"],
                // Responses ids are `call_id|item_id`; the result answers the call_id.
                &Value::from(have.id.split('|').next().unwrap_or_default()),
            );
        } else if have.id.is_empty() {
            problems.push(format!(
                "{name}: toolCalls[{i}].id: a synthesized id was expected"
            ));
        }
        eq(
            &mut problems,
            name,
            &format!("toolCalls[{i}].name"),
            &want["name"],
            &Value::from(have.name.clone()),
        );
        let complete = have.arguments_complete();
        eq(
            &mut problems,
            name,
            &format!("toolCalls[{i}].argumentsComplete"),
            &want["argumentsComplete"],
            &Value::from(complete),
        );
        let args = if complete {
            Value::Object(have.arguments.clone())
        } else {
            Value::from(have.raw_arguments.clone().unwrap_or_default())
        };
        eq(
            &mut problems,
            name,
            &format!("toolCalls[{i}].arguments"),
            &want["arguments"],
            &args,
        );
    }
    if let Some(usage) = expected["usage"].as_object() {
        let have = [
            ("input", got.usage.input),
            ("output", got.usage.output),
            ("cacheRead", got.usage.cache_read),
            ("cacheWrite", got.usage.cache_write),
        ];
        for (key, value) in have {
            if let Some(want) = usage.get(key).filter(|v| !v.is_null()) {
                eq(
                    &mut problems,
                    name,
                    &format!("usage.{key}"),
                    want,
                    &Value::from(value),
                );
            }
        }
    }
    problems
}

/// The transcripts of the project's own fixture folder (`tests/fixtures/wire`,
/// the same convention; sources in `tests/fixtures/SOURCES.md`).
fn own_fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/wire")
}

#[tokio::test]
async fn every_recorded_transcript_parses_to_its_expected_result() {
    check_folder(&fixtures_dir(), 35).await;
}

#[tokio::test]
async fn every_transcript_of_the_projects_own_folder_parses_to_its_expected_result() {
    check_folder(&own_fixtures_dir(), 6).await;
}

async fn check_folder(dir: &Path, at_least: usize) {
    let dir = dir.to_path_buf();
    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("expected.json")).expect("expected.json"),
    )
    .unwrap();
    let entries = expected.as_object().expect("expected.json is an object");
    assert!(
        entries.len() >= at_least,
        "expected at least {at_least} transcripts, found {}",
        entries.len()
    );
    let mut problems = Vec::new();
    for (name, want) in entries {
        let api: Api = want["api"].as_str().unwrap().parse().unwrap();
        let path = dir.join(name);
        assert!(
            path.exists(),
            "{name} is listed in expected.json but missing"
        );
        for chunk in [None, Some(7), Some(1)] {
            let got = replay(api, &path, chunk).await;
            problems.extend(check(&format!("{name} (chunk {chunk:?})"), want, &got));
        }
        // The same bytes through the cloud routes of the same stream format.
        for twin in cloud_twins(api) {
            let got = replay(*twin, &path, Some(7)).await;
            let mut want = want.clone();
            want["api"] = Value::from(twin.as_str());
            problems.extend(check(&format!("{name} (as {twin})"), &want, &got));
        }
    }
    // Every transcript on disk must be listed, so none escapes the check.
    for provider in std::fs::read_dir(&dir).unwrap() {
        let provider = provider.unwrap().path();
        if !provider.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&provider).unwrap() {
            let file = file.unwrap().path();
            if file
                .extension()
                .is_some_and(|e| e == "sse" || e == "eventstream")
            {
                let rel = format!(
                    "{}/{}",
                    provider.file_name().unwrap().to_string_lossy(),
                    file.file_name().unwrap().to_string_lossy()
                );
                if !entries.contains_key(&rel) {
                    problems.push(format!("{rel}: no entry in expected.json"));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// pi 1.5's `responseModel` and `rawStopReason`: the concrete model and the
/// provider's own stop reason, as each recorded stream says them (every
/// chunk size, every API's decoder).
#[tokio::test]
async fn the_answering_model_and_the_provider_s_stop_reason_are_kept() {
    let shared = fixtures_dir();
    let own = own_fixtures_dir();
    let cases: [(Api, PathBuf, Option<&str>, &str); 7] = [
        (
            Api::AnthropicMessages,
            shared.join("anthropic-messages/text-sonnet45-usage.sse"),
            Some("claude-sonnet-4-5-20250929"),
            "end_turn",
        ),
        (
            Api::AnthropicMessages,
            shared.join("anthropic-messages/tool-use-max-tokens-truncated.sse"),
            Some("claude-3-7-sonnet-20250219"),
            "max_tokens",
        ),
        (
            Api::OpenAiCompletions,
            shared.join("openai-completions/finish-length.sse"),
            Some("gpt-4o-2024-08-06"),
            "length",
        ),
        (
            Api::OpenAiCompletions,
            shared.join("openai-compatible/anthropic-compat-tool-call-index1.sse"),
            Some("claude-haiku-4-5-20251001"),
            "tool_calls",
        ),
        (
            Api::OpenAiResponses,
            shared.join("openai-responses/text-message.sse"),
            Some("gpt-5.1-codex-max"),
            "completed",
        ),
        (
            Api::GoogleGenerativeAi,
            shared.join("google-gemini/function-call-gemini3.sse"),
            Some("gemini-3-pro-preview"),
            "STOP",
        ),
        // Bedrock's stream names no model.
        (
            Api::BedrockConverseStream,
            own.join("bedrock-converse-stream/text-strawberry.eventstream"),
            None,
            "end_turn",
        ),
    ];
    for (api, path, model, reason) in cases {
        for chunk in [None, Some(7), Some(1)] {
            let got = replay(api, &path, chunk).await;
            let what = format!("{} (chunk {chunk:?})", path.display());
            assert_eq!(got.response_model.as_deref(), model, "{what}");
            assert_eq!(got.raw_stop_reason.as_deref(), Some(reason), "{what}");
            // The requested model stays the message's `model`.
            assert_eq!(got.model, "fixture-model", "{what}");
            // pi's field names, in the events and the session files.
            let json = serde_json::to_value(&got).unwrap();
            assert_eq!(json["rawStopReason"], reason, "{what}");
            match model {
                Some(m) => assert_eq!(json["responseModel"], m, "{what}"),
                None => assert!(json.get("responseModel").is_none(), "{what}"),
            }
        }
    }
}
