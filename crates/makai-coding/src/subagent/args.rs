//! The `task` tool's arguments, schema and description.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use makai_agent::{ToolError, schema_for};

use super::MAX_TASKS_PER_CALL;
use crate::agent_spec::{AgentCatalog, DEFAULT_AGENT};

/// One task for one sub-agent.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskItem {
    /// What the sub-agent should do, with everything it needs to know: it
    /// does not see this conversation.
    pub task: String,
    /// The agent spec to run (one of those listed in the tool description).
    #[serde(default)]
    pub agent: Option<String>,
    /// Instead of `agent`: how the default worker should approach the task.
    #[serde(default)]
    pub instruction: Option<String>,
    /// A JSON Schema (an object schema): the sub-agent then also submits a
    /// result matching it, returned as JSON.
    // Typed as an object in the schema: an untyped subschema is one that
    // grammar-constrained servers (llama.cpp) cannot use at all.
    #[serde(default)]
    #[schemars(with = "Option<serde_json::Map<String, Value>>")]
    pub result_schema: Option<Value>,
}

/// The arguments: one task, or several independent ones.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskArgs {
    /// What the sub-agent should do, with everything it needs to know: it
    /// does not see this conversation.
    #[serde(default)]
    pub task: Option<String>,
    /// The agent spec to run (one of those listed in the tool description);
    /// without it and without `instruction`, the default worker.
    #[serde(default)]
    pub agent: Option<String>,
    /// Instead of `agent`: how the default worker should approach the task.
    #[serde(default)]
    pub instruction: Option<String>,
    /// A JSON Schema (an object schema): the sub-agent then also submits a
    /// result matching it, returned as JSON.
    // Typed as an object in the schema: an untyped subschema is one that
    // grammar-constrained servers (llama.cpp) cannot use at all.
    #[serde(default)]
    #[schemars(with = "Option<serde_json::Map<String, Value>>")]
    pub result_schema: Option<Value>,
    /// Instead of `task`: several independent tasks, each with its own
    /// `task`, `agent` or `instruction` and `resultSchema` (at most 8).
    #[serde(default)]
    pub tasks: Option<Vec<TaskItem>>,
}

pub(super) fn schema() -> Value {
    schema_for::<TaskArgs>()
}

pub(super) fn description(catalog: &AgentCatalog) -> String {
    let mut s = String::from(
        "Hand a self-contained task to a sub-agent with a fresh context of its own; its final answer is the result. Give `task` and optionally `agent` (a spec below) or `instruction` (how the default worker should work). For several independent tasks give `tasks` (read-only ones run in parallel). A sub-agent has at most your own tools and permissions.\n\nAgent specs:",
    );
    for spec in catalog.specs().filter(|s| s.name != DEFAULT_AGENT) {
        s.push_str(&format!("\n- {}", spec.name));
        if !spec.description.is_empty() {
            s.push_str(": ");
            s.push_str(spec.description.trim());
        }
    }
    s
}

/// The tasks of one call, checked.
pub(super) fn parse(args: Value) -> Result<Vec<TaskItem>, ToolError> {
    let args: TaskArgs =
        serde_json::from_value(args).map_err(|e| ToolError::InvalidArguments(e.to_string()))?;
    let items = match (args.task, args.tasks) {
        (Some(task), None) => vec![TaskItem {
            task,
            agent: args.agent,
            instruction: args.instruction,
            result_schema: args.result_schema,
        }],
        (None, Some(tasks)) => {
            if args.agent.is_some() || args.instruction.is_some() || args.result_schema.is_some() {
                return Err(ToolError::InvalidArguments(
                    "with `tasks`, give `agent`, `instruction` and `resultSchema` inside each task"
                        .into(),
                ));
            }
            tasks
        }
        (Some(_), Some(_)) => {
            return Err(ToolError::InvalidArguments(
                "give either `task` (one sub-agent) or `tasks` (several), not both".into(),
            ));
        }
        (None, None) => {
            return Err(ToolError::InvalidArguments(
                "no task given: set `task` to what the sub-agent should do".into(),
            ));
        }
    };
    if items.is_empty() || items.len() > MAX_TASKS_PER_CALL {
        return Err(ToolError::InvalidArguments(format!(
            "`tasks` holds {} tasks; give 1 to {MAX_TASKS_PER_CALL}",
            items.len()
        )));
    }
    for (i, item) in items.iter().enumerate() {
        let n = i + 1;
        if item.task.trim().is_empty() {
            return Err(ToolError::InvalidArguments(format!(
                "task {n} is empty: say what the sub-agent should do"
            )));
        }
        if item.agent.is_some() && item.instruction.is_some() {
            return Err(ToolError::InvalidArguments(format!(
                "task {n} gives both `agent` and `instruction`; an instruction is for the default worker, so keep one"
            )));
        }
        if let Some(schema) = &item.result_schema
            && !schema.is_object()
        {
            return Err(ToolError::InvalidArguments(format!(
                "task {n}: `resultSchema` must be a JSON Schema object, such as {{\"type\": \"object\", \"properties\": {{...}}}}"
            )));
        }
    }
    Ok(items)
}
