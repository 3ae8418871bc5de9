//! Damage in session files is refused without changing a byte; a torn tail
//! (no final newline) is set aside, never deleted (issue 21, cases 1 and 2).
//! Every family of damage: byte flips anywhere, truncation mid-line, garbage
//! lines, duplicated lines, a missing header, NUL bytes, dangling and cyclic
//! parents, and damage appended by another program while a session is open.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use makai_ai::UserMessage;
use makai_coding::session::{
    Damage, LineProblem, LinkProblem, Session, SessionError, check_entries, inspect_session_file,
    side_file,
};

/// A session of `n` user messages in one chain: the header on line 1, message
/// `i` on line `i + 2`. Returns the file, its text and the entry ids.
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

fn write_lines(path: &Path, lines: &[String]) {
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

fn lines_of(text: &str) -> Vec<String> {
    text.lines().map(str::to_string).collect()
}

/// Opens `path`, expecting damage; checks the file did not change and the
/// message names the repair command.
fn refused(path: &Path) -> Damage {
    let before = std::fs::read(path).unwrap();
    let err = Session::open(path).unwrap_err();
    assert_eq!(
        std::fs::read(path).unwrap(),
        before,
        "opening changed the file"
    );
    let text = err.to_string();
    assert!(text.contains("makai sessions repair"), "{text}");
    match err {
        SessionError::Damaged { damage, .. } => *damage,
        other => panic!("expected Damaged, got {other}"),
    }
}

#[test]
fn damaged_complete_last_line_is_refused_not_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let (path, text, _) = session_of(dir.path(), 3);
    // Two flipped bytes inside the final entry, which still ends in a newline.
    let mut bytes = text.into_bytes();
    let last_start = bytes[..bytes.len() - 1]
        .iter()
        .rposition(|b| *b == b'\n')
        .unwrap()
        + 1;
    bytes[last_start + 1] ^= 0x04; // the quote before "type"
    bytes[last_start + 8] ^= 0x10;
    std::fs::write(&path, &bytes).unwrap();
    let damage = refused(&path);
    assert_eq!(damage.first_line(), Some(4), "{damage}");
    assert!(matches!(
        damage.lines[0].problem,
        LineProblem::Unreadable(_)
    ));
    // The last answer is still on disk, and an append refuses too.
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

#[test]
fn an_open_session_refuses_to_append_after_another_program_appended_damage() {
    let dir = tempfile::tempdir().unwrap();
    let (path, text, ids) = session_of(dir.path(), 3);
    let last = lines_of(&text).pop().unwrap();
    let cases = [
        // A complete line that does not parse.
        last.replacen('{', "{{", 1),
        // An entry whose parent is missing.
        last.replace(&ids[1], "zzzzzzzz")
            .replace(&ids[2], "yyyyyyyy"),
        // An entry that repeats an id.
        last.clone(),
        // A second header.
        lines_of(&text)[0].clone(),
    ];
    for (i, foreign) in cases.iter().enumerate() {
        std::fs::write(&path, &text).unwrap();
        let mut s = Session::open(&path).unwrap();
        let mut damaged = text.clone();
        damaged.push_str(foreign);
        damaged.push('\n');
        std::fs::write(&path, &damaged).unwrap();
        let err = s.append_message(UserMessage::text("next")).unwrap_err();
        match &err {
            SessionError::Damaged { damage, .. } => {
                assert_eq!(damage.first_line(), Some(5), "case {i}: {damage}")
            }
            other => panic!("case {i}: expected Damaged, got {other}"),
        }
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            damaged,
            "case {i}: written"
        );
        assert!(err.to_string().contains("makai sessions repair"), "{err}");
    }
}

/// Flips bytes everywhere in a session file: opening either refuses with
/// damage at or after the flipped line, or loads every entry (the flip kept
/// the JSON valid), or skips a torn last line (the flip hit the final
/// newline). Opening never changes the file.
#[test]
fn byte_flips_anywhere_are_refused_or_harmless_never_silent_loss() {
    let dir = tempfile::tempdir().unwrap();
    let (path, text, ids) = session_of(dir.path(), 3);
    let original = text.into_bytes();
    let line_of = |at: usize| original[..at].iter().filter(|b| **b == b'\n').count() + 1;
    let mut outcomes = [0usize; 4];
    for at in 0..original.len() {
        for mask in [0x01u8, 0x22, 0x80] {
            let mut bytes = original.clone();
            bytes[at] ^= mask;
            std::fs::write(&path, &bytes).unwrap();
            let flipped_line = line_of(at);
            let result = Session::open(&path);
            assert_eq!(
                std::fs::read(&path).unwrap(),
                bytes,
                "open changed the file"
            );
            match result {
                Ok(s) if s.warnings().iter().any(|w| w.message.contains("torn")) => {
                    assert_eq!(
                        at,
                        original.len() - 1,
                        "torn only by flipping the last newline"
                    );
                    assert_eq!(s.entries().len(), ids.len() - 1);
                    outcomes[0] += 1;
                }
                Ok(s) => {
                    assert_eq!(s.entries().len(), ids.len(), "flip at {at} lost an entry");
                    outcomes[1] += 1;
                }
                Err(SessionError::Damaged { damage, .. }) => {
                    let first = damage.first_line().unwrap();
                    assert!(
                        first >= flipped_line,
                        "flip on line {flipped_line} reported at line {first}: {damage}"
                    );
                    outcomes[2] += 1;
                }
                Err(SessionError::UnsupportedVersion { .. } | SessionError::NotASession { .. }) => {
                    assert_eq!(flipped_line, 1, "only a flip in the header can do that");
                    outcomes[3] += 1;
                }
                Err(other) => panic!("flip at {at} ({mask:#x}): unexpected {other}"),
            }
        }
    }
    assert!(outcomes[2] > outcomes[1], "{outcomes:?}");
}

#[test]
fn truncation_anywhere_is_a_torn_tail_set_aside_by_the_next_append() {
    let dir = tempfile::tempdir().unwrap();
    let (path, text, _) = session_of(dir.path(), 3);
    let original = text.as_bytes();
    for cut in 1..original.len() {
        let kept = &original[..cut];
        std::fs::write(&path, kept).unwrap();
        let side = side_file(&path);
        let _ = std::fs::remove_file(&side);
        let complete = kept.iter().filter(|b| **b == b'\n').count();
        let tail_at = kept.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        let tail = &kept[tail_at..];
        let tail_is_whole = !tail.is_empty() && original[cut] == b'\n';
        let torn = !tail.is_empty() && !tail_is_whole;
        let expected = complete.saturating_sub(1) + usize::from(tail_is_whole && complete >= 1);

        let mut s = Session::open(&path).unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
        assert_eq!(s.entries().len(), expected, "cut at {cut}");
        assert_eq!(std::fs::read(&path).unwrap(), kept, "open changed the file");
        s.set_durability(makai_coding::session::Durability::Flush);
        s.append_message(UserMessage::text("after")).unwrap();

        let now = std::fs::read(&path).unwrap();
        if torn {
            let mut fragment = tail.to_vec();
            fragment.push(b'\n');
            assert_eq!(std::fs::read(&side).unwrap(), fragment, "cut at {cut}");
            assert_eq!(&now[..tail_at], &kept[..tail_at], "cut at {cut}");
        } else {
            assert!(!side.exists(), "cut at {cut}: nothing to set aside");
            assert_eq!(&now[..cut], kept, "cut at {cut}: bytes rewritten");
        }
        let back = Session::open(&path).unwrap();
        assert_eq!(back.entries().len(), expected + 1, "cut at {cut}");
    }
}

#[test]
fn garbage_lines_are_refused_naming_each_line() {
    let dir = tempfile::tempdir().unwrap();
    let (path, text, _) = session_of(dir.path(), 3);
    let garbage = [
        "not json at all",
        "{}",
        "[1,2,3]",
        "\"a string\"",
        "{\"type\":\"message\"}",
        "{\"type\":\"message\",\"id\":7}",
        "{\"type\":\"message\",\"id\":\"abcd1234\",\"parentId\":null",
    ];
    for g in garbage {
        let mut lines = lines_of(&text);
        lines.insert(2, g.to_string());
        write_lines(&path, &lines);
        let damage = refused(&path);
        assert_eq!(damage.lines.len(), 1, "{g}: {damage}");
        assert_eq!(damage.lines[0].line, 3, "{g}: {damage}");
        assert!(damage.links.is_empty(), "{g}: {damage}");
    }
    // Several at once: every one is named.
    let mut lines = lines_of(&text);
    lines.insert(4, "junk".into());
    lines.insert(2, "junk".into());
    write_lines(&path, &lines);
    let damage = refused(&path);
    let named: Vec<usize> = damage.lines.iter().map(|d| d.line).collect();
    assert_eq!(named, [3, 6]);
    let message = Session::open(&path).unwrap_err().to_string();
    assert!(
        message.contains("line 3") && message.contains("line 6"),
        "{message}"
    );
}

#[test]
fn duplicated_lines_and_repeated_ids_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (path, text, ids) = session_of(dir.path(), 3);
    // A line written twice, next to itself and at the end.
    for at in [3usize, 4] {
        let mut lines = lines_of(&text);
        lines.insert(at, lines[2].clone());
        write_lines(&path, &lines);
        let damage = refused(&path);
        assert_eq!(
            damage.lines[0].problem,
            LineProblem::RepeatedId {
                id: ids[1].clone(),
                first_line: Some(3),
                identical: true
            },
            "{damage}"
        );
        assert_eq!(damage.lines[0].line, at + 1);
    }
    // Another entry with the same id.
    let mut lines = lines_of(&text);
    lines[3] = lines[3].replace(&ids[2], &ids[0]).replace(
        &format!("\"parentId\":\"{}\"", ids[0]),
        &format!("\"parentId\":\"{}\"", ids[1]),
    );
    write_lines(&path, &lines);
    let damage = refused(&path);
    assert!(
        matches!(
            &damage.lines[0].problem,
            LineProblem::RepeatedId {
                identical: false,
                first_line: Some(2),
                ..
            }
        ),
        "{damage}"
    );
    // A second header line.
    let mut lines = lines_of(&text);
    lines.push(lines[0].clone());
    write_lines(&path, &lines);
    let damage = refused(&path);
    assert_eq!(damage.lines[0].problem, LineProblem::ExtraHeader);
}

#[test]
fn a_missing_header_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (path, text, _) = session_of(dir.path(), 3);
    let lines = lines_of(&text);
    write_lines(&path, &lines[1..]);
    let damage = refused(&path);
    assert_eq!(damage.missing_header, Some(1), "{damage}");
    assert!(damage.lines.is_empty());
    // A header damaged beyond reading: the line, and the missing header.
    let mut lines = lines_of(&text);
    lines[0] = lines[0].replacen("\"id\"", "\"i\u{0}d\"", 1);
    write_lines(&path, &lines);
    let damage = refused(&path);
    assert_eq!(damage.lines[0].line, 1, "{damage}");
    assert_eq!(damage.missing_header, Some(2), "{damage}");
    // A file with nothing of a session in it is not a session, not damage.
    std::fs::write(&path, "hello\nworld\n").unwrap();
    assert!(matches!(
        Session::open(&path).unwrap_err(),
        SessionError::NotASession { .. }
    ));
}

#[test]
fn nul_bytes_are_damage_in_a_complete_line_and_a_torn_tail_at_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let (path, text, ids) = session_of(dir.path(), 3);
    // A line overwritten with NULs (a block lost in a crash).
    let mut lines = lines_of(&text);
    lines[2] = "\0".repeat(lines[2].len());
    write_lines(&path, &lines);
    let damage = refused(&path);
    assert_eq!(damage.lines[0].line, 3);
    // NULs in front of a good line.
    let mut lines = lines_of(&text);
    lines[3] = format!("\0\0\0\0{}", lines[3]);
    write_lines(&path, &lines);
    assert_eq!(refused(&path).lines[0].line, 4);
    // A run of NULs with no newline at the end: an append that never landed.
    let mut bytes = text.clone().into_bytes();
    bytes.extend_from_slice(&[0u8; 4096]);
    std::fs::write(&path, &bytes).unwrap();
    let s = Session::open(&path).unwrap();
    assert_eq!(s.entries().len(), ids.len());
    assert!(
        s.warnings()[0].message.contains("torn"),
        "{:?}",
        s.warnings()
    );
}

#[test]
fn a_dangling_parent_is_refused_naming_what_is_cut_off() {
    let dir = tempfile::tempdir().unwrap();
    let (path, text, ids) = session_of(dir.path(), 4);
    // The last entry's parent points nowhere: before, the model got only it.
    let mut lines = lines_of(&text);
    lines[4] = lines[4].replace(&ids[2], "deadbeef");
    write_lines(&path, &lines);
    let damage = refused(&path);
    assert_eq!(damage.links.len(), 1, "{damage}");
    let link = &damage.links[0];
    assert_eq!(
        (link.line, link.problem, link.cut_off),
        (5, LinkProblem::Missing, 1)
    );
    assert_eq!(link.new_parent.as_deref(), Some(ids[2].as_str()));
    assert_eq!(link.new_parent_line, Some(4));
    // In the middle: it and every entry below it are cut off.
    let mut lines = lines_of(&text);
    lines[2] = lines[2].replace(&ids[0], "deadbeef");
    write_lines(&path, &lines);
    let damage = refused(&path);
    assert_eq!(damage.links[0].cut_off, 3, "{damage}");
    let message = damage.to_string();
    assert!(
        message.contains("deadbeef") && message.contains("2 entries below it"),
        "{message}"
    );
}

#[test]
fn a_parent_that_is_itself_or_later_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (path, text, ids) = session_of(dir.path(), 3);
    // Its own id.
    let mut lines = lines_of(&text);
    lines[3] = lines[3].replace(
        &format!("\"parentId\":\"{}\"", ids[1]),
        &format!("\"parentId\":\"{}\"", ids[2]),
    );
    write_lines(&path, &lines);
    let damage = refused(&path);
    assert_eq!(damage.links[0].problem, LinkProblem::Itself, "{damage}");
    // A cycle: the second entry's parent is the third, whose parent is the second.
    let mut lines = lines_of(&text);
    lines[2] = lines[2].replace(
        &format!("\"parentId\":\"{}\"", ids[0]),
        &format!("\"parentId\":\"{}\"", ids[2]),
    );
    write_lines(&path, &lines);
    let damage = refused(&path);
    assert_eq!(damage.links.len(), 1, "{damage}");
    assert_eq!(damage.links[0].problem, LinkProblem::Later(4));
    assert_eq!(damage.links[0].cut_off, 2);
}

#[test]
fn check_entries_works_on_entries_from_any_store() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _, ids) = session_of(dir.path(), 3);
    let mut entries = inspect_session_file(&path).unwrap().entries;
    let positions = [10, 20, 30];
    assert_eq!(check_entries(&entries, &positions), Default::default());
    entries.swap(1, 2);
    let check = check_entries(&entries, &positions);
    assert_eq!(check.broken.len(), 1);
    assert_eq!(check.broken[0].id, ids[2]);
    assert_eq!(check.broken[0].problem, LinkProblem::Later(30));
    assert_eq!(check.broken[0].new_parent_line, Some(10));
}

#[test]
fn a_damaged_session_stays_in_the_list_marked_with_its_first_damaged_line() {
    let dir = tempfile::tempdir().unwrap();
    let (path, text, _) = session_of(dir.path(), 3);
    let mut lines = lines_of(&text);
    lines.insert(3, "junk".into());
    write_lines(&path, &lines);
    let store = makai_coding::session::JsonlStore::flat(dir.path());
    let listed = store.list("/w").unwrap();
    assert_eq!(listed.len(), 1, "the damaged session is listed");
    assert_eq!(listed[0].damaged_at, Some(4));
    assert_eq!(listed[0].message_count, 3);
}
