//! `makai mcp list|add|remove|serve` through the built binary, and MCP tools
//! in the agent: makai is registered as an MCP server of itself (`makai mcp
//! serve`), `makai mcp list` shows its tools, and a run against the scripted
//! server calls `self__read` through MCP and sends the file's content back.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use makai_mockllm::{Scenario, ScriptedResponse};
use serde_json::Value;

fn settings(env: &Env) -> Value {
    serde_json::from_str(&std::fs::read_to_string(env.home.path().join("settings.json")).unwrap())
        .unwrap()
}

fn add_self(env: &Env) {
    let work = env.work().display().to_string();
    let home = env.home.path().display().to_string();
    let out = env.run(
        &s(&[
            "mcp",
            "add",
            "self",
            "-e",
            &format!("MAKAI_HOME={home}"),
            "--",
            env!("CARGO_BIN_EXE_makai"),
            "mcp",
            "serve",
            "--cwd",
            &work,
        ]),
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("Added MCP server 'self'"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn add_list_remove() {
    let env = Env::new();
    let out = env.run(&s(&["mcp", "list"]), "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("No MCP servers are configured"),
        "{}",
        stdout(&out)
    );

    add_self(&env);
    let cfg = settings(&env);
    assert_eq!(cfg["mcpServers"]["self"]["args"][0], "mcp");
    assert_eq!(
        cfg["mcpServers"]["self"]["env"]["MAKAI_HOME"],
        env.home.path().display().to_string()
    );
    // Adding it again needs --replace.
    let out = env.run(&s(&["mcp", "add", "self", "--", "true"]), "");
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("already exists"), "{}", stderr(&out));

    let out = env.run(&s(&["mcp", "list", "--wait", "30"]), "");
    let listing = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for tool in ["self__read", "self__ls", "self__bash"] {
        assert!(listing.contains(tool), "no {tool}: {listing}");
    }

    let out = env.run(&s(&["mcp", "remove", "self"]), "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        settings(&env).get("mcpServers").is_none(),
        "{}",
        settings(&env)
    );
    let out = env.run(&s(&["mcp", "remove", "self"]), "");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no MCP server named 'self'"),
        "{}",
        stderr(&out)
    );

    let out = env.run(&s(&["mcp", "add", "x"]), "");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--url"), "{}", stderr(&out));
}

#[test]
fn the_agent_calls_an_mcp_tool() {
    let env = Env::new();
    std::fs::write(env.work().join("secret.txt"), "the word is pelican\n").unwrap();
    add_self(&env);
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::tool_call(
                "call_1",
                "self__read",
                r#"{"path":"secret.txt"}"#,
            ))
            .push(ScriptedResponse::text("It is pelican.")),
    );
    let mut argv = s(&["--mode", "json", "--no-session"]);
    argv.extend(mock.args());
    argv.push("What is the secret word?".into());
    let out = env.run(&argv, "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let offered: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(
        offered.contains(&"self__read") && offered.contains(&"read"),
        "{offered:?}"
    );
    let sent = request_text(&requests[1]);
    assert!(sent.contains("the word is pelican"), "{sent}");
    let events = json_lines(&stdout(&out));
    let result = events
        .iter()
        .find(|e| e["type"] == "tool_execution_end")
        .unwrap();
    assert_eq!(result["toolName"], "self__read");
    assert_eq!(result["isError"], false, "{result}");

    // --no-tools starts no MCP server: nothing offered.
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("ok")));
    let mut argv = s(&["--mode", "json", "--no-session", "--no-tools"]);
    argv.extend(mock.args());
    argv.push("hi".into());
    let out = env.run(&argv, "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        mock.requests()[0]
            .body
            .get("tools")
            .is_none_or(|t| t.as_array().is_none_or(Vec::is_empty))
    );
}
