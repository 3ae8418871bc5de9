//! Steering, follow-ups, abort and limits through the low-level loop.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use common::*;
use makai_agent::makai_ai::{Message, StopReason};
use makai_agent::testing::{ScriptedClient, ScriptedResponse};
use makai_agent::{
    AgentHooks, AgentMessage, CancellationToken, EndReason, SKIPPED_TOOL_TEXT, SteeringBehavior,
    ToolError, ToolExecution, ToolOutput, TypedTool, agent_loop,
};
use serde_json::json;

#[derive(Default)]
struct Queues {
    steering: Mutex<VecDeque<AgentMessage>>,
    follow_up: Mutex<VecDeque<AgentMessage>>,
}

#[async_trait]
impl AgentHooks for Queues {
    async fn get_steering_messages(&self) -> Vec<AgentMessage> {
        self.steering
            .lock()
            .unwrap()
            .pop_front()
            .into_iter()
            .collect()
    }
    async fn get_follow_up_messages(&self) -> Vec<AgentMessage> {
        self.follow_up
            .lock()
            .unwrap()
            .pop_front()
            .into_iter()
            .collect()
    }
}

/// A tool that queues a steering message while it runs.
fn steering_tool(queues: Arc<Queues>) -> Arc<dyn makai_agent::Tool> {
    TypedTool::new("work", "Works.", move |a: EchoArgs, _ctx| {
        let queues = queues.clone();
        async move {
            queues
                .steering
                .lock()
                .unwrap()
                .push_back(AgentMessage::user("stop, do X instead"));
            Ok(ToolOutput::text(a.text))
        }
    })
    .into_arc()
}

fn three_calls() -> ScriptedResponse {
    ScriptedResponse::tool_call("a", "work", json!({"text": "1"}))
        .with_tool_call("b", "work", json!({"text": "2"}))
        .with_tool_call("c", "work", json!({"text": "3"}))
}

#[tokio::test]
async fn steering_mid_tools_skips_the_remaining_calls() {
    let queues = Arc::new(Queues::default());
    let client = ScriptedClient::new([three_calls(), ScriptedResponse::text("ok, X")]);
    let mut cfg = config(client.clone());
    cfg.hooks = queues.clone();
    let (events, outcome) = agent_loop(
        vec!["go".into()],
        context(vec![steering_tool(queues.clone())]),
        cfg,
        CancellationToken::new(),
    )
    .collect()
    .await
    .unwrap();
    assert_contract(&events);
    assert_eq!(
        tool_result_texts(&events),
        [
            ("a".into(), "1".into(), false),
            ("b".into(), SKIPPED_TOOL_TEXT.into(), true),
            ("c".into(), SKIPPED_TOOL_TEXT.into(), true),
        ]
    );
    assert_eq!(SKIPPED_TOOL_TEXT, "Skipped due to queued user message.");
    let o = outline(&events);
    let i = o
        .iter()
        .position(|l| l == "tool_execution_start:b")
        .unwrap();
    assert_eq!(
        &o[i..],
        [
            "tool_execution_start:b",
            "tool_execution_end:b",
            "message_start:toolResult",
            "message_end:toolResult",
            "tool_execution_start:c",
            "tool_execution_end:c",
            "message_start:toolResult",
            "message_end:toolResult",
            "turn_end",
            "turn_start",
            "message_start:user",
            "message_end:user",
            "message_start:assistant",
            "updates",
            "message_end:assistant",
            "turn_end",
            "agent_end"
        ]
    );
    // The next model call sees every result, then the steering message.
    let sent = &client.requests()[1].context.messages;
    let roles: Vec<&str> = sent.iter().map(|m| m.role()).collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "toolResult",
            "toolResult",
            "toolResult",
            "user"
        ]
    );
    let Message::User(u) = &sent[5] else { panic!() };
    assert_eq!(AgentMessage::from(u.clone()).text(), "stop, do X instead");
    assert_eq!(outcome.end_reason, EndReason::Completed);
}

#[tokio::test]
async fn after_tool_batch_mode_skips_nothing() {
    let queues = Arc::new(Queues::default());
    let client = ScriptedClient::from_fn(|_, i| {
        if i == 0 {
            three_calls()
        } else {
            ScriptedResponse::text("ok")
        }
    });
    let mut cfg = config(client.clone());
    cfg.hooks = queues.clone();
    cfg.steering = SteeringBehavior::AfterToolBatch;
    let (events, _) = agent_loop(
        vec!["go".into()],
        context(vec![steering_tool(queues.clone())]),
        cfg,
        CancellationToken::new(),
    )
    .collect()
    .await
    .unwrap();
    assert_contract(&events);
    let results = tool_result_texts(&events);
    assert!(results.iter().all(|(_, _, err)| !err), "{results:?}");
    // Three steering messages were queued (one per call); one-at-a-time delivers
    // one per turn, so three more turns follow the tool turn.
    let reqs = client.requests();
    assert_eq!(reqs.len(), 4);
    let roles: Vec<&str> = reqs[1].context.messages.iter().map(|m| m.role()).collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "toolResult",
            "toolResult",
            "toolResult",
            "user"
        ]
    );
    assert_eq!(reqs[3].context.messages.len(), 10);
    assert!(queues.steering.lock().unwrap().is_empty());
}

#[tokio::test]
async fn parallel_steering_lets_running_calls_finish_and_skips_unstarted_ones() {
    let queues = Arc::new(Queues::default());
    let q = queues.clone();
    let slow = TypedTool::new("look", "Reads.", move |a: SleepArgs, _ctx| {
        let q = q.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(a.ms)).await;
            if a.ms == 10 {
                q.steering
                    .lock()
                    .unwrap()
                    .push_back(AgentMessage::user("steer"));
            }
            Ok(ToolOutput::text("read"))
        }
    })
    .read_only(true)
    .into_arc();
    let write = sleep_tool("write", false, Default::default(), Default::default());
    let client = ScriptedClient::new([
        ScriptedResponse::tool_call("a", "look", json!({"ms": 10}))
            .with_tool_call("b", "look", json!({"ms": 150}))
            .with_tool_call("c", "write", json!({"ms": 10})),
        ScriptedResponse::text("ok"),
    ]);
    let mut cfg = config(client);
    cfg.hooks = queues;
    cfg.tool_execution = ToolExecution::Parallel;
    let (events, _) = agent_loop(
        vec!["go".into()],
        context(vec![slow, write]),
        cfg,
        CancellationToken::new(),
    )
    .collect()
    .await
    .unwrap();
    assert_contract(&events);
    // "c" (not started: it waits for exclusive access) is skipped while "b" still runs.
    assert_eq!(
        tool_result_texts(&events),
        [
            ("a".into(), "read".into(), false),
            ("c".into(), SKIPPED_TOOL_TEXT.into(), true),
            ("b".into(), "read".into(), false),
        ]
    );
    // Results still join the transcript in call order.
    let order: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            makai_agent::AgentEvent::MessageEnd { message } => {
                message.as_tool_result().map(|r| r.tool_call_id.clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(order, ["a", "b", "c"]);
}

#[tokio::test]
async fn follow_ups_run_after_the_agent_would_stop() {
    let queues = Arc::new(Queues::default());
    queues
        .follow_up
        .lock()
        .unwrap()
        .push_back(AgentMessage::user("and then?"));
    let client = ScriptedClient::new([
        ScriptedResponse::text("first"),
        ScriptedResponse::text("second"),
    ]);
    let mut cfg = config(client.clone());
    cfg.hooks = queues;
    let (events, outcome) = agent_loop(
        vec!["go".into()],
        context(vec![]),
        cfg,
        CancellationToken::new(),
    )
    .collect()
    .await
    .unwrap();
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
            "turn_end",
            "turn_start",
            "message_start:user",
            "message_end:user",
            "message_start:assistant",
            "updates",
            "message_end:assistant",
            "turn_end",
            "agent_end"
        ]
    );
    assert_eq!(outcome.messages.len(), 4);
    assert_eq!(outcome.messages[3].text(), "second");
    assert_eq!(client.calls(), 2);
}

#[tokio::test]
async fn abort_during_stream_ends_with_an_aborted_message() {
    let client = ScriptedClient::new([ScriptedResponse::hang()]);
    let cancel = CancellationToken::new();
    let run = agent_loop(
        vec!["go".into()],
        context(vec![]),
        config(client),
        cancel.clone(),
    );
    let c = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        c.cancel();
    });
    let started = Instant::now();
    let (events, outcome) = run.collect().await.unwrap();
    assert_contract(&events);
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(outcome.end_reason, EndReason::Aborted);
    let last = outcome.messages.last().unwrap().as_assistant().unwrap();
    assert_eq!(last.stop_reason, StopReason::Aborted);
    assert_eq!(last.text(), "working ");
    let o = outline(&events);
    assert_eq!(
        &o[o.len() - 3..],
        ["message_end:assistant", "turn_end", "agent_end"]
    );
}

#[tokio::test]
async fn abort_during_a_tool_reaches_it_and_every_call_gets_a_result() {
    let (saw_tx, saw_rx) = tokio::sync::oneshot::channel::<()>();
    let saw_tx = Arc::new(Mutex::new(Some(saw_tx)));
    let waiter = TypedTool::new("wait", "Waits for cancel.", move |_a: EchoArgs, ctx| {
        let saw_tx = saw_tx.clone();
        async move {
            ctx.cancel_token().cancelled().await;
            if let Some(tx) = saw_tx.lock().unwrap().take() {
                let _ = tx.send(());
            }
            Err::<ToolOutput, _>(ToolError::Cancelled)
        }
    })
    .into_arc();
    let client = ScriptedClient::new([
        ScriptedResponse::tool_call("a", "wait", json!({"text": ""})).with_tool_call(
            "b",
            "wait",
            json!({"text": ""}),
        ),
        ScriptedResponse::text("never"),
    ]);
    let cancel = CancellationToken::new();
    let run = agent_loop(
        vec!["go".into()],
        context(vec![waiter]),
        config(client.clone()),
        cancel.clone(),
    );
    let c = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        c.cancel();
    });
    let (events, outcome) = run.collect().await.unwrap();
    assert_contract(&events);
    saw_rx.await.expect("the tool saw the cancellation");
    assert_eq!(outcome.end_reason, EndReason::Aborted);
    let mut results = tool_result_texts(&events);
    // "b" was skipped (and ended) while "a" was still stopping.
    assert_eq!(results[0].0, "b");
    results.sort();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].1, "the tool call was cancelled");
    assert_eq!(results[1].1, "Not executed: the run was aborted.");
    assert!(results.iter().all(|r| r.2));
    assert_eq!(client.calls(), 1);
    let o = outline(&events);
    assert_eq!(&o[o.len() - 2..], ["turn_end", "agent_end"]);
}

#[tokio::test]
async fn a_tool_ignoring_cancellation_is_abandoned_after_the_grace_period() {
    let stubborn = TypedTool::new("stuck", "Never stops.", |_a: EchoArgs, _ctx| async move {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        Ok(ToolOutput::text("late"))
    })
    .into_arc();
    let client = ScriptedClient::new([ScriptedResponse::tool_call(
        "a",
        "stuck",
        json!({"text": ""}),
    )]);
    let mut cfg = config(client);
    cfg.tool_abort_grace = Duration::from_millis(100);
    let cancel = CancellationToken::new();
    let run = agent_loop(
        vec!["go".into()],
        context(vec![stubborn]),
        cfg,
        cancel.clone(),
    );
    tokio::time::sleep(Duration::from_millis(50)).await;
    cancel.cancel();
    let started = Instant::now();
    let (events, outcome) = run.collect().await.unwrap();
    assert_contract(&events);
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(outcome.end_reason, EndReason::Aborted);
    let results = tool_result_texts(&events);
    assert!(results[0].1.contains("abandoned"), "{results:?}");
}
