//! pi's `/reload` reads the MCP servers again ("run `/reload` after adding,
//! removing, or changing a server outside the session"): a server added
//! while a session runs is offered from the next prompt (which waits for
//! its `direct` tools, as the first one does), one changed starts again,
//! one removed is gone; the system prompt's `<mcp_servers>` section
//! follows. In-process, against makai's own MCP server (`makai mcp serve`)
//! and the requests the scripted server recorded.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use makai_mockllm::{Scenario, ScriptedResponse};
use serde_json::{Value, json};

/// The settings file as it is now.
fn settings(env: &Env) -> Value {
    serde_json::from_str(&std::fs::read_to_string(env.home.path().join("settings.json")).unwrap())
        .unwrap()
}

/// The tool names and the system prompt of the last request.
fn last_request(mock: &Mock) -> (Vec<String>, String) {
    let requests = mock.requests();
    let body = &requests.last().unwrap().body;
    let tools = tool_names(body);
    let system = body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    (tools, system)
}

#[test]
fn reload_starts_added_restarts_changed_and_stops_removed_mcp_servers() {
    let mock = Mock::start(Scenario::new().with_fallback(ScriptedResponse::text("ok")));
    let env = Env::new();
    env.settings(json!({"autoTitle": false}));
    let runtime = runtime();
    runtime.block_on(async {
        let app = build_app(&env, &run_args(&env, &mock.v1(), &[])).await;
        ask(&app, "first").await;
        let (tools, _) = last_request(&mock);
        assert!(!tools.iter().any(|t| t.starts_with("mcp__")), "{tools:?}");

        // Added outside the session (`makai mcp add`), then reloaded: the
        // next prompt waits for it and offers its direct tools.
        add_self_with(&env, &["--exposure", "direct"]);
        let reloaded = app.reload_mcp();
        assert_eq!(reloaded.servers.added, vec!["self"]);
        assert!(reloaded.warnings.is_empty(), "{:?}", reloaded.warnings);
        ask(&app, "second").await;
        let (tools, _) = last_request(&mock);
        assert!(tools.contains(&"mcp__self__read".to_string()), "{tools:?}");

        // Changed: started again with its new configuration (scripts only,
        // which this session, started without codemode, cannot reach).
        let mut cfg = settings(&env);
        cfg["mcpServers"]["self"]["exposure"] = json!("codemode");
        env.settings(cfg);
        let reloaded = app.reload_mcp();
        assert_eq!(reloaded.servers.changed, vec!["self"]);
        assert_eq!(reloaded.warnings.len(), 1, "{:?}", reloaded.warnings);
        assert!(
            reloaded.warnings[0].contains("self's tools are reached through codemode"),
            "{:?}",
            reloaded.warnings
        );
        ask(&app, "third").await;
        let (tools, _) = last_request(&mock);
        assert!(!tools.iter().any(|t| t.starts_with("mcp__")), "{tools:?}");

        // Removed: stopped, nothing of it offered.
        let out = env.run(&s(&["mcp", "remove", "self"]), "");
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let reloaded = app.reload_mcp();
        assert_eq!(reloaded.servers.removed, vec!["self"]);
        assert!(app.mcp().unwrap().status().is_empty());

        // An unreadable configuration changes nothing.
        add_self_with(&env, &["--exposure", "direct"]);
        assert_eq!(app.reload_mcp().servers.added, vec!["self"]);
        std::fs::write(env.home.path().join("settings.json"), "{ broken").unwrap();
        let broken = app.reload_mcp();
        assert!(broken.servers.is_empty(), "{broken:?}");
        assert!(
            broken.warnings[0].contains("MCP servers not reloaded, those running stay"),
            "{broken:?}"
        );
        assert_eq!(app.mcp().unwrap().status().len(), 1);
        app.shutdown_mcp().await;
    });
}

/// A server added to a session that reaches scripts' tools (codemode on
/// for a server configured at start) joins the system prompt's
/// `<mcp_servers>` section.
#[test]
fn a_server_added_by_reload_joins_the_system_prompts_mcp_section() {
    let mock = Mock::start(Scenario::new().with_fallback(ScriptedResponse::text("ok")));
    let env = Env::new();
    env.settings(json!({"autoTitle": false}));
    add_self_with(&env, &["--description", "the first server"]);
    let runtime = runtime();
    runtime.block_on(async {
        let app = build_app(&env, &run_args(&env, &mock.v1(), &[])).await;
        ask(&app, "first").await;
        let (tools, system) = last_request(&mock);
        assert!(tools.contains(&"codemode".to_string()), "{tools:?}");
        assert!(
            system.contains("- self (codemode): the first server"),
            "{system}"
        );
        assert!(!system.contains("- other"), "{system}");

        let mut cfg = settings(&env);
        let mut other = cfg["mcpServers"]["self"].clone();
        other["description"] = json!("the second server");
        cfg["mcpServers"]["other"] = other;
        env.settings(cfg);
        let reloaded = app.reload_mcp();
        assert_eq!(reloaded.servers.added, vec!["other"]);
        assert!(reloaded.warnings.is_empty(), "{:?}", reloaded.warnings);
        ask(&app, "second").await;
        let (_, system) = last_request(&mock);
        assert!(
            system.contains("- self (codemode): the first server"),
            "{system}"
        );
        assert!(
            system.contains("- other (codemode): the second server"),
            "{system}"
        );
        app.shutdown_mcp().await;
    });
}
