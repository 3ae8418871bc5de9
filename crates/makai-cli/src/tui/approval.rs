//! Approval questions in the terminal UI: the question joins the
//! conversation and a selector offers approve once, approve for this
//! session, deny, or deny with a reason typed in the editor (sent to the
//! model). Questions asked while one is open wait their turn. No timeout: the
//! user is at the keyboard.

use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::oneshot;

use makai_coding::approvals::{ApprovalDecision, ApprovalRequest};

use super::event_loop::{Ctx, UiMsg, UiTx};
use super::selectors::{SelectItem, Selector, SelectorKind};
use super::transcript::Level;
use crate::app::approvals::{Prompted, Prompter};

/// One open question and where its answer goes.
#[derive(Debug)]
pub struct Question {
    /// What is asked.
    pub request: ApprovalRequest,
    /// The answer's way back to the asking task.
    pub reply: oneshot::Sender<ApprovalDecision>,
}

/// Puts questions to the UI loop.
pub struct TuiPrompter {
    /// The UI loop's channel.
    pub tx: UiTx,
}

#[async_trait]
impl Prompter for TuiPrompter {
    async fn ask(&self, request: &ApprovalRequest, _timeout: Duration) -> Prompted {
        let (reply, rx) = oneshot::channel();
        let q = Question {
            request: request.clone(),
            reply,
        };
        if self.tx.send(UiMsg::Approval(Box::new(q))).is_err() {
            return Prompted::TimedOut;
        }
        match rx.await {
            Ok(d) => Prompted::Answered(d),
            // The UI closed without answering.
            Err(_) => Prompted::TimedOut,
        }
    }
}

const ONCE: &str = "once";
const SESSION: &str = "session";
const DENY: &str = "deny";
const REASON: &str = "reason";

/// Queues a question and opens it when nothing else is.
pub fn push(ctx: &mut Ctx<'_>, q: Question) {
    ctx.st.questions.push_back(q);
    open_next(ctx);
}

/// Opens the selector of the first waiting question, if none is open.
fn open_next(ctx: &mut Ctx<'_>) {
    let st = &mut *ctx.st;
    if st.awaiting_reason.is_some()
        || st
            .selector
            .as_ref()
            .is_some_and(|s| s.kind == SelectorKind::Approval)
    {
        return;
    }
    let Some(q) = st.questions.front() else {
        return;
    };
    let r = &q.request;
    let text = format!("{}\n  {}\n{}", r.title(), r.subject, r.reason);
    let title = r.title();
    st.notice(Level::Warning, text);
    st.completion = None;
    st.selector = Some(Selector::new(
        title,
        SelectorKind::Approval,
        vec![
            SelectItem::new("Approve once", "", ONCE),
            SelectItem::new("Approve for this session", "", SESSION),
            SelectItem::new("Deny", "", DENY),
            SelectItem::new("Deny and tell the model why…", "", REASON),
        ],
    ));
}

fn reply(ctx: &mut Ctx<'_>, q: Question, d: ApprovalDecision) {
    let said = match &d {
        ApprovalDecision::ApproveOnce => "Approved once.".to_string(),
        ApprovalDecision::ApproveSession => "Approved for this session.".to_string(),
        ApprovalDecision::Deny { reason: Some(r) } => format!("Denied: {r}"),
        ApprovalDecision::Deny { reason: None } => "Denied.".to_string(),
    };
    ctx.st.notice(Level::Info, said);
    // The asking task may have been aborted meanwhile; then nobody listens.
    let _ = q.reply.send(d);
    open_next(ctx);
}

/// The approval selector closed with `value` (`None`: cancelled = deny).
pub fn chosen(ctx: &mut Ctx<'_>, value: Option<&str>) {
    let Some(q) = ctx.st.questions.pop_front() else {
        return;
    };
    let d = match value {
        Some(ONCE) => ApprovalDecision::ApproveOnce,
        Some(SESSION) => ApprovalDecision::ApproveSession,
        Some(REASON) => {
            ctx.st.awaiting_reason = Some(q);
            ctx.st.set_status(
                Level::Warning,
                "Type why (the model reads it) and press Enter; Esc denies without a reason",
            );
            return;
        }
        _ => ApprovalDecision::Deny { reason: None },
    };
    reply(ctx, q, d);
}

/// Enter while a reason is awaited: the editor's text is the reason. True
/// when the text was taken.
pub fn take_reason(ctx: &mut Ctx<'_>, text: &str) -> bool {
    let Some(q) = ctx.st.awaiting_reason.take() else {
        return false;
    };
    let reason = text.trim();
    let reason = (!reason.is_empty()).then(|| reason.to_string());
    reply(ctx, q, ApprovalDecision::Deny { reason });
    true
}

/// Esc while a reason is awaited: deny without one. True when it did.
pub fn skip_reason(ctx: &mut Ctx<'_>) -> bool {
    let Some(q) = ctx.st.awaiting_reason.take() else {
        return false;
    };
    reply(ctx, q, ApprovalDecision::Deny { reason: None });
    true
}
