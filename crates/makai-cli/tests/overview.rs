//! The working-directory overview in the system prompt, through the built
//! binary against the scripted server: on when the run has no tools (the
//! built-in local model's default), off with tools, and the
//! `workspaceOverview` setting for every other case; a model whose entry says
//! it cannot call tools (`compat.supportsTools: false`) runs without them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use makai_mockllm::{Scenario, ScriptedResponse};

const SECRET: &str = "sk-never-in-a-prompt-42";

/// A work folder that looks like a small project, with a secret beside it.
fn project(env: &Env) {
    std::fs::write(
        env.work().join("README.md"),
        "# widget\n\nwidget is a Rust library for agents.\n",
    )
    .unwrap();
    std::fs::create_dir(env.work().join("src")).unwrap();
    std::fs::write(env.work().join(".env"), format!("API_KEY={SECRET}\n")).unwrap();
}

/// Runs one prompt and returns the system prompt the server received.
fn system_prompt(env: &Env, extra: &[&str]) -> String {
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("ok")));
    let mut args = mock.args();
    args.extend(s(extra));
    args.extend(s(&["-p", "What does this repository do?"]));
    let out = env.run(&args, "");
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 1);
    let body = reqs[0].body.to_string();
    assert!(!body.contains(SECRET), "a secret reached the model: {body}");
    let first = &reqs[0].body["messages"][0];
    assert_eq!(first["role"], "system");
    first["content"].as_str().unwrap().to_string()
}

#[test]
fn a_run_without_tools_gets_the_overview_in_its_system_prompt() {
    let env = Env::new();
    project(&env);
    let p = system_prompt(&env, &["--no-tools"]);
    assert!(p.contains("# Overview of the working directory"), "{p}");
    assert!(p.contains("You cannot run tools in this session"), "{p}");
    // The built-in prompt for a run without tools describes none of them.
    assert!(p.contains("In this session you have no tools"), "{p}");
    for tool in ["read", "write", "edit", "bash", "grep", "find", "ls"] {
        assert!(
            !p.contains(&format!("## {tool}\n")),
            "{tool} described: {p}"
        );
    }
    assert!(
        p.contains("## README.md\n\n# widget\n\nwidget is a Rust library for agents.\n"),
        "{p}"
    );
    assert!(
        p.contains("## Top-level entries (2)\n\nREADME.md  src/\n"),
        "{p}"
    );
}

#[test]
fn a_run_with_tools_gets_no_overview_unless_the_setting_asks() {
    let env = Env::new();
    project(&env);
    let p = system_prompt(&env, &[]);
    assert!(!p.contains("Overview of the working directory"), "{p}");
    assert!(p.contains("## bash\n"), "{p}");

    env.settings(serde_json::json!({"workspaceOverview": true}));
    let p = system_prompt(&env, &[]);
    assert!(p.contains("# Overview of the working directory"), "{p}");
    assert!(!p.contains("cannot run tools"), "{p}");
    assert!(p.contains("widget is a Rust library"), "{p}");
}

#[test]
fn the_setting_turns_the_overview_off() {
    let env = Env::new();
    project(&env);
    env.settings(serde_json::json!({"workspaceOverview": false}));
    let p = system_prompt(&env, &["--no-tools"]);
    assert!(!p.contains("Overview of the working directory"), "{p}");
}

#[test]
fn the_local_providers_overview_fits_its_4096_token_window() {
    let env = Env::new();
    project(&env);
    let long: String = (0..3000)
        .map(|i| format!("More about widget, part {i}.\n"))
        .collect();
    std::fs::write(
        env.work().join("README.md"),
        format!("# widget\n\nwidget is a Rust library for agents.\n\n{long}"),
    )
    .unwrap();
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("ok")));
    let mut args = mock.args();
    args.extend(s(&[
        "--provider",
        "local",
        "--no-tools",
        "-p",
        "What is this?",
    ]));
    let out = env.run(&args, "");
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let req = &mock.requests()[0];
    // The local model's limits: a 512-token answer in a 4,096-token window,
    // greedy.
    assert_eq!(req.body["max_tokens"], 512, "{}", req.body);
    assert_eq!(req.body["temperature"], 0.0, "{}", req.body);
    let p = req.body["messages"][0]["content"].as_str().unwrap();
    let overview = &p[p.find("# Overview of the working directory").unwrap()..];
    assert!(overview.len() <= 1024 * 4, "{} bytes", overview.len());
    assert!(
        overview.contains("widget is a Rust library for agents."),
        "{overview}"
    );
    assert!(overview.contains("## README.md (first "), "{overview}");
    // The whole system prompt leaves room for the prompt and the answer.
    assert!(
        p.len() / 4 + 512 + 256 <= 4096,
        "{} bytes of system prompt",
        p.len()
    );
}

/// `<home>/models.json` with one model at `mock` that cannot call tools.
fn model_without_tools(env: &Env, mock: &Mock) {
    std::fs::write(
        env.home.path().join("models.json"),
        serde_json::json!({"providers": {"small": {
            "baseUrl": mock.v1(), "api": "openai-completions", "apiKey": "k",
            "models": [{"id": "no-tools-1b", "contextWindow": 8192, "maxTokens": 1024,
                        "compat": {"supportsTools": false}}]
        }}})
        .to_string(),
    )
    .unwrap();
}

#[test]
fn a_model_whose_entry_says_it_cannot_call_tools_runs_without_tools_and_gets_the_overview() {
    let env = Env::new();
    project(&env);
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("ok")));
    model_without_tools(&env, &mock);
    let out = env.run(
        &s(&["--model", "small/no-tools-1b", "-p", "What is this?"]),
        "",
    );
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("small/no-tools-1b cannot call tools") && err.contains("--tools"),
        "{err}"
    );
    let req = &mock.requests()[0];
    assert!(req.body.get("tools").is_none(), "{}", req.body);
    let p = req.body["messages"][0]["content"].as_str().unwrap();
    assert!(p.contains("# Overview of the working directory"), "{p}");
    assert!(p.contains("You cannot run tools in this session"), "{p}");
    assert!(p.contains("widget is a Rust library for agents."), "{p}");
    assert!(!req.body.to_string().contains(SECRET));
}

#[test]
fn tools_named_on_the_command_line_are_offered_even_to_a_model_said_to_lack_them() {
    let env = Env::new();
    project(&env);
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("ok")));
    model_without_tools(&env, &mock);
    let out = env.run(
        &s(&[
            "--model",
            "small/no-tools-1b",
            "--tools",
            "read",
            "-p",
            "What is this?",
        ]),
        "",
    );
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(
        !stderr(&out).contains("cannot call tools"),
        "{}",
        stderr(&out)
    );
    let req = &mock.requests()[0];
    let tools: Vec<&str> = req.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert_eq!(tools, ["read"]);
    let p = req.body["messages"][0]["content"].as_str().unwrap();
    assert!(!p.contains("Overview of the working directory"), "{p}");
}

#[test]
fn a_system_prompt_of_the_users_is_kept_in_a_run_without_tools() {
    let env = Env::new();
    project(&env);
    let p = system_prompt(
        &env,
        &["--no-tools", "--system-prompt", "You are a terse reviewer."],
    );
    assert!(p.starts_with("You are a terse reviewer."), "{p}");
    assert!(!p.contains("In this session you have no tools"), "{p}");
    assert!(p.contains("# Overview of the working directory"), "{p}");
}
