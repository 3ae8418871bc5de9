//! pi 1.5.2's start-up questions of the interactive mode, asked on the
//! terminal before the UI starts, driven under tmux: a session whose working
//! directory is gone is continued here, forked into this directory, or not
//! opened; a session ID that only another directory's session has is opened
//! there or forked here. Skipped (with a message) when tmux is not
//! installed, outside CI.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::tmux::{Pane, tmux_available};
use common::{Env, Mock, s};
use makai_mockllm::{Scenario, ScriptedResponse};
use serde_json::Value;

const ID: &str = common::ELSEWHERE_ID;

/// A session file started in `cwd` with one exchange.
fn session_from(env: &Env, cwd: &str) -> std::path::PathBuf {
    common::session_started_in(env, cwd, "the earlier question")
}

fn header(path: &std::path::Path) -> Value {
    serde_json::from_str(
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap()
}

#[test]
fn a_session_whose_directory_is_gone_is_continued_forked_or_not_opened_as_answered() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new());
    let env = Env::new();
    let gone = env.home.path().join("renamed-project");
    let file = session_from(&env, gone.to_str().unwrap());
    let mut argv = mock.args();
    argv.extend(s(&["--session", file.to_str().unwrap()]));
    let original = std::fs::read_to_string(&file).unwrap();

    // Cancel: nothing starts, nothing is written.
    let pane = Pane::start(&env, &argv);
    let screen = pane.wait_text("Choose [1-3");
    assert!(screen.contains("no longer exists"), "{screen}");
    assert!(
        screen.contains("1) continue it in this directory"),
        "{screen}"
    );
    assert!(
        screen.contains("2) fork it into this directory"),
        "{screen}"
    );
    pane.type_text("3");
    pane.keys(&["Enter"]);
    assert_eq!(pane.wait_exit_status("end after cancel"), 0);
    assert!(env.session_files().is_empty());
    drop(pane);

    // Continue (Enter): the session opens here, its history shown.
    let pane = Pane::start(&env, &argv);
    pane.wait_text("Choose [1-3");
    pane.keys(&["Enter"]);
    pane.wait_text("the earlier question");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
    drop(pane);
    assert!(env.session_files().is_empty(), "no copy was made");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), original);

    // Fork: a new session of this directory, the original unchanged.
    let pane = Pane::start(&env, &argv);
    pane.wait_text("Choose [1-3");
    pane.type_text("2");
    pane.keys(&["Enter"]);
    pane.wait_text("the earlier question");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
    let forked = env.session_files();
    assert_eq!(forked.len(), 1, "{forked:?}");
    let h = header(&forked[0]);
    assert_ne!(h["id"], ID);
    assert_eq!(h["cwd"], env.work().display().to_string());
    assert!(h["parentSession"].as_str().is_some(), "{h}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), original);
}

#[test]
fn a_session_id_of_another_directory_is_opened_there_or_forked_here_as_answered() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new().with_fallback(ScriptedResponse::text("made")));
    let env = Env::new();
    let project = tempfile::tempdir().unwrap();
    // A session of the project, made by a print run there.
    let mut argv = mock.args();
    argv.extend(s(&[
        "--cwd",
        project.path().to_str().unwrap(),
        "-p",
        "project question",
    ]));
    let out = env.run(&argv, "");
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let theirs = env.session_files();
    assert_eq!(theirs.len(), 1);
    let id = header(&theirs[0])["id"].as_str().unwrap().to_string();

    let mut argv = mock.args();
    argv.extend(s(&["--session", &id[..8]]));
    // Open there: the footer shows the project's directory.
    let pane = Pane::start(&env, &argv);
    let screen = pane.wait_text("Choose [1-3");
    assert!(screen.contains("was started in"), "{screen}");
    assert!(screen.contains("1) open it there"), "{screen}");
    pane.keys(&["Enter"]);
    let name = project
        .path()
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    pane.wait_for("the project's directory in the footer", |s| {
        s.contains("project question") && s.lines().rev().nth(1).is_some_and(|l| l.contains(&name))
    });
    assert_eq!(pane.quit_with_ctrl_c(), 0);
    drop(pane);
    assert_eq!(env.session_files().len(), 1);

    // Fork: a new session here, with the project session's history.
    let pane = Pane::start(&env, &argv);
    pane.wait_text("Choose [1-3");
    pane.type_text("2");
    pane.keys(&["Enter"]);
    pane.wait_text("project question");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
    let all = env.session_files();
    assert_eq!(all.len(), 2, "{all:?}");
    let here = all
        .iter()
        .map(|p| header(p))
        .find(|h| h["id"] != id.as_str())
        .unwrap();
    assert_eq!(here["cwd"], env.work().display().to_string());
}

#[test]
fn import_of_another_directorys_session_reopens_it_there_and_of_a_gone_one_asks() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(common::with_ls_round(Scenario::new(), "listed them"));
    let env = Env::new();
    let project = common::project_beside(&env);
    let file = session_from(&env, project.path().to_str().unwrap());

    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    pane.type_text(&format!("/import {}", file.display()));
    pane.keys(&["Enter"]);
    let screen = pane.wait_text(&format!("Imported session {ID}"));
    assert!(screen.contains("the earlier question"), "{screen}");
    assert!(
        screen.contains(project.path().to_str().unwrap()),
        "{screen}"
    );
    pane.type_text("list the files");
    pane.keys(&["Enter"]);
    pane.wait_text("listed them");
    let listed = mock.requests()[1].raw_body.clone();
    assert!(listed.contains("only-in-the-project.txt"), "{listed}");
    assert!(!listed.contains("only-in-the-current-dir.txt"), "{listed}");
    assert!(listed.contains("the earlier question"), "{listed}");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
    drop(pane);

    // A session whose directory is gone: the question, then a fork here.
    let gone_env = Env::new();
    let gone = gone_env.home.path().join("renamed-project");
    let file = session_from(&gone_env, gone.to_str().unwrap());
    let pane = Pane::start(&gone_env, &mock.args());
    pane.wait_text("Ask anything");
    pane.type_text(&format!("/import {}", file.display()));
    pane.keys(&["Enter"]);
    let screen = pane.wait_text("no longer exists");
    assert!(
        screen.contains("Continue") && screen.contains("Fork") && screen.contains("Cancel"),
        "{screen}"
    );
    pane.keys(&["Down"]);
    pane.keys(&["Enter"]);
    pane.wait_text("into a new session of this directory");
    pane.wait_text("the earlier question");
    let files = gone_env.session_files();
    let forked: Vec<Value> = files
        .iter()
        .map(|p| header(p))
        .filter(|h| h["id"] != ID)
        .collect();
    assert_eq!(forked.len(), 1, "{files:?}");
    assert_eq!(forked[0]["cwd"], gone_env.work().display().to_string());
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

#[test]
fn resume_lists_every_directorys_sessions_with_tab_and_opens_one_in_its_directory() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(common::with_ls_round(
        Scenario::new().push(ScriptedResponse::text("made")),
        "listed them",
    ));
    let env = Env::new();
    let project = common::project_beside(&env);
    // A session of the project, made by a print run there.
    let project_dir = project.path().to_str().unwrap();
    common::run_ok(
        &env,
        &mock,
        &["--cwd", project_dir, "-p", "the project question"],
    );

    // None here yet: every directory's are listed.
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    pane.type_text("/resume");
    pane.keys(&["Enter"]);
    let screen = pane.wait_text("all directories (tab: this one)");
    assert!(screen.contains("the project question"), "{screen}");
    // Tab: this directory's only (none but the current, empty one).
    pane.keys(&["Tab"]);
    let screen = pane.wait_text("this directory (tab: all)");
    assert!(!screen.contains("the project question"), "{screen}");
    pane.keys(&["Tab"]);
    pane.wait_text("all directories (tab: this one)");
    pane.keys(&["Enter"]);
    pane.wait_text("Resumed session");
    pane.type_text("list the files");
    pane.keys(&["Enter"]);
    pane.wait_text("listed them");
    let listed = mock.requests()[2].raw_body.clone();
    assert!(listed.contains("only-in-the-project.txt"), "{listed}");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

/// `--resume` in the full-screen UI, as pi's: the UI opens with its session
/// picker (pi's keys: Tab for every directory's, the rest as `/resume`), this
/// directory's sessions first (every directory's at once when it has none);
/// Esc ends the run; a session of another directory runs there. (Before,
/// a numbered list was asked on the terminal, without those keys.)
#[test]
fn resume_flag_opens_the_ui_s_picker_and_runs_the_choice_in_its_directory() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(common::with_ls_round(
        Scenario::new()
            .push(ScriptedResponse::text("made here"))
            .push(ScriptedResponse::text("made there")),
        "listed them",
    ));
    let env = Env::new();
    let project = common::project_beside(&env);
    common::run_ok(&env, &mock, &["-p", "the question here"]);
    let project_dir = project.path().to_str().unwrap();
    common::run_ok(
        &env,
        &mock,
        &["--cwd", project_dir, "-p", "the project question"],
    );
    let mut argv = mock.args();
    argv.push("-r".into());

    // Esc cancels: nothing runs, nothing is written.
    let pane = Pane::start(&env, &argv);
    let screen = pane.wait_text("Resume session · this directory (tab: all)");
    pane.wait_text("the question here");
    assert!(!screen.contains("the project question"), "{screen}");
    pane.keys(&["Escape"]);
    assert_eq!(pane.wait_exit_status("end after cancel"), 0);
    drop(pane);
    assert_eq!(mock.requests().len(), 2);
    assert_eq!(env.session_files().len(), 2, "{:?}", env.session_files());

    // Tab: every directory's; the project's session runs in the project.
    let pane = Pane::start(&env, &argv);
    pane.wait_text("the question here");
    pane.keys(&["Tab"]);
    pane.wait_text("all directories (tab: this one)");
    pane.type_text("project question");
    pane.wait_for("the project's row alone", |s| {
        !s.contains("the question here")
    });
    pane.keys(&["Enter"]);
    pane.wait_text("Resumed session");
    pane.wait_text("Ask anything");
    pane.type_text("list the files");
    pane.keys(&["Enter"]);
    pane.wait_text("listed them");
    let listed = mock.requests()[3].raw_body.clone();
    assert!(listed.contains("only-in-the-project.txt"), "{listed}");
    assert!(!listed.contains("only-in-the-current-dir.txt"), "{listed}");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
    drop(pane);

    // A directory without sessions lists every directory's at once.
    let empty = tempfile::tempdir().unwrap();
    let mut argv = mock.args();
    argv.extend(s(&["-r", "--cwd", empty.path().to_str().unwrap()]));
    let pane = Pane::start(&env, &argv);
    pane.wait_text("Resume session · all directories");
    pane.wait_text("the project question");
    pane.keys(&["Escape"]);
    assert_eq!(pane.wait_exit_status("end after cancel"), 0);
}
