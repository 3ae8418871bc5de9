//! Approvals: which tool calls need the user's yes, and the question asked.
//!
//! The settings' `approvals` section:
//!
//! ```json
//! {"approvals": {"tools": {"write": "ask", "edit": "ask", "*": "allow"},
//!                "escalate": ["git push", "cargo publish"],
//!                "askOnRefusal": true, "timeoutSeconds": 60}}
//! ```
//!
//! - `tools`: per tool name (or `*` for every other tool, MCP tools included)
//!   `allow`, `ask` or `deny`; unlisted tools are allowed.
//! - Escalation (bash only): a command starting with one of the `escalate`
//!   prefixes, or one the sandbox refused (when `askOnRefusal`, the default),
//!   runs again outside the sandbox only after the user approves.
//! - `timeoutSeconds`: how long a question waits for an answer where a
//!   client answers it (RPC); no answer is a denial.
//!
//! The question goes to an [`Approver`]: the front end's prompt (TUI, RPC
//! client) or, in print and JSON modes, the flags that pre-approve.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// What a tool call needs before it runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolRule {
    /// Run it.
    #[default]
    Allow,
    /// Ask the user first.
    Ask,
    /// Never run it.
    Deny,
}

/// Default wait for an answer, in seconds.
pub const DEFAULT_TIMEOUT_SECS: u64 = 60;

/// The settings' `approvals` object.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ApprovalSettings {
    /// Per tool name (or `*`): allow, ask or deny.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tools: BTreeMap<String, ToolRule>,
    /// Command prefixes (`git push`) that run outside the sandbox after approval.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub escalate: Vec<String>,
    /// Ask whether to re-run outside the sandbox a command the sandbox refused.
    pub ask_on_refusal: bool,
    /// How long a question waits for an answer (RPC), in seconds.
    pub timeout_seconds: u64,
}

impl Default for ApprovalSettings {
    fn default() -> Self {
        ApprovalSettings {
            tools: BTreeMap::new(),
            escalate: Vec::new(),
            ask_on_refusal: true,
            timeout_seconds: DEFAULT_TIMEOUT_SECS,
        }
    }
}

impl ApprovalSettings {
    /// The rule for a tool: its own entry, else `*`, else allow.
    pub fn rule_for(&self, tool: &str) -> ToolRule {
        self.tools
            .get(tool)
            .or_else(|| self.tools.get("*"))
            .copied()
            .unwrap_or_default()
    }

    /// The `escalate` prefix `command` starts with (a whole word), if any.
    pub fn escalation_prefix(&self, command: &str) -> Option<&str> {
        let command = command.trim_start();
        self.escalate
            .iter()
            .map(|p| p.trim())
            .filter(|p| !p.is_empty())
            .find(|p| {
                command.strip_prefix(*p).is_some_and(|rest| {
                    rest.is_empty() || rest.starts_with(|c: char| c.is_whitespace() || c == ';')
                })
            })
    }
}

/// What a question is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalKind {
    /// Running a tool the rules say to ask about.
    Tool,
    /// Running a shell command outside the sandbox.
    Escalation,
}

/// One question for the user.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRequest {
    /// What is asked.
    pub kind: ApprovalKind,
    /// The tool.
    pub tool: String,
    /// What would run: the command, or the arguments in short.
    pub subject: String,
    /// Why the question is asked, in words for the user.
    pub reason: String,
}

impl ApprovalRequest {
    /// The question's title, for prompts.
    pub fn title(&self) -> String {
        match self.kind {
            ApprovalKind::Tool => format!("Allow the {} tool to run?", self.tool),
            ApprovalKind::Escalation => "Run this command outside the sandbox?".to_string(),
        }
    }

    /// The key an "approve for this session" answer is remembered under.
    pub fn session_key(&self) -> String {
        match self.kind {
            ApprovalKind::Tool => format!("tool:{}", self.tool),
            ApprovalKind::Escalation => format!("escalation:{}", self.subject),
        }
    }
}

/// The answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApprovalDecision {
    /// Yes, this time.
    ApproveOnce,
    /// Yes, and the same question is approved for the rest of the session.
    ApproveSession,
    /// No; the reason (if any) is told to the model.
    Deny {
        /// Why, in the user's words or makai's.
        reason: Option<String>,
    },
}

impl ApprovalDecision {
    /// True for either approval.
    pub fn approved(&self) -> bool {
        !matches!(self, ApprovalDecision::Deny { .. })
    }

    /// The text the model reads when denied.
    pub fn denial_text(&self, request: &ApprovalRequest) -> Option<String> {
        match self {
            ApprovalDecision::Deny { reason } => {
                let what = match request.kind {
                    ApprovalKind::Tool => {
                        format!("The user did not approve running {}", request.tool)
                    }
                    ApprovalKind::Escalation => {
                        "The user did not approve running the command outside the sandbox"
                            .to_string()
                    }
                };
                Some(match reason {
                    Some(r) if !r.trim().is_empty() => format!("{what}: {}", r.trim()),
                    _ => format!("{what}."),
                })
            }
            _ => None,
        }
    }
}

/// Answers approval questions (the front end's prompt). Implementations
/// record each decision and remember "for this session" answers.
#[async_trait]
pub trait Approver: Send + Sync {
    /// The user's decision on `request` (a denial when nobody can answer).
    async fn decide(&self, request: &ApprovalRequest) -> ApprovalDecision;
}

/// How `bash` may leave the sandbox: the rules and who approves.
#[derive(Clone)]
pub struct Escalation {
    /// Who is asked.
    pub approver: Arc<dyn Approver>,
    /// The `approvals` settings (`escalate` prefixes, `askOnRefusal`).
    pub settings: ApprovalSettings,
}

impl std::fmt::Debug for Escalation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Escalation")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_and_prefixes() {
        let s: ApprovalSettings = serde_json::from_str(
            r#"{"tools": {"write": "ask", "*": "deny", "read": "allow"}, "escalate": ["git push", " cargo publish "]}"#,
        )
        .unwrap();
        assert_eq!(s.rule_for("write"), ToolRule::Ask);
        assert_eq!(s.rule_for("read"), ToolRule::Allow);
        assert_eq!(s.rule_for("mcp__x"), ToolRule::Deny);
        assert_eq!(
            ApprovalSettings::default().rule_for("bash"),
            ToolRule::Allow
        );
        assert!(s.ask_on_refusal && s.timeout_seconds == DEFAULT_TIMEOUT_SECS);
        assert_eq!(
            s.escalation_prefix("  git push origin main"),
            Some("git push")
        );
        assert_eq!(s.escalation_prefix("git push"), Some("git push"));
        assert_eq!(s.escalation_prefix("git pushx"), None);
        assert_eq!(
            s.escalation_prefix("cargo publish --dry-run"),
            Some("cargo publish")
        );
        assert_eq!(s.escalation_prefix("echo git push"), None);
    }

    #[test]
    fn denial_text_carries_the_reason() {
        let req = ApprovalRequest {
            kind: ApprovalKind::Escalation,
            tool: "bash".into(),
            subject: "git push".into(),
            reason: "matches an escalation rule".into(),
        };
        let d = ApprovalDecision::Deny {
            reason: Some("not today".into()),
        };
        assert_eq!(
            d.denial_text(&req).unwrap(),
            "The user did not approve running the command outside the sandbox: not today"
        );
        assert!(ApprovalDecision::ApproveOnce.denial_text(&req).is_none());
    }
}
