//! Tools: the [`Tool`] trait, what a tool returns, and what it is given.
//!
//! The loop runs every tool call as its own task: a tool that fails, panics or
//! exceeds its timeout produces an error result, and the run and every other
//! tool carry on. Arguments are validated against the tool's JSON Schema before
//! the tool runs ([`ToolSet`]); [`TypedTool`] derives the schema from a Rust type.

mod nested;
mod nested_log;
mod set;
mod typed;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use makai_ai::{Model, ThinkingLevel, UserContent};

use crate::event::{AgentEvent, EventSink};
use crate::message::AgentMessage;

pub use nested::NestedCall;
pub use set::ToolSet;
pub use typed::{TypedTool, schema_for};

/// What a tool returns: content for the model and details for applications.
///
/// Serialized as pi's `AgentToolResult`: `{"content": [...], "details": ...}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    /// Text and image parts sent to the model.
    pub content: Vec<UserContent>,
    /// Application data (UI rendering, logs); never sent to the model.
    #[serde(default)]
    pub details: Value,
    /// Model usage of work the tool did itself (pi's `usage` of a tool
    /// result: a sub-agent's calls, say); kept on the result message and
    /// counted in session totals. Boxed: rarely set, and it keeps results
    /// (and `ToolError`) small.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Box<makai_ai::Usage>>,
    /// The calls this tool made to other tools (pi's `nestedCalls` of a tool
    /// result: codemode's script calls, say); kept on the result message,
    /// never sent to the model. Boxed for the same reason as `usage`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nested_calls: Option<Box<makai_ai::NestedToolCalls>>,
}

impl ToolOutput {
    /// An output holding one text part.
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput {
            content: vec![UserContent::text(text)],
            details: Value::Null,
            usage: None,
            nested_calls: None,
        }
    }

    /// Sets the details.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = details;
        self
    }

    /// All text parts joined with newlines.
    pub fn text_content(&self) -> String {
        let mut out = String::new();
        for c in &self.content {
            if let UserContent::Text(t) = c {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(&t.text);
            }
        }
        out
    }
}

/// Why a tool call failed. The loop turns it into an error result for the model.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The tool failed; the text says why and is shown to the model.
    #[error("{0}")]
    Failed(String),
    /// The arguments could not be used.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// The tool stopped because the run was cancelled.
    #[error("the tool call was cancelled")]
    Cancelled,
    /// The tool failed and supplies the error result itself (content and details).
    #[error("{}", .0.text_content())]
    Output(ToolOutput),
}

impl ToolError {
    /// A failure with this message.
    pub fn failed(message: impl Into<String>) -> Self {
        ToolError::Failed(message.into())
    }

    /// The error result sent to the model.
    pub fn into_output(self) -> ToolOutput {
        match self {
            ToolError::Output(o) => o,
            other => ToolOutput::text(other.to_string()),
        }
    }
}

impl From<std::io::Error> for ToolError {
    fn from(e: std::io::Error) -> Self {
        ToolError::Failed(e.to_string())
    }
}

/// What the model and UIs know of a tool: the one description every kind of
/// tool (typed, built-in, MCP, sub-agent) carries.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSpec {
    /// The name the model uses.
    pub name: String,
    /// A human-readable label for UIs.
    pub label: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
    /// True when the tool only reads: read-only calls may run together, a
    /// mutating call runs alone, and under dry-run only read-only tools run.
    pub read_only: bool,
}

impl ToolSpec {
    /// A mutating tool whose label is its name.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        let name = name.into();
        ToolSpec {
            label: name.clone(),
            name,
            description: description.into(),
            parameters,
            read_only: false,
        }
    }

    /// Sets the UI label.
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }

    /// Marks the tool read-only or not.
    pub fn with_read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }
}

/// A tool the model may call.
///
/// Implementations must be cheap to share (`Arc<dyn Tool>`); `execute` runs on its
/// own task. Report failure with `Err`: the text becomes the error result.
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    /// The tool's name, label, description, argument schema and read-only flag.
    fn spec(&self) -> &ToolSpec;

    /// The name the model uses.
    fn name(&self) -> &str {
        &self.spec().name
    }

    /// A human-readable label for UIs.
    fn label(&self) -> &str {
        &self.spec().label
    }

    /// What the tool does, for the model.
    fn description(&self) -> &str {
        &self.spec().description
    }

    /// JSON Schema of the arguments object.
    fn parameters(&self) -> &Value {
        &self.spec().parameters
    }

    /// True when the tool only reads (see [`ToolSpec::read_only`]).
    fn read_only(&self) -> bool {
        self.spec().read_only
    }

    /// Longest the tool may run before its call fails with a timeout error.
    fn timeout(&self) -> Option<Duration> {
        None
    }

    /// Runs one call. `args` already passed schema validation.
    async fn execute(
        &self,
        call_id: &str,
        args: Value,
        ctx: ToolContext,
    ) -> Result<ToolOutput, ToolError>;

    /// Under dry run ([`crate::AgentLoopConfig::dry_run`]) a tool that is not
    /// read-only gets this call instead of [`Tool::execute`]: it must change
    /// nothing and say what the call would have done. The default says which
    /// tool would have run with which arguments; a tool that can describe its
    /// effect better (a diff, a file size) overrides it.
    async fn dry_run(
        &self,
        _call_id: &str,
        args: Value,
        _ctx: ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let shown = makai_ai::quote::bounded(&args.to_string()).to_string();
        Ok(ToolOutput::text(format!(
            "Dry run: the '{}' tool would have been called with {shown}. Nothing was done.",
            self.name()
        ))
        .with_details(serde_json::json!({"dryRun": true, "arguments": args})))
    }
}

/// Runs one call of `tool`: its `dry_run` under a dry run, else its
/// `execute`, failing with a timeout error when the tool's own limit passes.
/// The loop and nested calls both spawn this.
pub(crate) async fn run_call(
    tool: Arc<dyn Tool>,
    call_id: String,
    args: Value,
    ctx: ToolContext,
    dry_run: bool,
) -> Result<ToolOutput, ToolError> {
    let timeout = tool.timeout();
    let nested = ctx.nested.clone();
    let exec = if dry_run {
        tool.dry_run(&call_id, args, ctx)
    } else {
        tool.execute(&call_id, args, ctx)
    };
    let result = match timeout {
        None => exec.await,
        Some(limit) => tokio::time::timeout(limit, exec).await.unwrap_or_else(|_| {
            Err(ToolError::Failed(format!(
                "Tool '{}' timed out after {:.1} s and was stopped.",
                tool.name(),
                limit.as_secs_f64()
            )))
        }),
    };
    with_nested_calls(result, &nested)
}

/// Puts the record of the nested calls the tool made on its result, unless
/// the tool gave one itself. A failure given as text becomes the same text
/// as an output, so the record is kept.
fn with_nested_calls(
    result: Result<ToolOutput, ToolError>,
    nested: &nested_log::NestedLog,
) -> Result<ToolOutput, ToolError> {
    let Some(record) = nested.take() else {
        return result;
    };
    let attach = |mut output: ToolOutput| {
        if output.nested_calls.is_none() {
            output.nested_calls = Some(Box::new(record));
        }
        output
    };
    match result {
        Ok(output) => Ok(attach(output)),
        Err(ToolError::Cancelled) => Err(ToolError::Cancelled),
        Err(e) => Err(ToolError::Output(attach(e.into_output()))),
    }
}

/// A read-only view of the agent taken when a tool batch started, so a tool (a
/// sub-agent, say) can build on it without calling back into the running agent.
#[derive(Clone, Debug)]
pub struct AgentSnapshot {
    /// The system prompt.
    pub system_prompt: String,
    /// The model of the run.
    pub model: Model,
    /// The thinking level of the run.
    pub thinking_level: ThinkingLevel,
    /// The transcript up to and including the assistant message that made the
    /// calls, shared with the run (no copy is made for the snapshot).
    pub messages: Arc<Vec<AgentMessage>>,
    /// The tools of the run.
    pub tools: ToolSet,
    /// The run's configuration (client, hooks, options, limits): what a
    /// sub-agent starts from, so it can never have more than its parent.
    pub config: Arc<crate::config::AgentLoopConfig>,
}

/// What a running tool is given.
#[derive(Clone)]
pub struct ToolContext {
    call_id: String,
    tool_name: String,
    cancel: CancellationToken,
    cwd: Arc<PathBuf>,
    session_id: Option<Arc<str>>,
    snapshot: Option<Arc<AgentSnapshot>>,
    updater: Option<Arc<Updater>>,
    /// The run's hooks, which nested calls ([`ToolContext::call_tool`]) go through.
    hooks: Option<Arc<crate::hooks::RunHooks>>,
    /// The nested calls made so far ([`ToolContext::call_tool`]), which the
    /// loop puts on this call's result.
    nested: Arc<nested_log::NestedLog>,
    /// Tools declared for the run's next model call
    /// ([`ToolContext::declare_tools`]); `None` outside a run.
    declared: Option<Declared>,
}

/// Tools a batch's calls declared for the next model call.
pub(crate) type Declared = Arc<Mutex<Vec<Arc<dyn Tool>>>>;

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("call_id", &self.call_id)
            .field("tool_name", &self.tool_name)
            .field("cwd", &self.cwd)
            .field("session_id", &self.session_id)
            .finish_non_exhaustive()
    }
}

impl ToolContext {
    /// A context outside any run (for calling a tool directly, e.g. in tests):
    /// updates go nowhere and there is no agent snapshot.
    pub fn detached(call_id: impl Into<String>, cwd: impl Into<PathBuf>) -> Self {
        ToolContext {
            call_id: call_id.into(),
            tool_name: String::new(),
            cancel: CancellationToken::new(),
            cwd: Arc::new(cwd.into()),
            session_id: None,
            snapshot: None,
            updater: None,
            hooks: None,
            nested: Default::default(),
            declared: None,
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn for_call(
        call_id: &str,
        tool_name: &str,
        args: Arc<Value>,
        cancel: CancellationToken,
        cwd: Arc<PathBuf>,
        session_id: Option<Arc<str>>,
        snapshot: Arc<AgentSnapshot>,
        sink: Arc<dyn EventSink>,
        hooks: Arc<crate::hooks::RunHooks>,
    ) -> (Self, UpdateGate) {
        let updater = Arc::new(Updater {
            open: Mutex::new(true),
            sink,
            call_id: call_id.to_string(),
            tool_name: tool_name.to_string(),
            args,
        });
        (
            ToolContext {
                call_id: call_id.to_string(),
                tool_name: tool_name.to_string(),
                cancel,
                cwd,
                session_id,
                snapshot: Some(snapshot),
                updater: Some(updater.clone()),
                hooks: Some(hooks),
                nested: Default::default(),
                declared: None,
            },
            UpdateGate(updater),
        )
    }

    /// The id of the call being executed.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The name of the tool being executed.
    pub fn tool_name(&self) -> &str {
        &self.tool_name
    }

    /// Cancelled when the run is aborted (or its wall-time limit passes). A tool
    /// should stop promptly; the loop stops waiting for it after a grace period.
    pub fn cancel_token(&self) -> &CancellationToken {
        &self.cancel
    }

    /// True once the run was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// The working directory of the run.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The session id of the run, if any.
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// The agent's state when the batch started (`None` for a detached context).
    pub fn snapshot(&self) -> Option<&AgentSnapshot> {
        self.snapshot.as_deref()
    }

    /// Declares `tools` to the model from the run's next model call on (pi's
    /// `tool_search` loading tools): once the calls of this turn have
    /// finished, the loop adds those not declared yet to the run's tools and
    /// records them in the transcript as a [`crate::SystemMessage`] with
    /// `toolsAdded`. Returns `false` outside a run (nothing is declared).
    pub fn declare_tools(&self, tools: Vec<Arc<dyn Tool>>) -> bool {
        match &self.declared {
            Some(declared) => {
                declared
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .extend(tools);
                true
            }
            None => false,
        }
    }

    /// This context, collecting declared tools into `declared`.
    pub(crate) fn with_declared(mut self, declared: Declared) -> Self {
        self.declared = Some(declared);
        self
    }

    /// Reports a partial result; each becomes a `tool_execution_update` event.
    /// By convention it is the result accumulated so far. Ignored once the call
    /// has finished.
    pub fn update(&self, partial: ToolOutput) {
        if let Some(u) = &self.updater {
            u.send(partial);
        }
    }
}

pub(crate) struct Updater {
    open: Mutex<bool>,
    sink: Arc<dyn EventSink>,
    call_id: String,
    tool_name: String,
    args: Arc<Value>,
}

impl Updater {
    fn send(&self, partial: ToolOutput) {
        let open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if *open {
            self.sink.emit(AgentEvent::ToolExecutionUpdate {
                tool_call_id: self.call_id.clone(),
                tool_name: self.tool_name.clone(),
                args: self.args.clone(),
                partial_result: Arc::new(partial),
            });
        }
    }
}

/// Closes a call's update channel so no update can follow its end event.
pub(crate) struct UpdateGate(Arc<Updater>);

impl UpdateGate {
    pub(crate) fn close(&self) {
        *self.0.open.lock().unwrap_or_else(|e| e.into_inner()) = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_output_keeps_custom_content() {
        let e = ToolError::Output(ToolOutput::text("bad").with_details(serde_json::json!(1)));
        assert_eq!(e.to_string(), "bad");
        assert_eq!(e.into_output().details, serde_json::json!(1));
        assert_eq!(
            ToolError::failed("nope").into_output().text_content(),
            "nope"
        );
    }
}
