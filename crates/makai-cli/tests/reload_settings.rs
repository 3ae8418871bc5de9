//! pi's `/reload` reads the settings again ("run `/reload` after manually
//! changing settings"): settings changed while a session runs are in force
//! once it reloads them, and not before; those the session was built with
//! are named as taking effect at the next start; a settings file that
//! cannot be read changes nothing. Checked in-process, on what the session
//! does (the requests the scripted server recorded, a `!` command's output,
//! the skills found) rather than on its fields.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use makai_agent::QueueMode;
use makai_mockllm::{Scenario, ScriptedResponse};
use serde_json::json;

/// A prompt answered by a server error first: with retries on, the run
/// asks again and gets the answer.
fn error_then_answer() -> [ScriptedResponse; 2] {
    [
        ScriptedResponse::text("").with_status(500),
        ScriptedResponse::text("ok"),
    ]
}

#[test]
fn reloaded_settings_are_in_force_for_what_comes_next() {
    let [e1, a1] = error_then_answer();
    let [e2, a2] = error_then_answer();
    let [e3, a3] = error_then_answer();
    let mock = Mock::start(
        Scenario::new()
            .push(e1)
            .push(a1)
            .push(e2)
            .push(a2)
            .push(e3)
            .push(a3)
            .with_fallback(ScriptedResponse::text("ok")),
    );
    let env = Env::new();
    let settings = |extra: serde_json::Value| {
        let mut v = json!({
            "autoTitle": false,
            "retry": {"enabled": true, "maxRetries": 2, "baseDelayMs": 1, "maxDelayMs": 1},
        });
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        env.settings(v);
    };
    settings(json!({}));
    let skills = env.home.path().join("more-skills");
    std::fs::create_dir_all(skills.join("deploy")).unwrap();
    std::fs::write(
        skills.join("deploy/SKILL.md"),
        "---\nname: deploy\ndescription: Deploy the service\n---\nRun make deploy.\n",
    )
    .unwrap();

    let runtime = runtime();
    runtime.block_on(async {
        let app = build_app(&env, &run_args(&env, &mock.v1(), &[])).await;
        // Retries on: the error is asked again.
        ask(&app, "first").await;
        assert_eq!(mock.requests().len(), 2);
        assert_eq!(app.agent().steering_mode(), QueueMode::OneAtATime);

        settings(json!({
            "retry": {"enabled": false},
            "steeringMode": "all",
            "shellCommandPrefix": "echo prefixed",
            "skills": [skills.display().to_string()],
            "sessionDir": env.home.path().join("elsewhere").display().to_string(),
        }));
        // Settings are read when the session is built or reloaded, not per run.
        ask(&app, "second").await;
        assert_eq!(mock.requests().len(), 4, "retried as before the change");
        assert_eq!(app.agent().steering_mode(), QueueMode::OneAtATime);
        assert!(app.settings().shell_command_prefix.is_none());

        let reloaded = app.reload_settings();
        assert_eq!(
            reloaded.changed,
            vec![
                "retry",
                "sessionDir",
                "shellCommandPrefix",
                "skills",
                "steeringMode"
            ]
        );
        assert_eq!(reloaded.at_next_start, vec!["sessionDir"]);
        assert!(reloaded.warnings.is_empty(), "{:?}", reloaded.warnings);

        // Retries off now: one request, and the run ends with the error.
        ask(&app, "third").await;
        assert_eq!(mock.requests().len(), 5, "not retried after the reload");
        assert_eq!(app.agent().steering_mode(), QueueMode::All);
        let ran = app
            .execute_bash("echo command", true, |_| {})
            .await
            .unwrap();
        assert_eq!(ran.output.trim(), "prefixed\ncommand", "{ran:?}");
        // The settings' skill list is used the next time skills are found.
        let found = app.reload_resources();
        assert!(
            found.skills.iter().any(|s| s.name == "deploy"),
            "{:?}",
            found.skills.iter().map(|s| &s.name).collect::<Vec<_>>()
        );

        // A change of the session's own (RPC's `set_follow_up_mode`) stays
        // when the file did not change that setting.
        app.agent().set_follow_up_mode(QueueMode::All);
        assert!(app.reload_settings().changed.is_empty());
        assert_eq!(app.agent().follow_up_mode(), QueueMode::All);

        // A file that cannot be read: the settings in force stay.
        std::fs::write(env.home.path().join("settings.json"), "{ not json").unwrap();
        let broken = app.reload_settings();
        assert!(broken.changed.is_empty(), "{broken:?}");
        assert_eq!(broken.warnings.len(), 1, "{broken:?}");
        assert!(
            broken.warnings[0].contains("settings not reloaded"),
            "{broken:?}"
        );
        assert_eq!(app.agent().steering_mode(), QueueMode::All);
        assert_eq!(
            app.settings().shell_command_prefix.as_deref(),
            Some("echo prefixed")
        );
    });
}

/// The tool names a request offered the model.
fn offered_tools(mock: &Mock) -> Vec<String> {
    let mut names = tool_names(&mock.requests().last().unwrap().body);
    names.sort();
    names
}

/// pi's rule: `/reload` enables the tools newly added to `defaultTools`;
/// a tool removed from it stays, and one the session is built with or
/// without (`codemode`) waits for the next start, which the user is told.
#[test]
fn reload_enables_the_tools_newly_added_to_default_tools() {
    let mock = Mock::start(Scenario::new().with_fallback(ScriptedResponse::text("ok")));
    let env = Env::new();
    env.settings(json!({"autoTitle": false, "defaultTools": ["read", "bash"]}));
    let runtime = runtime();
    runtime.block_on(async {
        let app = build_app(&env, &run_args(&env, &mock.v1(), &[])).await;
        ask(&app, "first").await;
        assert_eq!(offered_tools(&mock), vec!["bash", "read"]);

        env.settings(json!({
            "autoTitle": false,
            "defaultTools": ["read", "grep", "codemode"],
        }));
        let reloaded = app.reload_settings();
        assert_eq!(reloaded.enabled_tools, vec!["grep"]);
        assert!(reloaded.at_next_start.is_empty(), "{reloaded:?}");
        assert_eq!(
            reloaded.warnings,
            vec!["defaultTools: codemode is enabled when makai starts again"]
        );
        ask(&app, "second").await;
        assert_eq!(offered_tools(&mock), vec!["bash", "grep", "read"]);

        // Reading the same settings again enables nothing more.
        let again = app.reload_settings();
        assert!(again.enabled_tools.is_empty(), "{again:?}");
        assert!(again.changed.is_empty(), "{again:?}");
    });

    // A plain `--tools` list fixes the tools, also on reload (pi's rule).
    let env = Env::new();
    env.settings(json!({"autoTitle": false, "defaultTools": ["read"]}));
    runtime.block_on(async {
        let app = build_app(&env, &run_args(&env, &mock.v1(), &["--tools", "read"])).await;
        env.settings(json!({"autoTitle": false, "defaultTools": ["read", "grep"]}));
        let reloaded = app.reload_settings();
        assert!(reloaded.enabled_tools.is_empty(), "{reloaded:?}");
        ask(&app, "third").await;
        assert_eq!(offered_tools(&mock), vec!["read"]);
    });
}
