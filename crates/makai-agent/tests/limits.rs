//! Run limits, loop detection, the before_turn stop and the turn delay.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use common::*;
use makai_agent::testing::{ScriptedClient, ScriptedResponse};
use makai_agent::{
    AgentHooks, CancellationToken, EndReason, LoopAction, LoopDetection, TurnDecision, TurnInfo,
    agent_loop,
};
use serde_json::json;

fn looping_client() -> Arc<ScriptedClient> {
    ScriptedClient::from_fn(|_, i| {
        ScriptedResponse::tool_call(format!("c{i}"), "echo", json!({"text": format!("{i}")}))
            .with_usage(100, 10)
    })
}

#[tokio::test]
async fn max_turns_ends_the_run_with_a_clear_reason() {
    let client = looping_client();
    let mut cfg = config(client.clone());
    cfg.limits.max_turns = Some(3);
    let (events, outcome) = agent_loop(
        vec!["go".into()],
        context(vec![echo_tool()]),
        cfg,
        CancellationToken::new(),
    )
    .collect()
    .await
    .unwrap();
    assert_contract(&events);
    assert_eq!(outcome.end_reason, EndReason::MaxTurns { limit: 3 });
    assert!(outcome.end_reason.describe().contains("3 turns"));
    assert_eq!(client.calls(), 3);
    assert_eq!(events.iter().filter(|e| e.kind() == "turn_end").count(), 3);
    let v = serde_json::to_value(events.last().unwrap()).unwrap();
    assert_eq!(v["endReason"]["type"], "maxTurns");
    // The transcript ends with tool results, ready for a continue.
    assert!(
        outcome
            .context
            .messages
            .last()
            .unwrap()
            .as_tool_result()
            .is_some()
    );
}

#[tokio::test]
async fn max_total_tokens_ends_the_run() {
    let client = looping_client();
    let mut cfg = config(client.clone());
    cfg.limits.max_total_tokens = Some(250);
    let outcome = agent_loop(
        vec!["go".into()],
        context(vec![echo_tool()]),
        cfg,
        CancellationToken::new(),
    )
    .join()
    .await
    .unwrap();
    assert_eq!(
        outcome.end_reason,
        EndReason::MaxTotalTokens {
            limit: 250,
            used: 330
        }
    );
    assert_eq!(client.calls(), 3);
}

#[tokio::test]
async fn max_wall_time_cuts_a_slow_stream() {
    let client = ScriptedClient::new([ScriptedResponse::hang()]);
    let mut cfg = config(client);
    cfg.limits.max_wall_time = Some(Duration::from_millis(150));
    let started = Instant::now();
    let outcome = agent_loop(
        vec!["go".into()],
        context(vec![]),
        cfg,
        CancellationToken::new(),
    )
    .join()
    .await
    .unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(outcome.end_reason, EndReason::MaxWallTime { limit_ms: 150 });
}

#[tokio::test]
async fn loop_detection_stops_or_warns() {
    let same = || {
        ScriptedClient::from_fn(|_, i| {
            ScriptedResponse::tool_call(format!("c{i}"), "echo", json!({"text": "same"}))
        })
    };
    let client = same();
    let mut cfg = config(client.clone());
    cfg.loop_detection = Some(LoopDetection {
        threshold: 3,
        action: LoopAction::Stop,
    });
    let (events, outcome) = agent_loop(
        vec!["go".into()],
        context(vec![echo_tool()]),
        cfg,
        CancellationToken::new(),
    )
    .collect()
    .await
    .unwrap();
    assert_contract(&events);
    assert_eq!(
        outcome.end_reason,
        EndReason::LoopDetected {
            tool_name: "echo".into(),
            repeats: 3
        }
    );
    assert_eq!(client.calls(), 3);
    let results = tool_result_texts(&events);
    assert!(
        results[2].2 && results[2].1.contains("3 times in a row"),
        "{results:?}"
    );

    let client = ScriptedClient::from_fn(|_, i| {
        if i < 3 {
            ScriptedResponse::tool_call(format!("c{i}"), "echo", json!({"text": "same"}))
        } else {
            ScriptedResponse::text("ok")
        }
    });
    let mut cfg = config(client.clone());
    cfg.loop_detection = Some(LoopDetection {
        threshold: 3,
        action: LoopAction::Warn,
    });
    let (events, outcome) = agent_loop(
        vec!["go".into()],
        context(vec![echo_tool()]),
        cfg,
        CancellationToken::new(),
    )
    .collect()
    .await
    .unwrap();
    assert_contract(&events);
    assert_eq!(outcome.end_reason, EndReason::Completed);
    let results = tool_result_texts(&events);
    assert!(!results[2].2);
    assert!(results[2].1.starts_with("same\nWarning:"), "{results:?}");
}

struct StopAtSecond;

#[async_trait]
impl AgentHooks for StopAtSecond {
    async fn before_turn(&self, turn: &TurnInfo<'_>) -> TurnDecision {
        if turn.turn == 1 {
            TurnDecision::Stop("budget used".into())
        } else {
            TurnDecision::Continue
        }
    }
}

#[tokio::test]
async fn before_turn_can_stop_the_run_between_turns() {
    let client = looping_client();
    let mut cfg = config(client.clone());
    cfg.hooks = Arc::new(StopAtSecond);
    let (events, outcome) = agent_loop(
        vec!["go".into()],
        context(vec![echo_tool()]),
        cfg,
        CancellationToken::new(),
    )
    .collect()
    .await
    .unwrap();
    assert_contract(&events);
    assert_eq!(
        outcome.end_reason,
        EndReason::StoppedByHook {
            reason: "budget used".into()
        }
    );
    assert_eq!(client.calls(), 1);
    let o = outline(&events);
    assert_eq!(&o[o.len() - 2..], ["turn_end", "agent_end"]);
}

#[tokio::test]
async fn turn_delay_spaces_model_calls() {
    let client = ScriptedClient::new([
        ScriptedResponse::tool_call("a", "echo", json!({"text": "x"})),
        ScriptedResponse::text("ok"),
    ]);
    let mut cfg = config(client);
    cfg.turn_delay = Some(Duration::from_millis(200));
    let started = Instant::now();
    agent_loop(
        vec!["go".into()],
        context(vec![echo_tool()]),
        cfg,
        CancellationToken::new(),
    )
    .join()
    .await
    .unwrap();
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(200) && elapsed < Duration::from_millis(1000),
        "{elapsed:?}"
    );
}
