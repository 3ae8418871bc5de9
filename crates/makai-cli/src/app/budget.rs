//! The session's limits and budget: the ledger every model call of the
//! session tree goes through (see [`makai_agent::budget`]), rebuilt from the
//! session's entries whenever a session becomes current, reported to the
//! modes, plus the `task` tool a session's agent gets.

use std::path::Path;
use std::sync::Arc;

use makai_agent::budget::BudgetRefusal;
use makai_agent::{Ledger, LedgerReport, Tool};
use makai_ai::catalog::ModelRegistry;
use makai_coding::agent_spec::SubagentPolicy;
use makai_coding::context_files::SharedContextFiles;
use makai_coding::session::{SharedSession, session_spending_report};
use makai_coding::subagent::{InMemorySessions, LinkedSessions, TaskEnv, TaskTool};
use makai_coding::{AgentCatalog, Limits};
use makai_rpc::SessionEvent;

use super::{AppSession, OutEvent, Shared};
use crate::cli::Args;
use crate::error::CliError;

/// The limits in force: settings, then the agent spec, then the flags.
pub(crate) fn limits_for(
    settings: &Limits,
    spec: &Limits,
    args: &Args,
) -> Result<Limits, CliError> {
    let flags = Limits {
        max_turns: args.max_turns,
        max_time: args.max_time,
        max_tokens: args.max_tokens,
        max_cost: args.max_cost,
    };
    let limits = settings.overridden_by(*spec).overridden_by(flags);
    limits
        .check()
        .map_err(|e| CliError::config(format!("limits: {e}")))?;
    Ok(limits)
}

/// What to tell the user when a cost cap is set but `model` has no prices:
/// the cap cannot hold for its requests, their tokens are counted.
pub(crate) fn unpriced_note(model: &makai_ai::Model, limits: &Limits) -> Option<String> {
    let c = &model.cost;
    let priced = [c.input, c.output, c.cache_read, c.cache_write]
        .iter()
        .any(|p| *p > 0.0);
    (limits.max_cost.is_some() && !priced).then(|| {
        format!(
            "{}/{} has no prices, so the cost cap cannot hold for its requests; their tokens are counted (set its `cost` in models.json, or cap tokens with --max-tokens)",
            model.provider, model.id
        )
    })
}

/// What the main agent's `task` tool is built from.
pub(crate) struct TaskParts<'a> {
    pub catalog: AgentCatalog,
    pub registry: &'a ModelRegistry,
    pub session: &'a SharedSession,
    pub cwd: &'a Path,
    pub context_files: &'a SharedContextFiles,
    pub settings: SubagentPolicy,
    pub spec: SubagentPolicy,
}

/// The main agent's `task` tool: children's sessions beside the session's
/// file (in memory for an in-memory session).
pub(crate) fn task_tool(parts: TaskParts<'_>) -> Arc<dyn Tool> {
    let persisted = parts.session.lock().path().is_some();
    let sessions: Arc<dyn makai_coding::subagent::ChildSessions> = if persisted {
        Arc::new(LinkedSessions(parts.session.clone()))
    } else {
        Arc::new(InMemorySessions {
            cwd: parts.cwd.display().to_string(),
        })
    };
    let policy = SubagentPolicy {
        max_depth: parts.spec.max_depth.or(parts.settings.max_depth),
        max_parallel: parts.spec.max_parallel.or(parts.settings.max_parallel),
    };
    Arc::new(TaskTool::new(TaskEnv {
        catalog: parts.catalog,
        models: Some(Arc::new(parts.registry.clone())),
        sessions,
        cwd: parts.cwd.to_path_buf(),
        context_files: parts.context_files.clone(),
        policy,
    }))
}

impl Shared {
    /// Starts the ledger over from what the current session spent. A
    /// sub-agent's session that cannot be read is said (its spending is not
    /// in the ledger), never silently counted as nothing.
    pub(crate) fn restore_ledger(&self) {
        let spent = session_spending_report(&self.session.lock());
        for u in &spent.uncounted {
            self.warn(format!(
                "a sub-agent's session could not be read, so what it spent is not counted \
                 against this session's limits: {}",
                u.error
            ));
        }
        self.ledger.restore(spent.usage);
    }

    /// Sends every refusal to the subscribers as a `budget_exhausted` event.
    pub(crate) fn report_refusals(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        self.ledger.on_refusal(move |refusal: &BudgetRefusal| {
            if let Some(shared) = weak.upgrade() {
                shared.emit(OutEvent::Session(SessionEvent::BudgetExhausted {
                    message: refusal.to_string(),
                    budget: shared.ledger.report(),
                }));
            }
        });
    }
}

impl AppSession {
    /// The limits in force (per run: turns and time; session: tokens and cost).
    pub fn limits(&self) -> Limits {
        *super::lock(&self.inner.limits)
    }

    /// The budget ledger of the session tree.
    pub fn ledger(&self) -> &Ledger {
        &self.inner.ledger
    }

    /// The ledger's figures.
    pub fn budget(&self) -> LedgerReport {
        self.inner.ledger.report()
    }

    /// Changes the limits in force: the ones set in `changes` replace the
    /// current ones, for the requests and runs from now on (raising a cap
    /// lets a session the budget stopped go on).
    ///
    /// Errors: a limit out of range, named.
    pub fn set_limits(&self, changes: Limits) -> Result<Limits, CliError> {
        let mut limits = super::lock(&self.inner.limits);
        let next = limits.overridden_by(changes);
        next.check()
            .map_err(|e| CliError::failed(format!("limits: {e}")))?;
        *limits = next;
        self.inner.ledger.set_budget(next.budget());
        let execution = next.execution();
        self.agent().update_config(|c| c.limits = execution);
        Ok(next)
    }
}
