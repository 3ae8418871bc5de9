//! `Agent::subscribe_inline`: events delivered on the emitting thread, in
//! order, one call at a time, outside the agent's lock, so a callback may
//! call the agent; what such a call causes arrives after the callback returns.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use makai_agent::testing::{ScriptedClient, ScriptedResponse};
use makai_agent::{
    Agent, AgentEvent, EndReason, SKIPPED_TOOL_TEXT, ToolOutput, ToolSet, TypedTool,
};
use serde_json::json;

fn agent(client: Arc<ScriptedClient>, tools: Vec<Arc<dyn makai_agent::Tool>>) -> Agent {
    Agent::new(config(client))
        .with_system_prompt("sys")
        .with_tools(ToolSet::new(tools))
}

/// Records every event it is called with.
fn recorder(agent: &Agent) -> (Arc<Mutex<Vec<AgentEvent>>>, makai_agent::InlineSubscription) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let sub = agent.subscribe_inline(move |e| sink.lock().unwrap().push(e.clone()));
    (seen, sub)
}

#[tokio::test]
async fn an_inline_subscriber_sees_what_a_stream_subscriber_sees_in_order() {
    let client = ScriptedClient::new([
        ScriptedResponse::tool_call("a", "echo", json!({"text": "x"})).with_text("calling"),
        ScriptedResponse::text("done"),
    ]);
    let agent = agent(client, vec![echo_tool()]);
    let (inline, _sub) = recorder(&agent);
    let mut stream = agent.subscribe_stream();
    let outcome = agent.prompt("go").await.unwrap();
    assert_eq!(outcome.end_reason, EndReason::Completed);
    let streamed = events_until_end(&mut stream).await;
    // Delivered before the run returned: nothing waits in a queue.
    let inline = inline.lock().unwrap().clone();
    assert_contract(&inline);
    assert_eq!(outline(&inline), outline(&streamed));
    assert_eq!(inline.len(), streamed.len());
}

#[tokio::test]
async fn an_inline_subscriber_may_call_the_agent_and_sees_what_that_causes_after_it_returns() {
    let slow = TypedTool::new("slow", "Slow.", |a: EchoArgs, _ctx| async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        Ok(ToolOutput::text(a.text))
    })
    .into_arc();
    let client = ScriptedClient::new([
        ScriptedResponse::tool_call("a", "slow", json!({"text": "1"})).with_tool_call(
            "b",
            "slow",
            json!({"text": "2"}),
        ),
        ScriptedResponse::text("changed course"),
    ]);
    let agent = agent(client, vec![slow]);
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let (handle, record) = (agent.clone(), log.clone());
    let _sub = agent.subscribe_inline(move |e| {
        record.lock().unwrap().push(e.kind().to_string());
        if let AgentEvent::ToolExecutionStart { tool_call_id, .. } = e
            && tool_call_id == "a"
        {
            // The agent's lock is free: reading the state and steering work
            // from inside the callback.
            assert!(handle.state().pending_tool_calls.contains("a"));
            handle.steer("stop that");
            record.lock().unwrap().push("steered".into());
        }
    });
    let outcome = tokio::time::timeout(Duration::from_secs(10), agent.prompt("go"))
        .await
        .expect("no deadlock")
        .unwrap();
    assert_eq!(
        tool_results_of(&outcome.messages),
        [
            ("a".into(), "1".into()),
            ("b".into(), SKIPPED_TOOL_TEXT.into())
        ]
    );
    let log = log.lock().unwrap().clone();
    let start = log
        .iter()
        .position(|k| k == "tool_execution_start")
        .unwrap();
    assert_eq!(
        &log[start..start + 3],
        ["tool_execution_start", "steered", "queue_update"],
        "the steer's event came after the callback returned: {log:?}"
    );
    assert_eq!(log.last().map(String::as_str), Some("agent_end"));
}

#[tokio::test]
async fn a_panicking_inline_subscriber_is_contained_and_keeps_receiving() {
    let client = ScriptedClient::new([ScriptedResponse::text("ok")]);
    let agent = agent(client, vec![]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let _sub = agent.subscribe_inline(move |e| {
        sink.lock().unwrap().push(e.kind());
        if e.kind() == "agent_start" {
            panic!("subscriber bug");
        }
    });
    let outcome = agent.prompt("go").await.unwrap();
    assert_eq!(outcome.end_reason, EndReason::Completed);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.first(), Some(&"agent_start"));
    assert_eq!(seen.last(), Some(&"agent_end"));
}

#[tokio::test]
async fn dropping_the_inline_subscription_stops_delivery() {
    let client =
        ScriptedClient::new([ScriptedResponse::text("one"), ScriptedResponse::text("two")]);
    let agent = agent(client, vec![]);
    let (seen, sub) = recorder(&agent);
    agent.prompt("first").await.unwrap();
    let after_first = seen.lock().unwrap().len();
    assert!(after_first > 0);
    drop(sub);
    agent.prompt("second").await.unwrap();
    agent.steer("queued");
    assert_eq!(seen.lock().unwrap().len(), after_first);
}

/// Events emitted by another thread while the run emits its own (a user
/// queueing follow-ups as the answer streams) reach an inline subscriber in
/// the order the agent's state changed: the order a stream subscriber sees.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_from_two_threads_arrive_in_the_order_of_the_state() {
    let client = ScriptedClient::new([
        ScriptedResponse::tool_call("a", "echo", json!({"text": "x"}))
            .with_delay(Duration::from_millis(2)),
        ScriptedResponse::text("one two three four five six seven eight")
            .with_delay(Duration::from_millis(2)),
    ]);
    let agent = agent(client, vec![echo_tool()]);
    let (inline, _sub) = recorder(&agent);
    let mut stream = agent.subscribe_stream();
    let run = agent.start_prompt("go").unwrap();
    let queuer = {
        let agent = agent.clone();
        std::thread::spawn(move || {
            for i in 0..20 {
                agent.follow_up(format!("later {i}"));
                std::thread::sleep(Duration::from_micros(300));
            }
        })
    };
    queuer.join().unwrap();
    let _ = run.await.unwrap();
    let streamed = events_until_end(&mut stream).await;
    let inline: Vec<AgentEvent> = inline.lock().unwrap().clone();
    let cut = inline.iter().position(|e| e.kind() == "agent_end").unwrap();
    assert_eq!(outline(&inline[..=cut]), outline(&streamed));
    let queued = |events: &[AgentEvent]| {
        events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::QueueUpdate { follow_up, .. } => Some(follow_up.len()),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(queued(&inline[..=cut]), queued(&streamed));
}
