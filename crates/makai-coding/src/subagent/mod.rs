//! Sub-agents: the built-in `task` tool.
//!
//! The model hands a self-contained task to a child agent, named by an agent
//! spec ([`crate::agent_spec`]) or given as an inline instruction for the
//! built-in `worker` spec. The child runs the same agent loop with its own
//! context, and its final answer (plus, when the call asks with
//! `resultSchema`, a structured result it submits) becomes the tool result,
//! with the usage of the whole child run as the result's `usage`.
//!
//! Never more rights than the parent, by construction: the child starts
//! from the parent run's configuration (its client, so the parent's budget;
//! its hooks, so the approval rules and the approvals already given) and
//! gets only the parent's own tool instances whose names its spec lists, so
//! the parent's sandbox, path confinement and dry-run carry over and nothing
//! can be raised. Tools the spec lists that the parent lacks are named in the
//! child's system prompt as unavailable; a call to one gets the loop's
//! "not found" error result.
//!
//! Limits: depth (default 1: a child gets a `task` tool of its own only when
//! its spec lists `task` and its `[subagents] max_depth` allows), children of
//! one agent at once (default 4, read-only specs in parallel, a mutating one
//! alone), and the spec's `[limits]` for each child's turns, wall time and
//! its own budget (reserved against the parent's too).
//!
//! Events: the child's progress reaches the parent's stream as
//! `tool_execution_update`s of the `task` call, whose `partialResult` holds a
//! line per child and `details.agents` ([`SubagentReport`]s). The child's
//! transcript is its own session file whose header's `parentSession` names
//! the parent's, linked from the parent by a [`SUBAGENT_LINK`] entry. Abort
//! of the parent aborts the child (its messages so far are in its file);
//! steering goes to the parent only.

mod args;
mod child;
mod gate;
mod output;
mod plan;

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use makai_agent::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use makai_ai::Usage;
use makai_ai::catalog::ModelRegistry;

use crate::agent_spec::{AgentCatalog, SubagentPolicy};
use crate::context_files::SharedContextFiles;
use crate::session::{SUBAGENT_LINK, Session, SharedSession, SubagentLink};

pub use args::{TaskArgs, TaskItem};
pub use output::status_line;

/// The tool's name.
pub const TASK_TOOL: &str = "task";

/// Default levels of sub-agents below the main agent.
pub const DEFAULT_MAX_DEPTH: u32 = 1;

/// Default children of one agent at once.
pub const DEFAULT_MAX_PARALLEL: usize = 4;

/// Most tasks in one call.
pub const MAX_TASKS_PER_CALL: usize = 8;

/// Where sub-agents' session files come from.
pub trait ChildSessions: Send + Sync {
    /// A new session for a child started by the call `tool_call_id`,
    /// running `agent`. Never fails: when it cannot be linked or stored the
    /// child runs with an in-memory session and the problem is logged.
    fn create(&self, agent: &str, tool_call_id: &str) -> Session;
}

/// Children's sessions beside the parent's file, linked from it by a
/// [`SUBAGENT_LINK`] entry (so a resumed session counts what a child spent
/// even when its result never arrived).
#[derive(Clone, Debug)]
pub struct LinkedSessions(pub SharedSession);

impl ChildSessions for LinkedSessions {
    fn create(&self, agent: &str, tool_call_id: &str) -> Session {
        let mut parent = self.0.lock();
        let child = parent.create_child();
        // The child's place in its store: a file's path, or a database's
        // session address.
        if let Some(location) = child.location() {
            let link = SubagentLink {
                session_file: location,
                tool_call_id: tool_call_id.to_string(),
                agent: agent.to_string(),
            };
            let data = serde_json::to_value(&link).ok();
            if let Err(e) = parent.append_custom(SUBAGENT_LINK, data) {
                tracing::warn!(error = %e, "the sub-agent's link could not be recorded in the parent session");
            }
        }
        child
    }
}

/// Children's sessions in memory only.
#[derive(Clone, Debug, Default)]
pub struct InMemorySessions {
    /// The working directory written in their headers.
    pub cwd: String,
}

impl ChildSessions for InMemorySessions {
    fn create(&self, _agent: &str, _tool_call_id: &str) -> Session {
        Session::in_memory(self.cwd.clone())
    }
}

/// What every `task` call of a session shares.
#[derive(Clone)]
pub struct TaskEnv {
    /// The agent specs children may run.
    pub catalog: AgentCatalog,
    /// Models a spec may name (`None`: children use the parent's model).
    pub models: Option<Arc<ModelRegistry>>,
    /// Where children's sessions go.
    pub sessions: Arc<dyn ChildSessions>,
    /// The working directory (in children's system prompts).
    pub cwd: PathBuf,
    /// Context files (`AGENTS.md`...) for children's system prompts, as
    /// they are when a child starts.
    pub context_files: SharedContextFiles,
    /// Depth and parallelism (settings, or the main spec's `[subagents]`).
    pub policy: SubagentPolicy,
}

impl std::fmt::Debug for TaskEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskEnv")
            .field("cwd", &self.cwd)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

/// How a child's run went.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SubagentStatus {
    /// Waiting for its turn (the gate) or running.
    #[default]
    Running,
    /// Answered.
    Completed,
    /// Ended without an answer (an error, a limit, the budget).
    Failed,
    /// Aborted with its parent.
    Aborted,
}

/// One child, as the `task` call's `details.agents` reports it (in updates
/// and in the result).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubagentReport {
    /// The agent spec.
    pub agent: String,
    /// The task's first line (shortened).
    pub task: String,
    /// How it goes.
    pub status: SubagentStatus,
    /// Turns taken.
    pub turns: u32,
    /// Tokens and cost of the child's model calls (its children included).
    pub usage: Usage,
    /// The tool it runs now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Its session file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_file: Option<String>,
    /// Its final answer (or the last text it wrote).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// The structured result it submitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The `details` of a `task` call's updates and result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskDetails {
    /// One report per child, in call order.
    pub agents: Vec<SubagentReport>,
}

/// The built-in `task` tool of one agent (the main agent, or a child that
/// may spawn).
pub struct TaskTool {
    env: Arc<TaskEnv>,
    depth: u32,
    max_depth: u32,
    gate: Arc<gate::Gate>,
    spec: ToolSpec,
}

impl std::fmt::Debug for TaskTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskTool")
            .field("depth", &self.depth)
            .field("max_depth", &self.max_depth)
            .finish_non_exhaustive()
    }
}

impl TaskTool {
    /// The main agent's `task` tool.
    pub fn new(env: TaskEnv) -> Self {
        let max_depth = env.policy.max_depth.unwrap_or(DEFAULT_MAX_DEPTH);
        TaskTool::at_depth(Arc::new(env), 0, max_depth)
    }

    fn at_depth(env: Arc<TaskEnv>, depth: u32, max_depth: u32) -> Self {
        let parallel = env
            .policy
            .max_parallel
            .unwrap_or(DEFAULT_MAX_PARALLEL)
            .max(1);
        TaskTool {
            spec: ToolSpec::new(TASK_TOOL, args::description(&env.catalog), args::schema())
                .with_label("Task"),
            gate: Arc::new(gate::Gate::new(parallel)),
            env,
            depth,
            max_depth,
        }
    }

    /// How deep this tool's agent is (0: the main agent).
    pub fn depth(&self) -> u32 {
        self.depth
    }
}

#[async_trait]
impl Tool for TaskTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn execute(
        &self,
        call_id: &str,
        args: Value,
        ctx: ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let items = args::parse(args)?;
        let Some(snapshot) = ctx.snapshot() else {
            return Err(ToolError::failed(
                "the task tool runs only inside an agent run (it starts from the parent's state)",
            ));
        };
        let parent = plan::Parent {
            snapshot,
            env: &self.env,
            depth: self.depth,
            max_depth: self.max_depth,
        };
        let plans: Vec<Result<plan::ChildPlan, String>> = items
            .iter()
            .map(|item| plan::plan(&parent, item, call_id))
            .collect();
        let progress = output::Progress::new(&items, &plans, ctx.clone());
        let runs = plans.into_iter().enumerate().map(|(i, p)| {
            let progress = progress.clone();
            let gate = self.gate.clone();
            let cancel = ctx.cancel_token().clone();
            async move {
                match p {
                    Err(e) => child::ChildEnd::refused(e),
                    Ok(plan) => child::run(plan, i, gate, progress, cancel).await,
                }
            }
        });
        let ends = futures::future::join_all(runs).await;
        output::finish(&items, ends, &progress)
    }

    /// Under a dry run the children still run, under the same dry run (their
    /// configuration is the parent run's): their read-only tools act, their
    /// mutating ones only say what they would have done, and their answers
    /// come back as usual.
    async fn dry_run(
        &self,
        call_id: &str,
        args: Value,
        ctx: ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        self.execute(call_id, args, ctx).await
    }
}
