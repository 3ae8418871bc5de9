//! End-to-end tests against a real model behind a real OpenAI-compatible server
//! (llama-cpp-python with Qwen2.5-Coder-0.5B-Instruct, started by
//! `scripts/real-model.sh start`).
//!
//! Gated on `MAKAI_REAL_MODEL_URL` (e.g. `http://127.0.0.1:PORT`, without `/v1`):
//! when it is unset, every test prints a note and passes without doing anything.
//! `MAKAI_REAL_MODEL_NAME` gives the model id; when unset it is read from
//! `/v1/models`. `scripts/ci-real-model.sh` sets both.
//!
//! Assertions cover only what this model and server guarantee: streamed text that
//! ends with `finish_reason`, and tool calls when `tool_choice` names the tool.

use std::io::Write;
use std::time::{Duration, Instant};

use futures::StreamExt;
use makai_ai::testing::RealModelServer;
use makai_ai::{
    AssistantMessage, AssistantMessageEvent, Context, Model, StopReason, StreamOptions, ToolChoice,
    ToolDefinition, UserMessage, stream,
};
use serde_json::{Value, json};

/// The server runs one generation at a time; tests take turns so that timings
/// (the abort test) measure this crate, not the queue in front of the model.
static SERVER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Generous bound for one short answer: ~40 tokens/s on 2 idle cores, far slower
/// when the machine is busy.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(180);

/// The model behind `MAKAI_REAL_MODEL_URL`, in its server's dialect
/// ([`RealModelServer`]), or `None` (with a note on stderr, which the test
/// harness does not capture) when the variable is unset.
async fn real_model(test: &str) -> Option<Model> {
    let server = RealModelServer::for_test(test)?;
    let name = match &server.name {
        Some(name) => name.clone(),
        None => model_name_from_server(&server.url).await,
    };
    Some(server.model(name))
}

/// The first model id listed by `URL/v1/models`; panics with a clear message when
/// the server does not answer (the variable is set, so the server must be there).
async fn model_name_from_server(url: &str) -> String {
    let endpoint = format!("{url}/v1/models");
    let body: Value = reqwest::get(&endpoint)
        .await
        .unwrap_or_else(|e| panic!("MAKAI_REAL_MODEL_URL is set but GET {endpoint} failed: {e}"))
        .json()
        .await
        .unwrap_or_else(|e| panic!("GET {endpoint} did not return JSON: {e}"));
    body["data"][0]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("GET {endpoint} lists no model: {body}"))
        .to_string()
}

fn context(prompt: &str) -> Context {
    Context {
        system_prompt: Some("You are a helpful assistant.".into()),
        messages: vec![UserMessage::text(prompt).into()],
        tools: vec![],
    }
}

fn options(max_tokens: u64) -> StreamOptions {
    StreamOptions {
        temperature: Some(0.0),
        max_tokens: Some(max_tokens),
        idle_timeout: Some(Duration::from_secs(120)),
        ..Default::default()
    }
}

/// Reads the whole stream (bounded by `ANSWER_TIMEOUT`) and returns its events and
/// the final message.
async fn run(
    model: &Model,
    context: &Context,
    options: StreamOptions,
) -> (Vec<AssistantMessageEvent>, AssistantMessage) {
    let collect = async {
        let mut s = stream(model, context, options);
        let mut events = Vec::new();
        while let Some(e) = s.next().await {
            events.push(e);
        }
        events
    };
    let events = tokio::time::timeout(ANSWER_TIMEOUT, collect)
        .await
        .unwrap_or_else(|_| panic!("the real model did not answer within {ANSWER_TIMEOUT:?}"));
    let message = match events.last() {
        Some(AssistantMessageEvent::Done { message, .. }) => message.clone(),
        Some(AssistantMessageEvent::Error { error, .. }) => error.clone(),
        other => panic!("the stream did not end with a terminal event: {other:?}"),
    };
    (events, *message)
}

fn read_tool() -> ToolDefinition {
    ToolDefinition {
        name: "read".into(),
        description: "Read a text file and return its contents.".into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path of the file to read"}
            },
            "required": ["path"]
        }),
    }
}

#[tokio::test]
async fn streams_a_text_answer() {
    let Some(model) = real_model("streams_a_text_answer").await else {
        return;
    };
    let _turn = SERVER.lock().await;
    let (events, message) = run(
        &model,
        &context("What is the capital of France? Answer in one short sentence."),
        options(200),
    )
    .await;

    assert_eq!(
        message.error_message, None,
        "the stream failed: {message:?}"
    );
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    assert!(
        !message.text().trim().is_empty(),
        "no text in the answer: {message:?}"
    );
    assert_eq!(message.tool_calls().count(), 0, "{message:?}");
    assert_eq!(message.api, "openai-completions");
    assert_eq!(message.model, model.id);

    // The event stream follows the contract: start, text block(s), one terminal event.
    assert_eq!(events.first(), Some(&AssistantMessageEvent::Start));
    assert_eq!(events.iter().filter(|e| e.is_terminal()).count(), 1);
    let streamed: String = events
        .iter()
        .filter_map(|e| match e {
            AssistantMessageEvent::TextDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(streamed, message.text(), "deltas must add up to the text");
    assert!(
        events
            .iter()
            .filter(|e| matches!(e, AssistantMessageEvent::TextDelta { .. }))
            .count()
            > 1,
        "a real stream delivers the answer in several deltas: {events:?}"
    );
}

#[tokio::test]
async fn abort_during_a_real_stream_ends_promptly() {
    let Some(model) = real_model("abort_during_a_real_stream_ends_promptly").await else {
        return;
    };
    let _turn = SERVER.lock().await;
    let opts = options(1000);
    let cancel = opts.cancel.clone();
    let ctx = context("Write a long story, at least 600 words, about a lighthouse keeper.");
    let mut s = stream(&model, &ctx, opts);

    // Wait (bounded) for the first text delta, then cancel.
    let first_delta = tokio::time::timeout(ANSWER_TIMEOUT, async {
        while let Some(e) = s.next().await {
            match e {
                AssistantMessageEvent::TextDelta { delta, .. } => return Some(delta),
                e if e.is_terminal() => panic!("the stream ended before any text: {e:?}"),
                _ => {}
            }
        }
        None
    })
    .await
    .unwrap_or_else(|_| panic!("no text delta within {ANSWER_TIMEOUT:?}"));
    assert!(first_delta.is_some(), "the stream ended without any event");

    let cancelled_at = Instant::now();
    cancel.cancel();
    let mut terminal = None;
    let drained = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(e) = s.next().await {
            if e.is_terminal() {
                terminal = Some(e);
            }
        }
    })
    .await;
    let elapsed = cancelled_at.elapsed();
    let _ = writeln!(
        std::io::stderr(),
        "real model: the stream ended {elapsed:?} after the abort"
    );
    assert!(
        drained.is_ok(),
        "the stream did not end within 5 s of the abort"
    );
    assert!(
        elapsed < Duration::from_secs(2),
        "the stream took {elapsed:?} to end after the abort"
    );
    match terminal {
        Some(AssistantMessageEvent::Error { reason, error }) => {
            assert_eq!(reason, StopReason::Aborted, "{error:?}");
            assert_eq!(error.stop_reason, StopReason::Aborted);
            assert!(
                !error.text().is_empty(),
                "the aborted message keeps the text received so far: {error:?}"
            );
        }
        other => panic!("expected an aborted error event, got {other:?}"),
    }

    // The server stops generating for the dropped request and answers the next one.
    let (_, after) = run(&model, &context("Say hello."), options(30)).await;
    assert_eq!(after.error_message, None, "{after:?}");
    assert!(!after.text().trim().is_empty(), "{after:?}");
}

#[tokio::test]
async fn a_named_tool_choice_yields_exactly_one_call_of_that_tool() {
    let Some(model) = real_model("a_named_tool_choice_yields_exactly_one_call_of_that_tool").await
    else {
        return;
    };
    let _turn = SERVER.lock().await;
    let mut ctx = context("What is the secret word in the file secret.txt?");
    ctx.tools = vec![read_tool()];
    let mut opts = options(200);
    opts.tool_choice = Some(ToolChoice::Tool("read".into()));
    let (events, message) = run(&model, &ctx, opts).await;

    assert_eq!(
        message.error_message, None,
        "the stream failed: {message:?}"
    );
    assert_eq!(message.stop_reason, StopReason::ToolUse, "{message:?}");
    let calls: Vec<_> = message.tool_calls().collect();
    assert_eq!(
        calls.len(),
        1,
        "exactly one tool call expected: {message:?}"
    );
    let call = calls[0];
    assert_eq!(call.name, "read", "{call:?}");
    assert!(!call.id.is_empty(), "{call:?}");
    assert_eq!(call.arguments_error, None, "{call:?}");
    let path = call.arguments.get("path").and_then(Value::as_str);
    assert!(
        path.is_some_and(|p| !p.is_empty()),
        "the call needs a non-empty string `path`: {call:?}"
    );
    let ends = events
        .iter()
        .filter(|e| matches!(e, AssistantMessageEvent::ToolcallEnd { .. }))
        .count();
    assert_eq!(ends, 1, "one toolcall_end event: {events:?}");
}
