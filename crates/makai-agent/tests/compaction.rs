//! Context compaction: threshold, overflow-then-retry, and the default strategy's levels.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::Arc;

use common::*;
use makai_agent::makai_ai::{Context, Model};
use makai_agent::testing::{ScriptedClient, ScriptedResponse};
use makai_agent::{
    AgentEvent, AgentMessage, CancellationToken, CompactionReason, ContextConfig, EndReason,
    agent_loop,
};

fn small_model() -> Model {
    let mut m = model();
    m.context_window = 1000; // budget 800 tokens
    m
}

/// 20 messages of ~100 tokens each: about 2000 tokens, over the budget.
fn long_history() -> Vec<AgentMessage> {
    (0..20)
        .map(|i| {
            if i % 2 == 0 {
                AgentMessage::user(format!("question {i} {}", "q".repeat(400)))
            } else {
                makai_agent::makai_ai::AssistantMessage {
                    content: vec![makai_agent::makai_ai::AssistantContent::Text(
                        makai_agent::makai_ai::TextContent {
                            text: format!("answer {i} {}", "a".repeat(400)),
                            text_signature: None,
                        },
                    )],
                    ..Default::default()
                }
                .into()
            }
        })
        .collect()
}

fn is_summary_call(ctx: &Context) -> bool {
    ctx.system_prompt
        .as_deref()
        .is_some_and(|s| s.contains("summaries"))
}

fn compaction_events(events: &[AgentEvent]) -> Vec<AgentEvent> {
    events
        .iter()
        .filter(|e| e.kind().starts_with("compaction"))
        .cloned()
        .collect()
}

#[tokio::test]
async fn threshold_compaction_summarizes_old_turns_before_the_call() {
    let client = ScriptedClient::from_fn(|ctx, _| {
        if is_summary_call(ctx) {
            ScriptedResponse::text("SUMMARY of twenty messages").with_usage(900, 20)
        } else {
            ScriptedResponse::text("fresh answer")
        }
    });
    let mut cfg = config(client.clone());
    cfg.model = small_model();
    let ctx = context(vec![]).with_messages(long_history());
    let (events, outcome) = agent_loop(
        vec!["new question".into()],
        ctx,
        cfg,
        CancellationToken::new(),
    )
    .collect()
    .await
    .unwrap();
    assert_contract(&events);
    let o = outline(&events);
    assert_eq!(
        &o[..8],
        [
            "agent_start",
            "turn_start",
            "message_start:user",
            "message_end:user",
            "compaction_start",
            "compaction_end",
            "message_start:assistant",
            "updates"
        ]
    );
    let comp = compaction_events(&events);
    let AgentEvent::CompactionEnd {
        reason,
        result,
        will_retry,
        messages,
        ..
    } = &comp[1]
    else {
        panic!()
    };
    assert_eq!(*reason, CompactionReason::Threshold);
    assert!(!will_retry);
    let info = result.as_ref().unwrap();
    assert_eq!(info.summary, "SUMMARY of twenty messages");
    assert!(
        info.tokens_before > 800 && info.estimated_tokens_after <= 800,
        "{info:?}"
    );
    assert_eq!(info.usage.unwrap().output, 20);
    assert!(messages.is_some());
    // Sent: the first message, the summary (as a user message), then the recent messages.
    let reqs = client.requests();
    assert_eq!(reqs.len(), 2);
    let sent = &reqs[1].context.messages;
    assert!(
        AgentMessage::from(sent[0].clone())
            .text()
            .starts_with("question 0")
    );
    assert!(
        AgentMessage::from(sent[1].clone())
            .text()
            .contains("SUMMARY of twenty messages")
    );
    assert!(AgentMessage::from(sent.last().unwrap().clone()).text() == "new question");
    assert!(sent.len() < 12);
    // The kept transcript holds the summary message itself.
    assert_eq!(outcome.context.messages[1].role(), "compactionSummary");
    assert_eq!(outcome.end_reason, EndReason::Completed);
    assert!(outcome.usage.total_tokens >= 920);
    // The run's own messages, each once, whether added before or after the
    // compaction replaced the context (and kept the question in it).
    assert_eq!(
        run_texts(&events, &outcome),
        ["new question", "fresh answer"]
    );
}

/// The texts of the messages a run added, after checking that `agent_end`
/// carries the same messages as the outcome.
fn run_texts(events: &[AgentEvent], outcome: &makai_agent::RunOutcome) -> Vec<String> {
    let Some(AgentEvent::AgentEnd { messages, .. }) = events.last() else {
        panic!("the last event is not agent_end")
    };
    let texts: Vec<String> = outcome.messages.iter().map(AgentMessage::text).collect();
    let ended: Vec<String> = messages.iter().map(AgentMessage::text).collect();
    assert_eq!(texts, ended);
    texts
}

/// A run over a long history on a 100,000-token model (the estimate is
/// under budget: only an overflow compacts) whose first answer is
/// `overflowing`, then `answer after retry`: its events, outcome and client.
async fn run_overflowing(
    overflowing: fn() -> ScriptedResponse,
) -> (
    Vec<AgentEvent>,
    makai_agent::RunOutcome,
    Arc<ScriptedClient>,
) {
    let client = ScriptedClient::from_fn(move |ctx, i| {
        if is_summary_call(ctx) {
            ScriptedResponse::text("short summary")
        } else if i == 0 {
            overflowing()
        } else {
            ScriptedResponse::text("answer after retry")
        }
    });
    let mut cfg = config(client.clone());
    cfg.model = small_model();
    cfg.model.context_window = 100_000;
    let ctx = context(vec![]).with_messages(long_history());
    let (events, outcome) = agent_loop(vec!["q".into()], ctx, cfg, CancellationToken::new())
        .collect()
        .await
        .unwrap();
    (events, outcome, client)
}

#[tokio::test]
async fn overflow_error_triggers_compaction_and_one_retry() {
    let (events, outcome, client) = run_overflowing(|| {
        ScriptedResponse::error(
            "HTTP 400 from test: This model's maximum context length is 1000 tokens",
        )
    })
    .await;
    assert_contract(&events);
    let o = outline(&events);
    let start = o
        .iter()
        .position(|l| l == "message_start:assistant")
        .unwrap();
    assert_eq!(
        &o[start..],
        [
            "message_start:assistant",
            "message_end:assistant",
            "compaction_start",
            "compaction_end",
            "message_start:assistant",
            "updates",
            "message_end:assistant",
            "turn_end",
            "agent_end"
        ]
    );
    let comp = compaction_events(&events);
    let AgentEvent::CompactionStart { reason } = &comp[0] else {
        panic!()
    };
    assert_eq!(*reason, CompactionReason::Overflow);
    let AgentEvent::CompactionEnd { will_retry, .. } = &comp[1] else {
        panic!()
    };
    assert!(will_retry);
    assert_eq!(outcome.end_reason, EndReason::Completed);
    assert_eq!(client.calls(), 3);
    // The failed message is not in the transcript.
    assert!(
        outcome
            .context
            .messages
            .iter()
            .all(|m| m.as_assistant().is_none_or(|a| a.error_message.is_none()))
    );
    assert_eq!(
        outcome.messages.last().unwrap().text(),
        "answer after retry"
    );
    // The failed call is not among the run's messages either.
    assert_eq!(run_texts(&events, &outcome), ["q", "answer after retry"]);
}

/// A provider that cuts the answer instead of refusing the request: a
/// length stop with no output at a full window is an overflow too (pi's
/// `isContextOverflow`), compacted and retried.
#[tokio::test]
async fn an_empty_length_stop_at_a_full_window_is_compacted_and_retried() {
    let (events, outcome, client) = run_overflowing(|| {
        ScriptedResponse::text("")
            .with_usage(99_500, 0)
            .with_stop_reason(makai_agent::makai_ai::StopReason::Length)
    })
    .await;
    assert_contract(&events);
    let comp = compaction_events(&events);
    let AgentEvent::CompactionStart { reason } = &comp[0] else {
        panic!()
    };
    assert_eq!(*reason, CompactionReason::Overflow);
    assert_eq!(outcome.end_reason, EndReason::Completed);
    assert_eq!(client.calls(), 3);
    assert_eq!(run_texts(&events, &outcome), ["q", "answer after retry"]);
}

#[tokio::test]
async fn a_second_overflow_is_reported_not_retried_again() {
    let client = ScriptedClient::from_fn(|ctx, _| {
        if is_summary_call(ctx) {
            ScriptedResponse::text("s")
        } else {
            ScriptedResponse::error("prompt is too long: 5000 tokens > 1000 maximum")
        }
    });
    let mut cfg = config(client.clone());
    cfg.model = small_model();
    cfg.model.context_window = 100_000;
    let ctx = context(vec![]).with_messages(long_history());
    let outcome = agent_loop(vec!["q".into()], ctx, cfg, CancellationToken::new())
        .join()
        .await
        .unwrap();
    assert!(
        matches!(outcome.end_reason, EndReason::Error { ref message } if message.contains("prompt is too long"))
    );
    assert_eq!(client.calls(), 3, "call, summary, one retry");
}

#[tokio::test]
async fn truncating_old_tool_outputs_can_be_enough() {
    let client = ScriptedClient::new([ScriptedResponse::text("ok")]);
    let mut cfg = config(client.clone());
    cfg.model = small_model();
    let mut history = vec![AgentMessage::user("start")];
    let mut a = makai_agent::makai_ai::AssistantMessage::default();
    a.content
        .push(makai_agent::makai_ai::AssistantContent::ToolCall(
            makai_agent::makai_ai::ToolCall::new("t1", "echo", Default::default()),
        ));
    history.push(a.into());
    history.push(
        makai_agent::makai_ai::ToolResultMessage::text("t1", "echo", "z".repeat(8000), false)
            .into(),
    );
    for i in 0..8 {
        history.push(AgentMessage::user(format!("short {i}")));
    }
    let (events, outcome) = agent_loop(
        vec!["q".into()],
        context(vec![]).with_messages(history),
        cfg,
        CancellationToken::new(),
    )
    .collect()
    .await
    .unwrap();
    assert_contract(&events);
    let comp = compaction_events(&events);
    let AgentEvent::CompactionEnd { result, .. } = &comp[1] else {
        panic!()
    };
    let info = result.as_ref().unwrap();
    assert_eq!(info.details["level"], 1);
    assert_eq!(client.calls(), 1, "no summary call");
    let kept = outcome.context.messages[2]
        .as_tool_result()
        .unwrap()
        .text_content();
    assert!(
        kept.len() < 2300 && kept.contains("removed to save context"),
        "{}",
        kept.len()
    );
}

#[tokio::test]
async fn a_failed_summary_falls_back_to_dropping_middle_messages() {
    let client = ScriptedClient::from_fn(|ctx, _| {
        if is_summary_call(ctx) {
            ScriptedResponse::error("HTTP 500: summarizer down")
        } else {
            ScriptedResponse::text("ok")
        }
    });
    let mut cfg = config(client.clone());
    cfg.model = small_model();
    let ctx = context(vec![]).with_messages(long_history());
    let (events, outcome) = agent_loop(vec!["q".into()], ctx, cfg, CancellationToken::new())
        .collect()
        .await
        .unwrap();
    assert_contract(&events);
    let comp = compaction_events(&events);
    let AgentEvent::CompactionEnd { result, .. } = &comp[1] else {
        panic!()
    };
    let info = result.as_ref().unwrap();
    assert!(
        info.details["summaryError"]
            .as_str()
            .unwrap()
            .contains("summarizer down")
    );
    assert!(info.estimated_tokens_after <= 800);
    let marker = &outcome.context.messages[1];
    assert_eq!(marker.role(), "compactionSummary");
    assert!(
        marker.text().contains("earlier messages were removed"),
        "{}",
        marker.text()
    );
    assert_eq!(outcome.end_reason, EndReason::Completed);
}

#[tokio::test]
async fn no_context_config_means_no_compaction() {
    let client = ScriptedClient::new([ScriptedResponse::text("ok")]);
    let mut cfg = config(client.clone());
    cfg.model = small_model();
    cfg.context = None;
    let (events, _) = agent_loop(
        vec!["q".into()],
        context(vec![]).with_messages(long_history()),
        cfg,
        CancellationToken::new(),
    )
    .collect()
    .await
    .unwrap();
    assert_contract(&events);
    assert!(compaction_events(&events).is_empty());
    assert_eq!(client.requests()[0].context.messages.len(), 21);
    let _ = Arc::new(ContextConfig::default());
}

/// Seed 002: with context management on, a custom strategy is asked before
/// every model call (not only over the budget), and its answer decides.
#[tokio::test]
async fn a_custom_strategy_is_consulted_before_every_model_call() {
    use makai_agent::{
        CompactionCheck, CompactionContext, CompactionError, CompactionOutput, CompactionStrategy,
    };
    use std::sync::Mutex;

    /// Compacts (drops everything but the last message) at the second call.
    #[derive(Default)]
    struct EverySecondCall {
        asked: Mutex<Vec<(u64, u64)>>,
    }
    #[async_trait::async_trait]
    impl CompactionStrategy for EverySecondCall {
        fn should_compact(&self, _messages: &[AgentMessage], check: &CompactionCheck<'_>) -> bool {
            let mut asked = self.asked.lock().unwrap();
            asked.push((check.tokens, check.budget_tokens));
            asked.len() == 2
        }
        async fn compact(
            &self,
            messages: Vec<AgentMessage>,
            _cx: &CompactionContext<'_>,
        ) -> Result<CompactionOutput, CompactionError> {
            let keep = messages.len().saturating_sub(2);
            Ok(CompactionOutput {
                messages: messages[keep..].to_vec(),
                ..Default::default()
            })
        }
    }

    let client = ScriptedClient::new([
        ScriptedResponse::tool_call("a", "echo", serde_json::json!({"text": "x"})),
        ScriptedResponse::text("done"),
    ]);
    let strategy = Arc::new(EverySecondCall::default());
    let mut cfg = config(client.clone());
    cfg.context = Some(ContextConfig::default());
    cfg.compaction = strategy.clone();
    let (events, _) = agent_loop(
        vec!["go".into()],
        context(vec![echo_tool()]),
        cfg,
        CancellationToken::new(),
    )
    .collect()
    .await
    .unwrap();
    assert_contract(&events);
    let asked = strategy.asked.lock().unwrap().clone();
    assert_eq!(
        asked.len(),
        2,
        "asked before each of the two calls: {asked:?}"
    );
    assert!(asked.iter().all(|(tokens, budget)| tokens < budget));
    assert_eq!(
        compaction_events(&events).len(),
        2,
        "one compaction (start and end), at the second call"
    );
    // The second request carries the compacted transcript.
    assert_eq!(client.requests()[1].context.messages.len(), 2);
}
