//! pi 1.5's thinking levels: `max` above `xhigh`, and a model's
//! `thinkingLevelMap` (which levels it offers and what each is sent as), from
//! `models.json` as pi writes it; checked on the requests the scripted server
//! recorded.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use makai_mockllm::{Scenario, ScriptedResponse};
use serde_json::{Value, json};

fn mock() -> Mock {
    Mock::start(Scenario::new().with_fallback(ScriptedResponse::text("ok")))
}

/// A provider with three reasoning models: `deep` offers `max` and sends
/// its own value for `high`; `oss` offers only `off` and `high` (pi's Ollama
/// example); `plain` has no map.
fn models_json(env: &Env, mock: &Mock) {
    std::fs::write(
        env.home.path().join("models.json"),
        json!({
            "providers": {
                "lab": {
                    "baseUrl": mock.v1(),
                    "api": "openai-completions",
                    "apiKey": "k",
                    "models": [
                        {"id": "deep", "reasoning": true,
                         "thinkingLevelMap": {"high": "deep-high", "xhigh": null, "max": "max"}},
                        {"id": "oss", "reasoning": true,
                         "thinkingLevelMap": {"minimal": null, "low": null, "medium": null, "high": "high", "xhigh": null}},
                        {"id": "plain", "reasoning": true}
                    ]
                }
            }
        })
        .to_string(),
    )
    .unwrap();
}

/// The `reasoning_effort` of the last request.
fn last_effort(mock: &Mock) -> Value {
    mock.requests().last().unwrap().body["reasoning_effort"].clone()
}

fn print(env: &Env, args: &[&str]) {
    let mut argv = s(args);
    argv.extend(s(&["--no-session", "-p", "hi"]));
    let out = env.run(&argv, "");
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "ok");
}

#[test]
fn max_and_the_levels_a_models_map_offers_reach_the_request() {
    let mock = mock();
    let env = Env::new();
    models_json(&env, &mock);

    print(&env, &["--model", "lab/deep", "--thinking", "max"]);
    assert_eq!(last_effort(&mock), "max");
    // The map's value for a level is what goes out.
    print(&env, &["--model", "lab/deep", "--thinking", "high"]);
    assert_eq!(last_effort(&mock), "deep-high");
    // `xhigh` is null in the map: clamped to `high`.
    print(&env, &["--model", "lab/deep", "--thinking", "xhigh"]);
    assert_eq!(last_effort(&mock), "deep-high");
    // Without a map, `max` is not offered: the highest level below it is.
    print(&env, &["--model", "lab/plain", "--thinking", "max"]);
    assert_eq!(last_effort(&mock), "high");
    print(&env, &["--model", "lab/plain:max"]);
    assert_eq!(last_effort(&mock), "high");
    // `medium` is null: the highest offered level below it is `off`.
    print(&env, &["--model", "lab/oss", "--thinking", "medium"]);
    assert_eq!(last_effort(&mock), Value::Null);
    print(&env, &["--model", "lab/oss", "--thinking", "max"]);
    assert_eq!(last_effort(&mock), "high");
}

#[test]
fn a_pi_settings_file_with_the_max_thinking_level_no_longer_stops_makai() {
    let mock = mock();
    let env = Env::new();
    models_json(&env, &mock);
    std::fs::create_dir_all(env.pi_dir()).unwrap();
    std::fs::write(
        env.pi_dir().join("settings.json"),
        json!({"defaultThinkingLevel": "max"}).to_string(),
    )
    .unwrap();
    print(&env, &["--model", "lab/deep"]);
    assert_eq!(last_effort(&mock), "max");
    print(&env, &["--model", "lab/plain"]);
    assert_eq!(last_effort(&mock), "high");
}

#[test]
fn rpc_sets_max_and_lists_it_only_for_models_that_offer_it() {
    let mock = mock();
    let env = Env::new();
    models_json(&env, &mock);
    let mut rpc = Rpc::start(&env, &s(&["--model", "lab/deep"]));
    rpc.ok(json!({"type": "set_thinking_level", "level": "max"}));
    let state = rpc.ok(json!({"type": "get_state"}));
    assert_eq!(state["thinkingLevel"], "max", "{state}");
    let levels = rpc.ok(json!({"type": "get_available_thinking_levels"}));
    assert_eq!(
        levels["levels"],
        json!(["off", "minimal", "low", "medium", "high", "max"]),
        "{levels}"
    );
    rpc.ok(json!({"type": "set_model", "provider": "lab", "modelId": "plain"}));
    let state = rpc.ok(json!({"type": "get_state"}));
    assert_eq!(state["thinkingLevel"], "high", "{state}");
    rpc.finish();
}

#[test]
fn a_pi_session_that_changed_to_max_loads_and_keeps_it() {
    let mock = mock();
    let env = Env::new();
    models_json(&env, &mock);
    let file = env.work().join("pi.jsonl");
    let lines = [
        json!({"type": "session", "version": 3, "id": "01a21eef-0a1a-721a-a484-da0c992ad326",
               "timestamp": "2026-11-27T10:00:00.000Z", "cwd": env.work().display().to_string()}),
        json!({"type": "model_change", "id": "a1", "parentId": null,
               "timestamp": "2026-11-27T10:00:01.000Z", "provider": "lab", "modelId": "deep"}),
        json!({"type": "thinking_level_change", "id": "a2", "parentId": "a1",
               "timestamp": "2026-11-27T10:00:02.000Z", "thinkingLevel": "max"}),
        json!({"type": "message", "id": "a3", "parentId": "a2",
               "timestamp": "2026-11-27T10:00:03.000Z",
               "message": {"role": "user", "content": [{"type": "text", "text": "earlier"}], "timestamp": 1}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&file, text).unwrap();
    let out = env.run(
        &s(&["--session", file.to_str().unwrap(), "-p", "again"]),
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let last = mock.requests().last().unwrap().clone();
    assert_eq!(last.body["model"], "deep");
    assert_eq!(last.body["reasoning_effort"], "max");
}

#[test]
fn pi_enabled_models_choose_a_new_sessions_model_and_model_thinking_levels_its_level() {
    let mock = mock();
    let env = Env::new();
    models_json(&env, &mock);
    env.settings(json!({
        "enabledModels": ["lab/plain", "lab/deep"],
        "modelThinkingLevels": {"lab/plain": "medium", "lab/deep": "max"},
        "defaultThinkingLevel": "low"
    }));
    let last = |mock: &Mock| {
        let r = mock.requests().last().unwrap().clone();
        (r.body["model"].clone(), r.body["reasoning_effort"].clone())
    };
    print(&env, &[]);
    assert_eq!(last(&mock), (json!("plain"), json!("medium")));
    // `--models` replaces the setting; the model's own level still applies.
    print(&env, &["--models", "lab/deep"]);
    assert_eq!(last(&mock), (json!("deep"), json!("max")));
    // An explicit model and level come first.
    print(&env, &["--model", "lab/oss"]);
    assert_eq!(last(&mock), (json!("oss"), Value::Null));
    print(&env, &["--model", "lab/deep", "--thinking", "low"]);
    assert_eq!(last(&mock), (json!("deep"), json!("low")));

    // A session with messages keeps its model, whatever the scope says first.
    let out = env.run(&s(&["--model", "lab/deep", "-p", "first"]), "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = env.run(&s(&["-c", "-p", "second"]), "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(last(&mock).0, json!("deep"));

    // The scope is the cycling scope too.
    let mut rpc = Rpc::start(&env, &s(&["--no-session"]));
    let cycled = rpc.ok(json!({"type": "cycle_model"}));
    assert_eq!(cycled["model"]["id"], "deep", "{cycled}");
    let cycled = rpc.ok(json!({"type": "cycle_model"}));
    assert_eq!(cycled["model"]["id"], "plain", "{cycled}");
    rpc.finish();
}

/// pi's scoped-model pins: `enabledModels` (or `--models`) patterns with a
/// `:level` suffix match the model without it, start a new session at that
/// level, and Ctrl+P / `cycle_model` switches to it; an unpinned model keeps
/// the level of the moment. (The suffix used to be dropped from the cycling
/// scope, and `/scoped-models deep:high` matched nothing.)
#[test]
fn scoped_model_thinking_pins_apply_when_cycling_to_the_model() {
    let mock = mock();
    let env = Env::new();
    models_json(&env, &mock);
    env.settings(json!({"enabledModels": ["lab/plain:low", "lab/deep:max", "lab/oss"]}));
    let mut rpc = Rpc::start(&env, &s(&["--no-session"]));
    let state = rpc.ok(json!({"type": "get_state"}));
    assert_eq!(state["model"]["id"], "plain", "{state}");
    assert_eq!(state["thinkingLevel"], "low", "{state}");
    let cycled = rpc.ok(json!({"type": "cycle_model"}));
    assert_eq!(
        (
            &cycled["model"]["id"],
            &cycled["thinkingLevel"],
            &cycled["isScoped"]
        ),
        (&json!("deep"), &json!("max"), &json!(true)),
        "{cycled}"
    );
    // `oss` pins nothing: the level of the moment, clamped to what it offers.
    let cycled = rpc.ok(json!({"type": "cycle_model"}));
    assert_eq!(
        (&cycled["model"]["id"], &cycled["thinkingLevel"]),
        (&json!("oss"), &json!("high")),
        "{cycled}"
    );
    let cycled = rpc.ok(json!({"type": "cycle_model"}));
    assert_eq!(
        (&cycled["model"]["id"], &cycled["thinkingLevel"]),
        (&json!("plain"), &json!("low")),
        "{cycled}"
    );
    rpc.ok(json!({"type": "prompt", "message": "hi"}));
    rpc.wait_event("agent_end");
    let r = mock.requests().last().unwrap().clone();
    assert_eq!(
        (r.body["model"].clone(), r.body["reasoning_effort"].clone()),
        (json!("plain"), json!("low"))
    );
    rpc.finish();
}

/// A run of `lab/deep` built in-process in `env` with `extra` flags.
async fn build(env: &Env, extra: &[&str]) -> makai_cli::app::AppSession {
    let mut argv = s(&["makai", "--model", "lab/deep", "--cwd"]);
    argv.push(env.work().display().to_string());
    argv.extend(s(extra));
    let makai_cli::cli::Invocation::Run(args) = makai_cli::cli::parse(argv).unwrap() else {
        panic!("not a run")
    };
    build_app(env, &args).await
}

/// pi's #11451: after `/tree` moved to before a `/thinking` change, the
/// level in force was not recorded on the branch the next prompt started,
/// so resuming the session restored the level from before the change.
#[test]
fn a_branch_started_after_a_tree_move_records_the_thinking_level_in_force() {
    let mock = mock();
    let env = Env::new();
    models_json(&env, &mock);
    // No title written in the background: the entries' order is the test's.
    env.settings(json!({"autoTitle": false}));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(tree_move_then_resume(&mock, &env));
}

async fn tree_move_then_resume(mock: &Mock, env: &Env) {
    let app = build(env, &["--thinking", "low"]).await;
    ask(&app, "first").await;
    let (entries, _) = app.entries(None).unwrap();
    let first_answer = entries.last().unwrap().id().to_string();
    app.set_thinking_level(makai_ai::ThinkingLevel::High);
    ask(&app, "second").await;
    // Back to the first answer: the change to `high` is off this branch.
    app.move_leaf(Some(&first_answer)).await.unwrap();
    assert_eq!(app.thinking_level(), makai_ai::ThinkingLevel::High);
    ask(&app, "third").await;
    assert_eq!(last_effort(mock), "deep-high");
    let file = app.session_file().unwrap();
    drop(app);

    let resumed = build(env, &["--session", &file.display().to_string()]).await;
    assert_eq!(resumed.thinking_level(), makai_ai::ThinkingLevel::High);
    // Recorded once, where the branch left the first answer; not again
    // for a prompt on a branch that has it.
    let (entries, _) = resumed.entries(None).unwrap();
    let levels: Vec<(Option<String>, String)> = entries
        .iter()
        .filter_map(|e| match e {
            makai_coding::session::SessionEntry::ThinkingLevelChange(t) => {
                Some((t.parent_id.clone(), t.thinking_level.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(levels.len(), 3, "{levels:?}");
    assert_eq!(levels[2], (Some(first_answer), "high".to_string()));
}
