//! pi 1.x RPC behaviour through the binary: framing, signals, typed command
//! fields, `agent_settled`, an abort that continues queued messages, and the
//! state-change events.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::*;
use makai_mockllm::{Scenario, ScriptedResponse};
use serde_json::{Value, json};

/// Reads until `agent_settled`; returns it.
fn settled(rpc: &mut Rpc) -> Value {
    rpc.wait_event("agent_settled")
}

#[test]
fn records_split_on_lf_only_and_crlf_is_accepted() {
    let env = Env::new();
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("ok")));
    let mut rpc = Rpc::start(&env, &mock.args());
    // U+2028 and U+2029 are not record boundaries; a CRLF ending is accepted.
    rpc.send_raw(
        "{\"id\":\"a\",\"type\":\"prompt\",\"message\":\"one\u{2028}two\u{2029}three\"}\r",
    );
    let r = rpc.response("a");
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(r["data"]["disposition"], "started");
    settled(&mut rpc);
    let sent = request_text(&mock.requests()[0]);
    assert!(sent.contains("one\u{2028}two\u{2029}three"), "{sent}");
    assert_eq!(rpc.finish(), 0);
}

#[test]
fn sigterm_aborts_the_running_prompt_keeps_its_message_and_exits_143() {
    let env = Env::new();
    let mock = Mock::start(
        Scenario::new().push(ScriptedResponse::text("a b c d e f g h i j k l m n").delay(200)),
    );
    let mut rpc = Rpc::start(&env, &mock.args());
    rpc.ok(json!({"type": "prompt", "message": "count"}));
    rpc.wait_event("message_update");
    let pid = nix::unistd::Pid::from_raw(rpc.child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let end = rpc.wait_event("agent_end");
    assert_eq!(end["messages"][1]["stopReason"], "aborted", "{end}");
    assert_eq!(rpc.wait_event("agent_settled")["aborted"], true);
    assert_eq!(rpc.finish(), 143);
    let file = std::fs::read_to_string(&env.session_files()[0]).unwrap();
    let lines = json_lines(&file);
    assert!(
        lines
            .iter()
            .any(|l| l["message"]["role"] == "assistant" && l["message"]["stopReason"] == "aborted"),
        "the aborted answer is in the session: {file}"
    );
}

/// Each command field with a value of every wrong JSON type: an error that
/// names the field, and nothing done (no model request, no file written).
#[test]
fn wrong_typed_fields_are_errors_naming_the_field_and_change_nothing() {
    let env = Env::new();
    let mock = Mock::start(Scenario::new());
    let mut rpc = Rpc::start(&env, &mock.args());
    let fields: [(&str, &str, Value); 19] = [
        ("prompt", "message", json!("x")),
        ("prompt", "images", json!([])),
        ("prompt", "streamingBehavior", json!("steer")),
        ("steer", "message", json!("x")),
        ("follow_up", "message", json!("x")),
        ("new_session", "parentSession", json!("/p.jsonl")),
        ("set_model", "provider", json!("p")),
        ("set_thinking_level", "level", json!("off")),
        ("set_steering_mode", "mode", json!("all")),
        ("set_follow_up_mode", "mode", json!("all")),
        ("compact", "customInstructions", json!("x")),
        ("set_auto_compaction", "enabled", json!(true)),
        ("set_auto_retry", "enabled", json!(true)),
        ("bash", "command", json!("echo hi")),
        ("export_html", "outputPath", json!("x.html")),
        ("switch_session", "sessionPath", json!("x.jsonl")),
        ("fork", "entryId", json!("abc")),
        ("get_entries", "since", json!("abc")),
        ("set_session_name", "name", json!("n")),
    ];
    let wrong = [
        json!(7),
        json!(true),
        json!([1]),
        json!({"a": 1}),
        json!(-1.5),
    ];
    for (command, field, good) in &fields {
        for bad in &wrong {
            if bad == good || (bad.is_array() && good.is_array()) {
                continue;
            }
            let mut cmd = json!({"type": command, "message": "m", "provider": "p",
                "modelId": "m", "level": "off", "mode": "all", "enabled": true,
                "command": "echo should-not-run", "sessionPath": "x", "entryId": "x",
                "name": "n"});
            cmd[*field] = bad.clone();
            let r = rpc.call(cmd.clone());
            assert_eq!(r["success"], false, "{cmd} was accepted: {r}");
            assert_eq!(r["command"], *command);
            let error = r["error"].as_str().unwrap();
            assert!(
                error.contains(field),
                "{cmd}: the error does not name '{field}': {error}"
            );
        }
    }
    assert!(mock.requests().is_empty(), "no model request was made");
    let written: Vec<_> = std::fs::read_dir(env.work())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(written.is_empty(), "nothing was written: {written:?}");
    assert!(
        env.session_files().is_empty(),
        "no session entry was written"
    );
    assert_eq!(rpc.finish(), 0);
}

#[test]
fn an_abort_continues_with_the_messages_still_queued() {
    let env = Env::new();
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::text("a b c d e f g h i j k l m n").delay(200))
            .push(ScriptedResponse::text("answer to the steer")),
    );
    let mut rpc = Rpc::start(&env, &mock.args());
    rpc.ok(json!({"type": "prompt", "message": "count"}));
    rpc.wait_event("message_update");
    let queued = rpc.ok(json!({"type": "steer", "message": "then do this"}));
    assert_eq!(queued["disposition"], "queued");
    rpc.ok(json!({"type": "abort"}));
    let first_end = rpc.wait_event("agent_end");
    assert_eq!(first_end["messages"][1]["stopReason"], "aborted");
    // No agent_settled between the two runs: the queued message continues.
    let mut between = Vec::new();
    loop {
        let v = rpc.next();
        let kind = v["type"].as_str().unwrap_or_default().to_string();
        between.push(kind.clone());
        if kind == "agent_start" {
            break;
        }
    }
    assert!(
        !between.contains(&"agent_settled".to_string()),
        "{between:?}"
    );
    let end = rpc.wait_event("agent_end");
    assert_eq!(
        end["messages"][0]["content"][0]["text"], "then do this",
        "{end}"
    );
    assert_eq!(settled(&mut rpc)["aborted"], false);
    assert!(request_text(&mock.requests()[1]).contains("then do this"));
    assert_eq!(rpc.finish(), 0);
}

#[test]
fn state_changes_are_events() {
    let env = Env::new();
    let mock = Mock::start(Scenario::new());
    let mut rpc = Rpc::start(&env, &mock.args());
    rpc.ok(json!({"type": "set_session_name", "name": "  named  "}));
    // The event goes out before the command's response.
    assert!(
        rpc.seen
            .contains(&json!({"type": "session_info_changed", "name": "named"})),
        "{:?}",
        rpc.seen
    );
    let state = rpc.ok(json!({"type": "get_state"}));
    assert_eq!(state["sessionName"], "named");
    assert_eq!(rpc.finish(), 0);
}

/// The slow first answer of [`streaming_slowly`].
fn slow_answer() -> String {
    format!("first answer,{}", " slowly".repeat(20))
}

/// An RPC session whose first prompt streams slowly (about 3 s), so commands
/// sent now land while it streams, even on a loaded machine; the server's
/// second answer is "follow-up answer". Returns once the first text arrived.
fn streaming_slowly(env: &Env) -> (Mock, Rpc) {
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::text(slow_answer()).delay(150))
            .push(ScriptedResponse::text("follow-up answer")),
    );
    let mut rpc = Rpc::start(env, &mock.args());
    rpc.ok(json!({"type": "prompt", "message": "go"}));
    rpc.wait_event("message_update");
    (mock, rpc)
}

#[test]
fn a_prompt_while_idle_settles_and_queued_input_is_never_lost() {
    let env = Env::new();
    let (_mock, mut rpc) = streaming_slowly(&env);
    let r =
        rpc.call(json!({"type": "prompt", "message": "later", "streamingBehavior": "followUp"}));
    assert_eq!(r["data"]["disposition"], "queued", "{r}");
    let state = rpc.ok(json!({"type": "get_state"}));
    assert_eq!(state["pendingMessageCount"], 1);
    settled(&mut rpc);
    let messages = rpc.ok(json!({"type": "get_messages"}));
    let texts: Vec<String> = messages["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            m["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    let slow = slow_answer();
    assert_eq!(texts, ["go", slow.as_str(), "later", "follow-up answer"]);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(rpc.finish(), 0);
}

/// Runs a two-call batch, steering while the first call runs; returns the two
/// tool results' texts.
fn steer_during_a_batch(extra: &[&str], settings: Option<Value>) -> Vec<String> {
    let env = Env::new();
    if let Some(s) = settings {
        env.settings(s);
    }
    let mock = Mock::start(
        Scenario::new()
            .push(
                ScriptedResponse::tool_call("a", "bash", r#"{"command": "sleep 0.6; echo one"}"#)
                    .with_tool_call("b", "bash", r#"{"command": "echo two"}"#),
            )
            .push(ScriptedResponse::text("turned")),
    );
    let mut args = mock.args();
    args.extend(extra.iter().map(|s| s.to_string()));
    let mut rpc = Rpc::start(&env, &args);
    rpc.ok(json!({"type": "prompt", "message": "run both"}));
    rpc.wait_event("tool_execution_start");
    rpc.ok(json!({"type": "steer", "message": "change course"}));
    settled(&mut rpc);
    let messages = rpc.ok(json!({"type": "get_messages"}));
    let results = messages["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "toolResult")
        .map(|m| {
            m["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(rpc.finish(), 0);
    results
}

#[test]
fn steering_skips_the_remaining_calls_by_default_and_after_tool_batch_runs_them() {
    let default = steer_during_a_batch(&[], None);
    assert!(default[0].contains("one"), "{default:?}");
    assert_eq!(default[1], "Skipped due to queued user message.");
    let flag = steer_during_a_batch(&["--steering", "after-tool-batch"], None);
    assert!(flag[1].contains("two"), "{flag:?}");
    let setting = steer_during_a_batch(&[], Some(json!({"steeringDelivery": "after-tool-batch"})));
    assert!(setting[1].contains("two"), "{setting:?}");
}

#[test]
fn a_thinking_level_change_is_an_event() {
    let env = Env::new();
    let mock = Mock::start(Scenario::new());
    std::fs::write(
        env.home.path().join("models.json"),
        json!({"providers": {"thinker": {
            "baseUrl": mock.v1(), "api": "openai-completions", "apiKey": "k",
            "models": [{"id": "deep", "reasoning": true}]
        }}})
        .to_string(),
    )
    .unwrap();
    let mut rpc = Rpc::start(&env, &s(&["--model", "thinker/deep"]));
    rpc.ok(json!({"type": "set_thinking_level", "level": "high"}));
    assert!(
        rpc.seen
            .contains(&json!({"type": "thinking_level_changed", "level": "high"})),
        "{:?}",
        rpc.seen
    );
    let cycled = rpc.ok(json!({"type": "cycle_thinking_level"}));
    let level = cycled["level"].clone();
    assert!(
        rpc.seen
            .contains(&json!({"type": "thinking_level_changed", "level": level})),
        "{:?}",
        rpc.seen
    );
    assert_eq!(rpc.ok(json!({"type": "get_state"}))["thinkingLevel"], level);
    assert_eq!(rpc.finish(), 0);
}

/// An RPC session on the scripted server's provider `lab`, whose model
/// `tooly` can call tools and `plain` (its entry says so) cannot: started on
/// `models[0]`, then one prompt on each of `models` in turn (`set_model`
/// before each), each run settled. Returns the test's folders, the server
/// (its requests) and the session, still open.
fn prompts_on_models(models: [&str; 3]) -> (Env, Mock, Rpc) {
    let env = Env::new();
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::text("one"))
            .push(ScriptedResponse::text("two"))
            .push(ScriptedResponse::text("three")),
    );
    std::fs::write(
        env.home.path().join("models.json"),
        json!({"providers": {"lab": {
            "baseUrl": mock.v1(), "api": "openai-completions", "apiKey": "k",
            "models": [
                {"id": "tooly"},
                {"id": "plain", "compat": {"supportsTools": false}}
            ]
        }}})
        .to_string(),
    )
    .unwrap();
    let mut rpc = Rpc::start(&env, &s(&["--model", &format!("lab/{}", models[0])]));
    for (model, prompt) in models.into_iter().zip(["one", "two", "three"]) {
        rpc.ok(json!({"type": "set_model", "provider": "lab", "modelId": model}));
        rpc.ok(json!({"type": "prompt", "message": prompt}));
        settled(&mut rpc);
    }
    (env, mock, rpc)
}

/// Switching mid-session to a model whose entry says it cannot call tools
/// withholds the tools from its requests and gives it the overview of the
/// working directory, as at start-up; switching back offers them again.
#[test]
fn a_model_switched_to_that_cannot_call_tools_gets_none() {
    let (_env, mock, rpc) = prompts_on_models(["tooly", "plain", "tooly"]);
    let offered: Vec<usize> = mock
        .requests()
        .iter()
        .map(|r| r.body["tools"].as_array().map_or(0, Vec::len))
        .collect();
    assert_eq!(offered.len(), 3);
    assert!(offered[0] > 0, "{offered:?}");
    assert_eq!(offered[1], 0, "{offered:?}");
    assert_eq!(offered[2], offered[0], "{offered:?}");
    // The model without tools gets the working directory's overview instead,
    // as it would at start-up; the models with tools do not.
    let overview: Vec<bool> = mock
        .requests()
        .iter()
        .map(|r| {
            r.body["messages"][0]["content"]
                .as_str()
                .unwrap_or_default()
                .contains("# Overview of the working directory")
        })
        .collect();
    assert_eq!(overview, [false, true, false]);
    assert_eq!(rpc.finish(), 0);
}

/// Regression: a session that started on a model without tools kept the
/// tool-less system prompt, and had no tools to offer, after a switch to a
/// model that can call them.
#[test]
fn a_session_started_without_tools_gets_them_and_their_prompt_on_a_model_with_tools() {
    let (_env, mock, rpc) = prompts_on_models(["plain", "tooly", "plain"]);
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    let tools: Vec<Vec<String>> = requests
        .iter()
        .map(|r| {
            r.body["tools"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|t| {
                            t["function"]["name"]
                                .as_str()
                                .unwrap_or_default()
                                .to_string()
                        })
                        .collect()
                })
                .unwrap_or_default()
        })
        .collect();
    assert!(tools[0].is_empty(), "{tools:?}");
    assert!(
        ["read", "bash", "edit"]
            .iter()
            .all(|t| tools[1].iter().any(|n| n == t)),
        "{tools:?}"
    );
    assert!(tools[2].is_empty(), "{tools:?}");
    // The prompt says what the run can do: no tools, then tools, then none.
    let prompts: Vec<String> = requests
        .iter()
        .map(|r| {
            r.body["messages"][0]["content"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    let says_no_tools: Vec<bool> = prompts
        .iter()
        .map(|p| p.contains("In this session you have no tools"))
        .collect();
    assert_eq!(says_no_tools, [true, false, true]);
    assert!(prompts[1].contains("through a small set of tools"));
    assert_eq!(rpc.finish(), 0);
}

/// Regression: `get_state` right after a queued prompt counted the queue from
/// the session's copy, which the event pump updates a moment later, so it
/// could say 0 (seen on the one-worker runtime in CI).
#[test]
fn get_state_counts_follow_ups_queued_by_the_commands_just_before() {
    let env = Env::new();
    let (_mock, mut rpc) = streaming_slowly(&env);
    // Three commands in a row, without waiting for their responses.
    let later = json!({"type": "prompt", "message": "later", "streamingBehavior": "followUp"});
    let first = rpc.send(later.clone());
    let second = rpc.send(later);
    let state = rpc.send(json!({"type": "get_state"}));
    for id in [first, second] {
        let r = rpc.response(&id);
        assert_eq!(r["data"]["disposition"], "queued", "{r}");
    }
    let state = rpc.response(&state);
    assert_eq!(state["data"]["pendingMessageCount"], 2, "{state}");
    settled(&mut rpc);
    assert_eq!(rpc.finish(), 0);
}
