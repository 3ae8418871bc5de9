//! `diagnostics.json`: the failed and retried answers of the whole session
//! (every branch), without their content, and the recorded crashes.

use serde::Serialize;
use serde_json::Value;

use makai_agent::AgentMessage;
use makai_ai::StopReason;
use makai_coding::session::SessionEntry;

use crate::crash_log::CrashRecord;

/// What `diagnostics.json` holds (pi's fields).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Diagnostics {
    /// The format's version.
    pub schema_version: u32,
    /// The session's id.
    pub session_id: String,
    /// The session's entries (all branches).
    pub entry_count: usize,
    /// Its assistant messages.
    pub assistant_message_count: usize,
    /// The answers that failed, were cut off, or carry diagnostics (retries).
    pub assistant: Vec<AnswerDiagnostics>,
    /// The crashes recorded since the last report.
    pub crashes: Vec<CrashRecord>,
}

/// One answer's record: who answered, how it ended, why, and its diagnostics.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AnswerDiagnostics {
    /// Its entry's id.
    pub entry_id: String,
    /// Its entry's time.
    pub timestamp: String,
    /// The provider.
    pub provider: String,
    /// The model.
    pub model: String,
    /// The wire API.
    pub api: String,
    /// How it ended.
    pub stop_reason: StopReason,
    /// The error it ended with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// Its diagnostics (retries, the provider's error), as stored.
    pub diagnostics: Value,
}

/// The diagnostics of `entries` (a session's, in file order) and `crashes`.
pub fn collect(
    session_id: &str,
    entries: &[SessionEntry],
    crashes: Vec<CrashRecord>,
) -> Diagnostics {
    let mut assistant = Vec::new();
    let mut count = 0;
    for entry in entries {
        let SessionEntry::Message(m) = entry else {
            continue;
        };
        let AgentMessage::Llm(makai_ai::Message::Assistant(a)) = &m.message else {
            continue;
        };
        count += 1;
        let failed = matches!(a.stop_reason, StopReason::Error | StopReason::Aborted);
        if !failed && a.diagnostics.is_empty() && a.error_message.is_none() {
            continue;
        }
        assistant.push(AnswerDiagnostics {
            entry_id: m.id.clone(),
            timestamp: m.timestamp.clone(),
            provider: a.provider.clone(),
            model: a.model.clone(),
            api: a.api.clone(),
            stop_reason: a.stop_reason,
            error_message: a.error_message.clone(),
            diagnostics: serde_json::to_value(&a.diagnostics).unwrap_or(Value::Null),
        });
    }
    Diagnostics {
        schema_version: super::SCHEMA_VERSION,
        session_id: session_id.to_string(),
        entry_count: entries.len(),
        assistant_message_count: count,
        assistant,
        crashes,
    }
}
