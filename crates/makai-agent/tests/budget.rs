//! The budget ledger in front of the real HTTP path: requests are reserved
//! at their worst case before they are sent and refused when that would
//! cross a cap; the scripted server's request count proves a refused request
//! never left.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use makai_agent::budget::{BUDGET_EXHAUSTED, CapKind, estimate_context_tokens};
use makai_agent::makai_ai::{
    Api, Context, Model, ModelCost, RetryPolicy, StopReason, StreamOptions, UserMessage,
};
use makai_agent::{
    Agent, AgentLoopConfig, Budget, BudgetedClient, CancellationToken, EndReason, InProcessClient,
    Ledger, ProtocolClient, agent_loop,
};
use makai_mockllm::{MockServer, Scenario, ScriptedResponse as Mock, Usage as MockUsage};

/// $1,000 per million tokens in and out: one token is a tenth of a cent.
fn priced_model(server: &MockServer) -> Model {
    let mut m = Model::custom(
        Api::OpenAiCompletions,
        "mock",
        "mock-model",
        server.base_url_v1(),
    );
    m.cost = ModelCost {
        input: 1000.0,
        output: 1000.0,
        ..Default::default()
    };
    m.max_tokens = 100;
    m
}

fn budgeted(server: &MockServer, ledger: &Ledger) -> AgentLoopConfig {
    let client = BudgetedClient::new(Arc::new(InProcessClient::new()), ledger.clone());
    let mut cfg = AgentLoopConfig::new(priced_model(server), Arc::new(client));
    cfg.options.retry = RetryPolicy::none();
    cfg
}

async fn server(responses: Vec<Mock>) -> MockServer {
    MockServer::start(Scenario::new().extend(responses))
        .await
        .unwrap()
}

fn tiny_context() -> Context {
    Context {
        system_prompt: Some("s".repeat(400)),
        messages: vec![UserMessage::text("hello").into()],
        tools: Vec::new(),
    }
}

#[tokio::test]
async fn a_run_whose_next_request_would_cross_the_cost_cap_ends_before_sending_it() {
    // First answer: a tool call costing 200 tokens ($0.20). The second
    // request's worst case (its input plus 100 output tokens) passes $0.30.
    let server = server(vec![
        Mock::tool_call("c1", "echo", r#"{"text":"x"}"#).usage(MockUsage::new(100, 100)),
        Mock::text("never sent"),
    ])
    .await;
    let ledger = Ledger::new(Budget {
        max_cost: Some(0.30),
        max_tokens: None,
    });
    let refusals = Arc::new(Mutex::new(Vec::new()));
    let seen = refusals.clone();
    ledger.on_refusal(move |r| seen.lock().unwrap().push(r.clone()));
    let run = agent_loop(
        vec!["go".into()],
        context(vec![echo_tool()]),
        budgeted(&server, &ledger),
        CancellationToken::new(),
    );
    let (events, outcome) = tokio::time::timeout(Duration::from_secs(20), run.collect())
        .await
        .unwrap()
        .unwrap();
    assert_contract(&events);

    assert_eq!(server.requests().len(), 1, "the refused request never left");
    let EndReason::BudgetExhausted { message } = &outcome.end_reason else {
        panic!("{:?}", outcome.end_reason)
    };
    assert!(
        message.starts_with(
            "budget exhausted: spent $0.20 of $0.30; the next request could cost up to $0.1"
        ),
        "{message}"
    );
    // The refusal is the run's last message; nothing before it is lost.
    let last = outcome.messages.last().unwrap().as_assistant().unwrap();
    assert_eq!(last.stop_reason, StopReason::Error);
    assert_eq!(last.error_message.as_deref(), Some(message.as_str()));
    assert!(outcome.messages.iter().any(|m| m.role() == "toolResult"));

    let report = ledger.report();
    assert!((report.spent_cost - 0.20).abs() < 1e-9, "{report:?}");
    assert_eq!(report.spent_tokens, 200);
    assert_eq!((report.requests, report.refused), (1, 1));
    assert_eq!(report.reserved_cost, 0.0, "nothing stays reserved");
    let refusals = refusals.lock().unwrap();
    assert_eq!(refusals.len(), 1);
    assert_eq!(refusals[0].cap, CapKind::Cost);
    assert_eq!(refusals[0].next_output_tokens, 100);
    server.assert_request_invariants();
}

#[tokio::test]
async fn raising_the_cap_lets_the_same_agent_continue() {
    let server = server(vec![
        Mock::text("first").usage(MockUsage::new(100, 100)),
        Mock::text("second").usage(MockUsage::new(100, 10)),
    ])
    .await;
    let ledger = Ledger::new(Budget {
        max_cost: Some(0.25),
        max_tokens: None,
    });
    let agent = Agent::new(budgeted(&server, &ledger));
    let first = agent.prompt("one").await.unwrap();
    assert_eq!(first.end_reason, EndReason::Completed);
    let refused = agent.prompt("two").await.unwrap();
    assert!(
        matches!(refused.end_reason, EndReason::BudgetExhausted { .. }),
        "{:?}",
        refused.end_reason
    );
    assert_eq!(server.requests().len(), 1);

    ledger.set_budget(Budget {
        max_cost: Some(1.0),
        max_tokens: None,
    });
    let again = agent.prompt("two, again").await.unwrap();
    assert_eq!(again.end_reason, EndReason::Completed, "{again:?}");
    assert_eq!(again.messages.last().unwrap().text(), "second");
    assert_eq!(server.requests().len(), 2);
    assert_eq!(ledger.report().spent_tokens, 310);
    server.assert_request_invariants();
}

#[tokio::test]
async fn a_manual_compaction_over_the_cap_is_refused_before_it_is_sent() {
    let answers = (0..3).map(|i| Mock::text(format!("answer {i}")).usage(MockUsage::new(50, 50)));
    let server = server(answers.collect()).await;
    let ledger = Ledger::new(Budget {
        max_cost: Some(0.45),
        max_tokens: None,
    });
    let mut cfg = budgeted(&server, &ledger);
    cfg.context = Some(makai_agent::ContextConfig {
        keep_first: 0,
        keep_recent: 1,
        ..Default::default()
    });
    let agent = Agent::new(cfg);
    for q in ["one", "two", "three"] {
        assert_eq!(
            agent.prompt(q).await.unwrap().end_reason,
            EndReason::Completed
        );
    }
    // The summary call may write 1,024 tokens: over a dollar at these prices.
    let err = agent.compact(None).await.unwrap_err();
    assert!(err.to_string().contains(BUDGET_EXHAUSTED), "{err}");
    assert_eq!(server.requests().len(), 3, "the summary call never left");
    assert_eq!(agent.messages().len(), 6, "the transcript is unchanged");
}

#[tokio::test]
async fn requests_in_flight_hold_their_worst_case() {
    let server = server(vec![]).await;
    let model = priced_model(&server);
    let context = tiny_context();
    let input = estimate_context_tokens(&context);
    assert!(input > 100, "{input}");
    // Worst case: input plus 100 output tokens, a tenth of a cent each.
    let worst = (input + 100) as f64 / 1000.0;
    let ledger = Ledger::new(Budget {
        max_cost: Some(worst * 1.5),
        max_tokens: None,
    });
    let options = StreamOptions::default();
    let held = ledger.reserve(&model, &context, &options).unwrap();
    assert!((held.cost() - worst).abs() < 1e-9);
    // A second one would not fit while the first is in flight...
    let refusal = ledger.reserve(&model, &context, &options).unwrap_err();
    assert!((refusal.reserved_cost - worst).abs() < 1e-9);
    assert!(
        refusal.to_string().contains("held by requests in flight"),
        "{refusal}"
    );
    // ...and fits once the first settled for less.
    held.settle(&makai_agent::makai_ai::Usage {
        input: 10,
        output: 10,
        total_tokens: 20,
        cost: makai_agent::makai_ai::UsageCost {
            total: 0.02,
            ..Default::default()
        },
        ..Default::default()
    });
    let second = ledger.reserve(&model, &context, &options).unwrap();
    // A request whose end was never seen is charged its input.
    drop(second);
    let report = ledger.report();
    assert_eq!(report.reserved_tokens, 0);
    assert_eq!(report.spent_tokens, 20 + input);
    assert!((report.spent_cost - (0.02 + input as f64 / 1000.0)).abs() < 1e-9);
}

#[tokio::test]
async fn a_model_without_prices_counts_tokens_only() {
    let server = server(vec![Mock::text("free").usage(MockUsage::new(100, 100))]).await;
    let mut model = priced_model(&server);
    model.cost = ModelCost::default();
    let ledger = Ledger::new(Budget {
        max_cost: Some(0.0001),
        max_tokens: Some(350),
    });
    let client = BudgetedClient::new(Arc::new(InProcessClient::new()), ledger.clone());
    let options = StreamOptions {
        retry: RetryPolicy::none(),
        ..Default::default()
    };
    // The cost cap cannot hold: the request goes out and is counted.
    let reply = client
        .complete(&model, &tiny_context(), options.clone())
        .await;
    assert_eq!(reply.text(), "free");
    let report = ledger.report();
    assert_eq!((report.unpriced_requests, report.spent_tokens), (1, 200));
    // The token cap holds.
    let refused = client.complete(&model, &tiny_context(), options).await;
    assert_eq!(refused.stop_reason, StopReason::Error);
    let text = refused.error_message.unwrap();
    assert!(
        text.starts_with(
            "budget exhausted: used 200 of 350 tokens; the next request could use up to"
        ),
        "{text}"
    );
    assert_eq!(server.requests().len(), 1);
}

/// Opening a connection costs nothing: the budgeted client passes it on
/// even when the budget has nothing left.
#[tokio::test]
async fn a_budgeted_client_passes_preconnect_on() {
    let server = server(vec![]).await;
    let ledger = Ledger::new(Budget {
        max_cost: Some(0.0),
        max_tokens: None,
    });
    let agent = Agent::new(budgeted(&server, &ledger));
    agent.preconnect().await;
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while server.connections() == 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(server.connections(), 1);
    assert_eq!(server.served(), 0);
}
