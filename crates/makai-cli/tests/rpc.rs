//! RPC mode through the built binary: every command, bad input, steering,
//! follow-ups, abort, bash and compaction.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::*;
use makai_mockllm::{BenchPacing, Scenario, ScriptedResponse, Usage, bench_responder};
use serde_json::{Value, json};

fn wait_idle(rpc: &mut Rpc) -> Value {
    rpc.wait_event("agent_end")
}

#[test]
fn rpc_prompt_state_session_commands_and_bad_input() {
    let env = Env::new();
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::text("first reply").usage(Usage::new(40, 7)))
            .push(ScriptedResponse::text("second reply").usage(Usage::new(60, 9))),
    );
    let mut rpc = Rpc::start(&env, &mock.args());

    // Bad input never stops the process.
    rpc.send_raw("this is not json");
    let r = rpc.next();
    assert_eq!(r["type"], "response");
    assert_eq!(r["command"], "parse");
    assert_eq!(r["success"], false);
    assert!(
        r["error"]
            .as_str()
            .unwrap()
            .contains("Failed to parse command")
    );
    let r = rpc.call(json!({"type": "warp_drive"}));
    assert_eq!(r["success"], false);
    assert_eq!(r["command"], "warp_drive");
    assert_eq!(r["error"], "Unknown command: warp_drive");
    let r = rpc.call(json!({"type": "set_model"}));
    assert_eq!(r["success"], false);
    assert!(r["error"].as_str().unwrap().contains("provider"), "{r}");

    let state = rpc.ok(json!({"type": "get_state"}));
    assert_eq!(state["model"]["id"], "mock-model");
    assert_eq!(state["isStreaming"], false);
    assert_eq!(state["messageCount"], 0);
    assert_eq!(state["steeringMode"], "one-at-a-time");

    let id = rpc.send(json!({"type": "prompt", "message": "hello there"}));
    let r = rpc.response(&id);
    assert_eq!(r["success"], true);
    assert_eq!(r["data"], json!({"disposition": "started"}));
    let end = wait_idle(&mut rpc);
    assert_eq!(end["messages"][1]["content"][0]["text"], "first reply");

    let msgs = rpc.ok(json!({"type": "get_messages"}));
    assert_eq!(msgs["messages"].as_array().unwrap().len(), 2);
    let text = rpc.ok(json!({"type": "get_last_assistant_text"}));
    assert_eq!(text["text"], "first reply");
    let stats = rpc.ok(json!({"type": "get_session_stats"}));
    assert_eq!(stats["userMessages"], 1);
    assert_eq!(stats["assistantMessages"], 1);
    assert_eq!(stats["tokens"]["input"], 40);
    assert_eq!(stats["tokens"]["output"], 7);
    assert!(stats["contextUsage"]["contextWindow"].as_u64().unwrap() > 0);

    assert_eq!(
        rpc.call(json!({"type": "set_session_name", "name": "  "}))["success"],
        false
    );
    rpc.ok(json!({"type": "set_session_name", "name": "my work"}));
    let state = rpc.ok(json!({"type": "get_state"}));
    assert_eq!(state["sessionName"], "my work");
    let first_file = state["sessionFile"].as_str().unwrap().to_string();
    assert!(std::path::Path::new(&first_file).is_file());

    let html_path = env.work().join("out/session.html");
    let exported = rpc.ok(json!({"type": "export_html", "outputPath": html_path}));
    assert_eq!(exported["path"], html_path.display().to_string());
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(html.starts_with("<!doctype html>") && html.contains("first reply"));
    // The system prompt and the tools the model was given (pi's #11261).
    assert!(
        html.contains("<summary>System prompt</summary><pre>You are makai"),
        "{html}"
    );
    assert!(
        html.contains("<summary>Tools (") && html.contains("read: "),
        "{html}"
    );
    assert!(!html.contains("<script src") && !html.contains("<link"));

    let entries = rpc.ok(json!({"type": "get_entries"}));
    let list = entries["entries"].as_array().unwrap();
    assert!(list.iter().any(|e| e["type"] == "session_info"));
    let user_entry = list
        .iter()
        .find(|e| e["type"] == "message" && e["message"]["role"] == "user")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(entries["leafId"], list.last().unwrap()["id"]);
    let since = rpc.ok(json!({"type": "get_entries", "since": user_entry}));
    assert_eq!(
        since["entries"].as_array().unwrap().len(),
        list.len()
            - (list
                .iter()
                .position(|e| e["id"] == user_entry.as_str())
                .unwrap()
                + 1)
    );
    assert_eq!(
        rpc.call(json!({"type": "get_entries", "since": "nope"}))["success"],
        false
    );
    let tree = rpc.ok(json!({"type": "get_tree"}));
    assert_eq!(tree["tree"].as_array().unwrap().len(), 1);
    assert!(tree["tree"][0]["children"].is_array());
    let forks = rpc.ok(json!({"type": "get_fork_messages"}));
    assert_eq!(
        forks["messages"][0],
        json!({"entryId": user_entry, "text": "hello there"})
    );

    // Fork before the first user message: a new session, the text comes back.
    let fork = rpc.ok(json!({"type": "fork", "entryId": user_entry}));
    assert_eq!(fork, json!({"text": "hello there", "cancelled": false}));
    let state = rpc.ok(json!({"type": "get_state"}));
    assert_eq!(state["messageCount"], 0);
    assert_ne!(state["sessionFile"], first_file.as_str());
    assert_eq!(
        rpc.call(json!({"type": "fork", "entryId": "zzz"}))["success"],
        false
    );

    // Switch back: the transcript is restored.
    let sw = rpc.ok(json!({"type": "switch_session", "sessionPath": first_file}));
    assert_eq!(sw["cancelled"], false);
    assert_eq!(rpc.ok(json!({"type": "get_state"}))["messageCount"], 2);
    assert_eq!(
        rpc.call(json!({"type": "switch_session", "sessionPath": "/nonexistent.jsonl"}))["success"],
        false
    );

    // Clone copies the branch into a new file.
    rpc.ok(json!({"type": "clone"}));
    let state = rpc.ok(json!({"type": "get_state"}));
    assert_eq!(state["messageCount"], 2);
    assert_ne!(state["sessionFile"], first_file.as_str());

    let created = rpc.ok(json!({"type": "new_session"}));
    assert_eq!(created["cancelled"], false);
    assert_eq!(rpc.ok(json!({"type": "get_state"}))["messageCount"], 0);
    assert_eq!(
        rpc.ok(json!({"type": "get_commands"}))["commands"],
        json!([])
    );

    // A second prompt in the new session works, then stdin closes: exit 0.
    let id = rpc.send(json!({"type": "prompt", "message": "again"}));
    assert_eq!(rpc.response(&id)["success"], true);
    wait_idle(&mut rpc);
    assert_eq!(rpc.finish(), 0);
}

#[test]
fn rpc_models_thinking_modes_and_switches() {
    let env = Env::new();
    let mock = Mock::start(Scenario::new());
    std::fs::write(
        env.home.path().join("models.json"),
        json!({"providers": {"local": {"baseUrl": mock.v1(), "api": "openai-completions",
            "models": [{"id": "plain"}, {"id": "thinker", "reasoning": true}]}}})
        .to_string(),
    )
    .unwrap();
    let mut rpc = Rpc::start(&env, &mock.args());
    let models = rpc.ok(json!({"type": "get_available_models"}));
    let ids: Vec<&str> = models["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&"mock-model") && ids.contains(&"thinker") && ids.contains(&"plain"),
        "{ids:?}"
    );
    assert!(
        !ids.contains(&"claude-sonnet-4-5"),
        "no key for anthropic: {ids:?}"
    );

    let r = rpc.call(
        json!({"type": "set_model", "provider": "anthropic", "modelId": "claude-sonnet-4-5"}),
    );
    assert_eq!(r["success"], false);
    assert_eq!(r["error"], "Model not found: anthropic/claude-sonnet-4-5");
    let m = rpc.ok(json!({"type": "set_model", "provider": "local", "modelId": "thinker"}));
    assert_eq!(m["id"], "thinker");
    assert_eq!(m["reasoning"], true);

    rpc.ok(json!({"type": "set_thinking_level", "level": "high"}));
    assert_eq!(
        rpc.ok(json!({"type": "get_state"}))["thinkingLevel"],
        "high"
    );
    let levels = rpc.ok(json!({"type": "get_available_thinking_levels"}));
    assert_eq!(
        levels["levels"],
        json!(["off", "minimal", "low", "medium", "high"])
    );
    let cycled = rpc.ok(json!({"type": "cycle_thinking_level"}));
    assert_eq!(cycled["level"], "off");
    assert_eq!(
        rpc.call(json!({"type": "set_thinking_level", "level": "max-ish"}))["success"],
        false
    );

    let cycled = rpc.ok(json!({"type": "cycle_model"}));
    assert_eq!(cycled["isScoped"], false);
    assert!(cycled["model"]["id"].is_string());
    rpc.ok(json!({"type": "set_model", "provider": "local", "modelId": "plain"}));
    assert_eq!(rpc.ok(json!({"type": "cycle_thinking_level"})), Value::Null);
    rpc.ok(json!({"type": "set_thinking_level", "level": "high"}));
    assert_eq!(
        rpc.ok(json!({"type": "get_state"}))["thinkingLevel"],
        "off",
        "clamped"
    );

    rpc.ok(json!({"type": "set_steering_mode", "mode": "all"}));
    rpc.ok(json!({"type": "set_follow_up_mode", "mode": "all"}));
    let state = rpc.ok(json!({"type": "get_state"}));
    assert_eq!(state["steeringMode"], "all");
    assert_eq!(state["followUpMode"], "all");
    assert_eq!(
        rpc.call(json!({"type": "set_steering_mode", "mode": "some"}))["success"],
        false
    );
    rpc.ok(json!({"type": "set_auto_compaction", "enabled": false}));
    assert_eq!(
        rpc.ok(json!({"type": "get_state"}))["autoCompactionEnabled"],
        false
    );
    rpc.ok(json!({"type": "set_auto_retry", "enabled": false}));
    rpc.ok(json!({"type": "abort_retry"}));
    assert_eq!(
        rpc.call(json!({"type": "set_auto_retry"}))["success"],
        false
    );
    assert_eq!(rpc.finish(), 0);
}

#[test]
fn rpc_steering_and_follow_up_are_delivered_in_order() {
    let env = Env::new();
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::tool_call(
                "c1",
                "bash",
                r#"{"command":"sleep 1; echo slept"}"#,
            ))
            .push(ScriptedResponse::text("ack steer"))
            .push(ScriptedResponse::text("ack follow")),
    );
    let mut rpc = Rpc::start(&env, &mock.args());
    let id = rpc.send(json!({"type": "prompt", "message": "start work"}));
    assert_eq!(rpc.response(&id)["success"], true);
    rpc.wait_event("tool_execution_start");
    let busy = rpc.call(json!({"type": "prompt", "message": "no behavior"}));
    assert_eq!(busy["success"], false);
    assert!(
        busy["error"]
            .as_str()
            .unwrap()
            .contains("streamingBehavior")
    );
    rpc.ok(json!({"type": "steer", "message": "STEER-MSG"}));
    rpc.ok(json!({"type": "follow_up", "message": "FOLLOW-MSG"}));
    let state = rpc.ok(json!({"type": "get_state"}));
    assert_eq!(state["isStreaming"], true);
    let mut ends = 0;
    let mut queue_updates = 0;
    while ends < 1 {
        let v = rpc.next();
        match v["type"].as_str() {
            Some("agent_end") => ends += 1,
            Some("queue_update") => queue_updates += 1,
            _ => {}
        }
    }
    assert!(queue_updates >= 1);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3, "tool turn, steered turn, follow-up turn");
    let second = request_text(&reqs[1]);
    assert!(
        second.contains("STEER-MSG") && second.contains("slept"),
        "{second}"
    );
    assert!(
        !second.contains("FOLLOW-MSG"),
        "follow-up waits for the end: {second}"
    );
    assert!(request_text(&reqs[2]).contains("FOLLOW-MSG"));
    assert_eq!(
        rpc.ok(json!({"type": "get_last_assistant_text"}))["text"],
        "ack follow"
    );
    assert_eq!(rpc.finish(), 0);
}

#[test]
fn rpc_abort_stops_the_stream() {
    let env = Env::new();
    let long = "word ".repeat(400);
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::text(long).delay(20))
            .push(ScriptedResponse::text("after abort")),
    );
    let mut rpc = Rpc::start(&env, &mock.args());
    let id = rpc.send(json!({"type": "prompt", "message": "talk a lot"}));
    assert_eq!(rpc.response(&id)["success"], true);
    rpc.wait_event("message_update");
    let started = std::time::Instant::now();
    rpc.ok(json!({"type": "abort"}));
    assert!(started.elapsed() < Duration::from_secs(5));
    let end = rpc.wait_event("agent_end");
    let last = end["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["stopReason"], "aborted", "{last}");
    assert_eq!(rpc.ok(json!({"type": "get_state"}))["isStreaming"], false);
    // The session carries on.
    let id = rpc.send(json!({"type": "prompt", "message": "again"}));
    assert_eq!(rpc.response(&id)["success"], true);
    let end = wait_idle(&mut rpc);
    assert_eq!(end["messages"][1]["content"][0]["text"], "after abort");
    assert_eq!(rpc.finish(), 0);
}

#[test]
fn rpc_bash_then_prompt_then_compact() {
    let env = Env::new();
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::text("answer one"))
            .push(ScriptedResponse::text("answer two"))
            .push(ScriptedResponse::text("SUMMARY-TEXT of the work")),
    );
    let mut rpc = Rpc::start(&env, &mock.args());
    let id = rpc.send(json!({"type": "bash", "command": "echo hi; echo there"}));
    let mut updates = String::new();
    let result = loop {
        let v = rpc.next();
        if v["type"] == "bash_execution_update" {
            assert_eq!(v["id"], id.as_str());
            updates.push_str(v["delta"].as_str().unwrap());
        } else if v["type"] == "response" && v["id"] == id.as_str() {
            break v;
        }
    };
    assert_eq!(result["success"], true, "{result}");
    assert_eq!(result["data"]["output"], "hi\nthere");
    assert_eq!(result["data"]["exitCode"], 0);
    assert_eq!(result["data"]["cancelled"], false);
    assert_eq!(updates, "hi\nthere");

    // A progress line redrawn after CR streams once, as last drawn: the
    // updates join into the output, nothing repeated.
    let id = rpc.send(json!({"type": "bash", "command":
        "printf 'one\\n'; sleep 0.3; printf ' 10%%'; sleep 0.3; printf '\\r 60%%'; sleep 0.3; printf '\\r100%%\\n'; sleep 0.3; printf 'done'"}));
    let mut updates = String::new();
    let result = loop {
        let v = rpc.next();
        if v["type"] == "bash_execution_update" {
            updates.push_str(v["delta"].as_str().unwrap());
        } else if v["type"] == "response" && v["id"] == id.as_str() {
            break v;
        }
    };
    assert_eq!(result["data"]["output"], "one\n100%\ndone");
    assert_eq!(updates, "one\n100%\ndone");

    let id = rpc.send(json!({"type": "bash", "command": "sleep 10"}));
    std::thread::sleep(Duration::from_millis(300));
    rpc.ok(json!({"type": "abort_bash"}));
    let r = rpc.response(&id);
    assert_eq!(r["data"]["cancelled"], true, "{r}");

    let msgs = rpc.ok(json!({"type": "get_messages"}));
    assert_eq!(msgs["messages"][0]["role"], "bashExecution");

    for q in ["question one", "question two"] {
        let id = rpc.send(json!({"type": "prompt", "message": q}));
        assert_eq!(rpc.response(&id)["success"], true);
        wait_idle(&mut rpc);
    }
    assert!(
        request_text(&mock.requests()[0]).contains("echo hi"),
        "bash output reaches the model"
    );

    let id = rpc.send(json!({"type": "compact", "customInstructions": "focus on answers"}));
    let mut saw_start = false;
    let mut saw_end = false;
    let r = loop {
        let v = rpc.next();
        match v["type"].as_str() {
            Some("compaction_start") => saw_start = v["reason"] == "manual",
            Some("compaction_end") => saw_end = v["result"]["summary"].is_string(),
            Some("response") if v["id"] == id.as_str() => break v,
            _ => {}
        }
    };
    assert!(
        saw_start && saw_end,
        "{r} {:?}",
        rpc.seen.iter().rev().take(4).collect::<Vec<_>>()
    );
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(r["data"]["summary"], "SUMMARY-TEXT of the work");
    assert!(r["data"]["firstKeptEntryId"].is_string());
    assert!(request_text(&mock.requests()[2]).contains("focus on answers"));
    let msgs = rpc.ok(json!({"type": "get_messages"}));
    assert_eq!(msgs["messages"][0]["role"], "compactionSummary");
    let stats = rpc.ok(json!({"type": "get_session_stats"}));
    assert_eq!(
        stats["contextUsage"]["tokens"],
        Value::Null,
        "unknown until the next reply"
    );
    let entries = rpc.ok(json!({"type": "get_entries"}));
    assert!(
        entries["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["type"] == "compaction")
    );
    let again = rpc.call(json!({"type": "compact"}));
    assert_eq!(again["success"], false);
    assert_eq!(rpc.finish(), 0);
}

#[test]
fn session_is_titled_in_the_background_after_the_first_exchange() {
    let env = Env::new();
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::text("The parser now handles CRLF."))
            .push(ScriptedResponse::text(
                "Title: \"Fixing CRLF in the parser.\"",
            )),
    );
    let mut rpc = Rpc::start_with(&env, &mock.args(), &[("MAKAI_AUTO_TITLE", "1")]);
    rpc.ok(json!({"type": "prompt", "message": "Fix the CRLF handling"}));
    wait_idle(&mut rpc);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut name = Value::Null;
    while std::time::Instant::now() < deadline {
        name = rpc.ok(json!({"type": "get_state"}))["sessionName"].clone();
        if !name.is_null() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(name, "Fixing CRLF in the parser");
    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "one answer and one title request");
    assert!(request_text(&requests[1]).contains("Fix the CRLF handling"));
    // The name is a session entry, so it survives a reload.
    let files = env.session_files();
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert!(text.contains("\"type\":\"session_info\""), "{text}");
}

/// The session opens its model's connection before the client has sent
/// anything, and the first prompt's request goes out on it, without waiting
/// for a TLS handshake (here, a TCP one).
#[test]
fn the_model_connection_is_open_before_the_first_prompt() {
    let env = Env::new();
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("first reply")));
    let mut rpc = Rpc::start(&env, &mock.args());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while mock.server.connections() == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(mock.server.connections(), 1);
    assert_eq!(mock.server.served(), 0, "nothing was sent to the model");
    let id = rpc.send(json!({"type": "prompt", "message": "hello"}));
    assert_eq!(rpc.response(&id)["success"], true);
    let end = wait_idle(&mut rpc);
    assert_eq!(end["messages"][1]["content"][0]["text"], "first reply");
    assert_eq!(mock.server.connections(), 1);
    assert_eq!(rpc.finish(), 0);
}

/// Events leave in bursts (those read from the network together, in one
/// write) or one by one, through the one writer the responses use: with
/// commands answered in the middle of a streamed answer, every line is one
/// whole record, no delta is lost or reordered, and each command is answered.
#[test]
fn rpc_responses_interleave_whole_with_a_streamed_answer() {
    let tokens = 2000;
    let mock = Mock::start(Scenario::from_responder(bench_responder(
        tokens,
        0,
        BenchPacing::Stream {
            delay: Duration::from_micros(200),
        },
    )));
    let mut text: String = (0..tokens - 1).map(|i| format!("w{i} ")).collect();
    text.push_str("[final]");
    let env = Env::new();
    let mut rpc = Rpc::start(&env, &mock.args());
    let prompt = rpc.send(json!({"type": "prompt", "message": "stream"}));
    let mut asked = Vec::new();
    let mut answered = Vec::new();
    let mut deltas = String::new();
    let mut seen = 0;
    loop {
        let v = rpc.next();
        match v["type"].as_str().unwrap() {
            "response" => answered.push(v["id"].as_str().unwrap().to_string()),
            "message_update" => {
                let e = &v["assistantMessageEvent"];
                if e["type"] == "text_delta" {
                    deltas.push_str(e["delta"].as_str().unwrap());
                    seen += 1;
                    // Ask for the state now and then while the answer streams.
                    if seen % 100 == 0 && asked.len() < 20 {
                        asked.push(rpc.send(json!({"type": "get_state"})));
                    }
                }
            }
            "agent_end" => break,
            _ => {}
        }
    }
    assert_eq!(deltas, text);
    assert_eq!(
        answered.first(),
        Some(&prompt),
        "the prompt is answered first"
    );
    for id in &asked {
        if !answered.contains(id) {
            assert_eq!(rpc.response(id)["success"], true);
        }
    }
    assert!(!asked.is_empty(), "no command was sent during the answer");
}
