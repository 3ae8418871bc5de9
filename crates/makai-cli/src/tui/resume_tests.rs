//! Tests of [`super`] (`resume.rs`).

use super::*;
use std::time::Duration;

fn session(id: &str, parent: Option<&str>, minutes: u64) -> SessionInfo {
    SessionInfo {
        path: Some(PathBuf::from(format!("/s/{id}.jsonl"))),
        id: id.into(),
        cwd: "/w".into(),
        name: None,
        title: id.into(),
        first_message: String::new(),
        created: String::new(),
        modified: SystemTime::UNIX_EPOCH + Duration::from_secs(minutes * 60),
        message_count: 1,
        entry_count: 2,
        parent_session: parent.map(str::to_string),
        damaged_at: None,
    }
}

fn ids(sessions: &[SessionInfo], order: &[(usize, usize)]) -> Vec<(String, usize)> {
    order
        .iter()
        .map(|&(i, d)| (sessions[i].id.clone(), d))
        .collect()
}

#[test]
fn forks_go_under_their_parent_and_trees_by_their_latest_activity() {
    let sessions = vec![
        session("a", None, 1),
        session("c", None, 2),
        session("b", Some("/s/a.jsonl"), 3),
        session("d", Some("#b"), 0),
        session("e", Some("postgres://db#b"), 1),
        session("loop1", Some("/s/loop2.jsonl"), 0),
        session("loop2", Some("/s/loop1.jsonl"), 0),
    ];
    let order = threaded(&sessions);
    let got = ids(&sessions, &order);
    assert_eq!(got.len(), sessions.len(), "every session once: {got:?}");
    assert_eq!(
        got[..5],
        [
            ("a".to_string(), 0),
            ("b".to_string(), 1),
            ("e".to_string(), 2),
            ("d".to_string(), 2),
            ("c".to_string(), 0),
        ]
    );
    let recent = ids(&sessions, &newest_first(&sessions));
    assert_eq!(recent[0], ("b".to_string(), 0));
    assert_eq!(recent[1], ("c".to_string(), 0));
}
