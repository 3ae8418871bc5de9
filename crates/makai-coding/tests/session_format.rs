//! pi session format compatibility: a file written by hand from pi's
//! `session-format.md`, with every entry type and every message role, must
//! load, rebuild the right context and round-trip field for field.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use makai_agent::AgentMessage;
use makai_ai::{Message, UserContent};
use makai_coding::session::{
    CompactionRecord, KNOWN_ENTRY_TYPES, Session, SessionEntry, SessionError, SessionHeader,
    read_session_file,
};
use serde_json::Value;

/// Written by hand following pi's docs/session-format.md (format version 3).
/// Tree: m1 - t1 - c1 - a1 - r1 - a2 - b1 - x1 - k1 - u2
///                       \- s1 - e1 - cm1 - lb1 - lb2 - lb3 - i1   (leaf)
const PI_SESSION: &str = r#"{"type":"session","version":3,"id":"0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b","timestamp":"2024-12-03T14:00:00.000Z","cwd":"/home/user/project","parentSession":"/home/user/.pi/agent/sessions/--home-user-project--/2024-12-01T10-00-00-000Z_0193a1b2-0000-7000-8000-000000000000.jsonl"}
{"type":"message","id":"a1b2c3d4","parentId":null,"timestamp":"2024-12-03T14:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"Fix the login bug in auth.ts"},{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}],"timestamp":1733234401000}}
{"type":"thinking_level_change","id":"e5f6a7b8","parentId":"a1b2c3d4","timestamp":"2024-12-03T14:00:02.000Z","thinkingLevel":"high"}
{"type":"model_change","id":"d4e5f6a7","parentId":"e5f6a7b8","timestamp":"2024-12-03T14:00:03.000Z","provider":"anthropic","modelId":"claude-sonnet-4-5"}
{"type":"message","id":"b2c3d4e5","parentId":"d4e5f6a7","timestamp":"2024-12-03T14:00:04.000Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"Look at auth.ts first.","thinkingSignature":"sig-abc"},{"type":"text","text":"Let me read the file."},{"type":"toolCall","id":"toolu_01","name":"read","arguments":{"path":"src/auth.ts"}}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":1200,"output":80,"cacheRead":300,"cacheWrite":50,"totalTokens":1630,"cost":{"input":0.0036,"output":0.0012,"cacheRead":0.00009,"cacheWrite":0.0001875,"total":0.0050775}},"stopReason":"toolUse","timestamp":1733234404000}}
{"type":"message","id":"c3d4e5f6","parentId":"b2c3d4e5","timestamp":"2024-12-03T14:00:05.000Z","message":{"role":"toolResult","toolCallId":"toolu_01","toolName":"read","content":[{"type":"text","text":"1\texport function login() {}"}],"details":{"lines":1},"isError":false,"timestamp":1733234405000}}
{"type":"message","id":"f6a7b8c9","parentId":"c3d4e5f6","timestamp":"2024-12-03T14:00:06.000Z","message":{"role":"assistant","content":[{"type":"text","text":"The login function is empty."}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":40,"output":12,"cacheRead":1500,"cacheWrite":0,"totalTokens":1552,"cost":{"input":0.0,"output":0.0,"cacheRead":0.0,"cacheWrite":0.0,"total":0.0}},"stopReason":"stop","timestamp":1733234406000}}
{"type":"message","id":"0a1b2c3d","parentId":"f6a7b8c9","timestamp":"2024-12-03T14:00:07.000Z","message":{"role":"bashExecution","command":"npm test","output":"1 failing","exitCode":1,"cancelled":false,"truncated":true,"fullOutputPath":"/tmp/pi-bash-1.log","timestamp":1733234407000}}
{"type":"message","id":"1b2c3d4e","parentId":"0a1b2c3d","timestamp":"2024-12-03T14:00:08.000Z","message":{"role":"custom","customType":"reminder","content":"Remember the style guide.","display":false,"details":{"source":"ext"},"timestamp":1733234408000}}
{"type":"compaction","id":"2c3d4e5f","parentId":"1b2c3d4e","timestamp":"2024-12-03T14:10:00.000Z","summary":"User asked to fix login; the function is empty; tests fail.","firstKeptEntryId":"f6a7b8c9","tokensBefore":50000,"details":{"readFiles":["src/auth.ts"],"modifiedFiles":[]},"fromHook":false}
{"type":"message","id":"3d4e5f6a","parentId":"2c3d4e5f","timestamp":"2024-12-03T14:11:00.000Z","message":{"role":"user","content":[{"type":"text","text":"Now implement it."}],"timestamp":1733235060000}}
{"type":"branch_summary","id":"4e5f6a7b","parentId":"b2c3d4e5","timestamp":"2024-12-03T14:15:00.000Z","fromId":"3d4e5f6a","summary":"Branch explored reading auth.ts and running tests.","details":{"readFiles":["src/auth.ts"],"modifiedFiles":[]}}
{"type":"custom","id":"5f6a7b8c","parentId":"4e5f6a7b","timestamp":"2024-12-03T14:20:00.000Z","customType":"my-extension","data":{"count":42}}
{"type":"custom_message","id":"6a7b8c9d","parentId":"5f6a7b8c","timestamp":"2024-12-03T14:25:00.000Z","customType":"my-extension","content":"Injected context...","details":{"hidden":true},"display":true}
{"type":"label","id":"7b8c9d0e","parentId":"6a7b8c9d","timestamp":"2024-12-03T14:30:00.000Z","targetId":"b2c3d4e5","label":"checkpoint-1"}
{"type":"label","id":"8c9d0e1f","parentId":"7b8c9d0e","timestamp":"2024-12-03T14:31:00.000Z","targetId":"a1b2c3d4","label":"start"}
{"type":"label","id":"9d0e1f2a","parentId":"8c9d0e1f","timestamp":"2024-12-03T14:32:00.000Z","targetId":"a1b2c3d4"}
{"type":"session_info","id":"0e1f2a3b","parentId":"9d0e1f2a","timestamp":"2024-12-03T14:35:00.000Z","name":"Refactor auth module"}
"#;

fn write_fixture(dir: &Path, text: &str) -> std::path::PathBuf {
    let path = dir.join("2024-12-03T14-00-00-000Z_0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl");
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

#[test]
fn every_line_round_trips_field_for_field() {
    let mut lines = PI_SESSION.lines();
    let header_line = lines.next().unwrap();
    let header: SessionHeader = serde_json::from_str(header_line).unwrap();
    assert_eq!(
        serde_json::to_value(&header).unwrap(),
        serde_json::from_str::<Value>(header_line).unwrap()
    );
    let mut kinds = std::collections::BTreeSet::new();
    for line in lines {
        let original: Value = serde_json::from_str(line).unwrap();
        let entry: SessionEntry = serde_json::from_str(line).unwrap();
        assert!(
            !matches!(entry, SessionEntry::Unknown(_)),
            "line read as unknown: {line}"
        );
        kinds.insert(entry.kind().to_string());
        assert_eq!(
            serde_json::to_value(&entry).unwrap(),
            original,
            "round trip changed {line}"
        );
    }
    let pi_0_x: std::collections::BTreeSet<String> = KNOWN_ENTRY_TYPES
        .iter()
        .filter(|k| !["usage", "context_edit"].contains(k))
        .map(|s| s.to_string())
        .collect();
    assert_eq!(
        kinds, pi_0_x,
        "the fixture must use every pi 0.x entry type"
    );
}

#[test]
fn every_message_role_is_read_as_its_own_variant() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = read_session_file(&write_fixture(dir.path(), PI_SESSION)).unwrap();
    let roles: Vec<&str> = loaded
        .entries
        .iter()
        .filter_map(|e| e.message())
        .map(|m| match m {
            AgentMessage::Llm(Message::User(_)) => "user",
            AgentMessage::Llm(Message::Assistant(_)) => "assistant",
            AgentMessage::Llm(Message::ToolResult(_)) => "toolResult",
            AgentMessage::BashExecution(_) => "bashExecution",
            AgentMessage::Custom(_) => "custom",
            _ => "other",
        })
        .collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "toolResult",
            "assistant",
            "bashExecution",
            "custom",
            "user"
        ]
    );
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
}

#[test]
fn opens_with_leaf_labels_name_and_context_at_the_last_entry() {
    let dir = tempfile::tempdir().unwrap();
    let s = Session::open(write_fixture(dir.path(), PI_SESSION)).unwrap();
    assert_eq!(s.id(), "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b");
    assert_eq!(s.cwd(), "/home/user/project");
    assert!(
        s.header()
            .parent_session
            .as_deref()
            .unwrap()
            .ends_with(".jsonl")
    );
    assert_eq!(s.entries().len(), 17);
    assert_eq!(s.leaf_id(), Some("0e1f2a3b"));
    assert_eq!(s.name(), Some("Refactor auth module"));
    assert_eq!(s.label("b2c3d4e5"), Some("checkpoint-1"));
    assert_eq!(
        s.label("a1b2c3d4"),
        None,
        "the third label entry cleared it"
    );

    // Leaf path: m1 t1 c1 a1 s1 e1 cm1 lb1 lb2 lb3 i1 (no compaction on it).
    let ctx = s.context();
    assert_eq!(ctx.thinking_level, "high");
    assert_eq!(ctx.model.as_ref().unwrap().model_id, "claude-sonnet-4-5");
    assert_eq!(
        ctx.entry_ids,
        ["a1b2c3d4", "b2c3d4e5", "4e5f6a7b", "6a7b8c9d"]
    );
    let llm = s.path_to_leaf();
    assert_eq!(llm.len(), 4);
    assert!(matches!(llm[1], Message::Assistant(_)));
    let summary = user_text(&llm[2]);
    assert!(
        summary.contains("Branch explored reading auth.ts"),
        "{summary}"
    );
    assert!(summary.contains("<summary>"), "{summary}");
    assert_eq!(user_text(&llm[3]), "Injected context...");
}

#[test]
fn compaction_replaces_history_before_first_kept_entry() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::open(write_fixture(dir.path(), PI_SESSION)).unwrap();
    s.branch_from("3d4e5f6a").unwrap();
    let ctx = s.context();
    // summary, then a2 (first kept) .. x1, then u2.
    assert_eq!(
        ctx.entry_ids,
        ["2c3d4e5f", "f6a7b8c9", "0a1b2c3d", "1b2c3d4e", "3d4e5f6a"]
    );
    assert!(
        matches!(ctx.messages[0], AgentMessage::CompactionSummary(ref c) if c.tokens_before == 50000)
    );
    let llm = ctx.llm_messages();
    assert_eq!(llm.len(), 5);
    assert!(user_text(&llm[0]).contains("User asked to fix login"));
    assert!(matches!(llm[1], Message::Assistant(_)));
    let bash = user_text(&llm[2]);
    assert!(
        bash.contains("npm test") && bash.contains("1 failing") && bash.contains("code 1"),
        "{bash}"
    );
    assert!(bash.contains("/tmp/pi-bash-1.log"), "{bash}");
    assert_eq!(user_text(&llm[3]), "Remember the style guide.");
    assert_eq!(user_text(&llm[4]), "Now implement it.");
}

#[test]
fn retained_tail_compaction_of_newer_pi_is_a_checkpoint() {
    let text = r#"{"type":"session","version":3,"id":"s","timestamp":"2024-12-03T14:00:00.000Z","cwd":"/p"}
{"type":"message","id":"aaaa0001","parentId":null,"timestamp":"2024-12-03T14:00:01.000Z","message":{"role":"user","content":"old","timestamp":1}}
{"type":"compaction","id":"aaaa0002","parentId":"aaaa0001","timestamp":"2024-12-03T14:00:02.000Z","summary":"S","tokensBefore":10,"retainedTail":[{"role":"user","content":"latest request","timestamp":2}]}
{"type":"message","id":"aaaa0003","parentId":"aaaa0002","timestamp":"2024-12-03T14:00:03.000Z","message":{"role":"user","content":"after","timestamp":3}}
"#;
    let dir = tempfile::tempdir().unwrap();
    let s = Session::open(write_fixture(dir.path(), text)).unwrap();
    let llm = s.path_to_leaf();
    let texts: Vec<String> = llm.iter().map(user_text).collect();
    assert_eq!(texts.len(), 3);
    assert!(texts[0].contains('S'));
    assert_eq!(texts[1], "latest request");
    assert_eq!(texts[2], "after");
}

#[test]
fn string_content_and_pi_v2_hook_messages_load() {
    let text = r#"{"type":"session","version":2,"id":"s2","timestamp":"2024-12-03T14:00:00.000Z","cwd":"/p"}
{"type":"message","id":"aaaa0001","parentId":null,"timestamp":"2024-12-03T14:00:01.000Z","message":{"role":"user","content":"Hello","timestamp":1}}
{"type":"message","id":"aaaa0002","parentId":"aaaa0001","timestamp":"2024-12-03T14:00:02.000Z","message":{"role":"hookMessage","customType":"h","content":"from a hook","display":true,"timestamp":2}}
"#;
    let dir = tempfile::tempdir().unwrap();
    let s = Session::open(write_fixture(dir.path(), text)).unwrap();
    let texts: Vec<String> = s.path_to_leaf().iter().map(user_text).collect();
    assert_eq!(texts, ["Hello", "from a hook"]);
}

#[test]
fn unknown_entry_types_and_roles_are_kept_and_skipped_in_context() {
    let text = r#"{"type":"session","version":3,"id":"s3","timestamp":"2024-12-03T14:00:00.000Z","cwd":"/p"}
{"type":"message","id":"aaaa0001","parentId":null,"timestamp":"2024-12-03T14:00:01.000Z","message":{"role":"user","content":"Hi","timestamp":1}}
{"type":"future_thing","id":"aaaa0002","parentId":"aaaa0001","timestamp":"2024-12-03T14:00:02.000Z","payload":[1,2]}
{"type":"message","id":"aaaa0003","parentId":"aaaa0002","timestamp":"2024-12-03T14:00:03.000Z","message":{"role":"hologram","x":1}}
{"type":"label","id":"aaaa0004","parentId":"aaaa0003","timestamp":"2024-12-03T14:00:04.000Z"}
"#;
    let dir = tempfile::tempdir().unwrap();
    let path = write_fixture(dir.path(), text);
    let loaded = read_session_file(&path).unwrap();
    // Only the label line, a known type with a missing field, is worth a warning.
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
    assert_eq!(loaded.warnings[0].line, Some(5));
    assert!(
        loaded.warnings[0].message.contains("targetId"),
        "{}",
        loaded.warnings[0]
    );
    let s = Session::open(&path).unwrap();
    assert_eq!(s.entries().len(), 4);
    assert_eq!(
        s.path_to_leaf().len(),
        1,
        "only the user message is context"
    );
    assert_eq!(
        serde_json::to_value(&s.entries()[1]).unwrap(),
        serde_json::from_str::<Value>(text.lines().nth(2).unwrap()).unwrap()
    );
}

#[test]
fn version_1_files_are_refused_with_a_clear_error() {
    let text = "{\"type\":\"session\",\"id\":\"old\",\"timestamp\":\"2024-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}\n\
                {\"type\":\"message\",\"timestamp\":\"2024-01-01T00:00:01.000Z\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}\n";
    let dir = tempfile::tempdir().unwrap();
    let err = Session::open(write_fixture(dir.path(), text)).unwrap_err();
    assert!(
        matches!(err, SessionError::UnsupportedVersion { version: 1, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("version 1"));
}

#[test]
fn makai_written_lines_follow_pi_base_fields() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::create(dir.path(), "/home/user/project");
    let m1 = s
        .append_message(makai_ai::UserMessage::text("hello"))
        .unwrap();
    s.append_model_change("openai", "gpt-4o").unwrap();
    s.append_thinking_level(makai_ai::ThinkingLevel::Low)
        .unwrap();
    s.append_compaction(CompactionRecord {
        summary: "sum".into(),
        first_kept_entry_id: Some(m1.clone()),
        tokens_before: 100,
        tokens_after: Some(20),
        ..Default::default()
    })
    .unwrap();
    s.append_custom("ext", Some(serde_json::json!({"k": 1})))
        .unwrap();
    s.append_custom_message("ext", "hi", true, None).unwrap();
    s.set_label(&m1, Some("first")).unwrap();
    s.set_name("  My session ").unwrap();
    s.branch_with_summary(Some(&m1), "left it", None, None)
        .unwrap();

    let path = s.path().unwrap().to_path_buf();
    let name = path.file_name().unwrap().to_str().unwrap().to_string();
    assert!(name.ends_with(&format!("_{}.jsonl", s.id())), "{name}");
    assert!(!name.contains(':'), "{name}");

    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["type"], "session");
    assert_eq!(lines[0]["version"], 3);
    assert_eq!(lines[0]["cwd"], "/home/user/project");
    let iso = |v: &Value| {
        let s = v.as_str().unwrap();
        s.len() == 24 && s.ends_with('Z') && s.as_bytes()[10] == b'T' && s.as_bytes()[19] == b'.'
    };
    assert!(iso(&lines[0]["timestamp"]));
    for l in &lines[1..] {
        let id = l["id"].as_str().unwrap();
        assert!(
            id.len() == 8 && id.chars().all(|c| c.is_ascii_hexdigit()),
            "{id}"
        );
        assert!(l.get("parentId").is_some(), "parentId must be present: {l}");
        assert!(iso(&l["timestamp"]), "{l}");
    }
    assert_eq!(lines[1]["parentId"], Value::Null);
    assert_eq!(lines[4]["tokensAfter"], 20);
    assert_eq!(lines[4]["firstKeptEntryId"], m1.as_str());
    assert_eq!(lines[8]["name"], "My session");
    assert_eq!(lines[9]["type"], "branch_summary");
    assert_eq!(lines[9]["parentId"], m1.as_str());

    // And it reads back to the same tree.
    let back = Session::open(&path).unwrap();
    assert_eq!(back.entries(), s.entries());
    assert_eq!(back.context(), s.context());
}

#[test]
fn unknown_entry_types_survive_a_fork_untouched() {
    let text = r#"{"type":"session","version":3,"id":"s4","timestamp":"2024-12-03T14:00:00.000Z","cwd":"/p"}
{"type":"message","id":"aaaa0001","parentId":null,"timestamp":"2024-12-03T14:00:01.000Z","message":{"role":"user","content":"Hi","timestamp":1}}
{"type":"hologram_state","id":"aaaa0002","parentId":"aaaa0001","timestamp":"2024-12-03T14:00:02.000Z","nested":{"z":[1,{"y":null}],"a":"b"},"n":1.5}
{"type":"message","id":"aaaa0003","parentId":"aaaa0002","timestamp":"2024-12-03T14:00:03.000Z","message":{"role":"user","content":"there","timestamp":3}}
"#;
    let dir = tempfile::tempdir().unwrap();
    let s = Session::open(write_fixture(dir.path(), text)).unwrap();
    let forked = s.fork("aaaa0003", dir.path().join("fork.jsonl")).unwrap();
    let written = std::fs::read_to_string(forked.path().unwrap()).unwrap();
    let original_line = text.lines().nth(2).unwrap();
    assert!(
        written.lines().any(|l| l == original_line),
        "the unknown entry must be written back byte for byte:\n{written}"
    );
    let texts: Vec<String> = forked.path_to_leaf().iter().map(user_text).collect();
    assert_eq!(texts, ["Hi", "there"]);
}

#[test]
fn entry_type_tag_is_read_anywhere_in_the_object() {
    let first = r#"{"type":"model_change","id":"a","parentId":"p","timestamp":"t","provider":"x","modelId":"y"}"#;
    let last = r#"{"id":"a","parentId":"p","timestamp":"t","provider":"x","modelId":"y","type":"model_change"}"#;
    let a: SessionEntry = serde_json::from_str(first).unwrap();
    let b: SessionEntry = serde_json::from_str(last).unwrap();
    assert_eq!(a, b);
    let u1: SessionEntry =
        serde_json::from_str(r#"{"type":"zz","id":"a","parentId":null,"timestamp":"t","k":1}"#)
            .unwrap();
    let u2: SessionEntry =
        serde_json::from_str(r#"{"id":"a","k":1,"parentId":null,"timestamp":"t","type":"zz"}"#)
            .unwrap();
    assert_eq!(u1, u2);
    assert_eq!(
        serde_json::to_string(&u1).unwrap(),
        r#"{"type":"zz","id":"a","parentId":null,"timestamp":"t","k":1}"#
    );
    // A known type with a missing field is an error (the loader warns and keeps it).
    let err = serde_json::from_str::<SessionEntry>(
        r#"{"type": "label", "id": "a", "parentId": null, "timestamp": "t"}"#,
    )
    .unwrap_err();
    assert!(err.to_string().contains("targetId"), "{err}");
    let late = r#"{"id": "a", "parentId": null, "timestamp": "t", "type": "context_edit"}"#;
    assert!(serde_json::from_str::<SessionEntry>(late).is_err());
}

#[test]
fn header_line_must_have_type_session() {
    let raw = serde_json::json!({"type": "message", "id": "a", "timestamp": "t", "cwd": "/"});
    assert!(serde_json::from_value::<SessionHeader>(raw).is_err());
}
