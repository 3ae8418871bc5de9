//! pi's `/reload` reads the instructions again: a context file
//! (`AGENTS.md`) changed and an `APPEND_SYSTEM.md` added while a session
//! runs reach the next run's system prompt, and a sub-agent's, once the
//! session reloads them, and not before; checked on the requests the
//! scripted server recorded.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use makai_mockllm::{Scenario, ScriptedResponse};
use serde_json::{Value, json};

/// The system prompt a request carried.
fn system_prompt_in(request: &Value) -> String {
    let messages = request["messages"].as_array().unwrap();
    let system = messages
        .iter()
        .find(|m| m["role"] == "system" || m["role"] == "developer")
        .unwrap_or_else(|| panic!("no system prompt in {request}"));
    system["content"].as_str().unwrap().to_string()
}

/// Runs `text` to its end; the system prompt its request carried.
async fn system_prompt_of(app: &makai_cli::app::AppSession, mock: &Mock, text: &str) -> String {
    ask(app, text).await;
    system_prompt_in(&mock.requests().last().unwrap().body)
}

#[test]
fn reloaded_instructions_reach_the_next_runs_system_prompt() {
    // Three runs answered, then one that hands a task to a sub-agent.
    let task = json!({"task": "Say which rule you follow."});
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::text("ok"))
            .push(ScriptedResponse::text("ok"))
            .push(ScriptedResponse::text("ok"))
            .push(ScriptedResponse::tool_call("t1", "task", task.to_string()))
            .push(ScriptedResponse::text("child: rule two"))
            .push(ScriptedResponse::text("parent: done"))
            .with_fallback(ScriptedResponse::text("ok")),
    );
    let env = Env::new();
    // Only the runs' requests reach the server.
    env.settings(json!({"autoTitle": false}));
    let agents = env.work().join("AGENTS.md");
    std::fs::write(&agents, "Rule one: answer in haiku.\n").unwrap();

    let runtime = runtime();
    runtime.block_on(async {
        let app = build_app(&env, &run_args(&env, &mock.v1(), &[])).await;
        let first = system_prompt_of(&app, &mock, "first").await;
        assert!(first.contains("Rule one"), "{first}");

        std::fs::write(&agents, "Rule two: answer in prose.\n").unwrap();
        std::fs::write(env.home.path().join("APPEND_SYSTEM.md"), "Appended later.").unwrap();
        // Files are read when the session is built or reloaded, not per run.
        let unchanged = system_prompt_of(&app, &mock, "second").await;
        assert_eq!(unchanged, first);

        let reloaded = app.reload_instructions();
        assert_eq!(reloaded.context_files, vec![agents.clone()]);
        assert!(reloaded.warnings.is_empty(), "{:?}", reloaded.warnings);
        let now = system_prompt_of(&app, &mock, "third").await;
        assert!(now.contains("Rule two: answer in prose."), "{now}");
        assert!(now.ends_with("Appended later."), "{now}");
        assert!(!now.contains("Rule one"), "{now}");
        // A sub-agent started now gets the files as reloaded.
        ask(&app, "delegate").await;
        let requests = mock.requests();
        let child = requests
            .iter()
            .find(|r| r.raw_body.contains("Say which rule you follow."))
            .unwrap();
        let child_prompt = system_prompt_in(&child.body);
        assert!(child_prompt.contains("Rule two"), "{child_prompt}");
        assert!(!child_prompt.contains("Rule one"), "{child_prompt}");

        // A context file removed leaves the prompt.
        std::fs::remove_file(&agents).unwrap();
        assert!(app.reload_instructions().context_files.is_empty());
        let without = system_prompt_of(&app, &mock, "fourth").await;
        assert!(!without.contains("Rule two"), "{without}");
        app.shutdown_mcp().await;
    });
}

/// pi's `/reload` reads a `--system-prompt` or `--append-system-prompt`
/// file again too (`resolvePromptInput`); a file gone keeps the text read
/// at start, and the user hears why.
#[test]
fn reload_reads_the_system_prompt_flags_files_again() {
    let mock = Mock::start(Scenario::new().with_fallback(ScriptedResponse::text("ok")));
    let env = Env::new();
    env.settings(json!({"autoTitle": false}));
    let system = env.work().join("system.md");
    let extra = env.work().join("extra.md");
    std::fs::write(&system, "You are the first reviewer.").unwrap();
    std::fs::write(&extra, "First appended rule.").unwrap();
    let runtime = runtime();
    runtime.block_on(async {
        let args = run_args(
            &env,
            &mock.v1(),
            &[
                "--system-prompt",
                "system.md",
                "--append-system-prompt",
                "extra.md",
                "--append-system-prompt",
                "Inline rule.",
            ],
        );
        let app = build_app(&env, &args).await;
        let first = system_prompt_of(&app, &mock, "first").await;
        assert!(first.starts_with("You are the first reviewer."), "{first}");
        assert!(
            first.ends_with("First appended rule.\n\nInline rule."),
            "{first}"
        );

        std::fs::write(&system, "You are the second reviewer.").unwrap();
        std::fs::write(&extra, "Second appended rule.").unwrap();
        let reloaded = app.reload_instructions();
        assert!(reloaded.warnings.is_empty(), "{:?}", reloaded.warnings);
        let now = system_prompt_of(&app, &mock, "second").await;
        assert!(now.starts_with("You are the second reviewer."), "{now}");
        assert!(
            now.ends_with("Second appended rule.\n\nInline rule."),
            "{now}"
        );

        std::fs::remove_file(&extra).unwrap();
        let gone = app.reload_instructions();
        assert_eq!(gone.warnings.len(), 1, "{:?}", gone.warnings);
        assert!(
            gone.warnings[0].contains("--append-system-prompt")
                && gone.warnings[0].contains("the text read at start stays"),
            "{:?}",
            gone.warnings
        );
        let kept = system_prompt_of(&app, &mock, "third").await;
        assert!(
            kept.ends_with("First appended rule.\n\nInline rule."),
            "{kept}"
        );
        app.shutdown_mcp().await;
    });
}
