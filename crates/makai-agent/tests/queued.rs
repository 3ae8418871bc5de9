//! Nothing queued is ever lost: a steering or follow-up message the run took
//! from the queue for a turn that never came (abort, a limit, a `before_turn`
//! stop) is back in the agent's queue when the run ends, and the next run
//! delivers it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use common::*;
use futures::StreamExt;
use makai_agent::testing::{ScriptedClient, ScriptedResponse};
use makai_agent::{
    Agent, AgentEvent, AgentHooks, EndReason, ToolSet, TurnDecision, TurnInfo, agent_loop,
};
use makai_agent::{CancellationToken, ToolContext, ToolOutput, TypedTool};
use serde_json::json;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct SlowArgs {
    text: String,
}

/// A tool that answers its text after `ms` milliseconds.
fn slow_tool(ms: u64) -> Arc<dyn makai_agent::Tool> {
    TypedTool::new(
        "slow",
        "Waits.",
        move |a: SlowArgs, _ctx: ToolContext| async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok(ToolOutput::text(a.text))
        },
    )
    .into_arc()
}

fn agent_with(
    client: Arc<ScriptedClient>,
    configure: impl FnOnce(&mut makai_agent::AgentLoopConfig),
) -> Agent {
    let mut cfg = config(client);
    configure(&mut cfg);
    Agent::new(cfg)
        .with_system_prompt("test")
        .with_tools(ToolSet::new(vec![slow_tool(150)]))
}

/// Starts a prompt whose answer calls the slow tool, steers while the tool
/// runs, and returns how the run ended.
async fn steer_during_the_tool(agent: &Agent, abort: bool) -> EndReason {
    let mut events = agent.subscribe_stream();
    let handle = agent.start_prompt("go").unwrap();
    while let Some(e) = events.next().await {
        if matches!(e, AgentEvent::ToolExecutionStart { .. }) {
            break;
        }
    }
    agent.steer("keep this message");
    if abort {
        agent.abort();
    }
    handle.await.unwrap().end_reason
}

fn queued_texts(agent: &Agent) -> Vec<String> {
    let (steering, follow_up) = agent.take_queued();
    let texts: Vec<String> = steering
        .iter()
        .chain(follow_up.iter())
        .map(|m| m.text())
        .collect();
    for m in steering {
        agent.steer(m);
    }
    for m in follow_up {
        agent.follow_up(m);
    }
    texts
}

#[tokio::test]
async fn a_steer_cut_off_by_max_turns_stays_queued_and_the_next_run_delivers_it() {
    let client = ScriptedClient::new([
        ScriptedResponse::tool_call("a", "slow", json!({"text": "1"})),
        ScriptedResponse::text("delivered"),
    ]);
    let agent = agent_with(client.clone(), |cfg| cfg.limits.max_turns = Some(1));
    let end = steer_during_the_tool(&agent, false).await;
    assert!(matches!(end, EndReason::MaxTurns { .. }), "{end:?}");
    assert_eq!(queued_texts(&agent), ["keep this message"]);
    // The next run takes it.
    agent.update_config(|cfg| cfg.limits.max_turns = None);
    let outcome = agent.continue_().await.unwrap();
    assert_eq!(outcome.messages[0].text(), "keep this message");
    assert!(!agent.has_queued_messages());
    assert_eq!(client.requests().len(), 2);
}

#[tokio::test]
async fn a_steer_taken_by_an_aborted_batch_stays_queued() {
    let client =
        ScriptedClient::new([
            ScriptedResponse::tool_call("a", "slow", json!({"text": "1"})).with_tool_call(
                "b",
                "slow",
                json!({"text": "2"}),
            ),
        ]);
    let agent = agent_with(client.clone(), |_| {});
    let end = steer_during_the_tool(&agent, true).await;
    assert_eq!(end, EndReason::Aborted);
    assert_eq!(queued_texts(&agent), ["keep this message"]);
    assert_eq!(client.requests().len(), 1);
}

#[tokio::test]
async fn a_steer_cut_off_by_the_wall_time_limit_stays_queued() {
    let client = ScriptedClient::new([ScriptedResponse::tool_call(
        "a",
        "slow",
        json!({"text": "1"}),
    )]);
    let agent = agent_with(client.clone(), |cfg| {
        cfg.limits.max_wall_time = Some(Duration::from_millis(100))
    });
    let end = steer_during_the_tool(&agent, false).await;
    assert!(matches!(end, EndReason::MaxWallTime { .. }), "{end:?}");
    assert_eq!(queued_texts(&agent), ["keep this message"]);
}

/// Stops the run at its second turn.
struct StopSecondTurn(AtomicBool);

#[async_trait]
impl AgentHooks for StopSecondTurn {
    async fn before_turn(&self, _turn: &TurnInfo<'_>) -> TurnDecision {
        if self.0.swap(true, Ordering::SeqCst) {
            TurnDecision::Stop("the hook said stop".into())
        } else {
            TurnDecision::Continue
        }
    }
}

#[tokio::test]
async fn a_follow_up_cut_off_by_a_before_turn_stop_stays_queued() {
    let client = ScriptedClient::new([ScriptedResponse::text("first")]);
    let agent = agent_with(client.clone(), |cfg| {
        cfg.hooks = Arc::new(StopSecondTurn(AtomicBool::new(false)))
    });
    agent.follow_up("after you finish");
    let outcome = agent.prompt("go").await.unwrap();
    assert!(
        matches!(outcome.end_reason, EndReason::StoppedByHook { .. }),
        "{:?}",
        outcome.end_reason
    );
    assert_eq!(queued_texts(&agent), ["after you finish"]);
    assert_eq!(client.requests().len(), 1);
}

#[tokio::test]
async fn the_low_level_loop_hands_undelivered_messages_back_in_its_outcome() {
    struct Steer;
    #[async_trait]
    impl AgentHooks for Steer {
        async fn get_steering_messages(&self) -> Vec<makai_agent::AgentMessage> {
            vec!["from the hook".into()]
        }
    }
    let client = ScriptedClient::new([ScriptedResponse::tool_call(
        "a",
        "slow",
        json!({"text": "1"}),
    )]);
    let mut cfg = config(client);
    cfg.hooks = Arc::new(Steer);
    cfg.limits.max_turns = Some(1);
    let outcome = agent_loop(
        vec!["go".into()],
        context(vec![slow_tool(10)]),
        cfg,
        CancellationToken::new(),
    )
    .join()
    .await
    .unwrap();
    assert!(matches!(outcome.end_reason, EndReason::MaxTurns { .. }));
    let texts: Vec<String> = outcome
        .undelivered_steering
        .iter()
        .map(|m| m.text())
        .collect();
    assert_eq!(texts, ["from the hook"]);
}
