//! The first-turn tool policy of the built-in local model, through the built
//! binary against the scripted server on 127.0.0.1: with tools, the first call
//! of a run names one tool (`read` for a file the prompt names, else `ls`) and
//! offers only that one; the next calls are free. Other models are untouched.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use makai_mockllm::{Scenario, ScriptedResponse};
use serde_json::Value;

/// Runs `prompt` with `extra` flags; the model calls `call` first, then answers.
fn run(env: &Env, extra: &[&str], call: (&str, &str), prompt: &str) -> Vec<Value> {
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::new().with_tool_call("c1", call.0, call.1))
            .push(ScriptedResponse::text("done")),
    );
    let mut args = mock.args();
    args.extend(s(extra));
    args.extend(s(&["-p", prompt]));
    let out = env.run(&args, "");
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "done");
    mock.requests().into_iter().map(|r| r.body).collect()
}

#[test]
fn the_local_model_reads_the_file_its_prompt_names_first() {
    let env = Env::new();
    std::fs::write(env.work().join("Cargo.toml"), "[package]\nname = \"w\"\n").unwrap();
    let reqs = run(
        &env,
        &["--provider", "local", "--tools", "read,ls"],
        ("read", r#"{"path":"Cargo.toml"}"#),
        "What is the package name in Cargo.toml?",
    );
    assert_eq!(reqs.len(), 2);
    // First call: the named choice, sent to a local server as "required" with that tool alone.
    assert_eq!(reqs[0]["tool_choice"], "required", "{}", reqs[0]);
    assert_eq!(tool_names(&reqs[0]), ["read"]);
    // The file went back to the model, and the next call is free.
    assert!(
        reqs[1]["messages"].to_string().contains("name = \\\"w\\\""),
        "{}",
        reqs[1]
    );
    assert!(reqs[1].get("tool_choice").is_none(), "{}", reqs[1]);
    assert_eq!(tool_names(&reqs[1]), ["read", "ls"]);
}

#[test]
fn the_local_model_lists_the_folder_first_when_no_file_is_named() {
    let env = Env::new();
    std::fs::write(env.work().join("notes.txt"), "x").unwrap();
    let reqs = run(
        &env,
        &["--provider", "local", "--tools", "read,ls"],
        ("ls", "{}"),
        "What does this repository do?",
    );
    assert_eq!(reqs[0]["tool_choice"], "required");
    assert_eq!(tool_names(&reqs[0]), ["ls"]);
    assert!(
        reqs[1]["messages"].to_string().contains("notes.txt"),
        "{}",
        reqs[1]
    );
    assert!(reqs[1].get("tool_choice").is_none());
}

#[test]
fn other_models_choose_their_tools_themselves() {
    let env = Env::new();
    std::fs::write(env.work().join("Cargo.toml"), "[package]\n").unwrap();
    let reqs = run(
        &env,
        &["--tools", "read,ls"],
        ("read", r#"{"path":"Cargo.toml"}"#),
        "What is in Cargo.toml?",
    );
    assert!(reqs[0].get("tool_choice").is_none(), "{}", reqs[0]);
    assert_eq!(tool_names(&reqs[0]), ["read", "ls"]);
}
