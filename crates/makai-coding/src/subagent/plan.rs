//! Turning one task of a `task` call into a child's run: its spec, tools
//! (the parent's, cut down), model, configuration and session.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use makai_agent::{
    AgentHooks, AgentMessage, AgentSnapshot, Budget, BudgetedClient, InputDecision, Ledger, Tool,
    ToolCallDecision, ToolCallInfo, ToolContext, ToolError, ToolOutput, ToolResultOverride,
    ToolSet, ToolSpec,
};
use makai_ai::{Message, ThinkingLevel};

use super::args::TaskItem;
use super::{TASK_TOOL, TaskEnv, TaskTool};
use crate::agent_spec::{AgentSpec, WORKER_AGENT, build_system_prompt, today};
use crate::session::Session;

/// The agent whose `task` tool is running.
pub(super) struct Parent<'a> {
    pub snapshot: &'a AgentSnapshot,
    pub env: &'a Arc<TaskEnv>,
    pub depth: u32,
    pub max_depth: u32,
}

/// Everything one child needs to run.
pub(super) struct ChildPlan {
    pub agent: String,
    pub prompt: String,
    pub system_prompt: String,
    pub tools: ToolSet,
    pub read_only: bool,
    pub config: makai_agent::AgentLoopConfig,
    pub session: Session,
    /// Where `submit_result` puts the structured result, when one was asked for.
    pub result: Option<Arc<Mutex<Option<Value>>>>,
}

/// The name of the tool a child submits a structured result with.
pub(super) const SUBMIT_RESULT: &str = "submit_result";

pub(super) fn plan(
    parent: &Parent<'_>,
    item: &TaskItem,
    call_id: &str,
) -> Result<ChildPlan, String> {
    let name = item.agent.as_deref().unwrap_or(WORKER_AGENT);
    let spec = parent
        .env
        .catalog
        .require(name)
        .map_err(|e| e.to_string())?
        .clone();
    let depth = parent.depth + 1;
    let max_depth = spec.subagents.max_depth.unwrap_or(parent.max_depth);
    let (mut tools, withheld) = child_tools(parent, &spec, depth, max_depth);
    let result = item.result_schema.clone().map(|schema| {
        let slot = Arc::new(Mutex::new(None));
        tools.push(Arc::new(SubmitResult::new(schema, slot.clone())) as Arc<dyn Tool>);
        slot
    });
    let read_only = tools.iter().all(|t| t.read_only());

    let model = match &spec.model {
        None => parent.snapshot.model.clone(),
        Some(wanted) => parent
            .env
            .models
            .as_ref()
            .and_then(|m| m.find(wanted))
            .cloned()
            .ok_or_else(|| {
                format!(
                    "agent spec '{}' names the model '{wanted}', which is not in the model catalog; fix its `model` or add the model to models.json",
                    spec.name
                )
            })?,
    };
    let thinking = if model.reasoning {
        spec.thinking.unwrap_or(parent.snapshot.thinking_level)
    } else {
        ThinkingLevel::Off
    };

    let mut system_prompt = build_system_prompt(
        &spec,
        &parent.env.context_files.get(),
        &parent.env.cwd,
        today(),
    );
    if !withheld.is_empty() {
        system_prompt.push_str(&format!(
            "\n# Tools you do not have here\n\nYour spec lists {}, but the agent that started you does not have them (or may not pass them on), and a sub-agent never has more than its parent. Do the task without them, or say that it needs them.\n",
            withheld.join(", ")
        ));
    }
    if result.is_some() {
        system_prompt.push_str(&format!(
            "\n# Result\n\nBefore your final answer, call `{SUBMIT_RESULT}` once with the result the task asks for, matching its parameters.\n"
        ));
    }

    let session = parent.env.sessions.create(&spec.name, call_id);
    let parent_cfg = &parent.snapshot.config;
    let mut config = (**parent_cfg).clone();
    config.model = model;
    config.options.thinking = thinking;
    config.options.session_id = Some(session.id().to_string());
    config.tool_choice = None;
    config.partial_snapshots = false;
    config.tool_abort_grace = parent_cfg.tool_abort_grace / 2;
    let own = spec.limits.execution();
    config.limits.max_turns = own.max_turns.or(parent_cfg.limits.max_turns);
    config.limits.max_wall_time = own.max_wall_time.or(parent_cfg.limits.max_wall_time);
    let budget: Budget = spec.limits.budget();
    if !budget.is_unlimited() {
        // Reserved against the child's own cap and then, by the parent's
        // client underneath, against the session's.
        config.client = Arc::new(BudgetedClient::new(
            parent_cfg.client.clone(),
            Ledger::new(budget),
        ));
    }
    config.hooks = Arc::new(ChildHooks(parent_cfg.hooks.clone()));

    let prompt = match &item.instruction {
        Some(instruction) => format!("# Instruction\n\n{instruction}\n\n# Task\n\n{}", item.task),
        None => item.task.clone(),
    };
    Ok(ChildPlan {
        agent: spec.name.clone(),
        prompt,
        system_prompt,
        tools: ToolSet::new(tools),
        read_only,
        config,
        session,
        result,
    })
}

/// The parent's own tool instances the spec lists, and the names it lists
/// that the child does not get.
fn child_tools(
    parent: &Parent<'_>,
    spec: &AgentSpec,
    depth: u32,
    max_depth: u32,
) -> (Vec<Arc<dyn Tool>>, Vec<String>) {
    let mut tools = Vec::new();
    let mut withheld = Vec::new();
    for name in &spec.tools {
        let parent_has = parent.snapshot.tools.get(name).is_some();
        if name == TASK_TOOL {
            if parent_has && depth < max_depth {
                tools.push(
                    Arc::new(TaskTool::at_depth(parent.env.clone(), depth, max_depth))
                        as Arc<dyn Tool>,
                );
            } else {
                withheld.push(name.clone());
            }
            continue;
        }
        match parent.snapshot.tools.get(name) {
            Some(tool) => tools.push(tool.clone()),
            None => withheld.push(name.clone()),
        }
    }
    (tools, withheld)
}

/// The parent's hooks for what concerns tools (approval rules, results) and
/// the model's view of the transcript; no steering or follow-ups (those go
/// to the parent only) and no turn hooks.
struct ChildHooks(Arc<dyn AgentHooks>);

#[async_trait]
impl AgentHooks for ChildHooks {
    async fn transform_context(
        &self,
        messages: &[AgentMessage],
        cancel: &CancellationToken,
    ) -> Option<Vec<AgentMessage>> {
        self.0.transform_context(messages, cancel).await
    }

    fn convert_to_llm(&self, messages: &[AgentMessage]) -> Vec<Message> {
        self.0.convert_to_llm(messages)
    }

    async fn before_tool_call(&self, call: &ToolCallInfo<'_>) -> ToolCallDecision {
        self.0.before_tool_call(call).await
    }

    async fn after_tool_call(
        &self,
        call: &ToolCallInfo<'_>,
        result: &ToolOutput,
        is_error: bool,
    ) -> Option<ToolResultOverride> {
        self.0.after_tool_call(call, result, is_error).await
    }

    async fn filter_input(&self, message: &AgentMessage) -> InputDecision {
        self.0.filter_input(message).await
    }
}

/// The tool a child submits its structured result with; the arguments are
/// checked against the schema the `task` call gave.
struct SubmitResult {
    spec: ToolSpec,
    slot: Arc<Mutex<Option<Value>>>,
}

impl SubmitResult {
    fn new(schema: Value, slot: Arc<Mutex<Option<Value>>>) -> Self {
        SubmitResult {
            spec: ToolSpec::new(
                SUBMIT_RESULT,
                "Submit the structured result of your task (once, before your final answer). Its parameters are the result's fields.",
                schema,
            )
            .with_read_only(true),
            slot,
        }
    }
}

#[async_trait]
impl Tool for SubmitResult {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn execute(
        &self,
        _call_id: &str,
        args: Value,
        _ctx: ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        *self.slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(args);
        Ok(ToolOutput::text(
            "Result recorded. Now give your final answer.",
        ))
    }
}
