//! Event order and tool execution through the low-level loop (scripted client).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::*;
use makai_agent::makai_ai::{AssistantMessageEvent, Message, StopReason, ToolChoice};
use makai_agent::testing::{ScriptedClient, ScriptedResponse};
use makai_agent::{
    AgentEvent, AgentMessage, CancellationToken, EndReason, ToolExecution, ToolOutput, TypedTool,
    agent_loop, agent_loop_continue,
};
use serde_json::json;

#[tokio::test]
async fn text_reply_has_the_exact_event_order() {
    let client = ScriptedClient::new([ScriptedResponse::text("Hello world")]);
    let mut cfg = config(client.clone());
    cfg.partial_snapshots = true;
    let run = agent_loop(
        vec![AgentMessage::user("hi")],
        context(vec![]),
        cfg,
        CancellationToken::new(),
    );
    let (events, outcome) = run.collect().await.unwrap();
    assert_contract(&events);
    let labels: Vec<String> = events.iter().map(label).collect();
    assert_eq!(
        labels,
        [
            "agent_start",
            "turn_start",
            "message_start:user",
            "message_end:user",
            "message_start:assistant",
            "message_update",
            "message_update",
            "message_update",
            "message_update",
            "message_end:assistant",
            "turn_end",
            "agent_end"
        ]
    );
    // The updates are text_start, two deltas, text_end, each with a growing snapshot.
    let AgentEvent::MessageUpdate { message, .. } = &events[6] else {
        panic!()
    };
    assert_eq!(message.as_ref().unwrap().text(), "Hello ");
    let deltas: Vec<&str> = events.iter().filter_map(|e| e.text_delta()).collect();
    assert_eq!(deltas, ["Hello ", "world"]);
    assert_eq!(outcome.end_reason, EndReason::Completed);
    assert_eq!(outcome.messages.len(), 2);
    assert_eq!(outcome.messages[1].text(), "Hello world");
    assert_eq!(outcome.context.messages.len(), 2);
    // agent_end carries the same new messages.
    let AgentEvent::AgentEnd { messages, .. } = events.last().unwrap() else {
        panic!()
    };
    assert_eq!(messages.len(), 2);
    // The system prompt and the prompt reached the model.
    let req = &client.requests()[0];
    assert_eq!(
        req.context.system_prompt.as_deref(),
        Some("You are a test.")
    );
    assert_eq!(req.context.messages.len(), 1);
}

#[tokio::test]
async fn one_tool_round_orders_tool_events_between_turns() {
    let client = ScriptedClient::new([
        ScriptedResponse::tool_call("c1", "echo", json!({"text": "pong"})),
        ScriptedResponse::text("done"),
    ]);
    let run = agent_loop(
        vec!["ping".into()],
        context(vec![echo_tool()]),
        config(client.clone()),
        CancellationToken::new(),
    );
    let (events, outcome) = run.collect().await.unwrap();
    assert_contract(&events);
    assert_eq!(
        outline(&events),
        [
            "agent_start",
            "turn_start",
            "message_start:user",
            "message_end:user",
            "message_start:assistant",
            "updates",
            "message_end:assistant",
            "tool_execution_start:c1",
            "tool_execution_end:c1",
            "message_start:toolResult",
            "message_end:toolResult",
            "turn_end",
            "turn_start",
            "message_start:assistant",
            "updates",
            "message_end:assistant",
            "turn_end",
            "agent_end"
        ]
    );
    assert_eq!(
        tool_result_texts(&events),
        [("c1".into(), "pong".into(), false)]
    );
    let turn_end = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::TurnEnd { tool_results, .. } => Some(tool_results.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(turn_end.len(), 1);
    assert_eq!(turn_end[0].text_content(), "pong");
    // The second request carries the call and its result.
    let second = &client.requests()[1].context.messages;
    assert!(matches!(&second[2], Message::ToolResult(r) if r.tool_call_id == "c1"));
    assert_eq!(outcome.turns, 2);
    assert_eq!(outcome.messages.len(), 4);
}

#[tokio::test]
async fn updates_carry_no_snapshot_unless_asked() {
    let client = ScriptedClient::new([ScriptedResponse::text("Hello world")]);
    let (events, _) = agent_loop(
        vec![AgentMessage::user("hi")],
        context(vec![]),
        config(client),
        CancellationToken::new(),
    )
    .collect()
    .await
    .unwrap();
    let updates: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::MessageUpdate { message, .. } => Some(message.is_none()),
            _ => None,
        })
        .collect();
    assert_eq!(updates, [true, true, true, true]);
}

#[tokio::test]
async fn toolcall_snapshots_show_partial_arguments() {
    let client = ScriptedClient::new([
        ScriptedResponse::tool_call("c1", "echo", json!({"text": "abcdefghijkl"})),
        ScriptedResponse::text("ok"),
    ]);
    let (events, _) = agent_loop(
        vec!["x".into()],
        context(vec![echo_tool()]),
        {
            let mut cfg = config(client);
            cfg.partial_snapshots = true;
            cfg
        },
        CancellationToken::new(),
    )
    .collect()
    .await
    .unwrap();
    assert_contract(&events);
    let first_delta = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::MessageUpdate {
                message,
                assistant_message_event: AssistantMessageEvent::ToolcallDelta { .. },
            } => message.clone(),
            _ => None,
        })
        .unwrap();
    let call = first_delta
        .as_assistant()
        .unwrap()
        .tool_calls()
        .next()
        .unwrap()
        .clone();
    let partial = call.arguments["text"].as_str().unwrap();
    assert!(
        partial.len() < 12 && "abcdefghijkl".starts_with(partial),
        "{partial}"
    );
}

#[tokio::test]
async fn parallel_runs_read_only_tools_together_and_mutating_alone() {
    let active = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let tools = vec![
        sleep_tool("look", true, active.clone(), peak.clone()),
        sleep_tool("write", false, active.clone(), peak.clone()),
    ];
    let client = ScriptedClient::new([
        ScriptedResponse::tool_call("a", "look", json!({"ms": 200}))
            .with_tool_call("b", "look", json!({"ms": 200}))
            .with_tool_call("c", "look", json!({"ms": 200})),
        ScriptedResponse::tool_call("d", "write", json!({"ms": 100})).with_tool_call(
            "e",
            "look",
            json!({"ms": 100}),
        ),
        ScriptedResponse::text("done"),
    ]);
    let mut cfg = config(client);
    cfg.tool_execution = ToolExecution::Parallel;
    let started = Instant::now();
    let run = agent_loop(
        vec!["go".into()],
        context(tools),
        cfg,
        CancellationToken::new(),
    );
    let (events, outcome) = run.collect().await.unwrap();
    assert_contract(&events);
    let elapsed = started.elapsed();
    // Three 200 ms reads together (~200 ms), then write and read one after the other (~200 ms).
    assert!(elapsed < Duration::from_millis(650), "{elapsed:?}");
    assert!(elapsed >= Duration::from_millis(400), "{elapsed:?}");
    assert_eq!(peak.load(Ordering::SeqCst), 3);
    assert_eq!(outcome.end_reason, EndReason::Completed);
    // Results are in call order even though ends interleave.
    let results: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::MessageEnd { message } => {
                message.as_tool_result().map(|r| r.tool_call_id.clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(results, ["a", "b", "c", "d", "e"]);
    // The mutating call ran alone: "e" started only after "d" ended.
    let pos = |l: &str| events.iter().position(|e| label(e) == l).unwrap();
    assert!(pos("tool_execution_start:e") > pos("tool_execution_end:d"));
    assert!(pos("tool_execution_start:b") < pos("tool_execution_end:a"));
}

#[tokio::test]
async fn batched_runs_groups_one_after_another() {
    let active = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let tools = vec![sleep_tool("look", true, active.clone(), peak.clone())];
    let mut first = ScriptedResponse::tool_call("a", "look", json!({"ms": 100}));
    for id in ["b", "c", "d", "e"] {
        first = first.with_tool_call(id, "look", json!({"ms": 100}));
    }
    let client = ScriptedClient::new([first, ScriptedResponse::text("done")]);
    let mut cfg = config(client);
    cfg.tool_execution = ToolExecution::Batched(2);
    let started = Instant::now();
    let (events, _) = agent_loop(
        vec!["go".into()],
        context(tools),
        cfg,
        CancellationToken::new(),
    )
    .collect()
    .await
    .unwrap();
    assert_contract(&events);
    let elapsed = started.elapsed();
    assert_eq!(peak.load(Ordering::SeqCst), 2);
    assert!(elapsed >= Duration::from_millis(290), "{elapsed:?}");
    let pos = |l: &str| events.iter().position(|e| label(e) == l).unwrap();
    assert!(pos("tool_execution_start:c") > pos("tool_execution_end:b"));
}

#[tokio::test]
async fn sequential_is_the_default_and_runs_one_at_a_time() {
    let active = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let tools = vec![sleep_tool("look", true, active.clone(), peak.clone())];
    let client = ScriptedClient::new([
        ScriptedResponse::tool_call("a", "look", json!({"ms": 50})).with_tool_call(
            "b",
            "look",
            json!({"ms": 50}),
        ),
        ScriptedResponse::text("done"),
    ]);
    let (events, _) = agent_loop(
        vec!["go".into()],
        context(tools),
        config(client),
        CancellationToken::new(),
    )
    .collect()
    .await
    .unwrap();
    assert_contract(&events);
    assert_eq!(peak.load(Ordering::SeqCst), 1);
    let o = outline(&events);
    let i = o
        .iter()
        .position(|l| l == "tool_execution_start:a")
        .unwrap();
    assert_eq!(
        &o[i..i + 8],
        [
            "tool_execution_start:a",
            "tool_execution_end:a",
            "message_start:toolResult",
            "message_end:toolResult",
            "tool_execution_start:b",
            "tool_execution_end:b",
            "message_start:toolResult",
            "message_end:toolResult"
        ]
    );
}

#[tokio::test]
async fn tool_updates_arrive_between_start_and_end() {
    let tool = TypedTool::new("count", "Counts.", |_a: EchoArgs, ctx| async move {
        for i in 1..=3 {
            ctx.update(ToolOutput::text(format!("{i}")));
        }
        Ok(ToolOutput::text("3").with_details(json!({"n": 3})))
    })
    .into_arc();
    let client = ScriptedClient::new([
        ScriptedResponse::tool_call("c", "count", json!({"text": ""})),
        ScriptedResponse::text("ok"),
    ]);
    let (events, outcome) = agent_loop(
        vec!["go".into()],
        context(vec![tool]),
        config(client),
        CancellationToken::new(),
    )
    .collect()
    .await
    .unwrap();
    assert_contract(&events);
    let o = outline(&events);
    let i = o
        .iter()
        .position(|l| l == "tool_execution_start:c")
        .unwrap();
    assert_eq!(
        &o[i..i + 5],
        [
            "tool_execution_start:c",
            "tool_execution_update",
            "tool_execution_update",
            "tool_execution_update",
            "tool_execution_end:c"
        ]
    );
    let update = events
        .iter()
        .find(|e| matches!(e, AgentEvent::ToolExecutionUpdate { .. }))
        .unwrap();
    let v = serde_json::to_value(update).unwrap();
    assert_eq!(v["partialResult"]["content"][0]["text"], "1");
    assert_eq!(v["toolName"], "count");
    let result = outcome.messages[2].as_tool_result().unwrap();
    assert_eq!(result.details, Some(json!({"n": 3})));
}

#[tokio::test]
async fn tool_choice_applies_to_the_first_call_only_by_default() {
    let client = ScriptedClient::new([
        ScriptedResponse::tool_call("c", "echo", json!({"text": "x"})),
        ScriptedResponse::text("ok"),
    ]);
    let mut cfg = config(client.clone());
    cfg.tool_choice = Some(ToolChoice::Tool("echo".into()));
    agent_loop(
        vec!["go".into()],
        context(vec![echo_tool()]),
        cfg,
        CancellationToken::new(),
    )
    .join()
    .await
    .unwrap();
    let reqs = client.requests();
    assert_eq!(reqs[0].tool_choice, Some(ToolChoice::Tool("echo".into())));
    assert_eq!(reqs[1].tool_choice, None);
}

#[tokio::test]
async fn continue_rejects_empty_and_assistant_terminated_contexts() {
    let client = ScriptedClient::new([ScriptedResponse::text("again")]);
    let err = agent_loop_continue(
        context(vec![]),
        config(client.clone()),
        CancellationToken::new(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("no messages"), "{err}");
    let ctx = context(vec![]).with_messages(vec![
        AgentMessage::user("q"),
        makai_agent::makai_ai::AssistantMessage::default().into(),
    ]);
    let err =
        agent_loop_continue(ctx, config(client.clone()), CancellationToken::new()).unwrap_err();
    assert!(err.to_string().contains("assistant message"), "{err}");
    assert_eq!(client.calls(), 0);
    // A context ending with a user message continues without new prompt events.
    let ctx = context(vec![]).with_messages(vec![AgentMessage::user("q")]);
    let (events, outcome) = agent_loop_continue(ctx, config(client), CancellationToken::new())
        .unwrap()
        .collect()
        .await
        .unwrap();
    assert_contract(&events);
    assert_eq!(
        &outline(&events)[..3],
        ["agent_start", "turn_start", "message_start:assistant"]
    );
    assert_eq!(outcome.messages.len(), 1);
}

#[tokio::test]
async fn orphaned_tool_calls_get_results_before_the_next_call() {
    let mut a = makai_agent::makai_ai::AssistantMessage {
        stop_reason: StopReason::ToolUse,
        ..Default::default()
    };
    a.content
        .push(makai_agent::makai_ai::AssistantContent::ToolCall(
            makai_agent::makai_ai::ToolCall::new("lost", "echo", Default::default()),
        ));
    let ctx = context(vec![echo_tool()]).with_messages(vec![AgentMessage::user("q"), a.into()]);
    let client = ScriptedClient::new([ScriptedResponse::text("ok")]);
    let (events, outcome) = agent_loop(
        vec!["next".into()],
        ctx,
        config(client.clone()),
        CancellationToken::new(),
    )
    .collect()
    .await
    .unwrap();
    assert_contract(&events);
    assert_eq!(
        &outline(&events)[..6],
        [
            "agent_start",
            "turn_start",
            "message_start:toolResult",
            "message_end:toolResult",
            "message_start:user",
            "message_end:user"
        ]
    );
    let sent = &client.requests()[0].context.messages;
    assert!(
        matches!(&sent[2], Message::ToolResult(r) if r.tool_call_id == "lost" && r.is_error && r.text_content() == makai_agent::INTERRUPTED_TOOL_TEXT)
    );
    assert!(matches!(&sent[3], Message::User(_)));
    assert_eq!(
        outcome.messages[0].as_tool_result().unwrap().tool_call_id,
        "lost"
    );
}
