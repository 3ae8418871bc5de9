//! A session opened with `--session PATH` runs in the working directory its
//! header records, as pi runs it; a session whose directory is gone stops a
//! print-mode run with an error that says what to do.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use makai_mockllm::{Scenario, ScriptedResponse};
use serde_json::json;

/// A session file started in `cwd`, with one earlier exchange.
fn session_from(env: &Env, cwd: &str) -> std::path::PathBuf {
    session_started_in(env, cwd, "earlier")
}

#[test]
fn a_session_from_another_directory_runs_there_as_pi_runs_it() {
    let env = Env::new();
    let project = project_beside(&env);
    let file = session_from(&env, project.path().to_str().unwrap());
    let mock = Mock::start(with_ls_round(Scenario::new(), "listed"));
    let mut argv = mock.args();
    argv.extend(s(&[
        "--session",
        file.to_str().unwrap(),
        "-p",
        "list the files",
    ]));
    let out = env.run(&argv, "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_ran_in_the_project(&out, &mock.requests()[1].raw_body);

    // --cwd chooses for itself.
    let mock = Mock::start(with_ls_round(Scenario::new(), "listed"));
    let mut argv = mock.args();
    argv.extend(s(&[
        "--session",
        file.to_str().unwrap(),
        "--cwd",
        env.work().to_str().unwrap(),
        "-p",
        "list the files",
    ]));
    let out = env.run(&argv, "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        mock.requests()[1]
            .raw_body
            .contains("only-in-the-current-dir.txt")
    );
}

#[test]
fn a_session_whose_directory_is_gone_stops_a_print_run_and_says_what_to_do() {
    let env = Env::new();
    let gone = env.home.path().join("renamed-project");
    let file = session_from(&env, gone.to_str().unwrap());
    let mock = Mock::start(Scenario::new().with_fallback(ScriptedResponse::text("fine")));
    let mut argv = mock.args();
    argv.extend(s(&["--session", file.to_str().unwrap(), "-p", "hi"]));
    let out = env.run(&argv, "");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("no longer exists") && err.contains("--cwd DIR") && err.contains("--fork"),
        "{err}"
    );
    assert!(mock.requests().is_empty());
    // The way out it names works.
    argv.extend(s(&["--cwd", env.work().to_str().unwrap()]));
    let out = env.run(&argv, "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "fine");
}

/// A session made by a print run in `dir` (stored with that directory's
/// sessions); returns its id.
fn session_made_in(env: &Env, mock: &Mock, dir: &std::path::Path) -> String {
    let mut argv = mock.args();
    argv.extend(s(&["--cwd", dir.to_str().unwrap(), "-p", "first"]));
    let out = env.run(&argv, "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let file = env.session_files().into_iter().next().unwrap();
    let header: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(file)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    header["id"].as_str().unwrap().to_string()
}

/// The bug this pins: `--session ID` found a session of another directory
/// and ran it in the current one, its tools on the wrong tree.
#[test]
fn a_session_id_from_another_directory_runs_there_too() {
    let env = Env::new();
    let project = project_beside(&env);
    let mock = Mock::start(with_ls_round(
        Scenario::new().push(ScriptedResponse::text("made")),
        "listed",
    ));
    let id = session_made_in(&env, &mock, project.path());
    let mut argv = mock.args();
    argv.extend(s(&["--session", &id[..8], "-p", "list the files"]));
    let out = env.run(&argv, "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listed = mock.requests()[2].raw_body.clone();
    assert_ran_in_the_project(&out, &listed);
    assert!(
        listed.contains("first"),
        "the session's history was sent: {listed}"
    );
    assert_eq!(env.session_files().len(), 1, "the same session went on");
}

/// The bug this pins: RPC's `switch_session` to a session another directory
/// started ran it in makai's directory, its tools on the wrong tree. pi
/// rebuilds its runtime for the session's directory; so does makai now, and
/// a session whose directory is gone is refused, the current one kept.
#[test]
fn rpc_switch_session_to_another_directorys_session_runs_it_there() {
    let env = Env::new();
    let project = project_beside(&env);
    let project_dir = project.path().to_str().unwrap().to_string();
    let file = session_from(&env, &project_dir);
    let gone_dir = env.home.path().join("renamed-project");
    let gone_file = env.home.path().join("gone.jsonl");
    std::fs::write(
        &gone_file,
        std::fs::read_to_string(&file)
            .unwrap()
            .replace(&project_dir, gone_dir.to_str().unwrap()),
    )
    .unwrap();
    let mock = Mock::start(with_ls_round(Scenario::new(), "listed"));
    let mut rpc = Rpc::start(&env, &mock.args());
    // What the client set for its runs carries over to the rebuilt session.
    rpc.ok(json!({"type": "set_auto_compaction", "enabled": false}));
    rpc.ok(json!({"type": "set_steering_mode", "mode": "all"}));

    let switched = rpc.ok(json!({"type": "switch_session", "sessionPath": file}));
    assert_eq!(switched, json!({"cancelled": false}));
    let state = rpc.ok(json!({"type": "get_state"}));
    assert_eq!(state["sessionFile"], file.to_str().unwrap());
    assert_eq!(state["messageCount"], 1, "{state}");
    assert_eq!(state["autoCompactionEnabled"], false, "{state}");
    assert_eq!(state["steeringMode"], "all", "{state}");

    // A session whose directory is gone is refused; the current one stays.
    let refused = rpc.call(json!({"type": "switch_session", "sessionPath": gone_file}));
    assert_eq!(refused["success"], false, "{refused}");
    let error = refused["error"].as_str().unwrap();
    assert!(
        error.contains("no longer exists") && error.contains("renamed-project"),
        "{error}"
    );
    let state = rpc.ok(json!({"type": "get_state"}));
    assert_eq!(state["sessionFile"], file.to_str().unwrap());

    rpc.ok(json!({"type": "prompt", "message": "list the files"}));
    rpc.wait_event("agent_end");
    let listed = mock.requests()[1].raw_body.clone();
    assert!(listed.contains("only-in-the-project.txt"), "{listed}");
    assert!(!listed.contains("only-in-the-current-dir.txt"), "{listed}");
    assert!(
        listed.contains("earlier"),
        "the session's history: {listed}"
    );
    assert_eq!(rpc.finish(), 0);
    // The exchange went on in the session's own file.
    let saved = std::fs::read_to_string(&file).unwrap();
    assert!(saved.contains("list the files"), "{saved}");
}
