//! Branching, switching, forking and compaction on real session files.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use makai_agent::AgentMessage;
use makai_ai::{AssistantMessage, Message, StopReason, UserContent, UserMessage};
use makai_coding::session::{
    CompactionRecord, ContentReplacement, Session, SessionEntry, SessionError, read_session_file,
};

fn reply(text: &str) -> AssistantMessage {
    AssistantMessage {
        content: vec![makai_ai::AssistantContent::Text(makai_ai::TextContent {
            text: text.into(),
            text_signature: None,
        })],
        api: "anthropic-messages".into(),
        provider: "anthropic".into(),
        model: "claude-test".into(),
        stop_reason: StopReason::Stop,
        ..Default::default()
    }
}

fn texts(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .map(|m| match m {
            Message::User(u) => match &u.content[0] {
                UserContent::Text(t) => format!("U:{}", t.text),
                _ => "U:<img>".into(),
            },
            Message::Assistant(a) => format!("A:{}", a.text()),
            Message::ToolResult(t) => format!("T:{}", t.text_content()),
            _ => "?".into(),
        })
        .collect()
}

/// u1 a1 u2 a2 in a fresh session file.
fn linear() -> (tempfile::TempDir, Session, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::create(dir.path(), "/w");
    let ids = vec![
        s.append_message(UserMessage::text("one")).unwrap(),
        s.append_message(reply("r1")).unwrap(),
        s.append_message(UserMessage::text("two")).unwrap(),
        s.append_message(reply("r2")).unwrap(),
    ];
    (dir, s, ids)
}

#[test]
fn branch_from_an_earlier_entry_starts_a_sibling_and_keeps_history() {
    let (_d, mut s, ids) = linear();
    s.branch_from(&ids[1]).unwrap();
    assert_eq!(texts(&s.path_to_leaf()), ["U:one", "A:r1"]);
    let u2b = s.append_message(UserMessage::text("two-b")).unwrap();
    assert_eq!(s.get(&u2b).unwrap().parent_id(), Some(ids[1].as_str()));
    assert_eq!(texts(&s.path_to_leaf()), ["U:one", "A:r1", "U:two-b"]);

    let children: Vec<&str> = s.children(&ids[1]).iter().map(|e| e.id()).collect();
    assert_eq!(children, [ids[2].as_str(), u2b.as_str()]);
    let leaves: Vec<&str> = s.leaves().iter().map(|e| e.id()).collect();
    assert_eq!(leaves, [ids[3].as_str(), u2b.as_str()]);

    // The file holds both branches; reopening lands on the last appended entry.
    let back = Session::open(s.path().unwrap()).unwrap();
    assert_eq!(back.entries().len(), 5);
    assert_eq!(back.leaf_id(), Some(u2b.as_str()));
}

#[test]
fn switching_between_branches_changes_the_context() {
    let (_d, mut s, ids) = linear();
    s.branch_from(&ids[1]).unwrap();
    let b = s.append_message(UserMessage::text("other")).unwrap();
    s.branch_from(&ids[3]).unwrap();
    assert_eq!(texts(&s.path_to_leaf()), ["U:one", "A:r1", "U:two", "A:r2"]);
    s.branch_from(&b).unwrap();
    assert_eq!(texts(&s.path_to_leaf()), ["U:one", "A:r1", "U:other"]);
    s.reset_leaf();
    assert!(s.path_to_leaf().is_empty());
    let root2 = s.append_message(UserMessage::text("fresh")).unwrap();
    assert_eq!(s.get(&root2).unwrap().parent_id(), None);
}

#[test]
fn unknown_ids_are_typed_errors() {
    let (_d, mut s, _) = linear();
    let err = s.branch_from("nope").unwrap_err();
    assert!(matches!(err, SessionError::EntryNotFound { ref id, .. } if id == "nope"));
    assert!(s.set_label("nope", Some("x")).is_err());
    assert!(s.fork("nope", "/tmp/never.jsonl").is_err());
    let before = s.entries().len();
    assert!(
        s.append_compaction(CompactionRecord {
            first_kept_entry_id: Some("nope".into()),
            ..Default::default()
        })
        .is_err()
    );
    assert_eq!(s.entries().len(), before, "a refused append writes nothing");
}

#[test]
fn branch_with_summary_records_what_was_left() {
    let (_d, mut s, ids) = linear();
    let sum = s
        .branch_with_summary(Some(&ids[1]), "Tried approach A; it failed.", None, None)
        .unwrap();
    let SessionEntry::BranchSummary(b) = s.get(&sum).unwrap() else {
        panic!()
    };
    assert_eq!(b.from_id, ids[3]);
    assert_eq!(b.parent_id.as_deref(), Some(ids[1].as_str()));
    let t = texts(&s.path_to_leaf());
    assert_eq!(t.len(), 3);
    assert!(t[2].contains("Tried approach A"), "{t:?}");
}

#[test]
fn fork_copies_one_branch_into_a_new_file_with_parent_session() {
    let (dir, mut s, ids) = linear();
    s.set_label(&ids[0], Some("start")).unwrap();
    s.set_label(&ids[3], Some("not on the forked path"))
        .unwrap();
    s.branch_from(&ids[1]).unwrap();
    let side = s.append_message(UserMessage::text("side")).unwrap();

    let forked = s.fork_here(&side).unwrap();
    let fpath = forked.path().unwrap().to_path_buf();
    assert_eq!(fpath.parent(), Some(dir.path()));
    assert_ne!(forked.id(), s.id());
    assert!(
        fpath
            .to_str()
            .unwrap()
            .ends_with(&format!("_{}.jsonl", forked.id()))
    );
    assert_eq!(
        forked.header().parent_session.as_deref(),
        Some(s.path().unwrap().to_str().unwrap())
    );
    assert_eq!(texts(&forked.path_to_leaf()), ["U:one", "A:r1", "U:side"]);
    assert_eq!(forked.label(&ids[0]), Some("start"));
    assert_eq!(forked.label(&ids[3]), None);
    assert!(
        forked.get(&ids[2]).is_none(),
        "the other branch is not copied"
    );

    // Written to disk before fork returned; the original is untouched.
    let loaded = read_session_file(&fpath).unwrap();
    assert_eq!(loaded.entries.len(), 4, "3 path entries + 1 label");
    assert!(loaded.warnings.is_empty());
    assert_eq!(Session::open(s.path().unwrap()).unwrap().entries().len(), 7);

    // The fork continues independently.
    let mut forked = forked;
    forked.append_message(reply("in fork")).unwrap();
    assert_eq!(Session::open(&fpath).unwrap().path_to_leaf().len(), 4);
}

#[test]
fn tree_view_has_roots_children_depths_and_the_current_path() {
    let (_d, mut s, ids) = linear();
    s.branch_from(&ids[0]).unwrap();
    let alt = s.append_message(reply("alt")).unwrap();
    s.set_label(&alt, Some("alt-branch")).unwrap();
    let view = s.view();
    assert_eq!(view.roots, [0]);
    let idx = |id: &str| view.nodes.iter().position(|n| n.entry.id() == id).unwrap();
    let root = &view.nodes[idx(&ids[0])];
    assert_eq!(root.children, [idx(&ids[1]), idx(&alt)]);
    assert_eq!(view.nodes[idx(&ids[3])].depth, 3);
    assert_eq!(view.nodes[idx(&alt)].label, Some("alt-branch"));
    assert!(view.nodes[idx(&alt)].on_current_path);
    assert!(!view.nodes[idx(&ids[3])].on_current_path);
}

#[test]
fn resumed_session_rebuilds_the_same_context_after_compaction() {
    let (_d, mut s, ids) = linear();
    let ctx = s.context();
    // The agent keeps from the second user message on; map its index to the entry id.
    let keep_from = ctx.entry_ids[2].clone();
    assert_eq!(keep_from, ids[2]);
    s.append_compaction(CompactionRecord {
        summary: "The user said one; the model said r1.".into(),
        first_kept_entry_id: Some(keep_from),
        tokens_before: 9000,
        tokens_after: Some(1200),
        ..Default::default()
    })
    .unwrap();
    s.append_message(UserMessage::text("three")).unwrap();
    let before = s.context();
    assert_eq!(before.messages.len(), 4, "summary, two, r2, three");
    assert!(matches!(
        before.messages[0],
        AgentMessage::CompactionSummary(_)
    ));

    let back = Session::open(s.path().unwrap()).unwrap();
    assert_eq!(back.context(), before);
    let SessionEntry::Compaction(c) = &back.entries()[4] else {
        panic!()
    };
    assert_eq!((c.tokens_before, c.tokens_after), (9000, Some(1200)));
}

#[test]
fn compaction_that_keeps_the_first_message_rebuilds_it_before_the_summary() {
    let (_d, mut s, ids) = linear();
    let ctx = s.context();
    let first = ctx.messages[0].clone();
    s.append_compaction(CompactionRecord {
        summary: "Middle turns, summarized.".into(),
        first_kept_entry_id: Some(ids[2].clone()),
        tokens_before: 5000,
        retained_head: Some(vec![first.clone()]),
        ..Default::default()
    })
    .unwrap();
    let before = s.context();
    assert_eq!(before.messages.len(), 4, "first, summary, two, r2");
    assert_eq!(before.messages[0], first);
    assert!(matches!(
        before.messages[1],
        AgentMessage::CompactionSummary(_)
    ));
    let back = Session::open(s.path().unwrap()).unwrap();
    assert_eq!(back.context().messages, before.messages);
    let raw = std::fs::read_to_string(s.path().unwrap()).unwrap();
    assert!(raw.contains("\"retainedHead\""), "{raw}");
}

#[test]
fn in_memory_sessions_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::in_memory(dir.path().to_str().unwrap());
    s.append_message(UserMessage::text("x")).unwrap();
    assert!(s.path().is_none());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    assert!(s.fork_here(s.leaf_id().unwrap()).is_err());
}

#[test]
fn a_session_nobody_wrote_to_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let s = Session::create(dir.path(), "/w");
    assert!(!s.path().unwrap().exists());
}

#[test]
fn open_or_create_starts_a_session_at_a_new_path_and_reopens_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/named.jsonl");
    let mut s = Session::open_or_create(&path, "/w").unwrap();
    assert!(s.entries().is_empty());
    let id = s.append_message(UserMessage::text("x")).unwrap();
    let again = Session::open_or_create(&path, "/ignored").unwrap();
    assert_eq!(again.leaf_id(), Some(id.as_str()));
    assert_eq!(again.cwd(), "/w");
    assert_eq!(again.id(), s.id());
}

#[test]
fn open_or_create_takes_an_empty_file_as_a_new_session_for_the_given_cwd() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("2025-01-01T00-00-00-000Z_kept-id.jsonl");
    std::fs::write(&path, "").unwrap();
    let mut s = Session::open_or_create(&path, "/given").unwrap();
    assert_eq!(s.cwd(), "/given");
    assert_eq!(s.id(), "kept-id");
    s.append_message(UserMessage::text("x")).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("{\"type\":\"session\""), "{text}");
    assert_eq!(Session::open(&path).unwrap().cwd(), "/given");
}

#[test]
fn open_or_create_refuses_a_directory_and_a_device_without_reading_them() {
    let dir = tempfile::tempdir().unwrap();
    for (path, kind) in [
        (dir.path(), "a directory"),
        (std::path::Path::new("/dev/zero"), "a device"),
    ] {
        let err = Session::open_or_create(path, "/w").unwrap_err();
        assert!(
            matches!(err, SessionError::NotASession { .. }) && err.to_string().contains(kind),
            "{err}"
        );
        let err = Session::open(path).unwrap_err();
        assert!(err.to_string().contains(kind), "{err}");
    }
}

/// pi's #11602: a branch summary read failed answers, and the content
/// context edits had hidden or replaced.
#[test]
fn branch_left_reads_context_edits_and_leaves_failed_answers_out() {
    let (_d, mut s, ids) = linear();
    let failed = s
        .append_message(AssistantMessage {
            stop_reason: StopReason::Error,
            error_message: Some("HTTP 500".into()),
            ..reply("half")
        })
        .unwrap();
    s.append_message(UserMessage::text("three")).unwrap();
    s.append_message(reply("r3")).unwrap();
    s.append_context_edit(&ids[2], None).unwrap();
    s.append_context_edit(
        &ids[3],
        Some(ContentReplacement::Text("r2, shortened".into())),
    )
    .unwrap();
    let left = s.tree().branch_left(Some(&ids[1]));
    let seen: Vec<Message> = left
        .messages
        .iter()
        .filter_map(AgentMessage::to_llm)
        .collect();
    assert_eq!(texts(&seen), ["A:r2, shortened", "U:three", "A:r3"]);
    assert!(s.get(&failed).is_some());
}

#[test]
fn branch_left_is_what_the_current_path_has_after_the_entry_it_shares_with_the_target() {
    let (_d, mut s, ids) = linear();
    // u1 a1 ┬ u2 a2        (the leaf before)
    //       └ other        (the target)
    s.branch_from(&ids[1]).unwrap();
    let other = s.append_message(UserMessage::text("other")).unwrap();
    s.branch_from(&ids[3]).unwrap();
    let left = s.tree().branch_left(Some(&other));
    assert_eq!(left.from_id, ids[3]);
    let left_texts: Vec<Message> = left
        .messages
        .iter()
        .filter_map(AgentMessage::to_llm)
        .collect();
    assert_eq!(texts(&left_texts), ["U:two", "A:r2"]);
    // Going back to an entry of the path leaves what follows it.
    let back = s.tree().branch_left(Some(&ids[0]));
    assert_eq!(back.messages.len(), 3);
    // To the leaf itself: nothing.
    assert!(s.tree().branch_left(Some(&ids[3])).messages.is_empty());
    // Before the first entry: everything.
    assert_eq!(s.tree().branch_left(None).messages.len(), 4);
    // A branch summary left behind carries its files.
    let summary = s
        .branch_with_summary(
            Some(&ids[3]),
            "summary",
            Some(serde_json::json!({"readFiles": ["a.rs"], "modifiedFiles": ["b.rs"]})),
            None,
        )
        .unwrap();
    assert_eq!(s.leaf_id(), Some(summary.as_str()));
    let left = s.tree().branch_left(Some(&other));
    assert_eq!(
        left.carried_files,
        [(vec!["a.rs".to_string()], vec!["b.rs".to_string()])]
    );
    assert_eq!(left.messages.len(), 3);
}
