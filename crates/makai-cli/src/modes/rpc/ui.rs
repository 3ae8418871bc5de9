//! Approval questions over RPC, as pi's extension UI dialogs
//! (`docs/rpc-extension-ui.md` of pi): makai writes an
//! `extension_ui_request` (method `select` for a tool approval, with the
//! options below; `confirm` for running a command outside the sandbox) and
//! waits for the client's `extension_ui_response` with the same `id`. No
//! answer within the timeout (sent as `timeout`, in milliseconds) is a denial.
//!
//! Answers: `value` naming an option; `confirmed: true` (approve once) or
//! `false`; `cancelled: true` (deny). Any other `value` is a denial with that
//! text as the reason for the model.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::oneshot;

use makai_coding::approvals::{ApprovalDecision, ApprovalKind, ApprovalRequest};
use makai_rpc::{ExtensionUiRequest, ExtensionUiResponse, SessionEvent};

use crate::app::approvals::{Prompted, Prompter};

/// Approve this time.
pub const APPROVE_ONCE: &str = "Approve once";
/// Approve this tool (or command) for the rest of the session.
pub const APPROVE_SESSION: &str = "Approve for this session";
/// Deny.
pub const DENY: &str = "Deny";

type Sink = Arc<dyn Fn(SessionEvent) + Send + Sync>;

/// The dialogs of one RPC session: requests go out through the event sink,
/// answers come back through [`Dialogs::answer`].
#[derive(Clone)]
pub(crate) struct Dialogs {
    to_client: Sink,
    open: Arc<Mutex<HashMap<String, oneshot::Sender<ExtensionUiResponse>>>>,
    closed: Arc<AtomicBool>,
}

impl Dialogs {
    pub(crate) fn new(to_client: Sink) -> Self {
        Dialogs {
            to_client,
            open: Arc::default(),
            closed: Arc::default(),
        }
    }

    fn open(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<ExtensionUiResponse>>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hands an answer to the dialog it answers; an answer to no open dialog
    /// (one that timed out) is ignored.
    pub(crate) fn answer(&self, answer: ExtensionUiResponse) {
        match self.open().remove(&answer.id) {
            Some(tx) => {
                // The dialog may have timed out this instant: nobody listens then.
                let _ = tx.send(answer);
            }
            None => tracing::debug!(id = %answer.id, "extension_ui_response for no open dialog"),
        }
    }

    /// Input has ended: open dialogs and later ones are denied at once.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.open().clear();
    }
}

/// The answer as a decision.
fn decision(a: &ExtensionUiResponse) -> ApprovalDecision {
    if a.cancelled == Some(true) {
        return ApprovalDecision::Deny { reason: None };
    }
    if let Some(c) = a.confirmed {
        return if c {
            ApprovalDecision::ApproveOnce
        } else {
            ApprovalDecision::Deny { reason: None }
        };
    }
    match a.value.as_deref() {
        Some(APPROVE_ONCE) => ApprovalDecision::ApproveOnce,
        Some(APPROVE_SESSION) => ApprovalDecision::ApproveSession,
        Some(DENY) | None => ApprovalDecision::Deny { reason: None },
        Some(other) => ApprovalDecision::Deny {
            reason: Some(other.to_string()),
        },
    }
}

/// The dialog for a question.
fn request(id: &str, r: &ApprovalRequest, timeout: Duration) -> ExtensionUiRequest {
    let message = format!("{}\n\n{}", r.subject, r.reason);
    // pi's `select` has a title and no message: the question goes in the title.
    let (method, title, message, options) = match r.kind {
        ApprovalKind::Tool => (
            "select",
            format!("{}\n{message}", r.title()),
            None,
            Some(vec![
                APPROVE_ONCE.into(),
                APPROVE_SESSION.into(),
                DENY.into(),
            ]),
        ),
        ApprovalKind::Escalation => ("confirm", r.title(), Some(message), None),
    };
    ExtensionUiRequest {
        id: id.to_string(),
        method: method.to_string(),
        title: Some(title),
        message,
        options,
        timeout: Some(timeout.as_millis() as u64),
        notify_type: None,
    }
}

#[async_trait]
impl Prompter for Dialogs {
    async fn ask(&self, r: &ApprovalRequest, timeout: Duration) -> Prompted {
        if self.closed.load(Ordering::SeqCst) {
            return Prompted::TimedOut;
        }
        let id = uuid::Uuid::new_v4().to_string();
        let (tx, rx) = oneshot::channel();
        self.open().insert(id.clone(), tx);
        (self.to_client)(SessionEvent::ExtensionUiRequest(Box::new(request(
            &id, r, timeout,
        ))));
        let answer = tokio::time::timeout(timeout, rx).await;
        self.open().remove(&id);
        match answer {
            Ok(Ok(a)) => Prompted::Answered(decision(&a)),
            // Timed out, or input ended: nobody will answer.
            _ => Prompted::TimedOut,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(
        v: Option<&str>,
        confirmed: Option<bool>,
        cancelled: Option<bool>,
    ) -> ExtensionUiResponse {
        ExtensionUiResponse {
            id: "x".into(),
            value: v.map(str::to_string),
            confirmed,
            cancelled,
        }
    }

    #[test]
    fn answers_become_decisions() {
        assert_eq!(
            decision(&answer(Some(APPROVE_ONCE), None, None)),
            ApprovalDecision::ApproveOnce
        );
        assert_eq!(
            decision(&answer(Some(APPROVE_SESSION), None, None)),
            ApprovalDecision::ApproveSession
        );
        assert_eq!(
            decision(&answer(Some("not now"), None, None)),
            ApprovalDecision::Deny {
                reason: Some("not now".into())
            }
        );
        assert_eq!(
            decision(&answer(None, Some(true), None)),
            ApprovalDecision::ApproveOnce
        );
        assert_eq!(
            decision(&answer(None, None, Some(true))),
            ApprovalDecision::Deny { reason: None }
        );
    }
}
