//! Skills and prompt templates through the built binary: discovered from
//! makai's and pi's folders, advertised in the system prompt, expanded in
//! print, JSON and RPC modes, listed by `get_commands`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::Path;

use common::*;
use makai_mockllm::{Scenario, ScriptedResponse};
use serde_json::json;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A makai template, a pi template, a pi user skill and a project skill.
fn resources(env: &Env) {
    write(
        &env.home.path().join("prompts/review.md"),
        "---\ndescription: Review the changes\n---\nReview the code. Focus on ${1:-everything}.\n",
    );
    write(
        &env.pi_dir().join("prompts/explain.md"),
        "---\ndescription: Explain a file\n---\nExplain $1 to me like $2.\n",
    );
    write(
        &env.pi_dir().join("skills/pdf-tools/SKILL.md"),
        "---\nname: pdf-tools\ndescription: Extract text from PDF files.\n---\nRun scripts/extract.sh on the file.\n",
    );
    write(
        &env.work().join(".agents/skills/release/SKILL.md"),
        "---\nname: release\ndescription: Cut a release.\ndisable-model-invocation: true\n---\nBump, tag, push.\n",
    );
}

fn last_user_text(r: &makai_mockllm::RecordedRequest) -> String {
    let messages = r.body["messages"].as_array().unwrap();
    let user = messages.iter().rev().find(|m| m["role"] == "user").unwrap();
    match &user["content"] {
        serde_json::Value::String(s) => s.clone(),
        parts => parts
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
    }
}

#[test]
fn print_mode_expands_templates_and_skills_and_advertises_skills() {
    let env = Env::new();
    resources(&env);
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::text("reviewed"))
            .push(ScriptedResponse::text("extracted"))
            .push(ScriptedResponse::text("released")),
    );
    let mut argv = mock.args();
    argv.extend(s(&[
        "-a",
        "--no-session",
        "-p",
        "/review \"error handling\"",
    ]));
    let out = env.run(&argv, "");
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let mut argv = mock.args();
    argv.extend(s(&[
        "-a",
        "--no-session",
        "-p",
        "/skill:pdf-tools report.pdf",
    ]));
    assert_eq!(env.run(&argv, "").status.code(), Some(0));
    let mut argv = mock.args();
    argv.extend(s(&["-a", "--no-session", "-p", "/skill:release"]));
    assert_eq!(env.run(&argv, "").status.code(), Some(0));

    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(
        last_user_text(&reqs[0]),
        "Review the code. Focus on error handling."
    );
    let system = reqs[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    let skill_path = env.pi_dir().join("skills/pdf-tools/SKILL.md");
    assert!(system.contains("<name>pdf-tools</name>"), "{system}");
    assert!(
        system.contains(&format!("<location>{}</location>", skill_path.display())),
        "{system}"
    );
    assert!(
        !system.contains("release"),
        "disable-model-invocation: {system}"
    );
    let skill = last_user_text(&reqs[1]);
    assert!(
        skill.starts_with(&format!(
            "<skill name=\"pdf-tools\" location=\"{}\">",
            skill_path.display()
        )),
        "{skill}"
    );
    assert!(skill.contains("Run scripts/extract.sh on the file.\n</skill>\n\nreport.pdf"));
    assert!(last_user_text(&reqs[2]).contains("Bump, tag, push."));
}

#[test]
fn no_skills_and_no_prompt_templates_turn_discovery_off() {
    let env = Env::new();
    resources(&env);
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("ok")));
    let mut argv = mock.args();
    argv.extend(s(&[
        "--no-session",
        "--no-skills",
        "--no-prompt-templates",
        "-p",
        "/review now",
    ]));
    assert_eq!(env.run(&argv, "").status.code(), Some(0));
    let reqs = mock.requests();
    assert_eq!(last_user_text(&reqs[0]), "/review now");
    assert!(!request_text(&reqs[0]).contains("available_skills"));
}

#[test]
fn json_mode_expands_templates() {
    let env = Env::new();
    resources(&env);
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("ok")));
    let mut argv = mock.args();
    argv.extend(s(&[
        "--no-session",
        "--mode",
        "json",
        "/explain main.rs a child",
    ]));
    let out = env.run(&argv, "");
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(
        last_user_text(&mock.requests()[0]),
        "Explain main.rs to me like a."
    );
    // The user message event carries the expanded text, as pi's does.
    let events = json_lines(&stdout(&out));
    assert!(
        events.iter().any(|e| e["type"] == "message_start"
            && e["message"]["role"] == "user"
            && e["message"]["content"]
                .to_string()
                .contains("Explain main.rs")),
        "{events:#?}"
    );
}

#[test]
fn rpc_lists_commands_and_expands_prompts() {
    let env = Env::new();
    resources(&env);
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("done")));
    let mut argv = mock.args();
    argv.push("--no-session".into());
    argv.push("--approve".into());
    let mut rpc = Rpc::start(&env, &argv);
    let data = rpc.ok(json!({"type": "get_commands"}));
    let commands = data["commands"].as_array().unwrap();
    let names: Vec<&str> = commands
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["review", "explain", "skill:pdf-tools", "skill:release"]
    );
    assert_eq!(
        commands[1],
        json!({
            "name": "explain",
            "description": "Explain a file",
            "source": "prompt",
            "sourceInfo": {
                "path": env.pi_dir().join("prompts/explain.md").display().to_string(),
                "source": "local",
                "scope": "user",
                "origin": "top-level"
            }
        })
    );
    assert_eq!(commands[3]["sourceInfo"]["scope"], "project");
    rpc.ok(json!({"type": "prompt", "message": "/review"}));
    rpc.wait_event("agent_end");
    assert_eq!(
        last_user_text(&mock.requests()[0]),
        "Review the code. Focus on everything."
    );
    assert_eq!(rpc.finish(), 0);
}

/// pi's `skills` and `prompts` settings: paths (from the settings file's
/// folder) load skills and templates besides the ones found; `!pattern`
/// and `-path` leave some out, found ones too; `+path` brings one back.
#[test]
fn the_skills_and_prompts_settings_load_and_filter_resources() {
    let env = Env::new();
    resources(&env);
    let skill = |dir: &str, name: &str| {
        write(
            &env.home.path().join(format!("team/{dir}/SKILL.md")),
            &format!("---\nname: {name}\ndescription: The {name} skill.\n---\nDo {name}.\n"),
        );
    };
    skill("lint", "lint");
    skill("draft-a", "draft-a");
    skill("draft-ok", "draft-ok");
    write(
        &env.home.path().join("extra-prompts/ship.md"),
        "---\ndescription: Ship it\n---\nShip.\n",
    );
    env.settings(json!({
        "skills": ["team", "!team/draft-*/**", "+team/draft-ok", "-~/nowhere"],
        "prompts": ["extra-prompts", "!**/explain.md"],
    }));
    let mock = Mock::start(Scenario::new());
    let mut argv = mock.args();
    argv.push("--no-session".into());
    argv.push("--approve".into());
    let mut rpc = Rpc::start(&env, &argv);
    let data = rpc.ok(json!({"type": "get_commands"}));
    let mut names: Vec<&str> = data["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "review",
            "ship",
            "skill:draft-ok",
            "skill:lint",
            "skill:pdf-tools",
            "skill:release"
        ]
    );
    assert_eq!(rpc.finish(), 0);
}
