//! pi 1.5.2's command-line options beyond the basics (docs/cli.md): the
//! multi-letter short flags (-nt, -nbt, -xt, -ns, -np, -nc), --exclude-tools
//! (built-in and MCP tools), --no-builtin-tools, --no-mcp, --models, --skill
//! and --prompt-template, --no-context-files and --export. Checked on what
//! the scripted server receives and on the files written.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use makai_mockllm::{Scenario, ScriptedResponse};
use serde_json::{Value, json};

/// Runs `makai -p hi` with the mock's arguments and `extra`; the first request.
fn first_request(env: &Env, mock_args: bool, extra: &[&str]) -> Value {
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("ok")));
    let mut args = if mock_args { mock.args() } else { Vec::new() };
    if !mock_args {
        write_models(env, &mock);
    }
    args.extend(s(extra));
    args.extend(s(&["-p", "hi"]));
    let out = env.run(&args, "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    mock.requests()[0].body.clone()
}

fn system_prompt(body: &Value) -> String {
    body["messages"][0]["content"].as_str().unwrap().to_string()
}

/// A models.json with two models of one provider on the mock.
fn write_models(env: &Env, mock: &Mock) {
    std::fs::write(
        env.home.path().join("models.json"),
        json!({"providers": {"lab": {
            "baseUrl": mock.v1(), "api": "openai-completions", "apiKey": "k",
            "models": [{"id": "alpha"}, {"id": "beta", "reasoning": true}]
        }}})
        .to_string(),
    )
    .unwrap();
}

#[test]
fn short_flags_and_tool_exclusion_choose_the_offered_tools() {
    let env = Env::new();
    assert!(tool_names(&first_request(&env, true, &["-nt"])).is_empty());
    assert!(tool_names(&first_request(&env, true, &["-nbt"])).is_empty());
    assert_eq!(
        tool_names(&first_request(
            &env,
            true,
            &["-xt", "b*,ls", "--exclude-tools", "wri*"]
        )),
        ["read", "edit", "grep", "find", "task"]
    );
    assert_eq!(
        tool_names(&first_request(
            &env,
            true,
            &["--tools", "read,ls,bash", "-xt", "ls"]
        )),
        ["read", "bash"]
    );
    // Plain names and changes cannot be mixed in --tools (pi's rule).
    let out = env.run(&s(&["--tools", "read,+ls", "-p", "hi"]), "");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("cannot be mixed"), "{}", stderr(&out));
}

#[test]
fn tools_exclude_tools_and_no_mcp_reach_the_mcp_tools_as_in_pi() {
    let env = Env::new();
    // Declared to the model (pi's default reaches them from codemode).
    add_self_with(&env, &["--exposure", "direct"]);
    let all = tool_names(&first_request(&env, true, &[]));
    assert!(all.contains(&"mcp__self__ls".to_string()), "{all:?}");
    assert!(all.contains(&"mcp__self__bash".to_string()), "{all:?}");
    // A plain --tools list declares no MCP tool it does not name: they
    // stay reachable from codemode, which is turned on for them.
    let plain = tool_names(&first_request(&env, true, &["--tools", "read"]));
    assert_eq!(plain, ["read", "codemode"]);
    // An `mcp__` entry selects MCP tools: the others are left out.
    let named = tool_names(&first_request(
        &env,
        true,
        &["--tools", "read,mcp__self__l*"],
    ));
    assert_eq!(named, ["read", "mcp__self__ls"]);
    let kept = tool_names(&first_request(&env, true, &["-xt", "mcp__self__b*"]));
    assert!(kept.contains(&"mcp__self__ls".to_string()), "{kept:?}");
    assert!(
        !kept.iter().any(|t| t.starts_with("mcp__self__b")),
        "{kept:?}"
    );
    // A change list removes an MCP tool by its exact name.
    let changed = tool_names(&first_request(
        &env,
        true,
        &["--tools", "+ls,-mcp__self__bash"],
    ));
    assert!(changed.contains(&"ls".to_string()), "{changed:?}");
    assert!(
        changed.contains(&"mcp__self__read".to_string()),
        "{changed:?}"
    );
    assert!(
        !changed.contains(&"mcp__self__bash".to_string()),
        "{changed:?}"
    );
    // -nbt keeps the MCP tools; --no-mcp drops them.
    let mcp_only = tool_names(&first_request(&env, true, &["-nbt"]));
    assert!(
        mcp_only.iter().all(|t| t.starts_with("mcp__self__")),
        "{mcp_only:?}"
    );
    assert!(!mcp_only.is_empty());
    let none = tool_names(&first_request(&env, true, &["--tools", "read", "--no-mcp"]));
    assert_eq!(none, ["read"]);
}

#[test]
fn models_scope_the_start_model_with_its_thinking_level() {
    let env = Env::new();
    let body = first_request(&env, false, &["--models", "nothing-like-it*,beta:high"]);
    assert_eq!(body["model"], "beta");
    assert_eq!(body["reasoning_effort"], "high", "{body}");
    let body = first_request(&env, false, &["--models", "lab/a*"]);
    assert_eq!(body["model"], "alpha");
    // A stray comma names nothing (pi's #10334: it added a model).
    let body = first_request(&env, false, &["--models", "lab/a*,"]);
    assert_eq!(body["model"], "alpha");
    // --model still wins.
    let body = first_request(&env, false, &["--models", "beta", "--model", "lab/alpha"]);
    assert_eq!(body["model"], "alpha");
}

#[test]
fn explicit_skills_and_templates_load_even_when_discovery_is_off() {
    let env = Env::new();
    let extra = env.home.path().join("extra");
    std::fs::create_dir_all(extra.join("deploy")).unwrap();
    std::fs::write(
        extra.join("deploy/SKILL.md"),
        "---\nname: deploy\ndescription: Deploy the service\n---\nRun make deploy.\n",
    )
    .unwrap();
    std::fs::write(
        extra.join("review.md"),
        "---\ndescription: Review\n---\nReview the code, focus on $1.\n",
    )
    .unwrap();
    // A discovered skill that -ns turns off.
    std::fs::create_dir_all(env.work().join(".pi/skills/found")).unwrap();
    std::fs::write(
        env.work().join(".pi/skills/found/SKILL.md"),
        "---\nname: found\ndescription: Found by discovery\n---\nx\n",
    )
    .unwrap();
    let skill = extra.join("deploy").display().to_string();
    let template = extra.join("review.md").display().to_string();
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("ok")));
    let mut args = mock.args();
    args.extend(s(&[
        // A trusted project: -ns, not trust, is what leaves its skill out.
        "-a",
        "-ns",
        "-np",
        "--skill",
        &skill,
        "--prompt-template",
        &template,
        "-p",
        "/review security",
    ]));
    let out = env.run(&args, "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let body = mock.requests()[0].body.clone();
    let prompt = system_prompt(&body);
    assert!(
        prompt.contains("deploy") && prompt.contains("Deploy the service"),
        "{prompt}"
    );
    assert!(!prompt.contains("Found by discovery"), "{prompt}");
    assert!(
        request_text(&mock.requests()[0]).contains("Review the code, focus on security."),
        "{}",
        request_text(&mock.requests()[0])
    );
    let out = env.run(&s(&["--skill", "/no/such/skill", "-p", "hi"]), "");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--skill"), "{}", stderr(&out));
}

#[test]
fn no_context_files_leaves_agents_md_out() {
    let env = Env::new();
    std::fs::write(env.work().join("AGENTS.md"), "Always answer in haiku.\n").unwrap();
    assert!(system_prompt(&first_request(&env, true, &[])).contains("Always answer in haiku."));
    assert!(
        !system_prompt(&first_request(&env, true, &["-nc"])).contains("Always answer in haiku.")
    );
}

#[test]
fn export_writes_a_session_file_as_html() {
    let env = Env::new();
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("The <answer> & more")));
    let mut args = mock.args();
    args.extend(s(&["-p", "the question"]));
    let out = env.run(&args, "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let session = env.session_files().pop().unwrap();
    let out = env.run(&s(&["--export", session.to_str().unwrap()]), "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let html = std::fs::read_to_string(session.with_extension("html")).unwrap();
    assert!(html.contains("the question"), "{html}");
    assert!(html.contains("The &lt;answer&gt; &amp; more"), "{html}");
    assert!(html.contains("mock-model"), "{html}");
    let target = env.work().join("out/page.html");
    let out = env.run(
        &s(&[
            "--export",
            session.to_str().unwrap(),
            target.to_str().unwrap(),
        ]),
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("page.html"), "{}", stdout(&out));
    assert!(
        std::fs::read_to_string(&target)
            .unwrap()
            .contains("the question")
    );
    // A file that is not a session is refused with a clear error.
    let junk = env.work().join("junk.jsonl");
    std::fs::write(&junk, "not json\n").unwrap();
    let out = env.run(&s(&["--export", junk.to_str().unwrap()]), "");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("--export"), "{}", stderr(&out));
    assert_eq!(mock.requests().len(), 1, "exporting asks no model");
}

/// The header of a session file.
fn header(path: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(text.lines().next().unwrap()).unwrap()
}

#[test]
fn session_id_opens_or_creates_the_directory_s_session_with_that_id() {
    let env = Env::new();
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::text("noted"))
            .push(ScriptedResponse::text("still here")),
    );
    let run = |prompt: &str| {
        let mut args = mock.args();
        args.extend(s(&["--session-id", "task-42.a", "-p", prompt]));
        env.run(&args, "")
    };
    let out = run("remember the number 42");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let files = env.session_files();
    assert_eq!(files.len(), 1);
    assert_eq!(header(&files[0])["id"], "task-42.a");
    let out = run("which number?");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(env.session_files().len(), 1, "the same session continued");
    assert!(request_text(&mock.requests()[1]).contains("remember the number 42"));
    for bad in ["-starts-with-dash", "has space", "ends.", ""] {
        let out = env.run(&s(&[&format!("--session-id={bad}"), "-p", "hi"]), "");
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("--session-id"), "{}", stderr(&out));
    }
    let out = env.run(&s(&["--session-id", "x1", "-c", "-p", "hi"]), "");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn fork_copies_a_session_into_this_directory_and_leaves_the_source_alone() {
    let env = Env::new();
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::text("the original answer"))
            .push(ScriptedResponse::text("answered in the fork"))
            .push(ScriptedResponse::text("a named fork")),
    );
    let mut args = mock.args();
    args.extend(s(&["-p", "the original question"]));
    let out = env.run(&args, "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let source = env.session_files().pop().unwrap();
    let source_bytes = std::fs::read(&source).unwrap();
    let source_id = header(&source)["id"].as_str().unwrap().to_string();

    let elsewhere = env.home.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let mut args = mock.args();
    args.extend(s(&[
        "--cwd",
        elsewhere.to_str().unwrap(),
        "--fork",
        &source_id[..13],
        "-p",
        "and then?",
    ]));
    let out = env.run(&args, "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let second = request_text(&mock.requests()[1]);
    assert!(
        second.contains("the original question") && second.contains("the original answer"),
        "{second}"
    );
    assert_eq!(
        std::fs::read(&source).unwrap(),
        source_bytes,
        "the source is untouched"
    );
    let fork = env
        .session_files()
        .into_iter()
        .find(|f| *f != source)
        .unwrap();
    let h = header(&fork);
    assert_eq!(h["cwd"], elsewhere.to_str().unwrap());
    assert_eq!(h["parentSession"], source.to_str().unwrap());
    assert_ne!(h["id"], source_id.as_str());

    // By path, with the new id chosen.
    let mut args = mock.args();
    args.extend(s(&[
        "--fork",
        source.to_str().unwrap(),
        "--session-id",
        "named-fork",
        "-p",
        "again",
    ]));
    let out = env.run(&args, "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        env.session_files()
            .iter()
            .any(|f| header(f)["id"] == "named-fork")
    );
    let out = env.run(&s(&["--fork", "no-such-session", "-p", "hi"]), "");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--fork"), "{}", stderr(&out));
    assert_eq!(mock.requests().len(), 3);
}

#[test]
fn tui_mode_takes_pi_s_two_modes_and_refuses_others_with_the_reason() {
    let env = Env::new();
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::text("full screen"))
            .push(ScriptedResponse::text("regular")),
    );
    for (mode, answer) in [("fullscreen", "full screen"), ("regular", "regular")] {
        let mut argv = mock.args();
        argv.extend(s(&["--tui-mode", mode, "--no-session", "-p", "hi"]));
        let out = env.run(&argv, "");
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(stdout(&out).trim(), answer);
    }
    let out = env.run(&s(&["--tui-mode", "inline", "-p", "hi"]), "");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("not a terminal mode; use fullscreen or regular"),
        "{}",
        stderr(&out)
    );
    assert_eq!(mock.requests().len(), 2);
}

#[test]
fn builtin_extensions_are_turned_off_and_on_as_in_pi() {
    let env = Env::new();
    add_self_with(&env, &["--exposure", "direct"]);
    let mcp_tools = |extra: &[&str]| -> Vec<String> {
        tool_names(&first_request(&env, true, extra))
            .into_iter()
            .filter(|t| t.starts_with("mcp__"))
            .collect()
    };
    assert!(!mcp_tools(&[]).is_empty());
    // The setting turns MCP off; -e turns it back on.
    let mut cfg: Value = serde_json::from_str(
        &std::fs::read_to_string(env.home.path().join("settings.json")).unwrap(),
    )
    .unwrap();
    cfg["extensions"] = serde_json::json!(["-builtin:mcp", "./my-extension.ts"]);
    env.settings(cfg);
    assert!(mcp_tools(&[]).is_empty());
    assert!(!mcp_tools(&["-e", "builtin:mcp"]).is_empty());
    // --no-extensions turns them all off, so naming codemode is an error.
    assert!(mcp_tools(&["-ne", "-e", "builtin:mcp"]).len() > 1);
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("ok")));
    let mut argv = mock.args();
    argv.extend(s(&["--no-extensions", "--tools", "+codemode", "-p", "hi"]));
    let out = env.run(&argv, "");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("codemode is off: its built-in extension is disabled"),
        "{}",
        stderr(&out)
    );
    // TypeScript extensions are not run: said for the setting, refused for -e.
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("ok")));
    let mut argv = mock.args();
    argv.extend(s(&["-p", "hi"]));
    let out = env.run(&argv, "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("entries makai does not load")
            && stderr(&out).contains("./my-extension.ts"),
        "{}",
        stderr(&out)
    );
    let mut argv = mock.args();
    argv.extend(s(&["-e", "./review.ts", "-p", "hi"]));
    let out = env.run(&argv, "");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("makai does not run pi's TypeScript extensions"),
        "{}",
        stderr(&out)
    );
}
