//! pi's program status reports (OSC 7501) under tmux: with
//! `PI_PROGRAM_STATUS=1` makai says `idle`, `working` while a run goes,
//! `done` after it, `blocked` while an approval waits (the dialog's title
//! as the message), `error` with the error's first line, and `idle` again
//! when a run is stopped; no report ever carries the prompt or the answer.
//! Without the variable, tmux (which passes no report on) gets none, and a
//! terminal asked that does not answer the query gets none either. What
//! makai wrote is read from `pipe-pane`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use base64::Engine;
use common::tmux::{Pane, tmux_available};
use common::*;
use makai_mockllm::{Scenario, ScriptedResponse};

/// The reports in `out`, in order, their messages decoded:
/// `state[:kind][ msg]`.
fn reports(out: &str) -> Vec<String> {
    out.split("\x1b]7501;")
        .skip(1)
        .map(|rest| {
            let body = &rest[..rest.find("\x1b\\").unwrap()];
            let mut said = String::new();
            for pair in body.split(':') {
                let (key, value) = pair.split_once('=').unwrap();
                match key {
                    "state" => said.push_str(value),
                    "kind" => said.push_str(&format!(":{value}")),
                    "msg" => {
                        let bytes = base64::engine::general_purpose::STANDARD
                            .decode(value)
                            .unwrap();
                        said.push(' ');
                        said.push_str(&String::from_utf8(bytes).unwrap());
                    }
                    "app" => assert_eq!(value, "makai"),
                    other => panic!("unexpected key {other} in {body:?}"),
                }
            }
            said
        })
        .collect()
}

/// Starts makai with `vars`, its output piped to a file from the start.
fn start(env: &Env, mock: &Mock, vars: &[(&str, &str)]) -> (Pane, std::path::PathBuf) {
    let raw = env.home.path().join("pane-output.bin");
    let pane = Pane::start_piped(env, &mock.args(), vars, &raw);
    pane.wait_text("Ask anything");
    (pane, raw)
}

fn read(raw: &std::path::Path) -> String {
    String::from_utf8_lossy(&std::fs::read(raw).unwrap_or_default()).to_string()
}

#[test]
fn reports_follow_runs_approvals_errors_and_a_stop() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::text("all secret answers"))
            .push(ScriptedResponse::text("").with_status(400))
            .push(ScriptedResponse::text("slow").delay(30_000)),
    );
    let env = Env::new();
    let outside = tempfile::tempdir().unwrap();
    let (pane, raw) = start(&env, &mock, &[("PI_PROGRAM_STATUS", "1")]);

    pane.type_text("my private prompt");
    pane.keys(&["Enter"]);
    pane.wait_text("all secret answers");
    pane.wait_for("done reported", |_| {
        reports(&read(&raw)).last().is_some_and(|r| r == "done")
    });

    pane.type_text("/name release work");
    pane.keys(&["Enter"]);
    pane.type_text("this one fails");
    pane.keys(&["Enter"]);
    pane.wait_for("error reported", |_| {
        reports(&read(&raw))
            .last()
            .is_some_and(|r| r.starts_with("error "))
    });

    // A command outside the sandbox waits for an approval.
    pane.type_text(&format!("!echo x > {}", outside.path().join("x").display()));
    pane.keys(&["Enter"]);
    pane.wait_text("Run this command outside the sandbox?");
    pane.wait_for("blocked reported", |_| {
        reports(&read(&raw))
            .last()
            .is_some_and(|r| r.starts_with("blocked:permission "))
    });
    pane.keys(&["Down", "Down", "Enter"]);
    pane.wait_text("Denied.");

    pane.type_text("a slow one");
    pane.keys(&["Enter"]);
    pane.wait_for("working reported", |_| {
        reports(&read(&raw))
            .last()
            .is_some_and(|r| r == "working release work")
    });
    pane.keys(&["Escape"]);
    pane.wait_for("idle after the stop", |_| {
        reports(&read(&raw)).last().is_some_and(|r| r == "idle")
    });
    assert_eq!(pane.quit_with_ctrl_c(), 0);

    let said = reports(&read(&raw));
    let error = said.iter().find(|r| r.starts_with("error ")).unwrap();
    assert!(error.contains("400"), "{said:?}");
    assert!(!error.contains('\n'));
    let blocked = said.iter().find(|r| r.starts_with("blocked")).unwrap();
    assert_eq!(
        blocked,
        "blocked:permission Run this command outside the sandbox?"
    );
    // In order, once each change (the name is said again when it is set).
    let order: Vec<&str> = said
        .iter()
        .map(|r| r.split([' ', ':']).next().unwrap())
        .collect();
    assert_eq!(
        order,
        [
            "idle", "working", "done", "done", "working", "error", "blocked", "error", "working",
            "idle"
        ],
        "{said:?}"
    );
    assert_eq!(
        &said[..3],
        ["idle", "working", "done"],
        "no name, no message"
    );
    assert_eq!(said[3], "done release work");
    let all = said.join("\n");
    assert!(
        !all.contains("private prompt") && !all.contains("secret answers"),
        "{all}"
    );
}

#[test]
fn tmux_gets_no_reports_and_a_terminal_that_does_not_answer_gets_none() {
    if !tmux_available() {
        return;
    }
    for (vars, asked) in [
        // Inside tmux: never asked.
        (&[][..], false),
        // A terminal makai asks (tmux answers only the device attributes):
        // no report, and the answer is not typed into the prompt.
        (&[("TMUX", "")], true),
    ] {
        let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("fine")));
        let env = Env::new();
        let (pane, raw) = start(&env, &mock, vars);
        pane.type_text("hello");
        pane.keys(&["Enter"]);
        let screen = pane.wait_text("fine");
        assert!(
            !screen.contains("1;2c") && !screen.contains("7501"),
            "{screen}"
        );
        assert_eq!(pane.quit_with_ctrl_c(), 0);
        let out = read(&raw);
        assert!(!out.contains("\x1b]7501;state="), "{vars:?}");
        assert_eq!(out.contains("\x1b]7501;?\x1b\\\x1b[c"), asked, "{vars:?}");
    }
}

/// pi's terminal title: `makai - <folder>`, then `makai - <name> - <folder>`
/// once the session has a name.
#[test]
fn the_terminal_title_names_the_folder_then_the_session() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new());
    let env = Env::new();
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    let folder = env
        .work()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let title = |want: String| {
        let start = std::time::Instant::now();
        loop {
            let now = pane.value("#{pane_title}");
            if now == want {
                return;
            }
            assert!(
                start.elapsed() < common::tmux::WAIT,
                "the title is {now:?}, not {want:?}"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    };
    title(format!("makai - {folder}"));
    pane.type_text("/name Fix the login");
    pane.keys(&["Enter"]);
    title(format!("makai - Fix the login - {folder}"));
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}
