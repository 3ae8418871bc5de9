//! Checks a run's events against the ordering contract in the crate docs.

use std::collections::HashSet;

use makai_agent::AgentEvent;

/// Panics with a description when `events` break the ordering contract.
pub fn assert_contract(events: &[AgentEvent]) {
    let kinds: Vec<&str> = events
        .iter()
        .filter(|e| e.kind() != "queue_update")
        .map(|e| e.kind())
        .collect();
    let events: Vec<&AgentEvent> = events
        .iter()
        .filter(|e| e.kind() != "queue_update")
        .collect();
    assert_eq!(
        kinds.first(),
        Some(&"agent_start"),
        "agent_start first: {kinds:?}"
    );
    assert_eq!(
        kinds.last(),
        Some(&"agent_end"),
        "agent_end last: {kinds:?}"
    );
    assert_eq!(kinds.iter().filter(|k| **k == "agent_end").count(), 1);
    assert_eq!(kinds.iter().filter(|k| **k == "agent_start").count(), 1);

    let mut in_turn = false;
    let mut in_assistant = false;
    let mut in_compaction = false;
    let mut model_reached = false;
    let mut running: HashSet<String> = HashSet::new();
    let mut ended: Vec<String> = Vec::new();
    let mut results: Vec<String> = Vec::new();
    let mut i = 0;
    while i < events.len() {
        let e = events[i];
        match e {
            AgentEvent::TurnStart => {
                assert!(!in_turn, "nested turn_start at {i}: {kinds:?}");
                in_turn = true;
                model_reached = false;
                ended.clear();
                results.clear();
            }
            AgentEvent::TurnEnd { tool_results, .. } => {
                assert!(in_turn && !in_assistant, "turn_end outside a turn at {i}");
                assert!(
                    running.is_empty(),
                    "turn_end with running tools {running:?}"
                );
                let ids: Vec<String> = tool_results
                    .iter()
                    .map(|r| r.tool_call_id.clone())
                    .collect();
                assert_eq!(
                    ids, results,
                    "turn_end.toolResults are the turn's results in order"
                );
                in_turn = false;
            }
            AgentEvent::MessageStart { message } => {
                assert!(in_turn, "message_start outside a turn at {i}");
                if message.is_assistant() {
                    assert!(!in_assistant && !in_compaction);
                    in_assistant = true;
                    model_reached = true;
                } else {
                    // Non-assistant messages: start immediately followed by end.
                    assert!(
                        matches!(events.get(i + 1), Some(AgentEvent::MessageEnd { .. })),
                        "message_start of {} not followed by message_end",
                        message.role()
                    );
                    if let Some(r) = message.as_tool_result()
                        && model_reached
                    {
                        assert!(
                            ended.contains(&r.tool_call_id),
                            "result of {} before its tool_execution_end",
                            r.tool_call_id
                        );
                        results.push(r.tool_call_id.clone());
                    }
                }
            }
            AgentEvent::MessageUpdate { .. } | AgentEvent::AutoRetryStart { .. } => {
                assert!(
                    in_assistant,
                    "{} outside an assistant message at {i}",
                    e.kind()
                );
            }
            AgentEvent::MessageEnd { message } if message.is_assistant() => {
                assert!(in_assistant, "assistant message_end without start at {i}");
                in_assistant = false;
            }
            AgentEvent::CompactionStart { .. } => {
                assert!(in_turn && !in_assistant && !in_compaction);
                in_compaction = true;
            }
            AgentEvent::CompactionEnd { .. } => {
                assert!(in_compaction);
                in_compaction = false;
            }
            AgentEvent::ToolExecutionStart { tool_call_id, .. } => {
                assert!(in_turn && model_reached && !in_assistant);
                assert!(
                    running.insert(tool_call_id.clone()),
                    "{tool_call_id} started twice"
                );
            }
            AgentEvent::ToolExecutionUpdate { tool_call_id, .. } => {
                assert!(
                    running.contains(tool_call_id),
                    "update of {tool_call_id} outside start/end"
                );
            }
            AgentEvent::ToolExecutionEnd { tool_call_id, .. } => {
                assert!(
                    running.remove(tool_call_id),
                    "end of {tool_call_id} without start"
                );
                ended.push(tool_call_id.clone());
            }
            AgentEvent::AgentEnd { .. } => {
                assert!(!in_turn, "agent_end inside a turn: {kinds:?}");
            }
            _ => {}
        }
        i += 1;
    }
}
