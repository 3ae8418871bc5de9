//! Empty names are usage errors naming the flag (issue 21, case 4), and what
//! `--session PATH` does with an empty file, a directory, a device or a pipe.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use makai_mockllm::{Scenario, ScriptedResponse};
use serde_json::Value;

fn args(mock: &Mock, extra: &[&str]) -> Vec<String> {
    let mut a = mock.args();
    a.extend(s(extra));
    a
}

/// `mock.args()` with `--model` replaced.
fn with_model(mock: &Mock, model: &str, extra: &[&str]) -> Vec<String> {
    let mut a = mock.args();
    let at = a.iter().position(|x| x == "--model").unwrap();
    a[at + 1] = model.to_string();
    a.extend(s(extra));
    a
}

#[test]
fn empty_model_name_is_a_usage_error_and_nothing_is_sent() {
    let env = Env::new();
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("should not be asked")));
    for model in ["", "   ", ":high", "custom/"] {
        let out = env.run(&with_model(&mock, model, &["-p", "hi"]), "");
        assert_eq!(
            out.status.code(),
            Some(2),
            "--model {model:?}: {}",
            stderr(&out)
        );
        assert!(stderr(&out).contains("--model"), "{}", stderr(&out));
    }
    assert!(mock.requests().is_empty(), "a request went out");
    assert!(env.session_files().is_empty(), "a session was written");
}

#[test]
fn empty_names_of_every_flag_are_usage_errors_naming_the_flag() {
    let env = Env::new();
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("should not be asked")));
    let cases: [(&[&str], &str); 11] = [
        (&["--provider", ""], "--provider"),
        (&["--provider", " \t"], "--provider"),
        (&["--agent", ""], "--agent"),
        (&["--session", ""], "--session"),
        (&["--session", "  "], "--session"),
        (&["--name", ""], "--name"),
        (&["-n", " "], "--name"),
        (&["--tools", ""], "--tools"),
        (&["--tools", "read,,ls"], "--tools"),
        (&["--tools", "read, ,ls"], "--tools"),
        (&["--api-key", ""], "--api-key"),
    ];
    for (flags, named) in cases {
        let mut extra = flags.to_vec();
        extra.extend(["-p", "hi"]);
        let out = env.run(&args(&mock, &extra), "");
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(named), "{flags:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("empty"),
            "{flags:?}: {}",
            stderr(&out)
        );
    }
    // `makai serve` takes the same session flags and refuses the same way.
    let out = env.run(&s(&["serve", "--port", "0", "--model", " "]), "");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--model"), "{}", stderr(&out));
    assert!(mock.requests().is_empty(), "a request went out");
}

#[test]
fn session_flag_on_an_empty_file_starts_a_new_session_in_it() {
    let env = Env::new();
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("first answer")));
    let path = env.work().join("2025-01-01T00-00-00-000Z_empty-one.jsonl");
    std::fs::write(&path, "").unwrap();
    let out = env.run(
        &args(&mock, &["-p", "--session", path.to_str().unwrap(), "hello"]),
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["type"], "session");
    assert_eq!(
        lines[0]["id"], "empty-one",
        "the id in the file name is kept"
    );
    let work = std::fs::canonicalize(env.work()).unwrap();
    assert_eq!(lines[0]["cwd"], work.to_str().unwrap());
    assert!(
        lines
            .iter()
            .any(|l| l["message"]["role"] == "user" && l.to_string().contains("hello")),
        "{text}"
    );
    assert!(
        lines.iter().any(|l| l["message"]["role"] == "assistant"),
        "{text}"
    );
    // And --help says so.
    let help = env.run(&s(&["--help"]), "");
    assert!(
        stdout(&help).contains("empty (0-byte) file"),
        "{}",
        stdout(&help)
    );
}

#[test]
fn session_flag_refuses_a_directory_a_device_and_a_pipe() {
    let env = Env::new();
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("should not be asked")));
    let dir = env.work().join("sessions.d");
    std::fs::create_dir(&dir).unwrap();
    let fifo = env.work().join("pipe.jsonl");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    for (path, kind) in [
        (dir.to_str().unwrap(), "directory"),
        ("/dev/null", "device"),
        (fifo.to_str().unwrap(), "pipe"),
    ] {
        let out = env.run(&args(&mock, &["-p", "--session", path, "hi"]), "");
        assert_eq!(out.status.code(), Some(2), "{path}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains("--session") && err.contains(kind), "{err}");
    }
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    assert!(mock.requests().is_empty());
}
