//! The `task` tool and the budget: children's spending counts toward the
//! parent's cap, and a child spec's own cap holds within it (scripted
//! server; requests counted on its side).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::Arc;

use common::subagents::*;
use makai_agent::{Budget, BudgetedClient, EndReason, InProcessClient, Ledger};
use makai_coding::tools::ToolEnv;
use makai_mockllm::{ScriptedResponse as Mock, Usage};
use serde_json::json;

#[tokio::test]
async fn childrens_spending_counts_toward_the_parents_cap() {
    let fx = Fixture::new(|r| {
        if is_parent(r) {
            parent_turn(r, json!({"agent": "explore", "task": "Look."})).usage(Usage::new(50, 10))
        } else {
            Mock::text("expensive child answer").usage(Usage::new(4000, 500))
        }
    })
    .await;
    let ledger = Ledger::new(Budget {
        max_cost: Some(0.5),
        max_tokens: None,
    });
    let mut cfg = fx.config();
    cfg.model = priced(cfg.model);
    cfg.client = Arc::new(BudgetedClient::new(
        Arc::new(InProcessClient::new()),
        ledger.clone(),
    ));
    let tools = fx.tools(ToolEnv::new(fx.work.path()), "read,ls");
    let (events, outcome) = finish(fx.start(tools, cfg)).await;
    // Parent $0.006 + child $0.45: the parent's next request could pass $0.50.
    let EndReason::BudgetExhausted { message } = &outcome.end_reason else {
        panic!("{:?}", outcome.end_reason)
    };
    assert!(message.contains("spent $0.46 of $0.50"), "{message}");
    assert_eq!(
        fx.server.requests().len(),
        2,
        "parent, child; the third never left"
    );
    let (text, is_error, ..) = task_end(&events);
    assert!(!is_error);
    assert_eq!(text, "expensive child answer");
    assert_eq!(ledger.report().spent_tokens, 4560);
}

#[tokio::test]
async fn a_child_spec_with_its_own_cap_is_refused_within_it() {
    let fx = Fixture::new(|r| {
        if is_parent(r) {
            parent_turn(r, json!({"agent": "thrifty", "task": "Look."}))
        } else {
            Mock::text("never sent")
        }
    })
    .await;
    let mut cfg = fx.config();
    cfg.model = priced(cfg.model);
    let tools = fx.tools(ToolEnv::new(fx.work.path()), "read");
    let (events, outcome) = finish(fx.start(tools, cfg)).await;
    assert_eq!(outcome.end_reason, EndReason::Completed);
    let (text, is_error, ..) = task_end(&events);
    assert!(is_error);
    assert!(
        text.contains("budget exhausted: spent $0.00 of $0.0010"),
        "{text}"
    );
    assert!(
        fx.server.requests().iter().all(is_parent),
        "the child's request never left"
    );
}
