//! pi's `defaultTools` setting and `--tools` lists with `+name`/`-name`:
//! plain names replace the selection, changes apply on top of it, a project
//! list of changes applies on top of the user's, and an unknown name is an
//! error naming where it came from. Checked on the tools the model is offered.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use makai_mockllm::{Scenario, ScriptedResponse};
use serde_json::json;

/// The names of the tools the first request offered.
fn offered(env: &Env, extra: &[&str]) -> Vec<String> {
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("ok")));
    let mut args = mock.args();
    args.extend(s(extra));
    args.extend(s(&["-p", "hi"]));
    let out = env.run(&args, "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    tool_names(&mock.requests()[0].body)
}

fn settings(path: &std::path::Path, value: serde_json::Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, value.to_string()).unwrap();
}

#[test]
fn default_tools_and_tool_changes_select_the_offered_tools() {
    let env = Env::new();
    let user = env.home.path().join("settings.json");
    let project = env.work().join(".makai/settings.json");
    settings(&user, json!({"defaultTools": ["read", "bash"]}));
    assert_eq!(offered(&env, &[]), ["read", "bash"]);
    // A trusted project's changes apply on top of the user's selection.
    settings(&project, json!({"defaultTools": ["+grep", "-bash"]}));
    assert_eq!(offered(&env, &["-a"]), ["read", "grep"]);
    // An untrusted project's settings are not read.
    assert_eq!(offered(&env, &[]), ["read", "bash"]);
    // --tools changes apply on top of the settings; plain names replace.
    assert_eq!(
        offered(&env, &["-a", "--tools", "+ls,-read"]),
        ["grep", "ls"]
    );
    assert_eq!(offered(&env, &["-a", "--tools", "find,ls"]), ["find", "ls"]);
    // A project list with plain names replaces the user's.
    settings(&project, json!({"defaultTools": ["edit"]}));
    assert_eq!(offered(&env, &["-a"]), ["edit"]);
    // An empty list offers no built-in tool.
    settings(&project, json!({"defaultTools": []}));
    assert!(offered(&env, &["-a"]).is_empty());
    std::fs::remove_file(&project).unwrap();
    std::fs::remove_file(&user).unwrap();
    assert_eq!(
        offered(&env, &[]),
        [
            "read", "write", "edit", "bash", "grep", "find", "ls", "task"
        ],
        "makai's default: the seven file and shell tools and task"
    );
    assert_eq!(offered(&env, &["--tools", "-bash"]).len(), 7);
    assert_eq!(offered(&env, &["--tools", "-task"]).len(), 7);
}

#[test]
fn an_unknown_tool_in_default_tools_or_a_change_is_an_error_naming_its_source() {
    let env = Env::new();
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("unused")));
    let mut args = mock.args();
    args.extend(s(&["-p", "hi"]));
    settings(
        &env.home.path().join("settings.json"),
        json!({"defaultTools": ["+telnet"]}),
    );
    let out = env.run(&args, "");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("defaultTools") && stderr(&out).contains("telnet"),
        "{}",
        stderr(&out)
    );
    std::fs::remove_file(env.home.path().join("settings.json")).unwrap();
    let mut bad = args.clone();
    bad.extend(s(&["--tools", "+telnet"]));
    let out = env.run(&bad, "");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--tools +telnet"), "{}", stderr(&out));
    assert!(mock.requests().is_empty(), "nothing was sent");
}

#[test]
fn pis_settings_files_choose_the_tools_beneath_makais() {
    let env = Env::new();
    // A pi user's own settings, and a pi project's change to them.
    settings(
        &env.pi_dir().join("settings.json"),
        json!({"defaultTools": ["read", "ls"], "theme": "dark", "steeringMode": 3}),
    );
    assert_eq!(offered(&env, &[]), ["read", "ls"]);
    settings(
        &env.work().join(".pi/settings.json"),
        json!({"defaultTools": ["+find"]}),
    );
    // `.pi/settings.json` needs trust like the rest of the project.
    assert_eq!(offered(&env, &[]), ["read", "ls"]);
    assert_eq!(offered(&env, &["-a"]), ["read", "ls", "find"]);
    // makai's own user file wins over pi's.
    settings(
        &env.home.path().join("settings.json"),
        json!({"defaultTools": ["bash"]}),
    );
    assert_eq!(offered(&env, &["-a"]), ["bash", "find"]);
}
