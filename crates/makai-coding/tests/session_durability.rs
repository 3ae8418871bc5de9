//! Durability and concurrency with real processes: SIGKILL mid-append,
//! concurrent writers, torn and corrupt lines.
//!
//! The child processes are this test binary itself, running the ignored
//! `child_appender` test with its instructions in environment variables.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use makai_ai::UserMessage;
use makai_coding::session::{Durability, Session, SessionError, read_session_file};
use serde_json::Value;

const ENV_PATH: &str = "MAKAI_TEST_CHILD_SESSION";
const ENV_COUNT: &str = "MAKAI_TEST_CHILD_COUNT";
const ENV_TAG: &str = "MAKAI_TEST_CHILD_TAG";
const ENV_PAD: &str = "MAKAI_TEST_CHILD_PAD";
const ENV_FSYNC: &str = "MAKAI_TEST_CHILD_FSYNC";
const ENV_START_AT: &str = "MAKAI_TEST_CHILD_START_AT_MS";

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Appends user messages to the session named by the environment, printing
/// `ack <id>` after each append returns. Runs until killed when the count is 0.
#[test]
#[ignore = "helper process started by the other tests in this file"]
fn child_appender() {
    let path = PathBuf::from(std::env::var(ENV_PATH).expect("helper needs a session path"));
    let count: usize = std::env::var(ENV_COUNT).unwrap().parse().unwrap();
    let tag = std::env::var(ENV_TAG).unwrap();
    let pad: usize = std::env::var(ENV_PAD).unwrap().parse().unwrap();
    let fsync = std::env::var(ENV_FSYNC).unwrap() == "1";
    let mut s = if path.exists() {
        Session::open(&path).unwrap()
    } else {
        Session::create_at(&path, "/w")
    };
    s.set_durability(if fsync {
        Durability::Fsync
    } else {
        Durability::Flush
    });
    let filler = "x".repeat(pad);
    // Writers started together contend for the lock from the first append.
    if let Ok(at) = std::env::var(ENV_START_AT) {
        let at: u64 = at.parse().unwrap();
        while now_ms() < at {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let out = std::io::stdout();
    let mut i = 0usize;
    while count == 0 || i < count {
        let id = s
            .append_message(UserMessage::text(format!("{tag} {i} {filler}")))
            .unwrap();
        let mut lock = out.lock();
        writeln!(lock, "ack {tag} {id}").unwrap();
        lock.flush().unwrap();
        i += 1;
    }
}

fn spawn_child(path: &Path, count: usize, tag: &str, pad: usize, fsync: bool) -> Child {
    spawn_child_at(path, count, tag, pad, fsync, None)
}

fn spawn_child_at(
    path: &Path,
    count: usize,
    tag: &str,
    pad: usize,
    fsync: bool,
    start_at_ms: Option<u64>,
) -> Child {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    if let Some(at) = start_at_ms {
        cmd.env(ENV_START_AT, at.to_string());
    }
    cmd.args([
        "session_durability::child_appender",
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(ENV_PATH, path)
    .env(ENV_COUNT, count.to_string())
    .env(ENV_TAG, tag)
    .env(ENV_PAD, pad.to_string())
    .env(ENV_FSYNC, if fsync { "1" } else { "0" })
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .unwrap()
}

/// The (tag, id) of an `ack` line. libtest may print `test child_appender ... `
/// on the same line before the first one.
fn ack(line: &str) -> Option<(String, String)> {
    let rest = &line[line.find("ack ")? + 4..];
    let mut parts = rest.split_whitespace();
    Some((parts.next()?.to_string(), parts.next()?.to_string()))
}

fn acked_ids(line: &str) -> Option<String> {
    ack(line).map(|(_, id)| id)
}

/// Every line parses as JSON and every parent id resolves.
fn check_integrity(path: &Path) -> (usize, Vec<String>) {
    let loaded = read_session_file(path).unwrap();
    let ids: HashSet<&str> = loaded.entries.iter().map(|e| e.id()).collect();
    assert_eq!(ids.len(), loaded.entries.len(), "entry ids must be unique");
    for e in &loaded.entries {
        if let Some(p) = e.parent_id() {
            assert!(
                ids.contains(p),
                "entry {} has a dangling parent {p}",
                e.id()
            );
        }
    }
    let warnings = loaded.warnings.iter().map(|w| w.to_string()).collect();
    (loaded.entries.len(), warnings)
}

#[test]
fn sigkill_mid_append_loses_at_most_the_entry_being_written() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("killed.jsonl");
    let mut all_acked: Vec<String> = Vec::new();
    let mut torn_seen = 0;
    // Rounds with small and with multi-megabyte entries, with and without
    // fsync: big unsynced writes make a kill in the middle of a write likelier.
    let rounds = [
        (64usize, true),
        (1 << 20, false),
        (256, true),
        (1 << 20, true),
        (4096, true),
        (1 << 20, false),
    ];
    for (round, (pad, fsync)) in rounds.into_iter().enumerate() {
        let mut child = spawn_child(&path, 0, &format!("r{round}"), pad, fsync);
        let mut reader = BufReader::new(child.stdout.take().unwrap());
        let want = 3 + round * 2;
        let mut acked = Vec::new();
        let mut line = String::new();
        while acked.len() < want {
            line.clear();
            assert!(reader.read_line(&mut line).unwrap() > 0, "child died early");
            if let Some(id) = acked_ids(&line) {
                acked.push(id);
            }
        }
        // Kill at a pseudo-random moment inside the following appends.
        std::thread::sleep(Duration::from_micros(137 * (round as u64 + 1)));
        kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).unwrap();
        let status = child.wait().unwrap();
        assert!(!status.success());
        // Acks printed before the kill count too.
        for line in reader.lines().map_while(Result::ok) {
            if let Some(id) = acked_ids(&line) {
                acked.push(id);
            }
        }
        all_acked.extend(acked);

        // Reload: no error, every acknowledged entry present, at most one extra.
        let s = Session::open(&path).unwrap();
        let present: HashSet<&str> = s.entries().iter().map(|e| e.id()).collect();
        for id in &all_acked {
            assert!(
                present.contains(id.as_str()),
                "acknowledged entry {id} lost in round {round}"
            );
        }
        assert!(
            s.entries().len() == all_acked.len() || s.entries().len() == all_acked.len() + 1,
            "round {round}: {} entries for {} acks",
            s.entries().len(),
            all_acked.len()
        );
        if !s.warnings().is_empty() {
            torn_seen += 1;
            assert!(
                s.warnings()[0].message.contains("torn"),
                "{}",
                s.warnings()[0]
            );
        }
        // Keep the count exact for the next round: an entry written but not
        // acknowledged is fine, adopt it.
        all_acked = s.entries().iter().map(|e| e.id().to_string()).collect();
        let _ = check_integrity(&path);
    }
    // A final append repairs any torn tail for good.
    let mut s = Session::open(&path).unwrap();
    s.append_message(UserMessage::text("after the storm"))
        .unwrap();
    let (n, warnings) = check_integrity(&path);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(n, all_acked.len() + 1);
    eprintln!(
        "sigkill test: {n} entries, torn last line seen after {torn_seen} of {} kills",
        rounds.len()
    );
}

#[test]
fn two_writer_processes_never_corrupt_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.jsonl");
    let mut s = Session::create_at(&path, "/w");
    let root = s.append_message(UserMessage::text("root")).unwrap();
    drop(s);

    const PER: usize = 1000;
    let start_at = now_ms() + 500;
    let children: Vec<Child> = ["A", "B"]
        .iter()
        .map(|tag| spawn_child_at(&path, PER, tag, 200, false, Some(start_at)))
        .collect();
    let mut acks: HashMap<String, Vec<String>> = HashMap::new();
    for mut c in children {
        let out = c.stdout.take().unwrap();
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if let Some((tag, id)) = ack(&line) {
                acks.entry(tag).or_default().push(id);
            }
        }
        assert!(c.wait().unwrap().success());
    }
    assert_eq!(acks["A"].len(), PER);
    assert_eq!(acks["B"].len(), PER);

    // Every line is valid JSON on its own.
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.ends_with('\n'));
    for (i, l) in text.lines().enumerate() {
        serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("line {} invalid: {e}", i + 1));
    }
    assert_eq!(text.lines().count(), 2 + 2 * PER);
    let (n, warnings) = check_integrity(&path);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(n, 1 + 2 * PER);

    // Each writer appends below its own leaf: its entries form one chain,
    // hanging off whatever was the last entry when it opened the file.
    let s = Session::open(&path).unwrap();
    for tag in ["A", "B"] {
        let ids = &acks[tag];
        for w in ids.windows(2) {
            assert_eq!(s.get(&w[1]).unwrap().parent_id(), Some(w[0].as_str()));
        }
    }
    let first_parents: Vec<&str> = ["A", "B"]
        .iter()
        .filter_map(|t| s.get(&acks[*t][0]).unwrap().parent_id())
        .collect();
    assert!(first_parents.contains(&root.as_str()), "{first_parents:?}");
}

#[test]
fn concurrent_writer_threads_in_one_process_see_each_others_entries() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("threads.jsonl");
    let mut s = Session::create_at(&path, "/w");
    s.append_message(UserMessage::text("root")).unwrap();
    drop(s);
    const THREADS: usize = 4;
    const PER: usize = 100;
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let path = path.clone();
            std::thread::spawn(move || {
                let mut s = Session::open(&path).unwrap();
                s.set_durability(Durability::Flush);
                for i in 0..PER {
                    s.append_message(UserMessage::text(format!("t{t} {i}")))
                        .unwrap();
                }
                s.entries().len()
            })
        })
        .collect();
    let seen: Vec<usize> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let (n, warnings) = check_integrity(&path);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(n, 1 + THREADS * PER);
    // Each handle absorbed the others' entries while appending, so at least
    // the last one to finish knows every entry written before its last append.
    assert!(seen.iter().max().unwrap() > &(1 + PER), "{seen:?}");
}

fn three_entry_file(dir: &Path) -> (PathBuf, String) {
    let path = dir.join("s.jsonl");
    let mut s = Session::create_at(&path, "/w");
    for t in ["a", "b", "c"] {
        s.append_message(UserMessage::text(t)).unwrap();
    }
    let text = std::fs::read_to_string(&path).unwrap();
    (path, text)
}

#[test]
fn torn_last_line_is_skipped_with_a_warning_and_repaired_by_the_next_append() {
    let dir = tempfile::tempdir().unwrap();
    let (path, text) = three_entry_file(dir.path());
    let last = text.lines().last().unwrap();
    let cut = &text[..text.len() - 1 - last.len() / 2]; // half of the last line
    std::fs::write(&path, cut).unwrap();

    let mut s = Session::open(&path).unwrap();
    assert_eq!(s.entries().len(), 2);
    assert_eq!(s.warnings().len(), 1);
    assert_eq!(s.warnings()[0].line, Some(4));
    assert!(s.warnings()[0].message.contains("torn"));
    let d = s.append_message(UserMessage::text("d")).unwrap();

    let back = Session::open(&path).unwrap();
    assert!(back.warnings().is_empty(), "{:?}", back.warnings());
    assert_eq!(back.entries().len(), 3);
    assert_eq!(back.leaf_id(), Some(d.as_str()));
    let (_, w) = check_integrity(&path);
    assert!(w.is_empty());
}

#[test]
fn a_valid_last_line_without_newline_is_kept_and_completed() {
    let dir = tempfile::tempdir().unwrap();
    let (path, text) = three_entry_file(dir.path());
    std::fs::write(&path, text.trim_end()).unwrap();
    let mut s = Session::open(&path).unwrap();
    assert!(s.warnings().is_empty());
    assert_eq!(s.entries().len(), 3);
    s.append_message(UserMessage::text("d")).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 5);
    assert_eq!(Session::open(&path).unwrap().entries().len(), 4);
}

#[test]
fn a_corrupt_line_in_the_middle_is_an_error_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let (path, text) = three_entry_file(dir.path());
    let mut lines: Vec<&str> = text.lines().collect();
    lines[2] = "{\"type\":\"message\",\"id\":\"abc"; // line 3 of 4
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let err = Session::open(&path).unwrap_err();
    match &err {
        SessionError::Damaged { damage, path: p } => {
            assert_eq!(damage.first_line(), Some(3));
            assert_eq!(p, &path);
        }
        other => panic!("expected Damaged, got {other}"),
    }
    let msg = err.to_string();
    assert!(msg.contains("line 3") && msg.contains("s.jsonl"), "{msg}");
    assert!(msg.contains("makai sessions repair"), "{msg}");
}

#[test]
fn an_append_refuses_to_write_after_foreign_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = three_entry_file(dir.path());
    let mut s = Session::open(&path).unwrap();
    // Another program appends garbage and then a valid-looking line.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    f.write_all(b"not json\n{\"type\":\"custom\",\"id\":\"zzzz0001\",\"parentId\":null,\"timestamp\":\"t\",\"customType\":\"x\"}\n")
        .unwrap();
    drop(f);
    let len_before = std::fs::metadata(&path).unwrap().len();
    let err = s.append_message(UserMessage::text("d")).unwrap_err();
    assert!(
        matches!(&err, SessionError::Damaged { damage, .. } if damage.first_line() == Some(5)),
        "{err}"
    );
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        len_before,
        "nothing written"
    );
}

#[test]
fn appends_are_fast_enough_to_not_stall_a_run() {
    // A sanity bound, not a benchmark: 200 synced appends well under 10 s.
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::create_at(dir.path().join("t.jsonl"), "/w");
    let start = Instant::now();
    for i in 0..200 {
        s.append_message(UserMessage::text(format!("m{i}")))
            .unwrap();
    }
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
}

/// A file big enough to be parsed on several threads.
fn big_file(dir: &Path) -> (PathBuf, String) {
    let path = dir.join("big.jsonl");
    let mut s = Session::create_at(&path, "/w");
    s.set_durability(Durability::Flush);
    let pad = "y".repeat(1000);
    let batch: Vec<_> = (0..3000)
        .map(|i| {
            makai_coding::session::NewEntry::Message(UserMessage::text(format!("{i} {pad}")).into())
        })
        .collect();
    s.append_all(batch).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.len() > 3 << 20);
    (path, text)
}

#[test]
fn big_files_report_the_exact_line_of_damage_and_skip_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    let (path, text) = big_file(dir.path());
    let s = Session::open(&path).unwrap();
    assert_eq!(s.entries().len(), 3000);
    assert_eq!(texts_in_order(&s), (0..3000).collect::<Vec<_>>());

    // Damage line 2500 (well into a later parsing thread's share).
    let mut lines: Vec<&str> = text.lines().collect();
    lines[2499] = "{\"type\":";
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    match Session::open(&path).unwrap_err() {
        SessionError::Damaged { damage, .. } => assert_eq!(damage.first_line(), Some(2500)),
        other => panic!("expected Damaged, got {other}"),
    }

    // A torn last line in a big file is still only a warning.
    let torn = &text[..text.len() - 500];
    std::fs::write(&path, torn).unwrap();
    let s = Session::open(&path).unwrap();
    assert_eq!(s.entries().len(), 2999);
    assert_eq!(s.warnings()[0].line, Some(3001));
}

fn texts_in_order(s: &Session) -> Vec<usize> {
    s.entries()
        .iter()
        .map(|e| match e.message() {
            Some(m) if m.as_user().is_some() => match &m.as_user().unwrap().content[0] {
                makai_ai::UserContent::Text(t) => {
                    t.text.split(' ').next().unwrap().parse().unwrap()
                }
                _ => panic!(),
            },
            _ => panic!(),
        })
        .collect()
}
