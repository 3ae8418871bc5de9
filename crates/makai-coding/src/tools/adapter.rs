//! The built-in tools as agent-layer tools ([`makai_agent::Tool`]).

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use makai_agent::{Tool, ToolContext, ToolError as AgentToolError, ToolSpec};

use super::{
    BUILTIN_TOOL_NAMES, CallCtx, ShellSession, ToolEnv, ToolError, ToolOutput, args::schema_for,
    bash, edit, find, grep, ls, read, run_builtin, write,
};

/// One built-in tool bound to an environment, usable by the agent loop.
#[derive(Clone, Debug)]
pub struct BuiltinTool {
    name: &'static str,
    spec: ToolSpec,
    env: Arc<ToolEnv>,
}

/// The session of the run making the call, as `bash` tells its commands
/// (the file is the tool environment's to add: [`ToolEnv::session_file`]).
fn shell_session(ctx: &ToolContext) -> ShellSession {
    let run = ctx.snapshot();
    ShellSession {
        id: ctx.session_id().map(str::to_string),
        file: None,
        provider: run.map(|r| r.model.provider.clone()),
        model: run.map(|r| r.model.id.clone()),
        reasoning_level: run.map(|r| r.model.clamp_thinking(r.thinking_level).as_str()),
    }
}

impl BuiltinTool {
    /// The built-in tool called `name` (`read`, `write`, `edit`, `bash`,
    /// `grep`, `find`, `ls`), or `None` for any other name.
    pub fn new(name: &str, env: Arc<ToolEnv>) -> Option<Self> {
        let (name, description, parameters, read_only) = match name {
            "read" => (
                "read",
                read::description(env.line_numbers),
                schema_for::<read::ReadArgs>(),
                true,
            ),
            "write" => (
                "write",
                write::description(),
                schema_for::<write::WriteArgs>(),
                false,
            ),
            "edit" => ("edit", edit::description(), edit_schema(), false),
            "bash" => (
                "bash",
                bash::description(),
                schema_for::<bash::BashArgs>(),
                false,
            ),
            "grep" => (
                "grep",
                grep::description(),
                schema_for::<grep::GrepArgs>(),
                true,
            ),
            "find" => (
                "find",
                find::description(),
                schema_for::<find::FindArgs>(),
                true,
            ),
            "ls" => ("ls", ls::description(), schema_for::<ls::LsArgs>(), true),
            _ => return None,
        };
        Some(BuiltinTool {
            name,
            spec: ToolSpec::new(name, description, parameters).with_read_only(read_only),
            env,
        })
    }

    /// The environment the tool runs in.
    pub fn env(&self) -> &ToolEnv {
        &self.env
    }
}

/// `edit`'s schema: `edits` is not marked required so that a single
/// top-level `oldText`/`newText` pair (as older prompts send) passes
/// validation; the tool itself insists on at least one edit.
fn edit_schema() -> Value {
    let mut s = schema_for::<edit::EditArgs>();
    if let Some(obj) = s.as_object_mut() {
        obj.insert("required".into(), Value::Array(vec![Value::from("path")]));
    }
    s
}

/// All seven built-in tools bound to `env`.
pub fn builtin_tools(env: ToolEnv) -> Vec<Arc<dyn Tool>> {
    let env = Arc::new(env);
    BUILTIN_TOOL_NAMES
        .iter()
        .filter_map(|n| BuiltinTool::new(n, env.clone()))
        .map(|t| Arc::new(t) as Arc<dyn Tool>)
        .collect()
}

/// The built-in tools named in `names` (a list such as `read,grep,find,ls`:
/// commas and whitespace separate, order kept, duplicates dropped). Unknown
/// names are an error that lists the valid ones.
pub fn tools_by_names(env: ToolEnv, names: &str) -> Result<Vec<Arc<dyn Tool>>, ToolError> {
    let env = Arc::new(env);
    let mut out: Vec<Arc<dyn Tool>> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for n in names
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
    {
        if seen.contains(&n) {
            continue;
        }
        seen.push(n);
        let tool = BuiltinTool::new(n, env.clone()).ok_or_else(|| {
            ToolError::Failed(format!(
                "Unknown tool '{}'. The built-in tools are: {}.",
                makai_ai::quote::bounded(n),
                BUILTIN_TOOL_NAMES.join(", ")
            ))
        })?;
        out.push(Arc::new(tool));
    }
    Ok(out)
}

impl BuiltinTool {
    /// Runs the tool in `env` (the tool's own, with the run's working
    /// directory when the tool has none).
    async fn run(
        &self,
        env: &ToolEnv,
        args: Value,
        ctx: ToolContext,
    ) -> Result<ToolOutput, AgentToolError> {
        let env: std::borrow::Cow<'_, ToolEnv> = if env.cwd.as_os_str().is_empty() {
            let mut e = env.clone();
            e.cwd = ctx.cwd().to_path_buf();
            std::borrow::Cow::Owned(e)
        } else {
            std::borrow::Cow::Borrowed(env)
        };
        let updater = ctx.clone();
        let call = CallCtx {
            cancel: ctx.cancel_token().clone(),
            on_update: Some(Arc::new(move |partial: ToolOutput| updater.update(partial))),
            session: Some(shell_session(&ctx)),
        };
        run_builtin(self.name, &env, args, &call)
            .await
            .map_err(AgentToolError::from)
    }
}

#[async_trait]
impl Tool for BuiltinTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn execute(
        &self,
        _call_id: &str,
        args: Value,
        ctx: ToolContext,
    ) -> Result<ToolOutput, AgentToolError> {
        self.run(&self.env, args, ctx).await
    }

    /// `write`, `edit` and `bash` describe what they would do (the file,
    /// the diff, the command) after checking the call as a real one would.
    async fn dry_run(
        &self,
        _call_id: &str,
        args: Value,
        ctx: ToolContext,
    ) -> Result<ToolOutput, AgentToolError> {
        let env = (*self.env).clone().with_dry_run(true);
        self.run(&env, args, ctx).await
    }
}
