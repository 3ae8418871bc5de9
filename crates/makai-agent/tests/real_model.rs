//! The agent loop against a real model behind a real OpenAI-compatible server
//! (llama-cpp-python with Qwen2.5-Coder-0.5B-Instruct, started by
//! `scripts/real-model.sh start`).
//!
//! Gated on `MAKAI_REAL_MODEL_URL` (e.g. `http://127.0.0.1:PORT`, without `/v1`):
//! when it is unset the test prints a note and passes without doing anything.
//! `MAKAI_REAL_MODEL_NAME` gives the model id; when unset it is read from
//! `/v1/models`. `scripts/ci-real-model.sh` sets both.
//!
//! This model calls a tool only when `tool_choice` names it, so the first turn is
//! forced and the turns are bounded; the test asserts only what that guarantees.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use makai_agent::makai_ai::testing::RealModelServer;
use makai_agent::makai_ai::{Message, Model, StopReason, ToolChoice};
use makai_agent::{
    AgentContext, AgentEvent, AgentLoopConfig, AgentMessage, CancellationToken, EndReason,
    InProcessClient, ToolError, ToolOutput, ToolSet, TypedTool, agent_loop,
};
use serde::Deserialize;
use serde_json::Value;

/// Bound for the whole run (two short model calls): generous, because generation
/// is far slower when the machine is busy.
const RUN_TIMEOUT: Duration = Duration::from_secs(300);

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

/// The first model id listed by `URL/v1/models`, fetched with a plain HTTP/1.1
/// request (this crate has no HTTP client of its own).
async fn model_name_from_server(url: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let authority = url
        .strip_prefix("http://")
        .unwrap_or_else(|| panic!("MAKAI_REAL_MODEL_URL must be http://HOST:PORT, got {url}"));
    let mut conn = tokio::net::TcpStream::connect(authority)
        .await
        .unwrap_or_else(|e| panic!("MAKAI_REAL_MODEL_URL is set but {authority} refuses: {e}"));
    let request =
        format!("GET /v1/models HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
    conn.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    conn.read_to_string(&mut response).await.unwrap();
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b)
        .unwrap_or_default();
    let json: Value = serde_json::from_str(body)
        .unwrap_or_else(|e| panic!("GET {url}/v1/models did not return JSON ({e}): {response}"));
    json["data"][0]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("GET {url}/v1/models lists no model: {json}"))
        .to_string()
}

#[derive(Deserialize, schemars::JsonSchema)]
struct ReadArgs {
    /// Path of the file to read, relative to the working directory.
    path: String,
}

/// A `read` tool confined to the run's working directory; counts its executions.
fn read_tool(runs: Arc<AtomicUsize>) -> Arc<dyn makai_agent::Tool> {
    TypedTool::new(
        "read",
        "Read a text file and return its contents.",
        move |args: ReadArgs, ctx| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                let name = std::path::Path::new(&args.path)
                    .file_name()
                    .ok_or_else(|| ToolError::failed(format!("'{}' is not a file", args.path)))?;
                let full = ctx.cwd().join(name);
                let text = tokio::fs::read_to_string(&full)
                    .await
                    .map_err(|e| ToolError::failed(format!("cannot read '{}': {e}", args.path)))?;
                Ok(ToolOutput::text(text))
            }
        },
    )
    .read_only(true)
    .into_arc()
}

#[tokio::test]
async fn forced_first_turn_read_then_a_text_answer() {
    let Some(model) = real_model("forced_first_turn_read_then_a_text_answer").await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("secret.txt"),
        "The secret word is: pineapple\n",
    )
    .unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let context = AgentContext::new("You are a helpful assistant. Use tools to read files.")
        .with_tools(ToolSet::new([read_tool(runs.clone())]));
    let config = AgentLoopConfig::builder(model, Arc::new(InProcessClient::new()))
        .tool_choice(ToolChoice::Tool("read".into()))
        .max_turns(3)
        .max_tokens(200)
        .temperature(0.0)
        .max_wall_time(RUN_TIMEOUT)
        .cwd(dir.path())
        .build();
    assert!(config.tool_choice_first_turn_only);

    let run = agent_loop(
        vec![AgentMessage::user(
            "What is the secret word in the file secret.txt?",
        )],
        context,
        config,
        CancellationToken::new(),
    );
    let (events, outcome) =
        tokio::time::timeout(RUN_TIMEOUT + Duration::from_secs(10), run.collect())
            .await
            .unwrap_or_else(|_| panic!("the agent run did not end within {RUN_TIMEOUT:?}"))
            .unwrap();

    // Exactly one `read` call with a string path, and the tool ran once.
    let starts: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecutionStart {
                tool_name, args, ..
            } => Some((tool_name.clone(), args.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        starts.len(),
        1,
        "exactly one tool call expected: {starts:?}"
    );
    assert_eq!(starts[0].0, "read");
    assert!(
        starts[0].1.get("path").is_some_and(Value::is_string),
        "the call needs a string `path`: {:?}",
        starts[0].1
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the tool ran once");
    let ends = events
        .iter()
        .filter(
            |e| matches!(e, AgentEvent::ToolExecutionEnd { tool_name, .. } if tool_name == "read"),
        )
        .count();
    assert_eq!(ends, 1);

    // Two turns: the forced call, then a text answer.
    assert_eq!(outcome.end_reason, EndReason::Completed, "{outcome:?}");
    assert_eq!(outcome.turns, 2, "{outcome:?}");
    let assistants: Vec<_> = outcome
        .messages
        .iter()
        .filter_map(|m| match m {
            AgentMessage::Llm(Message::Assistant(a)) => Some(a),
            _ => None,
        })
        .collect();
    assert_eq!(assistants.len(), 2, "{assistants:?}");
    assert_eq!(assistants[0].stop_reason, StopReason::ToolUse);
    let last = assistants[1];
    assert_eq!(last.stop_reason, StopReason::Stop, "{last:?}");
    assert_eq!(last.error_message, None, "{last:?}");
    assert_eq!(last.tool_calls().count(), 0, "{last:?}");
    assert!(!last.text().trim().is_empty(), "{last:?}");
    // The tool result went back to the model: an error result when the model
    // asked for another path, else the file's contents.
    let results: Vec<_> = outcome
        .messages
        .iter()
        .filter_map(|m| match m {
            AgentMessage::Llm(Message::ToolResult(r)) => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 1, "{:?}", outcome.messages);
    let result_text = format!("{:?}", results[0].content);
    assert!(
        results[0].is_error || result_text.contains("pineapple"),
        "{:?}",
        results[0]
    );
    // Not asserted (a 0.5B model may phrase it any way), but worth seeing.
    let _ = writeln!(std::io::stderr(), "real model answered: {:?}", last.text());
    assert!(
        matches!(events.last(), Some(AgentEvent::AgentEnd { .. })),
        "agent_end comes last"
    );
}
