//! Invariants every request a client sends must satisfy, checked on the
//! recorded body in each API's own shape:
//!
//! - each tool result answers a tool call of the preceding assistant turn;
//! - no tool call is left without a result before the conversation goes on;
//! - roles alternate as the API requires (Anthropic and Gemini: strictly
//!   user/assistant, starting with user; Chat Completions and Responses: tool
//!   results directly follow the assistant turn that made the calls);
//! - Chat Completions assistant messages never carry `content: null` (some
//!   servers answer HTTP 500).
//!
//! One helper, used by every test that goes through the scripted server:
//! [`crate::MockServer::assert_request_invariants`].

use std::collections::HashSet;

use serde_json::Value;

use crate::record::{RecordedRequest, WireApi};

/// A conversation turn in API-neutral form.
#[derive(Debug, Default)]
struct Turn {
    /// `user`, `assistant`, `tool` (Chat tool messages / Responses outputs).
    role: &'static str,
    calls: Vec<String>,
    results: Vec<String>,
}

/// Checks one recorded request; returns every violation found (empty when valid).
/// Requests that are not LLM calls (e.g. `GET /v1/models`) are valid.
pub fn check_request(request: &RecordedRequest) -> Vec<String> {
    let Some(api) = request.wire_api() else {
        return Vec::new();
    };
    let body = &request.body;
    let turns = match api {
        WireApi::AnthropicMessages => anthropic_turns(body),
        WireApi::ChatCompletions => chat_turns(body),
        WireApi::Responses => responses_turns(body),
        WireApi::Gemini => gemini_turns(body),
        WireApi::BedrockConverseStream => bedrock_turns(body),
    };
    let mut problems = match turns {
        Ok(turns) => check_turns(api, &turns),
        Err(e) => vec![e],
    };
    if api == WireApi::ChatCompletions {
        for (i, m) in array(body, "messages").iter().enumerate() {
            if m.get("role").and_then(Value::as_str) == Some("assistant")
                && m.get("content").is_some_and(Value::is_null)
            {
                problems.push(format!(
                    "messages[{i}]: assistant message with content: null"
                ));
            }
        }
    }
    problems
}

fn array<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn str_of(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn anthropic_turns(body: &Value) -> Result<Vec<Turn>, String> {
    let mut turns = Vec::new();
    for (i, m) in array(body, "messages").iter().enumerate() {
        let role = match m.get("role").and_then(Value::as_str) {
            Some("user") => "user",
            Some("assistant") => "assistant",
            other => return Err(format!("messages[{i}]: unexpected role {other:?}")),
        };
        let mut turn = Turn {
            role,
            ..Default::default()
        };
        for block in array(m, "content") {
            match block.get("type").and_then(Value::as_str) {
                Some("tool_use") => turn.calls.push(str_of(block, "id")),
                Some("tool_result") => turn.results.push(str_of(block, "tool_use_id")),
                _ => {}
            }
        }
        turns.push(turn);
    }
    Ok(turns)
}

fn chat_turns(body: &Value) -> Result<Vec<Turn>, String> {
    let mut turns = Vec::new();
    for (i, m) in array(body, "messages").iter().enumerate() {
        match m.get("role").and_then(Value::as_str) {
            Some("system") | Some("developer") => {}
            Some("user") => turns.push(Turn {
                role: "user",
                ..Default::default()
            }),
            Some("assistant") => turns.push(Turn {
                role: "assistant",
                calls: array(m, "tool_calls")
                    .iter()
                    .map(|c| str_of(c, "id"))
                    .collect(),
                ..Default::default()
            }),
            Some("tool") => turns.push(Turn {
                role: "tool",
                results: vec![str_of(m, "tool_call_id")],
                ..Default::default()
            }),
            other => return Err(format!("messages[{i}]: unexpected role {other:?}")),
        }
    }
    Ok(turns)
}

fn responses_turns(body: &Value) -> Result<Vec<Turn>, String> {
    let mut turns: Vec<Turn> = Vec::new();
    for item in array(body, "input") {
        let kind = item
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("message");
        match kind {
            "function_call" => {
                let id = str_of(item, "call_id");
                match turns.last_mut() {
                    Some(t) if t.role == "assistant" => t.calls.push(id),
                    _ => turns.push(Turn {
                        role: "assistant",
                        calls: vec![id],
                        ..Default::default()
                    }),
                }
            }
            "function_call_output" => turns.push(Turn {
                role: "tool",
                results: vec![str_of(item, "call_id")],
                ..Default::default()
            }),
            "reasoning" => {
                if !matches!(turns.last(), Some(t) if t.role == "assistant" && t.calls.is_empty()) {
                    turns.push(Turn {
                        role: "assistant",
                        ..Default::default()
                    });
                }
            }
            _ => {
                let role = match item.get("role").and_then(Value::as_str) {
                    Some("assistant") => "assistant",
                    Some("system") | Some("developer") => continue,
                    _ => "user",
                };
                if role == "assistant"
                    && matches!(turns.last(), Some(t) if t.role == "assistant" && t.calls.is_empty())
                {
                    continue;
                }
                turns.push(Turn {
                    role,
                    ..Default::default()
                });
            }
        }
    }
    Ok(turns)
}

fn bedrock_turns(body: &Value) -> Result<Vec<Turn>, String> {
    let mut turns = Vec::new();
    for (i, m) in array(body, "messages").iter().enumerate() {
        let role = match m.get("role").and_then(Value::as_str) {
            Some("user") => "user",
            Some("assistant") => "assistant",
            other => return Err(format!("messages[{i}]: unexpected role {other:?}")),
        };
        let mut turn = Turn {
            role,
            ..Default::default()
        };
        for block in array(m, "content") {
            if let Some(call) = block.get("toolUse") {
                turn.calls.push(str_of(call, "toolUseId"));
            }
            if let Some(result) = block.get("toolResult") {
                turn.results.push(str_of(result, "toolUseId"));
            }
        }
        turns.push(turn);
    }
    Ok(turns)
}

fn gemini_turns(body: &Value) -> Result<Vec<Turn>, String> {
    let mut turns = Vec::new();
    for (i, c) in array(body, "contents").iter().enumerate() {
        let role = match c.get("role").and_then(Value::as_str) {
            Some("user") | None => "user",
            Some("model") => "assistant",
            other => return Err(format!("contents[{i}]: unexpected role {other:?}")),
        };
        let mut turn = Turn {
            role,
            ..Default::default()
        };
        for part in array(c, "parts") {
            // Gemini pairs calls and responses by name (ids are optional).
            if let Some(fc) = part.get("functionCall") {
                turn.calls.push(str_of(fc, "name"));
            }
            if let Some(fr) = part.get("functionResponse") {
                turn.results.push(str_of(fr, "name"));
            }
        }
        turns.push(turn);
    }
    Ok(turns)
}

fn check_turns(api: WireApi, turns: &[Turn]) -> Vec<String> {
    let mut problems = Vec::new();
    let strict_alternation = matches!(
        api,
        WireApi::AnthropicMessages | WireApi::Gemini | WireApi::BedrockConverseStream
    );
    if strict_alternation {
        if let Some(first) = turns.first()
            && first.role != "user"
        {
            problems.push(format!(
                "{api:?}: the first turn is {}, not user",
                first.role
            ));
        }
        for (i, pair) in turns.windows(2).enumerate() {
            if pair[0].role == pair[1].role {
                problems.push(format!(
                    "{api:?}: turns {i} and {} are both {}",
                    i + 1,
                    pair[0].role
                ));
            }
        }
    }
    // Calls waiting for results, from the latest assistant turn.
    let mut open: Vec<String> = Vec::new();
    let mut open_from: Option<usize> = None;
    for (i, turn) in turns.iter().enumerate() {
        if !turn.results.is_empty() {
            for id in &turn.results {
                match open.iter().position(|c| c == id) {
                    Some(pos) => {
                        open.remove(pos);
                    }
                    None => problems.push(format!(
                        "{api:?}: turn {i}: tool result {id:?} answers no call of the preceding assistant turn"
                    )),
                }
            }
        }
        let user_content = turn.role == "user" && turn.results.is_empty();
        if turn.role == "assistant" || user_content {
            if !open.is_empty() {
                problems.push(format!(
                    "{api:?}: tool calls {open:?} of turn {} have no result before turn {i}",
                    open_from.unwrap_or(0)
                ));
                open.clear();
            }
            if turn.role == "assistant" {
                let unique: HashSet<&String> = turn.calls.iter().collect();
                if api != WireApi::Gemini && unique.len() != turn.calls.len() {
                    problems.push(format!("{api:?}: turn {i} repeats a tool call id"));
                }
                open = turn.calls.clone();
                open_from = Some(i);
            }
        }
    }
    if !open.is_empty() {
        problems.push(format!(
            "{api:?}: the request ends with tool calls {open:?} (turn {}) unanswered",
            open_from.unwrap_or(0)
        ));
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn req(path: &str, body: Value) -> RecordedRequest {
        RecordedRequest {
            method: "POST".into(),
            path: path.into(),
            query: None,
            headers: Vec::new(),
            raw_body: body.to_string(),
            body,
        }
    }

    #[test]
    fn valid_anthropic_tool_round_passes() {
        let body = json!({"messages": [
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]}
        ]});
        assert!(check_request(&req("/v1/messages", body)).is_empty());
    }

    #[test]
    fn unanswered_call_and_stray_result_are_reported() {
        let body = json!({"messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "a", "type": "function", "function": {"name": "r", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "b", "content": "x"},
            {"role": "user", "content": "next"}
        ]});
        let problems = check_request(&req("/v1/chat/completions", body));
        assert!(
            problems.iter().any(|p| p.contains("answers no call")),
            "{problems:?}"
        );
        assert!(
            problems.iter().any(|p| p.contains("have no result")),
            "{problems:?}"
        );
        assert!(
            problems.iter().any(|p| p.contains("content: null")),
            "{problems:?}"
        );
    }

    #[test]
    fn anthropic_roles_must_alternate() {
        let body = json!({"messages": [
            {"role": "user", "content": "a"}, {"role": "user", "content": "b"}
        ]});
        let problems = check_request(&req("/v1/messages", body));
        assert!(
            problems.iter().any(|p| p.contains("both user")),
            "{problems:?}"
        );
    }

    #[test]
    fn responses_function_call_outputs_pair_with_calls() {
        let body = json!({"input": [
            {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"type": "function_call", "call_id": "c1", "name": "r", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "x"}
        ]});
        assert!(check_request(&req("/v1/responses", body)).is_empty());
    }
}
