//! `makai mcp list|add|remove|serve` through the built binary, and MCP tools
//! in the agent: makai is registered as an MCP server of itself (`makai mcp
//! serve`), `makai mcp list` shows its tools, and a run against the scripted
//! server calls `mcp__self__read` through MCP and sends the file's content back.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use makai_mockllm::{Scenario, ScriptedResponse};
use serde_json::Value;

fn settings(env: &Env) -> Value {
    serde_json::from_str(&std::fs::read_to_string(env.home.path().join("settings.json")).unwrap())
        .unwrap()
}

/// A model that reads `file` through makai's own MCP server, then answers `then`.
fn reads_through_self(file: &str, then: &str) -> Mock {
    Mock::start(
        Scenario::new()
            .push(ScriptedResponse::tool_call(
                "call_1",
                "mcp__self__read",
                serde_json::json!({ "path": file }).to_string(),
            ))
            .push(ScriptedResponse::text(then)),
    )
}

fn add_self(env: &Env) {
    add_self_with(env, &[]);
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
    for tool in ["mcp__self__read", "mcp__self__ls", "mcp__self__bash"] {
        assert!(listing.contains(tool), "no {tool}: {listing}");
    }
    assert!(
        listing.contains("exposure: codemode"),
        "pi's default: {listing}"
    );

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
    add_self_with(&env, &["--exposure", "direct"]);
    assert_eq!(settings(&env)["mcpServers"]["self"]["exposure"], "direct");
    let mock = reads_through_self("secret.txt", "It is pelican.");
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
        offered.contains(&"mcp__self__read") && offered.contains(&"read"),
        "{offered:?}"
    );
    let sent = request_text(&requests[1]);
    assert!(sent.contains("the word is pelican"), "{sent}");
    let events = json_lines(&stdout(&out));
    let result = events
        .iter()
        .find(|e| e["type"] == "tool_execution_end")
        .unwrap();
    assert_eq!(result["toolName"], "mcp__self__read");
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

#[test]
fn a_servers_tools_are_reached_through_codemode_by_default_as_in_pi() {
    let env = Env::new();
    std::fs::write(env.work().join("secret.txt"), "the word is pelican\n").unwrap();
    add_self_with(&env, &["--description", "makai's own file tools"]);
    // One tool declared, one unreachable, the rest for scripts.
    let mut cfg = settings(&env);
    cfg["mcpServers"]["self"]["toolExposure"] = serde_json::json!({"ls": "direct", "b*": "hidden"});
    env.settings(cfg);
    let code = r#"
const ns = await describeNamespace("mcp__self");
const read = await tools.mcp__self__read({ path: "secret.txt" });
const names = ALL_TOOLS.map((t) => t.name);
return {
  description: ns.description,
  text: read.content[0].text,
  error: read.isError === true,
  bash: names.includes("mcp__self__bash"),
  ls: names.includes("mcp__self__ls"),
};
"#;
    let mock = Mock::start(
        Scenario::new()
            .push(codemode_call("c1", code))
            .push(ScriptedResponse::text("It is pelican.")),
    );
    let mut argv = s(&["--no-session"]);
    argv.extend(mock.args());
    argv.extend(s(&["-p", "What is the secret word?"]));
    let out = env.run(&argv, "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let requests = mock.requests();
    let tools = tool_names(&requests[0].body);
    assert!(
        tools.contains(&"codemode".to_string()) && tools.contains(&"mcp__self__ls".to_string()),
        "codemode is turned on for the server, its direct tool declared: {tools:?}"
    );
    assert!(
        !tools
            .iter()
            .any(|t| t == "mcp__self__read" || t == "mcp__self__bash"),
        "{tools:?}"
    );
    let first = request_text(&requests[0]);
    assert!(
        first.contains("<mcp_servers>")
            && first.contains("- self (codemode): makai's own file tools"),
        "{first}"
    );
    let sent = request_text(&requests[1]);
    assert!(sent.contains("the word is pelican"), "{sent}");
    assert!(
        sent.contains(r#"\"description\": \"makai's own file tools\""#),
        "{sent}"
    );
    assert!(sent.contains(r#"\"error\": false"#), "{sent}");
    assert!(
        sent.contains(r#"\"bash\": false"#),
        "hidden tools are unreachable: {sent}"
    );
    assert!(sent.contains(r#"\"ls\": true"#), "{sent}");

    // autoEnableCodemode: false leaves codemode off, and says so.
    let mut cfg = settings(&env);
    cfg["autoEnableCodemode"] = Value::Bool(false);
    env.settings(cfg);
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("ok")));
    let mut argv = s(&["--no-session"]);
    argv.extend(mock.args());
    argv.extend(s(&["-p", "hi"]));
    let out = env.run(&argv, "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let tools = tool_names(&mock.requests()[0].body);
    assert!(!tools.contains(&"codemode".to_string()), "{tools:?}");
    assert!(
        stderr(&out).contains("autoEnableCodemode: false"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_long_mcp_text_result_reaches_the_model_cut_with_the_whole_in_a_file() {
    let env = Env::new();
    std::fs::write(env.work().join("long.txt"), "x".repeat(30_000)).unwrap();
    add_self_with(&env, &["--exposure", "direct"]);
    let mock = reads_through_self("long.txt", "Long.");
    let mut argv = s(&["--no-session"]);
    argv.extend(mock.args());
    argv.extend(s(&["-p", "go"]));
    let out = env.run(&argv, "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let sent = request_text(&mock.requests()[1]);
    assert!(
        sent.contains("chars truncated…"),
        "{}",
        &sent[sent.len().saturating_sub(1500)..]
    );
    assert!(
        !sent.contains(&"x".repeat(25_000)),
        "the model reads it cut"
    );
    let at = sent
        .find("[The full result is in ")
        .expect("the file is named");
    let rest = &sent[at + "[The full result is in ".len()..];
    let path = &rest[..rest.find(']').unwrap()];
    let whole = std::fs::read_to_string(path).unwrap();
    assert!(whole.contains(&"x".repeat(30_000)), "{}", whole.len());
    let _ = std::fs::remove_file(path);
}

#[test]
fn deferred_tools_are_loaded_by_tool_search_and_stay_declared_on_the_branch() {
    let env = Env::new();
    std::fs::write(env.work().join("secret.txt"), "the word is heron\n").unwrap();
    add_self_with(
        &env,
        &[
            "--exposure",
            "deferred",
            "--description",
            "makai's own tools",
        ],
    );
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::tool_call(
                "s1",
                "tool_search",
                serde_json::json!({"query": "read file contents", "limit": 1}).to_string(),
            ))
            .push(ScriptedResponse::tool_call(
                "r1",
                "mcp__self__read",
                serde_json::json!({"path": "secret.txt"}).to_string(),
            ))
            .push(ScriptedResponse::text("It is heron."))
            .push(ScriptedResponse::text("Still here.")),
    );
    let out = run_ok(&env, &mock, &["--mode", "json", "What is the secret word?"]);
    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "{}", stderr(&out));
    // pi turns tool_search (not codemode) on for deferred tools, which are
    // not declared until it loads them.
    let first = tool_names(&requests[0].body);
    assert!(first.contains(&"tool_search".to_string()), "{first:?}");
    assert!(
        !first
            .iter()
            .any(|t| t == "codemode" || t.starts_with("mcp__")),
        "{first:?}"
    );
    let prompt = requests[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        prompt.contains("- self (tool_search): makai's own tools")
            && prompt.contains("load those marked tool_search with tool_search"),
        "{prompt}"
    );
    assert!(!prompt.contains("codemode scripts"), "{prompt}");
    // Loaded for the next call, and called directly.
    let second = tool_names(&requests[1].body);
    assert_eq!(
        second
            .iter()
            .filter(|t| t.starts_with("mcp__"))
            .collect::<Vec<_>>(),
        ["mcp__self__read"],
        "{second:?}"
    );
    let loaded = request_text(&requests[1]);
    assert!(
        loaded.contains(r"Loaded 1 tool; call it from your next response on:\n- mcp__self__read"),
        "{loaded}"
    );
    assert!(request_text(&requests[2]).contains("the word is heron"));
    // The session records the loaded tool as pi does: a system message
    // with toolsAdded, which the model never reads.
    let events = json_lines(&stdout(&out));
    assert!(
        events.iter().any(|e| e["type"] == "message_end"
            && e["message"]["role"] == "system"
            && e["message"]["toolsAdded"][0]["name"] == "mcp__self__read"),
        "{events:?}"
    );
    let system_messages = |r: &makai_mockllm::RecordedRequest| {
        r.body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "system" || m["role"] == "developer")
            .count()
    };
    assert_eq!(system_messages(&requests[2]), 1, "only the prompt's");
    let file = std::fs::read_to_string(&env.session_files()[0]).unwrap();
    assert!(
        file.lines().any(|l| l.contains(r#""role":"system""#)
            && l.contains(r#""toolsAdded":[{"name":"mcp__self__read""#)),
        "{file}"
    );
    // A continued session keeps it declared from its first request.
    run_ok(&env, &mock, &["-c", "-p", "And now?"]);
    let again = tool_names(&mock.requests()[3].body);
    assert!(again.contains(&"mcp__self__read".to_string()), "{again:?}");
    assert!(again.contains(&"tool_search".to_string()), "{again:?}");

    // Without tool_search nothing reaches the deferred tools: said once.
    let mut cfg = settings(&env);
    cfg["extensions"] = serde_json::json!(["-builtin:tool-search"]);
    env.settings(cfg);
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("ok")));
    let out = run_ok(&env, &mock, &["--no-session", "-p", "hi"]);
    assert!(!tool_names(&mock.requests()[0].body).contains(&"tool_search".to_string()));
    assert!(
        stderr(&out).contains("neither is on (a built-in extension is disabled)"),
        "{}",
        stderr(&out)
    );
}

/// Regression: `makai mcp serve` runs as a sandboxed stdio server, and its
/// `bash` could not start a shell there ("Operation not permitted": the
/// sandbox refuses `setpgid`, which the shell's own process group needs).
#[test]
fn bash_of_makai_mcp_serve_runs_inside_the_clients_sandbox() {
    let env = Env::new();
    add_self_with(&env, &["--exposure", "direct"]);
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::tool_call(
                "b1",
                "mcp__self__bash",
                serde_json::json!({"command": "echo nested-$((6*7)); sleep 30 & echo started"})
                    .to_string(),
            ))
            .push(ScriptedResponse::text("done")),
    );
    let out = run_ok(&env, &mock, &["--no-session", "-p", "run it"]);
    let sent = request_text(&mock.requests()[1]);
    assert!(
        sent.contains("nested-42") && sent.contains("started"),
        "{sent}\n{}",
        stderr(&out)
    );
    assert!(!sent.contains("Operation not permitted"), "{sent}");
}

/// `self` as an MCP server that takes `delay` seconds to start, with
/// `extra` fields in its entry.
fn slow_self(env: &Env, delay: &str, extra: Value) {
    let work = env.work().display().to_string();
    let mut entry = serde_json::json!({
        "command": "bash",
        "args": ["-c", format!("sleep {delay}; exec {} mcp serve --cwd {work}", env!("CARGO_BIN_EXE_makai"))],
        "env": {"MAKAI_HOME": env.home.path().display().to_string()},
    });
    if let (Value::Object(e), Value::Object(x)) = (&mut entry, extra) {
        e.extend(x);
    }
    env.settings(serde_json::json!({"mcpServers": {"self": entry}}));
}

#[test]
fn prompts_and_scripts_wait_for_mcp_servers_still_connecting_as_in_pi() {
    let env = Env::new();
    std::fs::write(env.work().join("secret.txt"), "the word is ibis\n").unwrap();
    // RPC mode does not wait for the servers at start-up: a prompt sent at
    // once finds the server still connecting.
    slow_self(&env, "1.5", serde_json::json!({}));
    let code = r#"const r = await tools.mcp__self__read({ path: "secret.txt" }); return r.content[0].text;"#;
    let mock = Mock::start(
        Scenario::new()
            .push(codemode_call("c1", code))
            .push(ScriptedResponse::text("ibis")),
    );
    let mut rpc = Rpc::start(&env, &mock.args());
    rpc.ok(serde_json::json!({"type": "prompt", "message": "What is the secret word?"}));
    rpc.wait_event("agent_end");
    let sent = request_text(&mock.requests()[1]);
    assert!(
        sent.contains("the word is ibis"),
        "the script waited for the server: {sent}"
    );
    drop(rpc);

    // A server with direct tools is waited for before the first request,
    // which declares them.
    slow_self(&env, "1.5", serde_json::json!({"exposure": "direct"}));
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("ok")));
    let mut rpc = Rpc::start(&env, &mock.args());
    rpc.ok(serde_json::json!({"type": "prompt", "message": "hi"}));
    rpc.wait_event("agent_end");
    let first = tool_names(&mock.requests()[0].body);
    assert!(first.contains(&"mcp__self__read".to_string()), "{first:?}");
}
