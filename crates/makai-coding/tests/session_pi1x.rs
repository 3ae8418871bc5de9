//! pi 1.x session entries (pi 1.5.2's docs/session-format.md): `usage`,
//! `context_edit` (omit, replace, latest wins, branch-relative), compactions
//! with a system checkpoint and retain-none compactions, read from a file
//! written by hand from the docs and written by makai.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use makai_agent::AgentMessage;
use makai_ai::{Message, UserContent};
use makai_coding::session::{
    CompactionRecord, ContentReplacement, Session, SessionEntry, SessionError, read_session_file,
};
use serde_json::Value;

fn write_fixture(dir: &Path, text: &str) -> std::path::PathBuf {
    let path = dir.join("2026-11-10T10-00-00-000Z_0194aaaa-0000-7000-8000-000000000001.jsonl");
    std::fs::write(&path, text).unwrap();
    path
}

fn user_text(m: &Message) -> String {
    match m {
        Message::User(u) => u
            .content
            .iter()
            .filter_map(|c| match c {
                UserContent::Text(t) => Some(t.text.clone()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join(""),
        other => panic!("expected a user message, got {other:?}"),
    }
}

/// pi 1.x entries (docs/session-format.md of pi 1.5.2): system messages,
/// `usage`, `context_edit` (omit, replace, latest wins), a compaction with a
/// system checkpoint, and a retain-none compaction.
/// Tree: sys1 - u1 - a1 - u2 - a2 - ce1 - ce2 - us1 - ce3 - u3 -+- cp2 - u5
///                                                              \- cp1 - u4 (leaf)
const PI_1X_SESSION: &str = r#"{"type":"session","version":3,"id":"0194aaaa-0000-7000-8000-000000000001","timestamp":"2026-11-10T10:00:00.000Z","cwd":"/home/user/project"}
{"type":"message","id":"5e510001","parentId":null,"timestamp":"2026-11-10T10:00:00.500Z","message":{"role":"system","content":"","sections":{"preamble":"You are an expert coding assistant.","cwd":"/home/user/project"},"toolsAdded":[{"name":"read","description":"Read a file","parameters":{}}],"timestamp":1794304800500}}
{"type":"message","id":"00000001","parentId":"5e510001","timestamp":"2026-11-10T10:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"first question"}],"timestamp":1794304801000}}
{"type":"message","id":"00000002","parentId":"00000001","timestamp":"2026-11-10T10:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"first answer"}],"api":"openai-completions","provider":"mock","model":"m1","usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15,"cost":{"input":0.001,"output":0.002,"cacheRead":0.0,"cacheWrite":0.0,"total":0.003}},"stopReason":"stop","timestamp":1794304802000}}
{"type":"message","id":"00000003","parentId":"00000002","timestamp":"2026-11-10T10:00:03.000Z","message":{"role":"user","content":[{"type":"text","text":"my password is hunter2"}],"timestamp":1794304803000}}
{"type":"message","id":"00000004","parentId":"00000003","timestamp":"2026-11-10T10:00:04.000Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"long reasoning"},{"type":"text","text":"a very long answer"}],"api":"openai-completions","provider":"mock","model":"m1","usage":{"input":20,"output":50,"cacheRead":0,"cacheWrite":0,"totalTokens":70,"cost":{"input":0.002,"output":0.02,"cacheRead":0.0,"cacheWrite":0.0,"total":0.022}},"stopReason":"stop","timestamp":1794304804000}}
{"type":"context_edit","id":"ce000001","parentId":"00000004","timestamp":"2026-11-10T10:00:05.000Z","targetId":"00000003","replacement":null}
{"type":"context_edit","id":"ce000002","parentId":"ce000001","timestamp":"2026-11-10T10:00:06.000Z","targetId":"00000004","replacement":"short answer"}
{"type":"usage","id":"05a90001","parentId":"ce000002","timestamp":"2026-11-10T10:00:07.000Z","kind":"cache_warm","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":0,"output":0,"cacheRead":50000,"cacheWrite":0,"totalTokens":50000,"cost":{"input":0.0,"output":0.0,"cacheRead":0.015,"cacheWrite":0.0,"total":0.015}}}
{"type":"context_edit","id":"ce000003","parentId":"05a90001","timestamp":"2026-11-10T10:00:08.000Z","targetId":"00000004","replacement":[{"type":"text","text":"shorter"},{"type":"text","text":" answer"}]}
{"type":"message","id":"00000005","parentId":"ce000003","timestamp":"2026-11-10T10:00:09.000Z","message":{"role":"user","content":[{"type":"text","text":"third question"}],"timestamp":1794304809000}}
{"type":"compaction","id":"c0000002","parentId":"00000005","timestamp":"2026-11-10T10:01:00.000Z","summary":"Kept-range compaction.","firstKeptEntryId":"5e510001","tokensBefore":800,"systemMessage":{"role":"system","content":"You are a coding assistant.","toolsAdded":[],"timestamp":1794304860000}}
{"type":"message","id":"00000007","parentId":"c0000002","timestamp":"2026-11-10T10:01:01.000Z","message":{"role":"user","content":[{"type":"text","text":"after the kept-range compaction"}],"timestamp":1794304861000}}
{"type":"compaction","id":"c0000001","parentId":"00000005","timestamp":"2026-11-10T10:02:00.000Z","summary":"Everything so far, summarised.","firstKeptEntryId":"c0000001","tokensBefore":900,"usage":{"input":900,"output":30,"cacheRead":0,"cacheWrite":0,"totalTokens":930,"cost":{"input":0.09,"output":0.003,"cacheRead":0.0,"cacheWrite":0.0,"total":0.093}},"systemMessage":{"role":"system","content":"You are a coding assistant.","toolsAdded":[],"timestamp":1794304920000}}
{"type":"message","id":"00000006","parentId":"c0000001","timestamp":"2026-11-10T10:02:01.000Z","message":{"role":"user","content":[{"type":"text","text":"after the retain-none compaction"}],"timestamp":1794304921000}}
"#;

fn llm_texts(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .map(|m| match m {
            Message::Assistant(a) => format!("A:{}", a.text()),
            Message::ToolResult(r) => format!("R:{}", r.text_content()),
            other => format!("U:{}", user_text(other)),
        })
        .collect()
}

#[test]
fn pi_1x_entries_round_trip_field_for_field() {
    let mut kinds = std::collections::BTreeSet::new();
    for line in PI_1X_SESSION.lines().skip(1) {
        let original: Value = serde_json::from_str(line).unwrap();
        let entry: SessionEntry = serde_json::from_str(line).unwrap();
        assert!(
            !matches!(entry, SessionEntry::Unknown(_)),
            "read as unknown: {line}"
        );
        kinds.insert(entry.kind().to_string());
        assert_eq!(serde_json::to_value(&entry).unwrap(), original, "{line}");
    }
    for kind in ["message", "usage", "context_edit", "compaction"] {
        assert!(kinds.contains(kind), "the fixture must hold a {kind} entry");
    }
    let dir = tempfile::tempdir().unwrap();
    let loaded = read_session_file(&write_fixture(dir.path(), PI_1X_SESSION)).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
}

#[test]
fn context_edit_omits_and_replaces_and_the_latest_edit_on_the_branch_wins() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::open(write_fixture(dir.path(), PI_1X_SESSION)).unwrap();
    s.branch_from("00000005").unwrap();
    let ctx = s.context();
    assert_eq!(
        ctx.entry_ids,
        ["5e510001", "00000001", "00000002", "00000004", "00000005"],
        "the omitted user message is gone"
    );
    assert_eq!(ctx.messages[0].role(), "system", "system messages are kept");
    assert_eq!(
        llm_texts(&ctx.llm_messages()),
        [
            "U:first question",
            "A:first answer",
            "A:shorter answer",
            "U:third question"
        ]
    );
    // Block replacement of an assistant message: its thinking is gone too.
    let a2 = ctx.messages[3].as_assistant().unwrap();
    assert_eq!(a2.content.len(), 2);
    assert_eq!(a2.model, "m1", "role and metadata stay");

    // Before the third edit: the string replacement, one text block.
    s.branch_from("05a90001").unwrap();
    let ctx = s.context();
    let a2 = ctx.messages.last().unwrap().as_assistant().unwrap();
    assert_eq!(a2.content.len(), 1);
    assert_eq!(a2.text(), "short answer");

    // Before any edit: the original contributions come back.
    s.branch_from("00000004").unwrap();
    assert_eq!(
        llm_texts(&s.path_to_leaf()),
        [
            "U:first question",
            "A:first answer",
            "U:my password is hunter2",
            "A:a very long answer"
        ]
    );
    // The raw entries never change.
    let raw = s.get("00000003").unwrap().message().unwrap();
    assert_eq!(raw.text(), "my password is hunter2");
}

#[test]
fn retain_none_compaction_keeps_nothing_before_it_and_leads_with_its_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let s = Session::open(write_fixture(dir.path(), PI_1X_SESSION)).unwrap();
    assert_eq!(s.leaf_id(), Some("00000006"));
    let ctx = s.context();
    assert_eq!(ctx.entry_ids, ["c0000001", "c0000001", "00000006"]);
    assert_eq!(ctx.messages[0].role(), "system");
    assert!(matches!(
        ctx.messages[1],
        AgentMessage::CompactionSummary(ref c) if c.tokens_before == 900
    ));
    let texts = llm_texts(&ctx.llm_messages());
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert!(texts[0].contains("Everything so far, summarised."));
    assert_eq!(texts[1], "U:after the retain-none compaction");
    let SessionEntry::Compaction(c) = s.get("c0000001").unwrap() else {
        panic!("not a compaction")
    };
    assert!(c.retains_none());
}

#[test]
fn compaction_checkpoint_replaces_kept_system_messages_and_edits_still_apply() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::open(write_fixture(dir.path(), PI_1X_SESSION)).unwrap();
    s.branch_from("00000007").unwrap();
    let ctx = s.context();
    // checkpoint, summary, kept range from sys1 without sys1 and without the
    // omitted u2, then the message after the compaction.
    assert_eq!(
        ctx.entry_ids,
        [
            "c0000002", "c0000002", "00000001", "00000002", "00000004", "00000005", "00000007"
        ]
    );
    let roles: Vec<&str> = ctx.messages.iter().map(AgentMessage::role).collect();
    assert_eq!(roles.iter().filter(|r| **r == "system").count(), 1);
    // The checkpoint is pi's system message, typed: its content and its
    // (empty) tool loadout.
    let AgentMessage::System(checkpoint) = &ctx.messages[0] else {
        panic!("{:?}", ctx.messages[0]);
    };
    assert_eq!(ctx.messages[0].text(), "You are a coding assistant.");
    assert_eq!(checkpoint.tools_added.as_deref(), Some(&[][..]));
    assert_eq!(
        ctx.messages[4].as_assistant().unwrap().text(),
        "shorter answer"
    );
}

#[test]
fn usage_entries_and_summary_usage_count_in_session_totals_only() {
    let dir = tempfile::tempdir().unwrap();
    let s = Session::open(write_fixture(dir.path(), PI_1X_SESSION)).unwrap();
    let side = s.side_usage();
    assert_eq!(side.cache_read, 50_000);
    assert_eq!(side.input, 900);
    assert!(
        (side.cost.total - 0.108).abs() < 1e-9,
        "{}",
        side.cost.total
    );
}

#[test]
fn makai_writes_usage_context_edits_and_retain_none_compactions_pi_reads() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::create(dir.path(), "/p");
    let u1 = s
        .append_message(makai_ai::UserMessage::text("drop me"))
        .unwrap();
    let u2 = s
        .append_message(makai_ai::UserMessage::text("rewrite me"))
        .unwrap();
    s.append_usage(
        "cache_warm",
        "anthropic",
        "claude-sonnet-4-5",
        makai_ai::Usage {
            cache_read: 7,
            ..Default::default()
        },
    )
    .unwrap();
    s.append_context_edit(&u1, None).unwrap();
    s.append_context_edit(&u2, Some(ContentReplacement::Text("rewritten".into())))
        .unwrap();
    // Only message and custom-message entries can be edited.
    let usage_id = s.entries()[2].id().to_string();
    let err = s.append_context_edit(&usage_id, None).unwrap_err();
    assert!(err.to_string().contains("usage entry"), "{err}");
    assert!(matches!(
        s.append_context_edit("nope", None).unwrap_err(),
        SessionError::EntryNotFound { .. }
    ));
    assert_eq!(llm_texts(&s.path_to_leaf()), ["U:rewritten"]);
    let cp = s
        .append_compaction(CompactionRecord {
            summary: "all of it".into(),
            first_kept_entry_id: None,
            tokens_before: 10,
            ..Default::default()
        })
        .unwrap();
    let text = std::fs::read_to_string(s.path().unwrap()).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[3]["type"], "usage");
    assert_eq!(lines[3]["kind"], "cache_warm");
    assert_eq!(lines[3]["usage"]["cacheRead"], 7);
    assert_eq!(lines[4]["type"], "context_edit");
    assert_eq!(lines[4]["targetId"], u1.as_str());
    assert!(
        lines[4].get("replacement").is_some_and(Value::is_null),
        "null must be written, not left out: {}",
        lines[4]
    );
    assert_eq!(lines[5]["replacement"], "rewritten");
    assert_eq!(
        lines[6]["firstKeptEntryId"],
        cp.as_str(),
        "retain-none names itself"
    );
    let back = Session::open(s.path().unwrap()).unwrap();
    assert_eq!(back.entries(), s.entries());
    let texts = llm_texts(&back.path_to_leaf());
    assert_eq!(texts.len(), 1, "retain-none: only the summary: {texts:?}");
    assert!(texts[0].contains("all of it"), "{texts:?}");
}
