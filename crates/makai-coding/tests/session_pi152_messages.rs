//! Every field of pi 1.5.2's messages (docs/message-types.md) survives
//! makai: read, written back, copied into a fork and read again, field for
//! field. Before, the fields makai did not know (`providerThinkingLevel`,
//! `diagnostics`, `deferred`, `endTurn`, a call's `namespace`, a result's
//! `nestedCalls`, usage's `cacheWrite1h` and `reasoning`) were dropped when a
//! session was forked, and a `deferred` answer made its whole entry unreadable.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use makai_agent::AgentMessage;
use makai_ai::{DiagnosticCode, Message, NestedCallStatus, StopReason};
use makai_coding::session::{Session, SessionEntry, read_session_file};
use serde_json::Value;

/// A session whose messages carry every optional field pi 1.5.2 documents.
const PI_152_MESSAGES: &str = r#"{"type":"session","version":3,"id":"0194bbbb-0000-7000-8000-000000000001","timestamp":"2026-11-20T10:00:00.000Z","cwd":"/home/user/project"}
{"type":"message","id":"10000001","parentId":null,"timestamp":"2026-11-20T10:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"look at the logs"}],"timestamp":1795168801000}}
{"type":"message","id":"10000002","parentId":"10000001","timestamp":"2026-11-20T10:00:02.000Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"","thinkingSignature":"enc-payload","redacted":true},{"type":"text","text":"Reading them.","textSignature":"msg_01"},{"type":"toolCall","id":"call_1|fc_1","name":"codemode","arguments":{"script":"await read({path: 'a.log'})"},"thoughtSignature":"sig-1","namespace":"mcp__logs"}],"api":"openai-responses","provider":"openai","model":"gpt-5.5","responseModel":"gpt-5.5-2026-10-01","responseId":"resp_1","providerThinkingLevel":"xhigh","thinkingLevel":"xhigh","diagnostics":[{"type":"retry","timestamp":1795168801500,"error":{"name":"ProviderError","message":"overloaded","code":529},"details":{"attempt":1}},{"type":"transport","timestamp":1795168801600,"error":{"message":"socket reset","stack":"at read()","code":"ECONNRESET"}}],"usage":{"input":100,"output":40,"cacheRead":2000,"cacheWrite":3000,"cacheWrite1h":1000,"reasoning":25,"totalTokens":5140,"cost":{"input":0.0003,"output":0.0006,"cacheRead":0.0006,"cacheWrite":0.0135,"total":0.015}},"stopReason":"toolUse","rawStopReason":"completed","endTurn":false,"timestamp":1795168802000}}
{"type":"message","id":"10000003","parentId":"10000002","timestamp":"2026-11-20T10:00:03.000Z","message":{"role":"toolResult","toolCallId":"call_1|fc_1","toolName":"codemode","content":[{"type":"text","text":"3 errors"}],"details":{"logs":[]},"usage":{"input":7,"output":3,"cacheRead":0,"cacheWrite":0,"totalTokens":10,"cost":{"input":0.0,"output":0.0,"cacheRead":0.0,"cacheWrite":0.0,"total":0.0}},"nestedCalls":{"calls":[{"id":"n1","name":"read","arguments":{"path":"a.log"},"status":"ok","durationMs":4},{"id":"n2","name":"bash","argumentsBytes":40000,"status":"error","durationMs":12,"error":"exit 1"},{"id":"n3","name":"grep","status":"unfinished"}],"complete":false},"isError":false,"timestamp":1795168803000}}
{"type":"message","id":"10000004","parentId":"10000003","timestamp":"2026-11-20T10:00:04.000Z","message":{"role":"assistant","content":[],"api":"openai-responses","provider":"openai","model":"gpt-5.5","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0.0,"output":0.0,"cacheRead":0.0,"cacheWrite":0.0,"total":0.0}},"stopReason":"deferred","deferred":{"provider":"openai","modelId":"gpt-5.5","api":"openai-responses","id":"resp_2","expiresAt":1795255204000,"pollAfterMs":2000,"data":{"background":true}},"timestamp":1795168804000}}
{"type":"message","id":"10000005","parentId":"10000004","timestamp":"2026-11-20T10:00:05.000Z","message":{"role":"bashExecution","command":"ls","output":"a.log","exitCode":0,"cancelled":false,"truncated":false,"fullOutputPath":"/tmp/out.txt","excludeFromContext":true,"timestamp":1795168805000}}
"#;

fn messages(session: &Session) -> Vec<Value> {
    session
        .entries()
        .iter()
        .filter(|e| matches!(e, SessionEntry::Message(_)))
        .map(|e| serde_json::to_value(e).unwrap())
        .collect()
}

#[test]
fn pi_152_message_fields_survive_reading_writing_and_forking() {
    let originals: Vec<Value> = PI_152_MESSAGES
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for (line, original) in PI_152_MESSAGES.lines().skip(1).zip(&originals) {
        let entry: SessionEntry = serde_json::from_str(line).unwrap();
        assert!(matches!(entry, SessionEntry::Message(_)), "{line}");
        assert_eq!(&serde_json::to_value(&entry).unwrap(), original, "{line}");
    }

    let dir = tempfile::tempdir().unwrap();
    let path = dir
        .path()
        .join("2026-11-20T10-00-00-000Z_0194bbbb-0000-7000-8000-000000000001.jsonl");
    std::fs::write(&path, PI_152_MESSAGES).unwrap();
    let loaded = read_session_file(&path).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let session = Session::open(&path).unwrap();
    assert_eq!(messages(&session), originals);

    let fork = session
        .fork("10000005", dir.path().join("fork.jsonl"))
        .unwrap();
    let written: Vec<Value> = std::fs::read_to_string(dir.path().join("fork.jsonl"))
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(written, originals, "the fork's file holds every field");
    let reopened = Session::open(fork.path().unwrap()).unwrap();
    assert_eq!(messages(&reopened), originals);
}

#[test]
fn pi_152_message_fields_read_as_typed_values() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    std::fs::write(&path, PI_152_MESSAGES).unwrap();
    let session = Session::open(&path).unwrap();
    let context = session.context().messages;
    let assistants: Vec<_> = context
        .iter()
        .filter_map(|m| match m {
            AgentMessage::Llm(Message::Assistant(a)) => Some(a),
            _ => None,
        })
        .collect();
    let first = assistants[0];
    assert_eq!(first.provider_thinking_level.as_deref(), Some("xhigh"));
    assert_eq!(first.end_turn, Some(false));
    assert_eq!(first.diagnostics.len(), 2);
    let code = |i: usize| first.diagnostics[i].error.as_ref().unwrap().code.clone();
    assert!(matches!(code(0), Some(DiagnosticCode::Number(n)) if n.as_u64() == Some(529)));
    assert!(matches!(code(1), Some(DiagnosticCode::Text(t)) if t == "ECONNRESET"));
    assert_eq!(first.usage.cache_write_1h, Some(1000));
    assert_eq!(first.usage.reasoning, Some(25));
    let call = first.tool_calls().next().unwrap();
    assert_eq!(call.namespace.as_deref(), Some("mcp__logs"));
    let deferred = assistants[1];
    assert_eq!(deferred.stop_reason, StopReason::Deferred);
    let handle = deferred.deferred.as_deref().unwrap();
    assert_eq!(
        (handle.id.as_str(), handle.poll_after_ms),
        ("resp_2", Some(2000))
    );
    let nested = context
        .iter()
        .find_map(|m| match m {
            AgentMessage::Llm(Message::ToolResult(r)) => r.nested_calls.clone(),
            _ => None,
        })
        .unwrap();
    assert!(!nested.complete);
    let statuses: Vec<_> = nested.calls.iter().map(|c| c.status).collect();
    assert_eq!(
        statuses,
        [
            NestedCallStatus::Ok,
            NestedCallStatus::Error,
            NestedCallStatus::Unfinished
        ]
    );
    assert_eq!(nested.calls[1].arguments_bytes, Some(40_000));
}
