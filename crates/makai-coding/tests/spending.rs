//! What a resumed session spent, counted from its entries and the sessions of
//! its unanswered sub-agents, and which of those could not be counted.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use makai_ai::{AssistantMessage, UserMessage};
use makai_coding::session::{Session, SharedSession, session_spending_report};
use makai_coding::subagent::{ChildSessions, LinkedSessions};

fn spent(output: u64) -> AssistantMessage {
    let mut a = AssistantMessage {
        content: vec![makai_ai::AssistantContent::Text(makai_ai::TextContent {
            text: "work".into(),
            text_signature: None,
        })],
        api: "anthropic-messages".into(),
        provider: "anthropic".into(),
        model: "m".into(),
        ..Default::default()
    };
    a.usage.output = output;
    a
}

/// Regression: a sub-agent session that exists but cannot be read (here
/// damaged) counted as zero with only a debug log, so a resumed session's
/// budget silently left out what that child spent. It is now reported; a
/// child that never wrote its first entry spent nothing and is not.
#[test]
fn an_unreadable_sub_agent_session_is_reported_not_silently_zero() {
    let dir = tempfile::tempdir().unwrap();
    let parent_path = dir.path().join("parent.jsonl");
    let mut parent = Session::create_at(&parent_path, "/w");
    parent
        .append_message(UserMessage::text("delegate"))
        .unwrap();
    parent.append_message(spent(10)).unwrap();
    let shared = SharedSession::new(parent);
    let linked = LinkedSessions(shared.clone());
    // A child that ran and whose file is damaged afterwards.
    let mut damaged = linked.create("worker", "call_1");
    damaged
        .append_message(UserMessage::text("child work"))
        .unwrap();
    damaged.append_message(spent(7)).unwrap();
    let damaged_path = damaged.path().unwrap().to_path_buf();
    drop(damaged);
    // A child that never wrote anything.
    let never = linked.create("worker", "call_2");
    assert!(never.path().is_some_and(|p| !p.exists()));
    drop(never);
    // A readable child.
    let mut fine = linked.create("worker", "call_3");
    fine.append_message(UserMessage::text("child work"))
        .unwrap();
    fine.append_message(spent(5)).unwrap();
    drop(fine);
    drop(linked);
    drop(shared);
    std::fs::write(&damaged_path, "this is not a session\n").unwrap();

    let resumed = Session::open(&parent_path).unwrap();
    let report = session_spending_report(&resumed);
    assert_eq!(report.usage.output, 15, "{report:?}");
    assert_eq!(report.uncounted.len(), 1, "{report:?}");
    let u = &report.uncounted[0];
    assert_eq!(u.location, damaged_path.display().to_string());
    // The error says which file and what is wrong with it.
    assert!(
        u.error.contains(&u.location) && u.error.contains("not a session file"),
        "{}",
        u.error
    );
}
