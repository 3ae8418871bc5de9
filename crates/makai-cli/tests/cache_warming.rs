//! pi's cache warming through the binary (RPC mode) against the scripted
//! server on the Anthropic wire: a model whose `promptCache` lifetime is 11 s
//! gets its last request sent again with `max_tokens: 1` a second after it
//! went out, while a tool runs and after the run (idle), recorded as pi's
//! `cache_warm` usage entries; `cacheWarming: "off"` sends none, and leaving
//! the conversation stops it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use crate::common::*;
use makai_mockllm::{RecordedRequest, Scenario, ScriptedResponse, Usage};
use serde_json::{Value, json};

/// A 100 000-token prompt; a lost cache entry costs a $3 write instead of a
/// $0.03 read, so even the idle chance of 15% pays for a refresh.
fn write_models(env: &Env, mock: &Mock) {
    let models = json!({"providers": {"gw": {
        "baseUrl": mock.server.url(),
        "api": "anthropic-messages",
        "apiKey": "k",
        "models": [{
            "id": "claude-warm",
            "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 30},
            "promptCache": {"short": 11},
        }],
    }}});
    std::fs::write(env.home.path().join("models.json"), models.to_string()).unwrap();
}

fn is_warm(r: &RecordedRequest) -> bool {
    r.body["max_tokens"] == 1
}

fn answers_a_tool(r: &RecordedRequest) -> bool {
    r.body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_array())
        .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_result"))
}

/// A slow `bash` call, then an answer; every refresh gets a one-token reply
/// read from the cache.
fn scenario() -> Scenario {
    Scenario::from_responder(Arc::new(|r: &RecordedRequest| {
        if is_warm(r) {
            ScriptedResponse::text(".").usage(Usage::new(0, 1).with_cache(100_000, 0))
        } else if answers_a_tool(r) {
            ScriptedResponse::text("the command finished")
                .usage(Usage::new(10, 5).with_cache(100_000, 0))
        } else {
            ScriptedResponse::tool_call("call_1", "bash", r#"{"command":"sleep 2.5"}"#)
                .usage(Usage::new(10, 20).with_cache(0, 100_000))
        }
    }))
}

/// The request bodies without the output cap.
fn without_cap(r: &RecordedRequest) -> Value {
    let mut body = r.body.clone();
    body.as_object_mut().unwrap().remove("max_tokens");
    body
}

fn args() -> Vec<String> {
    s(&["--model", "gw/claude-warm"])
}

#[test]
fn a_long_tool_call_and_the_idle_wait_keep_the_prompt_cache_warm_as_in_pi() {
    let mock = Mock::start(scenario());
    let env = Env::new();
    write_models(&env, &mock);
    let mut rpc = Rpc::start(&env, &args());
    let id = rpc.send(json!({"type": "prompt", "message": "run the slow command"}));
    assert_eq!(rpc.response(&id)["success"], true);
    rpc.wait_event("agent_settled");
    // Idle now: a refresh is due a second after the last request.
    let warmed = rpc.wait_event("entry_appended");
    std::thread::sleep(Duration::from_millis(1500));

    let requests = mock.requests();
    let real: Vec<usize> = (0..requests.len())
        .filter(|&i| !is_warm(&requests[i]))
        .collect();
    assert_eq!(
        real.len(),
        2,
        "two real requests: the tool call and the answer"
    );
    let warm_between = (real[0] + 1..real[1])
        .filter(|&i| is_warm(&requests[i]))
        .count();
    let warm_after = (real[1] + 1..requests.len())
        .filter(|&i| is_warm(&requests[i]))
        .count();
    assert!(
        warm_between >= 1,
        "the cache was kept warm while the tool ran: {warm_between} refreshes"
    );
    assert!(
        warm_after >= 1,
        "the cache was kept warm while idle: {warm_after} refreshes"
    );
    // A refresh is the request it keeps warm, with a one-token cap.
    for (i, r) in requests.iter().enumerate() {
        if is_warm(r) {
            let kept = if i < real[1] { real[0] } else { real[1] };
            assert_eq!(without_cap(r), without_cap(&requests[kept]), "refresh {i}");
        }
    }

    // Each refresh is pi's `cache_warm` usage entry, announced to clients.
    assert_eq!(warmed["entry"]["type"], "usage", "{warmed}");
    assert_eq!(warmed["entry"]["kind"], "cache_warm");
    assert_eq!(warmed["entry"]["provider"], "gw");
    assert_eq!(warmed["entry"]["model"], "claude-warm");
    assert_eq!(warmed["entry"]["usage"]["cacheRead"], 100_000);
    let file = env.session_files().pop().expect("a session file");
    let text = std::fs::read_to_string(&file).unwrap();
    let entries: Vec<Value> = json_lines(&text);
    let warms: Vec<&Value> = entries
        .iter()
        .filter(|e| e["type"] == "usage" && e["kind"] == "cache_warm")
        .collect();
    assert!(warms.len() >= 2, "{text}");
    let cost = warms[0]["usage"]["cost"]["total"].as_f64().unwrap();
    // 100 000 cached tokens at $0.3 per million and one output token at $15.
    assert!((cost - 0.030_015).abs() < 1e-9, "{}", warms[0]);
    // They count in the session's totals (the real requests read 100 000 once).
    let stats = rpc.ok(json!({"type": "get_session_stats"}));
    assert!(
        stats["tokens"]["cacheRead"].as_u64().unwrap() >= 300_000,
        "{stats}"
    );

    // Leaving the conversation stops the warming.
    rpc.ok(json!({"type": "new_session"}));
    std::thread::sleep(Duration::from_millis(1500));
    let settled = mock.requests().len();
    std::thread::sleep(Duration::from_millis(2000));
    assert_eq!(
        mock.requests().len(),
        settled,
        "no refresh after the session changed"
    );
}

#[test]
fn cache_warming_off_sends_no_refresh() {
    let mock = Mock::start(scenario());
    let env = Env::new();
    write_models(&env, &mock);
    env.settings(json!({"cacheWarming": "off"}));
    let mut rpc = Rpc::start(&env, &args());
    let id = rpc.send(json!({"type": "prompt", "message": "run the slow command"}));
    assert_eq!(rpc.response(&id)["success"], true);
    rpc.wait_event("agent_settled");
    std::thread::sleep(Duration::from_millis(2000));
    let requests = mock.requests();
    assert_eq!(
        requests.len(),
        2,
        "the tool call and the answer, no refresh"
    );
    assert!(!requests.iter().any(is_warm));
}

#[test]
fn the_interactive_ui_shows_consecutive_refreshes_as_one_line_and_session_says_whats_next() {
    use crate::common::tmux::{Pane, tmux_available};
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::from_responder(Arc::new(|r: &RecordedRequest| {
        if is_warm(r) {
            ScriptedResponse::text(".").usage(Usage::new(0, 1).with_cache(100_000, 0))
        } else {
            ScriptedResponse::text("a cached answer")
                .usage(Usage::new(10, 20).with_cache(0, 100_000))
        }
    })));
    let env = Env::new();
    write_models(&env, &mock);
    env.settings(json!({"showCacheMissNotices": true}));
    let pane = Pane::start(&env, &args());
    pane.wait_text("Ask anything");
    pane.type_text("question");
    pane.keys(&["Enter"]);
    pane.wait_text("a cached answer");
    // Two refreshes at $0.030015 each: one line with their sum.
    let screen = pane.wait_text("Cache warmed: $0.06003");
    assert_eq!(
        screen.matches("Cache warmed").count(),
        1,
        "consecutive refreshes make one line: {screen}"
    );
    pane.type_text("/session");
    pane.keys(&["Enter"]);
    let screen = pane.wait_text("Cache warming: Decision in");
    assert!(
        screen.contains("15% continuation probability, expected savings $0.416 >= $0.050 -> warm"),
        "{screen}"
    );
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}
