//! `repair_session_file`: a backup copy, damaged lines moved to the side
//! file, cut-off entries re-attached, every other byte kept (issue 21).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use makai_ai::UserMessage;
use makai_coding::session::{
    Durability, NewEntry, Session, SessionError, SessionHeader, inspect_session_file, plan_repair,
    repair_session_file, side_file,
};

fn session_of(dir: &Path, n: usize) -> (PathBuf, String, Vec<String>) {
    let path = dir.join("2025-01-01T00-00-00-000Z_0190aaaa-bbbb-7ccc-8ddd-eeeeffff0000.jsonl");
    let mut s = Session::create_at(&path, "/w");
    let ids = (0..n)
        .map(|i| {
            s.append_message(UserMessage::text(format!("message {i}")))
                .unwrap()
        })
        .collect();
    let text = std::fs::read_to_string(&path).unwrap();
    (path, text, ids)
}

fn lines_of(text: &str) -> Vec<String> {
    text.lines().map(str::to_string).collect()
}

fn joined(lines: &[String]) -> String {
    lines.join("\n") + "\n"
}

fn backup(path: &Path, n: u32) -> PathBuf {
    let suffix = if n == 1 {
        ".bak".into()
    } else {
        format!(".bak.{n}")
    };
    PathBuf::from(format!("{}{suffix}", path.display()))
}

fn context_texts(s: &Session) -> Vec<String> {
    s.path_to_leaf()
        .iter()
        .map(|m| match m {
            makai_ai::Message::User(u) => match &u.content[0] {
                makai_ai::UserContent::Text(t) => t.text.clone(),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        })
        .collect()
}

#[test]
fn repair_moves_damaged_lines_aside_and_keeps_every_other_byte() {
    let dir = tempfile::tempdir().unwrap();
    let (path, text, _) = session_of(dir.path(), 3);
    let mut lines = lines_of(&text);
    let copy = lines[2].clone();
    lines.insert(2, "junk \u{0} line".into());
    lines.push(copy.clone());
    let damaged = joined(&lines);
    std::fs::write(&path, &damaged).unwrap();

    let report = repair_session_file(&path, "/elsewhere").unwrap();
    assert!(report.changed());
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        text,
        "every other byte kept"
    );
    assert_eq!(std::fs::read_to_string(backup(&path, 1)).unwrap(), damaged);
    assert_eq!(
        std::fs::read_to_string(side_file(&path)).unwrap(),
        format!("junk \u{0} line\n{copy}\n")
    );
    let moved: Vec<usize> = report.moved.iter().map(|d| d.line).collect();
    assert_eq!(moved, [3, 6]);
    let said = report.to_string();
    assert!(
        said.contains("moved line 3") && said.contains("moved line 6") && said.contains(".bak"),
        "{said}"
    );
    let s = Session::open(&path).unwrap();
    assert_eq!(context_texts(&s), ["message 0", "message 1", "message 2"]);
}

#[test]
fn repair_reattaches_cut_off_entries_to_the_entry_before_them() {
    let dir = tempfile::tempdir().unwrap();
    let (path, text, ids) = session_of(dir.path(), 4);
    let parent_of = |i: usize| format!("\"parentId\":\"{}\"", ids[i]);
    // Missing, itself, later (a cycle): each repaired back to the original bytes.
    let cases = [
        (
            2usize,
            parent_of(0),
            "\"parentId\":\"deadbeef\"".to_string(),
        ),
        (3, parent_of(1), parent_of(2)),
        (2, parent_of(0), parent_of(3)),
    ];
    for (line, good, bad) in cases {
        let mut lines = lines_of(&text);
        lines[line] = lines[line].replace(&good, &bad);
        std::fs::write(&path, joined(&lines)).unwrap();
        let before = Session::open(&path).unwrap_err();
        assert!(matches!(before, SessionError::Damaged { .. }), "{before}");
        let report = repair_session_file(&path, "/w").unwrap();
        assert_eq!(report.relinked.len(), 1, "{report}");
        assert!(report.to_string().contains("re-attached entry"), "{report}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "{bad}");
        let s = Session::open(&path).unwrap();
        assert_eq!(
            context_texts(&s).len(),
            4,
            "the model sees every message again"
        );
    }
}

#[test]
fn reattaching_changes_only_the_parent_value_whatever_the_formatting() {
    let header = SessionHeader::new("h", "/w");
    let text = format!(
        "{}\n{}\n{}\n",
        serde_json::to_string(&header).unwrap(),
        r#"{"type":"custom","id":"aaaa0001","parentId":null,"timestamp":"t","customType":"x"}"#,
        r#"{ "type" : "custom",  "parentId" :  "nope" , "id":"aaaa0002","timestamp":"t","customType":"x","data":{"parentId":"inner","n":1.50}, "extra": "\u00e9" }"#,
    );
    let plan = plan_repair(Path::new("x.jsonl"), text.as_bytes(), &header).unwrap();
    let expected = text.replacen("\"nope\"", "\"aaaa0001\"", 1);
    assert_eq!(String::from_utf8(plan.repaired).unwrap(), expected);
    assert!(plan.set_aside.is_empty());
}

#[test]
fn repair_adds_a_missing_header_from_the_file_name() {
    let dir = tempfile::tempdir().unwrap();
    let (path, text, _) = session_of(dir.path(), 2);
    let lines = lines_of(&text);
    std::fs::write(&path, joined(&lines[1..])).unwrap();
    let report = repair_session_file(&path, "/here").unwrap();
    assert_eq!(
        report.header_added.as_deref(),
        Some("0190aaaa-bbbb-7ccc-8ddd-eeeeffff0000")
    );
    let repaired = std::fs::read_to_string(&path).unwrap();
    let (first, rest) = repaired.split_once('\n').unwrap();
    assert_eq!(
        rest,
        joined(&lines[1..]),
        "the entries are kept byte for byte"
    );
    let header: SessionHeader = serde_json::from_str(first).unwrap();
    assert_eq!(header.cwd, "/here");
    let s = Session::open(&path).unwrap();
    assert_eq!(s.id(), "0190aaaa-bbbb-7ccc-8ddd-eeeeffff0000");
    assert_eq!(context_texts(&s), ["message 0", "message 1"]);
}

#[test]
fn repair_of_an_undamaged_file_changes_nothing_and_a_second_repair_keeps_the_first_backup() {
    let dir = tempfile::tempdir().unwrap();
    let (path, text, _) = session_of(dir.path(), 2);
    let report = repair_session_file(&path, "/w").unwrap();
    assert!(!report.changed());
    assert!(report.to_string().contains("not damaged"), "{report}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    assert!(!backup(&path, 1).exists() && !side_file(&path).exists());

    for (round, junk) in ["first junk", "second junk"].iter().enumerate() {
        let damaged = format!("{text}{junk}\n{{\"torn");
        std::fs::write(&path, &damaged).unwrap();
        let report = repair_session_file(&path, "/w").unwrap();
        assert_eq!(report.torn, Some((5, 6)), "{report}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        assert_eq!(
            std::fs::read_to_string(backup(&path, round as u32 + 1)).unwrap(),
            damaged
        );
    }
    assert_eq!(
        std::fs::read_to_string(side_file(&path)).unwrap(),
        "first junk\n{\"torn\nsecond junk\n{\"torn\n"
    );
}

#[test]
fn a_session_open_during_a_repair_refuses_to_append_to_the_old_file() {
    let dir = tempfile::tempdir().unwrap();
    let (path, text, _) = session_of(dir.path(), 2);
    let mut open = Session::open(&path).unwrap();
    std::fs::write(&path, format!("{text}junk\n")).unwrap();
    repair_session_file(&path, "/w").unwrap();
    let err = open.append_message(UserMessage::text("late")).unwrap_err();
    assert!(matches!(err, SessionError::FileReplaced { .. }), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    // Opened again, it appends.
    let mut again = Session::open(&path).unwrap();
    again.append_message(UserMessage::text("late")).unwrap();
}

/// Every single-byte flip that makes damage is repaired: the session opens,
/// every entry that could be read is still there, and no byte before the
/// first damaged line changed.
#[test]
fn every_byte_flip_that_makes_damage_is_repaired_keeping_what_came_before() {
    let dir = tempfile::tempdir().unwrap();
    let (path, text, _) = session_of(dir.path(), 3);
    let original = text.into_bytes();
    let mut repaired_count = 0;
    for at in 0..original.len() {
        let mut bytes = original.clone();
        bytes[at] ^= 0x01;
        std::fs::write(&path, &bytes).unwrap();
        for leftover in [backup(&path, 1), side_file(&path)] {
            let _ = std::fs::remove_file(leftover);
        }
        let Ok(inspected) = inspect_session_file(&path) else {
            continue;
        };
        let Some(first) = inspected.damage.first_line() else {
            continue;
        };
        let readable = inspected.entries.len()
            - inspected
                .damage
                .lines
                .iter()
                .filter(|d| {
                    matches!(
                        d.problem,
                        makai_coding::session::LineProblem::RepeatedId { .. }
                    )
                })
                .count();
        let report = repair_session_file(&path, "/w").unwrap();
        let s = Session::open(&path).unwrap_or_else(|e| panic!("flip at {at}: {e}\n{report}"));
        assert_eq!(s.entries().len(), readable, "flip at {at}: {report}");
        let now = std::fs::read(&path).unwrap();
        let prefix_end = bytes
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .nth(first.saturating_sub(2))
            .map_or(0, |(i, _)| i + 1)
            * usize::from(first > 1);
        let shift = if report.header_added.is_some() {
            now.iter().position(|b| *b == b'\n').unwrap() + 1
        } else {
            0
        };
        assert_eq!(
            &now[shift..shift + prefix_end],
            &bytes[..prefix_end],
            "flip at {at}: bytes before line {first} changed"
        );
        repaired_count += 1;
    }
    assert!(repaired_count > 50, "{repaired_count}");
}

#[test]
fn a_big_file_is_repaired_at_the_exact_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.jsonl");
    let mut s = Session::create_at(&path, "/w");
    s.set_durability(Durability::Flush);
    let pad = "y".repeat(1000);
    s.append_all(
        (0..3000)
            .map(|i| NewEntry::Message(UserMessage::text(format!("{i} {pad}")).into()))
            .collect(),
    )
    .unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines = lines_of(&text);
    lines.insert(2500, "{\"type\":".into());
    std::fs::write(&path, joined(&lines)).unwrap();
    let report = repair_session_file(&path, "/w").unwrap();
    assert_eq!(report.moved[0].line, 2501);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    assert_eq!(Session::open(&path).unwrap().entries().len(), 3000);
}
