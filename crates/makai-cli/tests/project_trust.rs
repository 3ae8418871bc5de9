//! Project trust (pi 1.5.2) through the built binary: what a working
//! directory supplies (settings, skills, SYSTEM.md files) loads only once the
//! project is trusted, by `-a`, a saved decision in `trust.json` or
//! `defaultProjectTrust`; and `SYSTEM.md` / `APPEND_SYSTEM.md` shape the
//! system prompt.
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

const PROJECT_SYSTEM: &str = "You are the project's own assistant (from .pi/SYSTEM.md).";
const PROJECT_APPEND: &str = "Always answer in haiku (from .makai/APPEND_SYSTEM.md).";

/// Saves in `trust.json` that `dir` is trusted, as `/trust yes` would.
fn save_trusted(env: &Env, dir: &Path) {
    let dir = dir.canonicalize().unwrap();
    write(
        &env.home.path().join("trust.json"),
        &json!({ dir.to_str().unwrap(): "trusted" }).to_string(),
    );
}

/// A project that supplies a system prompt, an addition to it, a skill and a
/// setting that shows in the request (the thinking level).
fn project(dir: &Path) {
    write(&dir.join(".pi/SYSTEM.md"), PROJECT_SYSTEM);
    write(&dir.join(".makai/APPEND_SYSTEM.md"), PROJECT_APPEND);
    write(
        &dir.join(".makai/skills/deploy/SKILL.md"),
        "---\nname: deploy\ndescription: Deploy the project to production.\n---\nRun ./deploy.sh.\n",
    );
}

/// Runs one prompt in `cwd` and returns the system prompt the server got, and stderr.
fn run_in(env: &Env, cwd: &Path, extra: &[&str]) -> (String, String) {
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("ok")));
    let mut args = mock.args();
    args.extend(s(extra));
    args.extend(s(&["--no-session", "-p", "hello"]));
    let out = env
        .cmd()
        .current_dir(cwd)
        .args(&args)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 1);
    let first = &reqs[0].body["messages"][0];
    assert_eq!(first["role"], "system");
    (first["content"].as_str().unwrap().to_string(), stderr(&out))
}

fn loaded(prompt: &str) -> bool {
    let system = prompt.starts_with(PROJECT_SYSTEM);
    let append = prompt.contains(PROJECT_APPEND);
    let skill = prompt.contains("Deploy the project to production.");
    assert!(
        system == append && append == skill,
        "the project loaded in part: {prompt}"
    );
    system
}

#[test]
fn an_untrusted_project_loads_nothing_of_its_own_and_says_how_to_trust_it() {
    let env = Env::new();
    project(env.work());
    let (prompt, err) = run_in(&env, env.work(), &[]);
    assert!(!loaded(&prompt), "{prompt}");
    assert!(err.contains("project not trusted"), "{err}");
    assert!(err.contains("-a (--approve)"), "{err}");

    let (prompt, err) = run_in(&env, env.work(), &["-a"]);
    assert!(loaded(&prompt), "{prompt}");
    assert!(!err.contains("not trusted"), "{err}");

    // pi's two-letter short flag declines, and says nothing: the user chose.
    let (prompt, err) = run_in(&env, env.work(), &["-na"]);
    assert!(!loaded(&prompt), "{prompt}");
    assert!(!err.contains("not trusted"), "{err}");
}

#[test]
fn a_saved_decision_covers_subfolders_and_a_flag_overrides_it() {
    let env = Env::new();
    let sub = env.work().join("service");
    project(&sub);
    let root = env.work().canonicalize().unwrap();
    save_trusted(&env, &root);
    let (prompt, _) = run_in(&env, &sub, &[]);
    assert!(loaded(&prompt), "{prompt}");
    let (prompt, _) = run_in(&env, &sub, &["--no-approve"]);
    assert!(!loaded(&prompt), "{prompt}");

    // The closest decision wins.
    write(
        &env.home.path().join("trust.json"),
        &json!({
            root.to_str().unwrap(): "trusted",
            sub.canonicalize().unwrap().to_str().unwrap(): "untrusted",
        })
        .to_string(),
    );
    let (prompt, err) = run_in(&env, &sub, &[]);
    assert!(!loaded(&prompt), "{prompt}");
    assert!(!err.contains("not trusted"), "{err}");
}

#[test]
fn default_project_trust_always_trusts_and_never_declines() {
    let env = Env::new();
    project(env.work());
    env.settings(json!({"defaultProjectTrust": "always"}));
    let (prompt, _) = run_in(&env, env.work(), &[]);
    assert!(loaded(&prompt), "{prompt}");
    env.settings(json!({"defaultProjectTrust": "never"}));
    let (prompt, err) = run_in(&env, env.work(), &[]);
    assert!(!loaded(&prompt), "{prompt}");
    assert!(err.contains("defaultProjectTrust setting (never)"), "{err}");
}

#[test]
fn a_project_cannot_trust_itself() {
    let env = Env::new();
    project(env.work());
    write(
        &env.work().join(".makai/settings.json"),
        &json!({"defaultProjectTrust": "always", "trustProjectSettings": true}).to_string(),
    );
    let (prompt, _) = run_in(&env, env.work(), &[]);
    assert!(!loaded(&prompt), "{prompt}");
}

#[test]
fn an_untrusted_projects_settings_are_not_read() {
    let env = Env::new();
    // A project setting that changes the request: one tool only.
    write(
        &env.work().join(".makai/settings.json"),
        &json!({"defaultTools": ["read"]}).to_string(),
    );
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::text("ok"))
            .push(ScriptedResponse::text("ok")),
    );
    for flag in ["-na", "-a"] {
        let mut args = mock.args();
        args.extend(s(&[flag, "--no-session", "-p", "hello"]));
        let out = env.run(&args, "");
        assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    }
    let reqs = mock.requests();
    let tools = |i: usize| reqs[i].body["tools"].as_array().map_or(0, Vec::len);
    assert!(tools(0) > 1, "untrusted: the default tools");
    assert_eq!(tools(1), 1, "trusted: the project's tool list");
}

#[test]
fn the_users_own_system_files_apply_everywhere_and_a_trusted_projects_win() {
    let env = Env::new();
    write(&env.home.path().join("SYSTEM.md"), "The user's own prompt.");
    write(
        &env.pi_dir().join("APPEND_SYSTEM.md"),
        "Addition from pi's agent folder.",
    );
    let (prompt, _) = run_in(
        &env,
        env.work(),
        &["--append-system-prompt", "Addition from the flag."],
    );
    assert!(prompt.starts_with("The user's own prompt."), "{prompt}");
    let from_file = prompt.find("Addition from pi's agent folder.").unwrap();
    let from_flag = prompt.find("Addition from the flag.").unwrap();
    assert!(from_file < from_flag, "{prompt}");

    project(env.work());
    let (prompt, _) = run_in(&env, env.work(), &["-a"]);
    assert!(prompt.starts_with(PROJECT_SYSTEM), "{prompt}");
    assert!(!prompt.contains("The user's own prompt."), "{prompt}");
    assert!(
        !prompt.contains("Addition from pi's agent folder."),
        "{prompt}"
    );

    // --system-prompt replaces whatever SYSTEM.md said.
    let (prompt, _) = run_in(
        &env,
        env.work(),
        &["-a", "--system-prompt", "From the flag."],
    );
    assert!(prompt.starts_with("From the flag."), "{prompt}");
}

#[test]
fn a_folder_with_nothing_to_protect_needs_no_decision() {
    let env = Env::new();
    // Context files load whatever the decision, and need none.
    write(&env.work().join("AGENTS.md"), "Use tabs, not spaces.");
    std::fs::create_dir_all(env.work().join(".pi")).unwrap();
    let (prompt, err) = run_in(&env, env.work(), &[]);
    assert!(prompt.contains("Use tabs, not spaces."), "{prompt}");
    assert!(!err.contains("trust"), "{err}");
}

#[test]
fn a_corrupt_trust_file_is_a_clear_error() {
    let env = Env::new();
    project(env.work());
    write(&env.home.path().join("trust.json"), "{not json");
    let mock = Mock::start(Scenario::new());
    let mut args = mock.args();
    args.extend(s(&["--no-session", "-p", "hello"]));
    let out = env.run(&args, "");
    assert_ne!(out.status.code(), Some(0));
    let err = stderr(&out);
    assert!(err.contains("trust.json"), "{err}");
    assert!(err.contains("invalid"), "{err}");
    assert!(mock.requests().is_empty());
}

#[test]
fn mcp_list_leaves_an_untrusted_projects_servers_out() {
    let env = Env::new();
    // The user allows project servers; the project is not trusted yet.
    env.settings(json!({"trustProjectSettings": true}));
    write(
        &env.work().join(".makai/settings.json"),
        &json!({"mcpServers": {"from-the-repo": {"command": "true"}}}).to_string(),
    );
    let out = env.run(&s(&["mcp", "list", "--wait", "1"]), "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listing = stdout(&out);
    assert!(!listing.contains("from-the-repo"), "{listing}");
    assert!(listing.contains("project not trusted"), "{listing}");

    save_trusted(&env, env.work());
    let out = env.run(&s(&["mcp", "list", "--wait", "1"]), "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("from-the-repo"), "{}", stdout(&out));
}

#[test]
fn mcp_list_reads_pis_mcp_json_files_and_follows_trust() {
    let env = Env::new();
    env.settings(json!({"trustProjectSettings": true}));
    write(
        &env.pi_dir().join("mcp.json"),
        &json!({"mcpServers": {"pi-user": {"command": "true"}, "turned-off": {"command": "true"}}})
            .to_string(),
    );
    // A project that holds nothing but pi's MCP file still needs trust.
    write(
        &env.work().join(".pi/mcp.json"),
        &json!({"mcpServers": {"pi-project": {"command": "true"}, "turned-off": {"enabled": false}}})
            .to_string(),
    );
    let out = env.run(&s(&["mcp", "list", "--wait", "1"]), "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listing = stdout(&out);
    assert!(listing.contains("pi-user [user]"), "{listing}");
    assert!(
        listing.contains(&format!(
            "defined in {}",
            env.pi_dir().join("mcp.json").display()
        )),
        "{listing}"
    );
    assert!(!listing.contains("pi-project"), "{listing}");
    assert!(!listing.contains("turned-off [user] disabled"), "{listing}");
    assert!(
        listing.contains(".pi/mcp.json not read: project not trusted"),
        "{listing}"
    );

    save_trusted(&env, env.work());
    let out = env.run(&s(&["mcp", "list", "--wait", "1"]), "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listing = stdout(&out);
    assert!(listing.contains("pi-project [project]"), "{listing}");
    assert!(listing.contains("turned-off [user] disabled"), "{listing}");
}

#[test]
fn makai_sessions_reads_an_untrusted_projects_settings_no_more_than_a_run_does() {
    let env = Env::new();
    write(
        &env.work().join(".makai/settings.json"),
        &json!({"sessionDir": "project-sessions"}).to_string(),
    );
    let out = env.run(&s(&["sessions", "list"]), "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        !stdout(&out).contains("project-sessions"),
        "{}",
        stdout(&out)
    );

    save_trusted(&env, env.work());
    let out = env.run(&s(&["sessions", "list"]), "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("project-sessions"),
        "{}",
        stdout(&out)
    );
}
