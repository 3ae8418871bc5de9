//! One budget for the session tree through the built binary: prices from
//! `models.json`, caps from flags and settings, refusals before the request
//! is sent (counted on the scripted server's side), the cap kept across
//! `-c`, compactions, titles and sub-agents counted, and the figures in
//! `get_state` / `get_session_stats` and the JSON events.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use makai_mockllm::{Scenario, ScriptedResponse, Usage};
use serde_json::{Value, json};

/// `models.json` with one priced model on the scripted server: $1 per
/// million input tokens, $100 per million output tokens, at most 400 output
/// tokens. A request's worst case is then about $0.04 (its output) plus its
/// input; a response reporting 115,000 input tokens costs $0.115.
fn priced_models(env: &Env, mock: &Mock) {
    let models = json!({
        "providers": {
            "priced": {
                "baseUrl": mock.v1(),
                "api": "openai-completions",
                "apiKey": "k",
                "models": [{
                    "id": "priced-model",
                    "contextWindow": 200000,
                    "maxTokens": 400,
                    "cost": {"input": 1, "output": 100, "cacheRead": 0, "cacheWrite": 0}
                }]
            }
        }
    });
    std::fs::write(env.home.path().join("models.json"), models.to_string()).unwrap();
}

fn model_args() -> Vec<String> {
    s(&["--model", "priced/priced-model"])
}

/// Spends $0.116: 115,000 input tokens and 10 output tokens.
fn expensive() -> Usage {
    Usage::new(115_000, 10)
}

fn with(mut a: Vec<String>, more: &[&str]) -> Vec<String> {
    a.extend(s(more));
    a
}

#[test]
fn a_session_whose_next_request_would_cross_max_cost_ends_before_it_is_sent_and_the_cap_holds_after_continue()
 {
    let env = Env::new();
    std::fs::write(env.work().join("a.txt"), "alpha\n").unwrap();
    let mock = Mock::start(
        Scenario::new()
            .push(
                ScriptedResponse::tool_call("c1", "read", json!({"path": "a.txt"}).to_string())
                    .usage(expensive()),
            )
            .push(ScriptedResponse::text("continued after the cap was raised")),
    );
    priced_models(&env, &mock);

    // The first request fits ($0 spent, about $0.05 worst case); it spends
    // $0.116, so the one after the tool result (worst case over $0.04) would
    // cross $0.12 and is never sent.
    let out = env.run(
        &with(
            model_args(),
            &["--mode", "json", "--max-cost", "0.12", "-p", "read a.txt"],
        ),
        "",
    );
    assert_ne!(out.status.code(), Some(0), "a refused run is a failed run");
    assert_eq!(
        mock.requests().len(),
        1,
        "the crossing request never reached the server"
    );
    let events = json_lines(&stdout(&out));
    let refusal = events
        .iter()
        .find(|e| e["type"] == "budget_exhausted")
        .unwrap_or_else(|| panic!("no budget_exhausted event: {events:#?}"));
    let message = refusal["message"].as_str().unwrap();
    assert!(
        message.starts_with("budget exhausted: spent $0.12 of $0.12;")
            && message.contains("the next request could cost up to $0.0"),
        "{message}"
    );
    assert_eq!(refusal["budget"]["maxCost"], json!(0.12));
    assert_eq!(refusal["budget"]["refused"], json!(1));
    let end = events.iter().find(|e| e["type"] == "agent_end").unwrap();
    let last = end["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last["stopReason"], "error", "{last}");
    assert!(
        last["errorMessage"]
            .as_str()
            .unwrap()
            .starts_with("budget exhausted")
    );
    // Nothing lost: the tool's result is in the session file.
    let files = env.session_files();
    assert_eq!(files.len(), 1);
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert!(text.contains("alpha"), "the read result was recorded");

    // After a restart the same cap (now from the settings) still holds: the
    // ledger starts from what the session spent.
    env.settings(json!({"limits": {"maxCost": 0.12}}));
    let out = env.run(&with(model_args(), &["-c", "-p", "go on"]), "");
    assert_ne!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains("budget exhausted: spent $0.12 of $0.12"),
        "{}",
        stderr(&out)
    );
    assert_eq!(mock.requests().len(), 1, "still nothing sent after -c");

    // Raising the cap lets the session go on.
    let out = env.run(
        &with(model_args(), &["-c", "--max-cost", "1", "-p", "go on"]),
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "continued after the cap was raised\n");
    assert_eq!(mock.requests().len(), 2);
}

#[test]
fn max_tokens_refuses_a_request_whose_worst_case_would_cross_it() {
    let env = Env::new();
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("one")));
    priced_models(&env, &mock);
    // Any request's output limit alone (400) passes a cap of 100 tokens.
    let out = env.run(
        &with(
            model_args(),
            &["--no-session", "--max-tokens", "100", "-p", "hi"],
        ),
        "",
    );
    assert_ne!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains("budget exhausted: used 0 of 100 tokens"),
        "{}",
        stderr(&out)
    );
    assert!(mock.requests().is_empty());

    // A cost cap on a model without prices counts tokens only, and says so.
    let unpriced = Mock::start(Scenario::new().push(ScriptedResponse::text("free")));
    let out = env.run(
        &with(
            unpriced.args(),
            &["--no-session", "--max-cost", "0.01", "-p", "hi"],
        ),
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("custom/mock-model has no prices, so the cost cap cannot hold"),
        "{}",
        stderr(&out)
    );
    assert_eq!(unpriced.requests().len(), 1);
}

#[test]
fn bad_limit_flags_and_settings_are_usage_errors_naming_the_limit() {
    let env = Env::new();
    let out = env.run(&s(&["--max-cost", "lots", "-p", "hi"]), "");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not an amount of dollars"),
        "{}",
        stderr(&out)
    );
    let out = env.run(&s(&["--max-time", "soon", "-p", "hi"]), "");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("not a duration"), "{}", stderr(&out));
    let out = env.run(&s(&["--max-turns", "0", "-p", "hi"]), "");
    assert_eq!(out.status.code(), Some(2));
    env.settings(json!({"limits": {"maxCost": -1}}));
    let args = s(&[
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--api",
        "openai-completions",
    ]);
    let out = env.run(&with(args, &["--model", "m", "-p", "hi"]), "");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("limits: maxCost must be a number of dollars"),
        "{}",
        stderr(&out)
    );
}

fn rpc_with(env: &Env, more: &[&str], vars: &[(&str, &str)]) -> Rpc {
    Rpc::start_with(env, &with(model_args(), more), vars)
}

#[test]
fn a_title_that_would_cross_the_cap_is_never_requested() {
    let env = Env::new();
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::text("an expensive answer").usage(expensive()))
            .with_fallback(ScriptedResponse::text("A title")),
    );
    priced_models(&env, &mock);
    // Titles on: after the first exchange makai asks the model for one; its
    // worst case (64 output tokens: $0.0064) would cross $0.12.
    let mut rpc = rpc_with(&env, &["--max-cost", "0.12"], &[("MAKAI_AUTO_TITLE", "1")]);
    rpc.ok(json!({"type": "prompt", "message": "hello"}));
    rpc.wait_event("agent_end");
    let refusal = rpc.wait_event("budget_exhausted");
    assert!(
        refusal["message"]
            .as_str()
            .unwrap()
            .starts_with("budget exhausted: spent $0.12 of $0.12"),
        "{refusal}"
    );
    assert_eq!(mock.requests().len(), 1, "the title request was never sent");
    let state = rpc.ok(json!({"type": "get_state"}));
    assert!(
        state.get("sessionName").is_none_or(Value::is_null),
        "{state}"
    );
    assert_eq!(rpc.finish(), 0);
}

#[test]
fn a_compaction_that_would_cross_the_cap_is_refused_and_raising_the_cap_over_rpc_lets_it_run() {
    let env = Env::new();
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::text("an expensive answer").usage(expensive()))
            .push(ScriptedResponse::text("second answer"))
            .push(ScriptedResponse::text("## Goal\nsummary of the talk")),
    );
    priced_models(&env, &mock);
    let mut rpc = rpc_with(&env, &["--max-cost", "0.5"], &[]);
    let state = rpc.ok(json!({"type": "get_state"}));
    assert_eq!(state["limits"]["maxCost"], json!(0.5), "{state}");
    assert_eq!(state["budget"]["maxCost"], json!(0.5), "{state}");
    rpc.ok(json!({"type": "prompt", "message": "hello"}));
    rpc.wait_event("agent_end");
    rpc.ok(json!({"type": "prompt", "message": "more"}));
    rpc.wait_event("agent_end");
    assert_eq!(mock.requests().len(), 2);

    // Lower the cap below what was spent: the summary call is refused.
    rpc.ok(json!({"type": "set_limits", "maxCost": 0.12}));
    let r = rpc.call(json!({"type": "compact"}));
    assert_eq!(r["success"], false, "{r}");
    assert!(
        r["error"].as_str().unwrap().contains("budget exhausted"),
        "{r}"
    );
    assert_eq!(
        mock.requests().len(),
        2,
        "the summary request was never sent"
    );

    // Raised again, the same compaction runs.
    rpc.ok(json!({"type": "set_limits", "maxCost": 1}));
    let done = rpc.ok(json!({"type": "compact"}));
    assert!(
        done["summary"]
            .as_str()
            .unwrap()
            .contains("summary of the talk")
    );
    assert_eq!(mock.requests().len(), 3);

    let stats = rpc.ok(json!({"type": "get_session_stats"}));
    assert_eq!(stats["budget"]["maxCost"], json!(1.0), "{stats}");
    assert!(
        stats["budget"]["spentCost"].as_f64().unwrap() > 0.115,
        "{stats}"
    );
    assert_eq!(stats["subagents"], json!(0));
    let bad = rpc.call(json!({"type": "set_limits", "maxCost": -1}));
    assert_eq!(bad["success"], false);
    assert!(bad["error"].as_str().unwrap().contains("maxCost"), "{bad}");
    assert_eq!(rpc.finish(), 0);
}

#[test]
fn childrens_spending_counts_toward_the_parents_cap_and_get_session_stats_counts_them() {
    let env = Env::new();
    std::fs::write(env.work().join("notes.txt"), "the answer is 42\n").unwrap();
    let task = json!({"agent": "worker", "task": "Read notes.txt and say the answer."});
    let mock = Mock::start(
        Scenario::new()
            // The parent hands the task to a child.
            .push(ScriptedResponse::tool_call("t1", "task", task.to_string()))
            // The child answers at once, expensively.
            .push(ScriptedResponse::text("42").usage(expensive()))
            .with_fallback(ScriptedResponse::text("never sent")),
    );
    priced_models(&env, &mock);
    let mut rpc = rpc_with(&env, &["--max-cost", "0.12"], &[]);
    rpc.ok(json!({"type": "prompt", "message": "delegate it"}));
    let refusal = rpc.wait_event("budget_exhausted");
    assert!(
        refusal["message"]
            .as_str()
            .unwrap()
            .starts_with("budget exhausted: spent $0.12 of $0.12"),
        "{refusal}"
    );
    rpc.wait_event("agent_end");
    assert_eq!(
        mock.requests().len(),
        2,
        "the parent's request after the child's expensive one was never sent"
    );
    let stats = rpc.ok(json!({"type": "get_session_stats"}));
    assert_eq!(stats["subagents"], json!(1), "{stats}");
    assert!(stats["cost"].as_f64().unwrap() > 0.115, "{stats}");
    assert_eq!(stats["budget"]["refused"], json!(1), "{stats}");
    assert_eq!(rpc.finish(), 0);

    // The child's transcript is its own session file naming the parent's.
    let files = env.session_files();
    assert_eq!(files.len(), 2, "{files:?}");
    let headers: Vec<Value> = files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            serde_json::from_str(text.lines().next().unwrap()).unwrap()
        })
        .collect();
    let child = headers
        .iter()
        .position(|h| h.get("parentSession").is_some_and(|p| !p.is_null()))
        .expect("a child session");
    let parent = 1 - child;
    assert_eq!(
        headers[child]["parentSession"].as_str().unwrap(),
        files[parent].display().to_string()
    );

    // After a restart the child's spending still counts.
    let out = env.run(
        &with(model_args(), &["-c", "--max-cost", "0.12", "-p", "go on"]),
        "",
    );
    assert_ne!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains("budget exhausted"),
        "{}",
        stderr(&out)
    );
    assert_eq!(mock.requests().len(), 2);

    // And after switch_session from a fresh session.
    let mut rpc = rpc_with(&env, &["--no-session", "--max-cost", "0.12"], &[]);
    let fresh = rpc.ok(json!({"type": "get_session_stats"}));
    assert_eq!(fresh["budget"]["spentCost"], json!(0.0), "{fresh}");
    rpc.ok(json!({"type": "switch_session", "sessionPath": files[parent]}));
    let stats = rpc.ok(json!({"type": "get_session_stats"}));
    assert!(
        stats["budget"]["spentCost"].as_f64().unwrap() > 0.115,
        "{stats}"
    );
    assert_eq!(stats["subagents"], json!(1), "{stats}");
    let id = rpc.send(json!({"type": "prompt", "message": "go on"}));
    assert_eq!(rpc.response(&id)["success"], true);
    rpc.wait_event("budget_exhausted");
    rpc.wait_event("agent_end");
    assert_eq!(mock.requests().len(), 2);
    assert_eq!(rpc.finish(), 0);
}

/// Regression: a sub-agent whose result never arrived and whose session file
/// is unreadable counted as nothing when the session was continued, without
/// a word. Now `-c` says so (the ledger cannot count it).
#[test]
fn continuing_a_session_whose_sub_agent_session_is_unreadable_says_so() {
    let env = Env::new();
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::text("first"))
            .push(ScriptedResponse::text("second")),
    );
    priced_models(&env, &mock);
    let out = env.run(&with(model_args(), &["-p", "hello"]), "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let files = env.session_files();
    assert_eq!(files.len(), 1, "{files:?}");
    // A sub-agent started in that session; the process ended before its
    // result, and its file was damaged afterwards.
    let child_path = damage_a_sub_agent_session(&files[0]);

    let out = env.run(&with(model_args(), &["-c", "-p", "go on"]), "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("makai: a sub-agent's session could not be read")
            && err.contains(&child_path.display().to_string()),
        "{err}"
    );
    assert_eq!(mock.requests().len(), 2);
}
