//! What a failed attempt leaves on the answer (pi's `diagnostics`): one
//! record per retried attempt (`retry`) and one for the failure that ended
//! the request (`provider_error`), each with the error's text (already
//! redacted), the HTTP status as its code, the attempt, the wait before
//! the next one and the provider's request id. An answer that came after
//! retries keeps the records of the attempts that failed.

use std::time::Duration;

use serde_json::Map;

use crate::error::Fault;
use crate::message::{AssistantMessageDiagnostic, DiagnosticCode, DiagnosticError, now_ms};

/// The kind of a retried attempt's record.
pub(super) const RETRY: &str = AssistantMessageDiagnostic::RETRY;
/// The kind of the record of the failure that ended the request.
pub(super) const PROVIDER_ERROR: &str = AssistantMessageDiagnostic::PROVIDER_ERROR;

/// The record of `fault`, whose redacted text is `message`, on attempt
/// `attempt` (from 1); `delay`: the wait before the next attempt.
pub(super) fn of_fault(
    kind: &str,
    fault: &Fault,
    message: &str,
    attempt: u32,
    delay: Option<Duration>,
) -> AssistantMessageDiagnostic {
    let mut details = Map::new();
    details.insert("attempt".into(), attempt.into());
    details.insert("retryable".into(), fault.retryable.into());
    if let Some(delay) = delay {
        details.insert("delayMs".into(), (delay.as_millis() as u64).into());
    }
    if let Some(id) = &fault.request_id {
        details.insert("requestId".into(), id.clone().into());
    }
    AssistantMessageDiagnostic {
        kind: kind.to_string(),
        timestamp: now_ms(),
        error: Some(DiagnosticError {
            name: None,
            message: message.to_string(),
            stack: None,
            code: fault.status.map(|s| DiagnosticCode::Number(s.into())),
        }),
        details: Some(details),
    }
}
