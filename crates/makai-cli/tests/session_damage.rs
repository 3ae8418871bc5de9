//! Damaged session files through the built binary (issue 21, cases 1 and 2):
//! refused with the line and the repair command, never changed by any
//! command, repaired on request with every earlier message kept.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::{Path, PathBuf};

use common::*;
use makai_mockllm::{Scenario, ScriptedResponse};
use serde_json::Value;

fn args(mock: &Mock, extra: &[&str]) -> Vec<String> {
    let mut a = mock.args();
    a.extend(s(extra));
    a
}

fn mock() -> Mock {
    Mock::start(Scenario::new().with_fallback(ScriptedResponse::text("an answer")))
}

/// A session of two exchanges ("first question", "second question") written
/// by makai itself; returns its file.
fn two_exchanges(env: &Env, mock: &Mock) -> PathBuf {
    let out = env.run(&args(mock, &["-p", "first question"]), "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = env.run(&args(mock, &["-c", "-p", "second question"]), "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let files = env.session_files();
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

fn lines_of(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn write_lines(path: &Path, lines: &[String]) {
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

/// The index of the last line holding a user message with `text`.
fn user_line(lines: &[String], text: &str) -> usize {
    lines
        .iter()
        .rposition(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["message"]["role"] == "user" && l.contains(text)
        })
        .unwrap()
}

/// The byte offset where line `index` (0-based) starts.
fn offset_of(lines: &[String], index: usize) -> usize {
    lines[..index].iter().map(|l| l.len() + 1).sum()
}

#[test]
fn a_damaged_complete_last_line_is_refused_and_nothing_is_deleted() {
    let env = Env::new();
    let mock = mock();
    let path = two_exchanges(&env, &mock);
    // Two flipped bytes inside the last entry, which still ends in a newline.
    let mut bytes = std::fs::read(&path).unwrap();
    let start = bytes[..bytes.len() - 1]
        .iter()
        .rposition(|b| *b == b'\n')
        .unwrap()
        + 1;
    bytes[start + 1] ^= 0x04;
    bytes[start + 9] ^= 0x10;
    std::fs::write(&path, &bytes).unwrap();
    let lines = bytes.iter().filter(|b| **b == b'\n').count();

    let out = env.run(&args(&mock, &["-c", "-p", "third question"]), "");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains(&format!("line {lines}")), "{err}");
    assert!(err.contains("makai sessions repair"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), bytes, "the file changed");
    assert_eq!(mock.requests().len(), 2, "a request went out");
}

#[test]
fn a_broken_parent_chain_is_refused_and_the_repair_gives_the_model_the_whole_history() {
    let env = Env::new();
    let mock = mock();
    let path = two_exchanges(&env, &mock);
    let mut lines = lines_of(&path);
    let at = user_line(&lines, "second question");
    let v: Value = serde_json::from_str(&lines[at]).unwrap();
    let parent = v["parentId"].as_str().unwrap().to_string();
    lines[at] = lines[at].replace(&parent, "deadbeef");
    write_lines(&path, &lines);
    let damaged = std::fs::read(&path).unwrap();

    let out = env.run(&args(&mock, &["-c", "-p", "third question"]), "");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("deadbeef"), "{}", stderr(&out));
    assert_eq!(mock.requests().len(), 2, "a request went out");
    assert_eq!(std::fs::read(&path).unwrap(), damaged);

    let file = path.to_str().unwrap();
    let check = env.run(&s(&["sessions", "check", file]), "");
    assert_eq!(check.status.code(), Some(1), "{}", stderr(&check));
    assert!(
        stdout(&check).contains("cut off") && stdout(&check).contains(&format!("line {}", at + 1)),
        "{}",
        stdout(&check)
    );
    let repair = env.run(&s(&["sessions", "repair", file]), "");
    assert_eq!(repair.status.code(), Some(0), "{}", stderr(&repair));
    assert!(
        stdout(&repair).contains("re-attached entry"),
        "{}",
        stdout(&repair)
    );
    assert!(Path::new(&format!("{file}.bak")).exists());
    let check = env.run(&s(&["sessions", "check", file]), "");
    assert_eq!(check.status.code(), Some(0), "{}", stdout(&check));

    let out = env.run(&args(&mock, &["-c", "-p", "third question"]), "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let body = request_text(mock.requests().last().unwrap());
    for q in ["first question", "second question", "third question"] {
        assert!(body.contains(q), "the model did not get {q:?}: {body}");
    }
    mock.server.assert_request_invariants();
}

#[test]
fn the_repair_flag_repairs_then_runs() {
    let env = Env::new();
    let mock = mock();
    let path = two_exchanges(&env, &mock);
    let mut lines = lines_of(&path);
    let at = user_line(&lines, "second question");
    lines.insert(at, "garbage from a bad disk".into());
    write_lines(&path, &lines);
    let file = path.to_str().unwrap();
    let out = env.run(
        &args(
            &mock,
            &["--session", file, "--repair", "-p", "third question"],
        ),
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("Repaired"), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(format!("{file}.damaged")).unwrap(),
        "garbage from a bad disk\n"
    );
    let body = request_text(mock.requests().last().unwrap());
    assert!(body.contains("first question") && body.contains("second question"));
    mock.server.assert_request_invariants();
}

#[test]
fn a_torn_last_line_is_set_aside_with_a_warning_and_the_run_goes_on() {
    let env = Env::new();
    let mock = mock();
    let path = two_exchanges(&env, &mock);
    let mut bytes = std::fs::read(&path).unwrap();
    let fragment = b"{\"type\":\"message\",\"id\":\"ab";
    bytes.extend_from_slice(fragment);
    std::fs::write(&path, &bytes).unwrap();
    let out = env.run(&args(&mock, &["-c", "-p", "third question"]), "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("torn"), "{}", stderr(&out));
    let now = std::fs::read(&path).unwrap();
    let kept = bytes.len() - fragment.len();
    assert_eq!(now[..kept], bytes[..kept]);
    let side = std::fs::read(format!("{}.damaged", path.display())).unwrap();
    assert_eq!(side, [&fragment[..], b"\n"].concat());
}

/// Every command a user might run on a damaged session, in order: none may
/// change a byte before the damage, and none but a repair may change the
/// file at all.
#[test]
fn no_command_rewrites_a_byte_before_the_damage_point() {
    let env = Env::new();
    let mock = mock();
    let path = two_exchanges(&env, &mock);
    let clean = lines_of(&path);
    let file = path.to_str().unwrap().to_string();
    let id = {
        let v: Value = serde_json::from_str(&clean[0]).unwrap();
        v["id"].as_str().unwrap().to_string()
    };
    let last = clean.len() - 1;
    let second = user_line(&clean, "second question");
    // (what, the damaged lines, the 0-based line where the damage starts)
    let mut cases: Vec<(&str, Vec<String>, usize)> = Vec::new();
    let mut garbage = clean.clone();
    garbage.insert(second, "{\"type\":\"message\",".into());
    cases.push(("garbage line", garbage, second));
    let mut flipped = clean.clone();
    flipped[last] = flipped[last].replacen("\"id\"", "\"id\u{1}", 1);
    cases.push(("damaged last line", flipped, last));
    let mut dangling = clean.clone();
    let v: Value = serde_json::from_str(&clean[second]).unwrap();
    dangling[second] = dangling[second].replace(v["parentId"].as_str().unwrap(), "0badbeef");
    cases.push(("dangling parent", dangling, second));
    let mut duplicated = clean.clone();
    duplicated.push(clean[last].clone());
    cases.push(("duplicated line", duplicated, last + 1));
    let mut headless = clean.clone();
    headless.remove(0);
    cases.push(("missing header", headless, 0));

    let refusing: Vec<Vec<String>> = vec![
        args(&mock, &["-c", "-p", "more"]),
        args(&mock, &["--session", &file, "-p", "more"]),
        args(&mock, &["--session", &id, "-p", "more"]),
        args(&mock, &["--mode", "json", "-c", "more"]),
        args(&mock, &["-c", "--name", "renamed", "-p", "more"]),
        args(&mock, &["--mode", "rpc", "--session", &file]),
        args(&mock, &["-r", "-p", "more"]),
        s(&["sessions", "check", &file]),
    ];
    for (what, lines, at) in cases {
        write_lines(&path, &lines);
        for leftover in [format!("{file}.bak"), format!("{file}.damaged")] {
            let _ = std::fs::remove_file(leftover);
        }
        let damaged = std::fs::read(&path).unwrap();
        let before = offset_of(&lines, at);
        let requests = mock.requests().len();
        for command in &refusing {
            let out = env.run(command, "{\"type\":\"get_state\"}\n");
            assert_ne!(out.status.code(), Some(0), "{what}: {command:?} went on");
            assert_eq!(
                std::fs::read(&path).unwrap(),
                damaged,
                "{what}: {command:?} changed the file"
            );
        }
        assert_eq!(
            mock.requests().len(),
            requests,
            "{what}: a request went out"
        );
        // Repairs, and runs after them, keep every byte before the damage.
        for command in [
            s(&["sessions", "repair", &file]),
            args(&mock, &["-c", "-p", "after the repair"]),
            args(&mock, &["--repair", "-c", "-p", "again"]),
        ] {
            let out = env.run(&command, "");
            assert_eq!(
                out.status.code(),
                Some(0),
                "{what}: {command:?}: {}",
                stderr(&out)
            );
            let now = std::fs::read(&path).unwrap();
            let shift = if at == 0 {
                now.iter().position(|b| *b == b'\n').unwrap() + 1
            } else {
                0
            };
            assert_eq!(
                now[shift..shift + before],
                damaged[..before],
                "{what}: {command:?} rewrote a byte before the damage"
            );
        }
        let body = request_text(mock.requests().last().unwrap());
        assert!(
            body.contains("first question") && body.contains("after the repair"),
            "{what}: {body}"
        );
        write_lines(&path, &clean);
    }
    mock.server.assert_request_invariants();
}

#[test]
fn rpc_switch_session_to_a_damaged_file_is_an_error_response_and_changes_nothing() {
    let env = Env::new();
    let mock = mock();
    let path = two_exchanges(&env, &mock);
    let mut lines = lines_of(&path);
    lines.insert(2, "not a session line".into());
    write_lines(&path, &lines);
    let damaged = std::fs::read(&path).unwrap();
    let mut rpc = Rpc::start(&env, &args(&mock, &["--no-session"])[..]);
    let r = rpc.call(serde_json::json!({
        "type": "switch_session",
        "sessionPath": path.to_str().unwrap(),
    }));
    assert_eq!(r["success"], false, "{r}");
    let error = r["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("line 3") && error.contains("makai sessions repair"),
        "{r}"
    );
    assert_eq!(rpc.finish(), 0);
    assert_eq!(std::fs::read(&path).unwrap(), damaged);
}
