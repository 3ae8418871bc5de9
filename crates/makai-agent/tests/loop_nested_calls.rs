//! Tool calls a running tool makes through its context: they go through
//! the run's hooks and the schema, and the calling tool's result records
//! them (pi's `nestedCalls`), bounded.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use crate::loop_tools::Approvals;

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use common::*;
use makai_agent::makai_ai::{Message, NestedCallStatus};
use makai_agent::testing::{ScriptedClient, ScriptedResponse};
use makai_agent::{
    AgentHooks, AgentMessage, CancellationToken, ToolCallDecision, ToolCallInfo, ToolContext,
    ToolError, ToolOutput, TypedTool, agent_loop,
};
use serde_json::json;

/// A tool that calls `echo` three times through its context: once blocked by
/// the hook, once with arguments that do not match the schema, once allowed.
fn caller_tool() -> Arc<dyn makai_agent::Tool> {
    TypedTool::new(
        "caller",
        "Calls echo.",
        |_a: EchoArgs, ctx: ToolContext| async move {
            let tools = ctx.snapshot().expect("a run's snapshot").tools.clone();
            let mut lines = Vec::new();
            for args in [
                json!({"text": "rm -rf"}),
                json!({"text": 5}),
                json!({"text": "hello"}),
            ] {
                let call = ctx.call_tool(&tools, "echo", args).await;
                lines.push(format!(
                    "{} {} {}",
                    call.id,
                    call.is_error,
                    call.output.text_content()
                ));
            }
            Ok(ToolOutput::text(lines.join("\n")))
        },
    )
    .into_arc()
}

/// The tool results of a run in which the model calls `caller` once, under
/// `hooks`, and the run's messages.
async fn caller_run(
    hooks: Arc<dyn AgentHooks>,
) -> (Vec<(String, String, bool)>, Vec<AgentMessage>) {
    let client = ScriptedClient::new([
        ScriptedResponse::tool_call("c1", "caller", json!({"text": ""})),
        ScriptedResponse::text("ok"),
    ]);
    let mut cfg = config(client);
    cfg.hooks = hooks;
    let (events, outcome) = agent_loop(
        vec!["go".into()],
        context(vec![echo_tool(), caller_tool()]),
        cfg,
        CancellationToken::new(),
    )
    .collect()
    .await
    .unwrap();
    assert_contract(&events);
    (tool_result_texts(&events), outcome.messages)
}

#[tokio::test]
async fn nested_tool_calls_go_through_the_hooks_and_the_schema() {
    let hooks = Arc::new(Approvals {
        after_calls: Mutex::new(0),
    });
    let (results, _) = caller_run(hooks.clone()).await;
    // after_tool_call saw the one nested call that ran and the caller's own:
    // the blocked and the invalid calls never ran.
    assert_eq!(results.len(), 1);
    assert_eq!(*hooks.after_calls.lock().unwrap(), 2);
    // That hook rewrites every result, so the nested calls' own texts are
    // read in a second run with a hook that only blocks.
    let (results, _) = caller_run(Arc::new(BlockOnly)).await;
    let lines: Vec<&str> = results[0].1.lines().collect();
    assert_eq!(lines[0], "c1/1 true The user denied this call.");
    assert!(
        lines[1].starts_with("c1/2 true Invalid arguments for tool 'echo'"),
        "{lines:?}"
    );
    assert_eq!(lines.last().copied(), Some("c1/3 false hello"));
}

struct BlockOnly;

#[async_trait]
impl AgentHooks for BlockOnly {
    async fn before_tool_call(&self, call: &ToolCallInfo<'_>) -> ToolCallDecision {
        if call.args["text"] == "rm -rf" {
            ToolCallDecision::Block("The user denied this call.".into())
        } else {
            ToolCallDecision::Allow
        }
    }
}

#[tokio::test]
async fn the_calling_tools_result_records_its_nested_calls_as_pi_does() {
    let (_, messages) = caller_run(Arc::new(BlockOnly)).await;
    let result = messages
        .iter()
        .find_map(|m| match m {
            AgentMessage::Llm(Message::ToolResult(r)) => Some(r.clone()),
            _ => None,
        })
        .unwrap();
    let record = result
        .nested_calls
        .clone()
        .expect("the caller's nested calls");
    assert!(record.complete);
    let seen: Vec<(&str, NestedCallStatus)> = record
        .calls
        .iter()
        .map(|c| (c.id.as_str(), c.status))
        .collect();
    assert_eq!(
        seen,
        [
            ("c1/1", NestedCallStatus::Error),
            ("c1/2", NestedCallStatus::Error),
            ("c1/3", NestedCallStatus::Ok),
        ]
    );
    assert_eq!(
        record.calls[0].error.as_deref(),
        Some("The user denied this call.")
    );
    assert_eq!(
        record.calls[2].arguments,
        json!({"text": "hello"}).as_object().cloned()
    );
    assert!(record.calls.iter().all(|c| c.duration_ms.is_some()));
    assert!(record.calls[2].error.is_none());
    // Results are never recorded, only that the call ended.
    let json = serde_json::to_value(&result.nested_calls).unwrap_or_default();
    assert!(!json.to_string().contains("c1/3 false"));
    // A tool that made no nested call has no record.
    let echo = messages
        .iter()
        .filter_map(|m| match m {
            AgentMessage::Llm(Message::ToolResult(r)) => Some(r),
            _ => None,
        })
        .filter(|r| r.tool_name != "caller")
        .count();
    assert_eq!(echo, 0, "the nested calls add no result messages");
}

/// A tool that calls `echo` once, then fails with a text.
fn failing_caller() -> Arc<dyn makai_agent::Tool> {
    TypedTool::new(
        "failing_caller",
        "Calls echo, then fails.",
        |_a: EchoArgs, ctx: ToolContext| async move {
            let tools = ctx.snapshot().expect("a run's snapshot").tools.clone();
            ctx.call_tool(&tools, "echo", json!({"text": "before"}))
                .await;
            Err::<ToolOutput, _>(ToolError::failed("it broke after one call"))
        },
    )
    .into_arc()
}

#[tokio::test]
async fn a_tool_that_fails_after_nested_calls_keeps_their_record_and_its_text() {
    let client = ScriptedClient::new([
        ScriptedResponse::tool_call("c1", "failing_caller", json!({"text": ""})),
        ScriptedResponse::text("ok"),
    ]);
    let (events, outcome) = agent_loop(
        vec!["go".into()],
        context(vec![echo_tool(), failing_caller()]),
        config(client),
        CancellationToken::new(),
    )
    .collect()
    .await
    .unwrap();
    assert_contract(&events);
    assert_eq!(
        tool_result_texts(&events),
        [("c1".into(), "it broke after one call".into(), true)]
    );
    let record = outcome
        .messages
        .iter()
        .find_map(|m| match m {
            AgentMessage::Llm(Message::ToolResult(r)) => r.nested_calls.clone(),
            _ => None,
        })
        .expect("the record survives the failure");
    assert_eq!(record.calls.len(), 1);
    assert_eq!(record.calls[0].status, NestedCallStatus::Ok);
}
