//! Every record the CLI tests read is also read with `pi-codes` (pi's JSON
//! events and RPC responses as typed by a third party, tested by its authors
//! against pi 1.4.0): a field it cannot read is a compatibility defect.
//!
//! Where pi-codes and pi 1.5.2's `docs/message-types.md` disagree, makai
//! follows pi's docs: pi-codes' `PiMessage` has no `custom`,
//! `compactionSummary` or `branchSummary` role (pi documents all three), so
//! messages with those roles are left out of what pi-codes is asked to read.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;

/// Roles pi documents that pi-codes 1.4.0 does not model.
const ROLES_PI_CODES_LACKS: [&str; 3] = ["custom", "compactionSummary", "branchSummary"];

fn without_unmodeled_roles(v: &Value) -> Value {
    match v {
        Value::Array(items) => Value::Array(
            items
                .iter()
                .filter(|m| {
                    !m.get("role")
                        .and_then(Value::as_str)
                        .is_some_and(|r| ROLES_PI_CODES_LACKS.contains(&r))
                })
                .map(without_unmodeled_roles)
                .collect(),
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), without_unmodeled_roles(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Panics when pi-codes cannot read `record` (a JSON/RPC stdout line).
pub fn check_record(record: &Value) {
    let v = without_unmodeled_roles(record);
    if v["type"] == "response" {
        let r: pi_codes::RpcResponse = serde_json::from_value(v.clone())
            .unwrap_or_else(|e| panic!("pi-codes cannot read this response ({e}): {record}"));
        if let Some(messages) = r.data.as_ref().and_then(|d| d.get("messages"))
            && r.command == "get_messages"
        {
            serde_json::from_value::<Vec<pi_codes::PiMessage>>(messages.clone())
                .unwrap_or_else(|e| panic!("pi-codes cannot read these messages ({e}): {record}"));
        }
        if let Some(state) = r.data.as_ref().filter(|_| r.command == "get_state") {
            serde_json::from_value::<pi_codes::AgentState>(state.clone())
                .unwrap_or_else(|e| panic!("pi-codes cannot read this state ({e}): {record}"));
        }
        if let Some(bash) = r.data.as_ref().filter(|_| r.command == "bash") {
            serde_json::from_value::<pi_codes::BashResult>(bash.clone()).unwrap_or_else(|e| {
                panic!("pi-codes cannot read this bash result ({e}): {record}")
            });
        }
        return;
    }
    pi_codes::PiEvent::from_value(v)
        .unwrap_or_else(|e| panic!("pi-codes cannot read this event ({e}): {record}"));
}
