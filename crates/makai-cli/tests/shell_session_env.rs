//! pi's environment for the model's shell commands: `PI_SESSION_ID`,
//! `PI_SESSION_FILE`, `PI_PROVIDER`, `PI_MODEL` and `PI_REASONING_LEVEL`
//! resolved when each command starts, and the process markers `AI_AGENT` and
//! `PI_CODING_AGENT` (pi's docs/environment-variables.md). Values a parent
//! session left in makai's environment are never passed on as this one's.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use makai_mockllm::{Scenario, ScriptedResponse};
use serde_json::{Value, json};

/// What the scripted `bash` call prints: each variable, `unset` when it is.
const PRINT_VARS: &str = r#"printf '%s|' "${PI_SESSION_ID-unset}" "${PI_SESSION_FILE-unset}" "${PI_PROVIDER-unset}" "${PI_MODEL-unset}" "${PI_REASONING_LEVEL-unset}" "${PI_CODING_AGENT-unset}" "${AI_AGENT-unset}""#;

/// A parent session's values, as a makai started from another one inherits them.
const INHERITED: [(&str, &str); 5] = [
    ("PI_SESSION_ID", "parent-session"),
    ("PI_SESSION_FILE", "/parent/session.jsonl"),
    ("PI_PROVIDER", "parent-provider"),
    ("PI_MODEL", "parent-model"),
    ("PI_REASONING_LEVEL", "max"),
];

/// One bash call printing the variables, then an answer; `rounds` times.
fn scenario(rounds: usize) -> Scenario {
    let mut s = Scenario::new();
    for i in 0..rounds {
        s = s
            .push(ScriptedResponse::tool_call(
                format!("call_{i}"),
                "bash",
                json!({ "command": PRINT_VARS }).to_string(),
            ))
            .push(ScriptedResponse::text(format!("answer {i}")));
    }
    s
}

/// `lab/thinker` reasons, `lab/plain` does not.
fn models_json(env: &Env, mock: &Mock) {
    mock.lab_models(
        env,
        json!([{"id": "thinker", "reasoning": true}, {"id": "plain"}]),
    );
}

/// Sends a prompt and returns what its one `bash` call printed, split at `|`.
fn prompt_and_print(rpc: &mut Rpc, text: &str) -> Vec<String> {
    let id = rpc.send(json!({"type": "prompt", "message": text}));
    assert_eq!(rpc.response(&id)["success"], true);
    let end = rpc.wait_event("tool_execution_end");
    rpc.wait_event("agent_end");
    assert_eq!(end["isError"], false, "{end}");
    let out = end["result"]["content"][0]["text"].as_str().unwrap();
    out.trim_end_matches('|')
        .split('|')
        .map(str::to_string)
        .collect()
}

fn state(rpc: &mut Rpc) -> (String, String) {
    let s = rpc.ok(json!({"type": "get_state"}));
    (
        s["sessionId"].as_str().unwrap().to_string(),
        s["sessionFile"].as_str().unwrap().to_string(),
    )
}

#[test]
fn bash_commands_see_the_session_model_and_level_of_when_they_start() {
    let env = Env::new();
    let mock = Mock::start(scenario(3));
    models_json(&env, &mock);
    let mut vars = INHERITED.to_vec();
    vars.push(("AI_AGENT", "another-agent"));
    let mut rpc = Rpc::start_with(
        &env,
        &s(&["--model", "lab/thinker", "--thinking", "high"]),
        &vars,
    );

    let (id, file) = state(&mut rpc);
    assert!(std::path::Path::new(&file).is_absolute(), "{file}");
    let printed = prompt_and_print(&mut rpc, "one");
    assert_eq!(
        printed,
        [&id, &file, "lab", "thinker", "high", "true", "makai"],
        "the session's own values, not the parent's"
    );
    assert!(std::fs::read_to_string(&file).unwrap().contains(&id));

    // A model that does not reason runs at `off`, whatever the level chosen.
    rpc.ok(json!({"type": "set_model", "provider": "lab", "modelId": "plain"}));
    let printed = prompt_and_print(&mut rpc, "two");
    assert_eq!(
        printed,
        [&id, &file, "lab", "plain", "off", "true", "makai"]
    );

    // A new session: the next command names it and its file.
    rpc.ok(json!({"type": "new_session"}));
    let (new_id, new_file) = state(&mut rpc);
    assert_ne!(new_id, id);
    assert_ne!(new_file, file);
    let printed = prompt_and_print(&mut rpc, "three");
    assert_eq!(
        printed,
        [&new_id, &new_file, "lab", "plain", "off", "true", "makai"]
    );
    assert_eq!(rpc.finish(), 0);
}

/// Requests name the session they belong to (prompt caching keys on it);
/// after `new_session` they named the first one until this was fixed.
#[test]
fn requests_name_the_new_session_after_new_session() {
    let env = Env::new();
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::text("first"))
            .push(ScriptedResponse::text("second")),
    );
    let mut rpc = Rpc::start(&env, &mock.args_for("openai-responses"));
    let (first, _) = state(&mut rpc);
    let id = rpc.send(json!({"type": "prompt", "message": "one"}));
    assert_eq!(rpc.response(&id)["success"], true);
    rpc.wait_event("agent_end");
    rpc.ok(json!({"type": "new_session"}));
    let (second, _) = state(&mut rpc);
    let id = rpc.send(json!({"type": "prompt", "message": "two"}));
    assert_eq!(rpc.response(&id)["success"], true);
    rpc.wait_event("agent_end");
    assert_eq!(rpc.finish(), 0);
    let requests = mock.requests();
    let key = |r: &makai_mockllm::RecordedRequest| -> Value { r.body["prompt_cache_key"].clone() };
    assert_eq!(key(&requests[0]), first.as_str());
    assert_eq!(key(&requests[1]), second.as_str());
}

#[test]
fn a_session_without_a_file_unsets_the_inherited_file() {
    let env = Env::new();
    let mock = Mock::start(scenario(1));
    let mut args = mock.args();
    args.extend(s(&["--no-session", "--mode", "json", "-p", "go"]));
    let out = env.run_with_vars(&args, &INHERITED);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let end = json_lines(&stdout(&out))
        .into_iter()
        .find(|e| e["type"] == "tool_execution_end")
        .expect("a tool_execution_end event");
    let printed = end["result"]["content"][0]["text"].as_str().unwrap();
    let fields: Vec<&str> = printed.trim_end_matches('|').split('|').collect();
    assert_ne!(fields[0], "parent-session");
    assert_eq!(fields[1], "unset", "{printed}");
    assert_eq!(
        &fields[2..],
        ["custom", "mock-model", "off", "true", "makai"]
    );
}

/// pi's `PI_CODING_AGENT_SESSION_DIR` chooses the session folder when
/// makai's `MAKAI_SESSION_DIR` is not set.
#[test]
fn pi_session_dir_variable_chooses_the_session_folder() {
    let env = Env::new();
    let mock = Mock::start(Scenario::new().with_fallback(ScriptedResponse::text("ok")));
    let dir = env.home.path().join("pi-sessions");
    let dir_s = dir.display().to_string();
    let mut args = mock.args();
    args.extend(s(&["-p", "hello"]));
    let out = env.run_with_vars(&args, &[("PI_CODING_AGENT_SESSION_DIR", dir_s.as_str())]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let files: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
    assert_eq!(files.len(), 1, "one session file in {dir_s}");
    // makai's own variable wins over pi's.
    let mine = env.home.path().join("makai-sessions");
    let mine_s = mine.display().to_string();
    let out = env.run_with_vars(
        &args,
        &[
            ("PI_CODING_AGENT_SESSION_DIR", dir_s.as_str()),
            ("MAKAI_SESSION_DIR", mine_s.as_str()),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(std::fs::read_dir(&mine).unwrap().count(), 1);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
}

/// A sub-agent's commands are told the sub-agent's session: its own id and
/// its own file (beside the parent's), not the parent's file with the
/// child's id.
#[test]
fn a_sub_agent_s_commands_name_its_own_session_and_file() {
    let env = Env::new();
    let command = r#"printf '%s|%s' "$PI_SESSION_ID" "${PI_SESSION_FILE-unset}" > vars.txt"#;
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::tool_call(
                "t1",
                "task",
                json!({"task": "Print the session variables."}).to_string(),
            ))
            .push(ScriptedResponse::tool_call(
                "b1",
                "bash",
                json!({ "command": command }).to_string(),
            ))
            .push(ScriptedResponse::text("child: printed"))
            .push(ScriptedResponse::text("parent: done")),
    );
    let mut args = mock.args();
    args.extend(s(&["-p", "delegate"]));
    let out = env.run(&args, "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let printed = std::fs::read_to_string(env.work().join("vars.txt")).unwrap();
    let (id, file) = printed.split_once('|').unwrap();
    let files = env.session_files();
    assert_eq!(files.len(), 2, "the parent's and the child's: {files:?}");
    let header = |f: &std::path::Path| -> Value {
        let text = std::fs::read_to_string(f).unwrap();
        serde_json::from_str(text.lines().next().unwrap()).unwrap()
    };
    let child = std::path::Path::new(file);
    assert!(child.is_absolute(), "{file}");
    let child_header = header(child);
    assert_eq!(child_header["id"], id, "the file is the child's own");
    let parent = files.iter().find(|f| f.as_path() != child).unwrap();
    assert_ne!(header(parent)["id"], id);
    assert_eq!(
        child_header["parentSession"]
            .as_str()
            .map(std::path::Path::new),
        Some(parent.as_path())
    );
}
