//! Sessions in a real PostgreSQL through the built binary: print mode writes
//! there and `-c` continues it, RPC mode reads it (`get_entries`,
//! `get_tree`, `switch_session` by id), `makai sessions list|export|import`
//! move it to the session files and back byte for byte, the `store` setting
//! works (and is refused from a project file), a session id of another
//! directory runs there; bad input: a wrong password, a schema from a newer
//! makai.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use makai_coding::SessionStore;
use makai_mockllm::{Scenario, ScriptedResponse};
use makai_store_pg::testing::{database_or_skip, server_or_skip};
use serde_json::json;

fn mock() -> Mock {
    Mock::start(Scenario::new().with_fallback(ScriptedResponse::text("an answer")))
}

fn with(mock: &Mock, extra: &[&str]) -> Vec<String> {
    let mut a = mock.args();
    a.extend(s(extra));
    a
}

#[test]
fn print_mode_writes_to_postgres_and_continue_reads_it_back() {
    let Some(url) = database_or_skip("print_mode_writes_to_postgres") else {
        return;
    };
    let env = Env::new();
    let mock = mock();
    let out = env.run(&with(&mock, &["--store", &url, "-p", "first question"]), "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "an answer");
    // Nothing went to the session files.
    assert!(env.session_files().is_empty(), "{:?}", env.session_files());
    let out = env.run(
        &with(&mock, &["--store", &url, "-c", "-p", "second question"]),
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let second = request_text(&requests[1]);
    assert!(
        second.contains("first question") && second.contains("an answer"),
        "the continued session lost its history: {second}"
    );

    // Listed, exported line for line, imported into the session files.
    let list = env.run(&s(&["sessions", "list", "--store", &url]), "");
    assert_eq!(list.status.code(), Some(0), "{}", stderr(&list));
    let listed = stdout(&list);
    assert!(
        listed.contains("first question") && listed.contains("4 messages"),
        "{listed}"
    );
    let id = listed.split_whitespace().next().unwrap().to_string();
    let file = env.work().join("exported.jsonl");
    let out = env.run(
        &s(&[
            "sessions",
            "export",
            &id,
            "--store",
            &url,
            "-o",
            file.to_str().unwrap(),
        ]),
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let exported = std::fs::read_to_string(&file).unwrap();
    let lines = json_lines(&exported);
    assert_eq!(lines[0]["type"], "session");
    assert_eq!(lines[0]["id"], id.as_str());
    assert_eq!(lines.iter().filter(|l| l["type"] == "message").count(), 4);
    let out = env.run(&s(&["sessions", "import", file.to_str().unwrap()]), "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let files = env.session_files();
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(std::fs::read_to_string(&files[0]).unwrap(), exported);
    // And back into another database, byte for byte.
    let Some(other) = database_or_skip("print_mode_writes_to_postgres (second database)") else {
        return;
    };
    let out = env.run(
        &s(&[
            "sessions",
            "import",
            "--store",
            &other,
            files[0].to_str().unwrap(),
        ]),
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = env.run(&s(&["sessions", "export", &id[..8], "--store", &other]), "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), exported);
    // A second import of the same session is refused, naming it.
    let out = env.run(
        &s(&[
            "sessions",
            "import",
            "--store",
            &other,
            files[0].to_str().unwrap(),
        ]),
        "",
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("already has session"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn rpc_mode_reads_entries_and_tree_from_postgres_and_switches_by_id() {
    let Some(url) = database_or_skip("rpc_mode_reads_entries_and_tree_from_postgres") else {
        return;
    };
    let env = Env::new();
    let mock = mock();
    let out = env.run(
        &with(&mock, &["--store", &url, "-p", "an earlier session"]),
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let mut rpc = Rpc::start(&env, &with(&mock, &["--store", &url]));
    let state = rpc.ok(json!({"type": "get_state"}));
    let location = state["sessionFile"].as_str().unwrap().to_string();
    assert!(location.starts_with("postgres://"), "{location}");
    assert!(
        !location.contains(&url_password(&url)),
        "the password leaked: {location}"
    );
    rpc.ok(json!({"type": "prompt", "message": "hello"}));
    rpc.wait_event("agent_end");
    let entries = rpc.ok(json!({"type": "get_entries"}));
    let kinds: Vec<&str> = entries["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "message").count(),
        2,
        "{kinds:?}"
    );
    let tree = rpc.ok(json!({"type": "get_tree"}));
    assert_eq!(tree["tree"].as_array().unwrap().len(), 1, "{tree}");
    assert_eq!(tree["leafId"], entries["leafId"]);
    // The earlier session, by id.
    let list = env.run(&s(&["sessions", "list", "--store", &url]), "");
    let earlier = stdout(&list)
        .lines()
        .find(|l| l.contains("an earlier session"))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .unwrap_or_else(|| panic!("{}", stdout(&list)));
    rpc.ok(json!({"type": "switch_session", "sessionPath": earlier}));
    let messages = rpc.ok(json!({"type": "get_messages"}));
    assert!(
        messages.to_string().contains("an earlier session"),
        "{messages}"
    );
    assert_eq!(rpc.finish(), 0);
}

fn url_password(url: &str) -> String {
    url::Url::parse(url)
        .unwrap()
        .password()
        .unwrap()
        .to_string()
}

#[test]
fn the_store_setting_is_used_and_refused_from_a_project_file() {
    let Some(url) = database_or_skip("the_store_setting_is_used") else {
        return;
    };
    let env = Env::new();
    let mock = mock();
    // From a trusted project's file: ignored with a warning (sessions stay in files).
    std::fs::create_dir_all(env.work().join(".makai")).unwrap();
    std::fs::write(
        env.work().join(".makai/settings.json"),
        json!({"store": url}).to_string(),
    )
    .unwrap();
    let out = env.run(
        &with(&mock, &["-a", "--verbose", "-p", "from the project"]),
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("ignored \"store\""),
        "{}",
        stderr(&out)
    );
    assert_eq!(env.session_files().len(), 1);
    // From the user's settings: used.
    env.settings(json!({"store": url}));
    let out = env.run(&with(&mock, &["-p", "from the user settings"]), "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(env.session_files().len(), 1, "the session went to a file");
    let list = env.run(&s(&["sessions", "list"]), "");
    assert!(
        stdout(&list).contains("from the user settings"),
        "{}",
        stdout(&list)
    );
    // --store jsonl overrides the setting.
    let out = env.run(&with(&mock, &["--store", "jsonl", "-p", "to a file"]), "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(env.session_files().len(), 2);
    // Anything else is a usage error that says what is expected.
    let out = env.run(&with(&mock, &["--store", "mysql://x", "-p", "x"]), "");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("postgres://"), "{}", stderr(&out));
}

#[test]
fn a_wrong_password_is_refused_clearly_without_showing_it() {
    let Some(server) = server_or_skip("a_wrong_password_is_refused") else {
        return;
    };
    let env = Env::new();
    let mock = mock();
    let mut wrong = url::Url::parse(server.admin_url()).unwrap();
    wrong.set_password(Some("not-the-password-31415")).unwrap();
    let out = env.run(&with(&mock, &["--store", wrong.as_str(), "-p", "hi"]), "");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("password authentication failed"), "{err}");
    assert!(err.contains("makai_admin:***@127.0.0.1"), "{err}");
    assert!(
        !err.contains("not-the-password-31415"),
        "the password leaked: {err}"
    );
    assert!(mock.requests().is_empty(), "a model call was made");
}

#[test]
fn a_schema_from_a_newer_makai_is_refused_naming_both_versions() {
    let Some(url) = database_or_skip("a_schema_from_a_newer_makai_is_refused") else {
        return;
    };
    let env = Env::new();
    let mock = mock();
    // A first start creates the schema.
    let out = env.run(&with(&mock, &["--store", &url, "-p", "hi"]), "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    run_sql(
        &url,
        "INSERT INTO makai_schema (version, description, applied_by) \
         VALUES (99, 'from the future', 'makai 9.9.9')",
    );
    let out = env.run(&with(&mock, &["--store", &url, "-p", "hi again"]), "");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("schema version 99")
            && err.contains(&format!("up to {}", makai_store_pg::SCHEMA_VERSION)),
        "{err}"
    );
    assert_eq!(mock.requests().len(), 1, "a model call was made: {err}");
}

fn run_sql(url: &str, sql: &str) {
    makai_store_pg::testing::run_sql(url, sql).unwrap();
}

/// The server of its own (so pausing it disturbs no other test), or `None`
/// when skipped (never in CI).
fn private_server(test: &str) -> Option<makai_store_pg::testing::TestServer> {
    match makai_store_pg::testing::TestServer::start_private() {
        Ok(s) => Some(s),
        Err(why) if makai_store_pg::testing::in_ci() => {
            panic!("{test}: PostgreSQL is required in CI but could not be started: {why}")
        }
        Err(why) => {
            eprintln!("SKIPPED {test}: PostgreSQL could not be started: {why}");
            None
        }
    }
}

#[test]
fn a_database_that_goes_away_mid_run_stops_the_run_clearly_and_the_session_stays_consistent() {
    let Some(server) = private_server("a_database_that_goes_away_mid_run") else {
        return;
    };
    let url = server.create_database().unwrap();
    let env = Env::new();
    let mock = Mock::start(
        Scenario::new()
            .push(
                ScriptedResponse::text("an answer that streams slowly and is never saved")
                    .chunk_size(2)
                    .delay(100),
            )
            .with_fallback(ScriptedResponse::text("an answer")),
    );
    let child = env
        .cmd()
        .args(with(&mock, &["--store", &url, "-p", "first question"]))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Once the prompt is stored (the answer is still streaming), the database stops.
    let store = makai_store_pg::PgStore::connect(&url).unwrap();
    let cwd = env.work().display().to_string();
    let mut stored = false;
    for _ in 0..200 {
        if let Ok(Some(info)) = store.list(&cwd).map(|l| l.into_iter().next())
            && info.message_count >= 1
        {
            stored = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(stored, "the prompt was never stored");
    server.pause().unwrap();
    let out = wait_output(child, std::time::Duration::from_secs(60));
    let err = stderr(&out);
    assert_ne!(out.status.code(), Some(0), "the run went on unsaved: {err}");
    assert!(
        err.contains("the run was stopped because the session could not be saved")
            && err.contains("PostgreSQL at postgres://makai_admin:***@127.0.0.1"),
        "{err}"
    );

    // Back: the session is what was committed, undamaged, and goes on.
    server.resume().unwrap();
    let store = makai_store_pg::PgStore::connect(&url).unwrap();
    let info = store.list(&cwd).unwrap().remove(0);
    let exported = store.export(&cwd, &info.id).unwrap();
    let positions: Vec<usize> = (0..exported.entries.len()).collect();
    let check = makai_coding::session::check_entries(&exported.entries, &positions);
    assert!(
        check.repeated.is_empty() && check.broken.is_empty(),
        "the session is damaged: {check:?}"
    );
    let kinds: Vec<&str> = exported.entries.iter().map(|e| e.kind()).collect();
    assert_eq!(kinds, ["model_change", "thinking_level_change", "message"]);
    let out = env.run(
        &with(&mock, &["--store", &url, "-c", "-p", "second question"]),
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "an answer");
    let last = request_text(mock.requests().last().unwrap());
    assert!(
        last.contains("first question") && last.contains("second question"),
        "{last}"
    );
}

#[test]
fn the_tui_resume_picker_lists_database_sessions_and_continues_the_one_chosen() {
    if !common::tmux::tmux_available() {
        assert!(
            !makai_store_pg::testing::in_ci(),
            "tmux is required in CI (.ci/run installs it)"
        );
        return;
    }
    let Some(url) = database_or_skip("the_tui_resume_picker_lists_database_sessions") else {
        return;
    };
    let env = Env::new();
    let mock = mock();
    let out = env.run(
        &with(&mock, &["--store", &url, "-p", "the first question"]),
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let pane = common::tmux::Pane::start(&env, &with(&mock, &["--store", &url]));
    pane.wait_text("Ask anything");
    pane.type_text("/resume");
    pane.keys(&["Enter"]);
    let screen = pane.wait_text("Resume session");
    assert!(screen.contains("the first question"), "{screen}");
    assert!(screen.contains("2 messages"), "{screen}");
    pane.keys(&["Enter"]);
    pane.wait_text("Resumed session");
    pane.type_text("the second question");
    pane.keys(&["Enter"]);
    pane.wait_for("the second answer", |s| s.matches("an answer").count() >= 2);
    let last = request_text(mock.requests().last().unwrap());
    assert!(
        last.contains("the first question") && last.contains("the second question"),
        "the resumed session lost its history: {last}"
    );
    assert_eq!(pane.quit_with_ctrl_c(), 0);
    assert!(env.session_files().is_empty(), "{:?}", env.session_files());
}

#[test]
fn a_stateless_server_refuses_single_session_flags_and_local() {
    let Some(url) = database_or_skip("a_stateless_server_refuses_single_session_flags") else {
        return;
    };
    let env = Env::new();
    let mock = mock();
    for (flag, shown) in [
        (&["-c"][..], "-c/--continue"),
        (&["--session", "abc"][..], "--session"),
        (&["--no-session"][..], "--no-session"),
        (&["--local"][..], "--local"),
    ] {
        let mut args = s(&["serve", "--port", "0", "--store", &url]);
        args.extend(with(&mock, flag));
        let out = env.run(&args, "");
        assert_eq!(out.status.code(), Some(2), "{flag:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(shown), "{flag:?}: {}", stderr(&out));
    }
}

/// The bug this pins: `--session ID` naming a database session another
/// directory started ran it in the current directory, its tools on the
/// wrong tree (the session files' case was fixed in the sixteenth session;
/// the database's was left to the session's opening).
#[test]
fn a_database_session_id_from_another_directory_runs_there() {
    let Some(url) = database_or_skip("a_database_session_id_from_another_directory") else {
        return;
    };
    let env = Env::new();
    let project = project_beside(&env);
    let mock = Mock::start(with_ls_round(
        Scenario::new().push(ScriptedResponse::text("made")),
        "listed",
    ));
    let project_dir = project.path().to_str().unwrap();
    let out = env.run(
        &with(
            &mock,
            &["--store", &url, "--cwd", project_dir, "-p", "first"],
        ),
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let list = env.run(&s(&["sessions", "list", "--all", "--store", &url]), "");
    let id = stdout(&list).split_whitespace().next().unwrap().to_string();
    let out = env.run(
        &with(
            &mock,
            &[
                "--store",
                &url,
                "--session",
                &id[..8],
                "-p",
                "list the files",
            ],
        ),
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listed = mock.requests()[2].raw_body.clone();
    assert_ran_in_the_project(&out, &listed);
    assert!(listed.contains("first"), "the session's history: {listed}");
    assert!(env.session_files().is_empty());
}

/// Regression: `--session ID` of another directory looked the id up in the
/// database, then the run connected to it again (two pools, two schema
/// checks). One URL is now one store per process.
#[test]
fn a_store_named_twice_in_one_process_is_connected_to_once() {
    let Some(url) = database_or_skip("a_store_named_twice_in_one_process") else {
        return;
    };
    let first = makai_cli::store::open(Some(&url), None).unwrap().unwrap();
    // The same URL from the setting (spaces around it) is the same store.
    let again = makai_cli::store::open(None, Some(&format!(" {url} ")))
        .unwrap()
        .unwrap();
    assert!(std::sync::Arc::ptr_eq(&first, &again));
    // `jsonl` still names the session files.
    assert!(
        makai_cli::store::open(Some("jsonl"), Some(&url))
            .unwrap()
            .is_none()
    );
}
