//! The session's approvals: the settings' rules (see
//! [`makai_coding::approvals`]), what the flags pre-approve, the answers
//! remembered "for this session", and the front end's prompt. Every decision
//! is recorded in the session as a `custom` entry of type `approval`.
//!
//! The per-tool rules are applied by [`ApprovalHooks::before_tool_call`] (so
//! they hold for MCP tools too); `bash` asks through the same [`Approvals`]
//! when a command would leave the sandbox.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use makai_agent::{AgentHooks, ToolCallDecision, ToolCallInfo};
use makai_coding::approvals::{
    ApprovalDecision, ApprovalKind, ApprovalRequest, ApprovalSettings, Approver, ToolRule,
};

/// The custom entry type of recorded decisions.
pub const ENTRY_TYPE: &str = "approval";

/// What a front end's prompt came back with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Prompted {
    /// The user answered.
    Answered(ApprovalDecision),
    /// Nobody answered within the timeout.
    TimedOut,
}

/// A front end that can put a question to the user (TUI, RPC client).
#[async_trait]
pub trait Prompter: Send + Sync {
    /// Asks; `timeout` is how long a remote client may take.
    async fn ask(&self, request: &ApprovalRequest, timeout: Duration) -> Prompted;
}

/// What `--pre-approve` pre-approves (print and JSON modes have nobody to ask).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PreApproved {
    /// Tool names whose `ask` is answered yes.
    pub tools: HashSet<String>,
    /// Running bash commands outside the sandbox is answered yes.
    pub escalate: bool,
    /// Everything is answered yes.
    pub all: bool,
}

impl PreApproved {
    /// Parses `--pre-approve` values: tool names, `escalate`, `all` (comma-separated).
    pub fn parse(values: &[String]) -> Self {
        let mut p = PreApproved::default();
        for v in values.iter().flat_map(|v| v.split(',')).map(str::trim) {
            match v {
                "" => {}
                "all" => p.all = true,
                "escalate" => p.escalate = true,
                tool => {
                    p.tools.insert(tool.to_string());
                }
            }
        }
        p
    }

    fn covers(&self, r: &ApprovalRequest) -> bool {
        self.all
            || match r.kind {
                ApprovalKind::Tool => self.tools.contains(&r.tool),
                ApprovalKind::Escalation => self.escalate,
            }
    }
}

type Recorder = Box<dyn Fn(Value) + Send + Sync>;

/// The session's approvals.
pub struct Approvals {
    settings: ApprovalSettings,
    pre: PreApproved,
    prompter: RwLock<Option<Arc<dyn Prompter>>>,
    session_ok: Mutex<HashSet<String>>,
    recorder: OnceLock<Recorder>,
}

impl std::fmt::Debug for Approvals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Approvals")
            .field("settings", &self.settings)
            .field("pre", &self.pre)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Approvals {
    /// Approvals with these rules and pre-approvals, no prompt yet.
    pub fn new(settings: ApprovalSettings, pre: PreApproved) -> Self {
        Approvals {
            settings,
            pre,
            prompter: RwLock::new(None),
            session_ok: Mutex::new(HashSet::new()),
            recorder: OnceLock::new(),
        }
    }

    /// The rules.
    pub fn settings(&self) -> &ApprovalSettings {
        &self.settings
    }

    /// Sets the prompt questions go to (the mode's UI).
    pub fn set_prompter(&self, p: Arc<dyn Prompter>) {
        *self.prompter.write().unwrap_or_else(|e| e.into_inner()) = Some(p);
    }

    /// Sets where decisions are recorded (once; the session).
    pub(crate) fn set_recorder(&self, f: impl Fn(Value) + Send + Sync + 'static) {
        if self.recorder.set(Box::new(f)).is_err() {
            tracing::warn!("approvals: recorder set twice; the first is kept");
        }
    }

    fn record(&self, r: &ApprovalRequest, decision: &str, by: &str, reason: Option<&str>) {
        let mut data = json!({
            "kind": r.kind, "tool": r.tool, "subject": r.subject,
            "question": r.reason, "decision": decision, "by": by,
        });
        if let Some(reason) = reason {
            data["reason"] = Value::from(reason);
        }
        if let Some(f) = self.recorder.get() {
            f(data);
        }
    }

    fn prompter(&self) -> Option<Arc<dyn Prompter>> {
        self.prompter
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

#[async_trait]
impl Approver for Approvals {
    async fn decide(&self, r: &ApprovalRequest) -> ApprovalDecision {
        if lock(&self.session_ok).contains(&r.session_key()) {
            self.record(r, "approved", "session", None);
            return ApprovalDecision::ApproveOnce;
        }
        if self.pre.covers(r) {
            self.record(r, "approved", "flag", None);
            return ApprovalDecision::ApproveOnce;
        }
        let Some(prompter) = self.prompter() else {
            let reason = "nobody can be asked in this mode; start makai with --pre-approve (a tool name, `escalate` or `all`) to pre-approve".to_string();
            self.record(r, "denied", "no-prompt", Some(&reason));
            return ApprovalDecision::Deny {
                reason: Some(reason),
            };
        };
        let timeout = Duration::from_secs(self.settings.timeout_seconds.max(1));
        match prompter.ask(r, timeout).await {
            Prompted::Answered(d) => {
                match &d {
                    ApprovalDecision::ApproveOnce => self.record(r, "approved-once", "user", None),
                    ApprovalDecision::ApproveSession => {
                        lock(&self.session_ok).insert(r.session_key());
                        self.record(r, "approved-session", "user", None);
                    }
                    ApprovalDecision::Deny { reason } => {
                        self.record(r, "denied", "user", reason.as_deref())
                    }
                }
                d
            }
            Prompted::TimedOut => {
                let reason = format!("no answer within {} s", timeout.as_secs());
                self.record(r, "timed-out", "timeout", Some(&reason));
                ApprovalDecision::Deny {
                    reason: Some(reason),
                }
            }
        }
    }
}

/// A short description of a call's arguments for the question.
fn subject(tool: &str, args: &Value) -> String {
    let pick = |k: &str| args.get(k).and_then(Value::as_str).map(str::to_string);
    let s = match tool {
        "bash" => pick("command"),
        "read" | "write" | "edit" | "ls" | "find" | "grep" => {
            pick("path").or_else(|| pick("pattern"))
        }
        _ => None,
    }
    .unwrap_or_else(|| args.to_string());
    let mut s: String = s.chars().take(400).collect();
    if s.len() < args.to_string().len() && tool != "bash" {
        s.push_str(" …");
    }
    s
}

/// The agent hook applying the per-tool rules.
pub struct ApprovalHooks(pub Arc<Approvals>);

#[async_trait]
impl AgentHooks for ApprovalHooks {
    async fn before_tool_call(&self, call: &ToolCallInfo<'_>) -> ToolCallDecision {
        let tool = call.tool_call.name.as_str();
        let request = ApprovalRequest {
            kind: ApprovalKind::Tool,
            tool: tool.to_string(),
            subject: subject(tool, call.args),
            reason: format!("Your approval rules ask before {tool} runs."),
        };
        match self.0.settings.rule_for(tool) {
            ToolRule::Allow => ToolCallDecision::Allow,
            ToolRule::Deny => {
                let reason = format!(
                    "The user's settings do not allow the {tool} tool (\"approvals\": {{\"tools\": {{\"{tool}\": \"deny\"}}}})."
                );
                self.0.record(&request, "denied", "settings", Some(&reason));
                ToolCallDecision::Block(reason)
            }
            ToolRule::Ask => {
                let d = self.0.decide(&request).await;
                match d.denial_text(&request) {
                    None => ToolCallDecision::Allow,
                    Some(text) => ToolCallDecision::Block(text),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approve_flag_values() {
        let p = PreApproved::parse(&["bash,write".into(), "escalate".into()]);
        assert!(p.tools.contains("bash") && p.tools.contains("write") && p.escalate && !p.all);
        assert!(PreApproved::parse(&["all".into()]).all);
    }

    #[test]
    fn subjects_are_short() {
        assert_eq!(subject("bash", &json!({"command": "ls -la"})), "ls -la");
        assert_eq!(
            subject("write", &json!({"path": "a.txt", "content": "x"})),
            "a.txt …"
        );
    }
}
