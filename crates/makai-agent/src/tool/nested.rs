//! Tool calls a running tool makes (a codemode script's, say) through the
//! run's own route: the arguments checked against the tool's schema, the
//! application's `before_tool_call` hook (approvals, plans) asked first and
//! its `after_tool_call` hook after, dry run honoured, the tool's timeout
//! kept, a panic turned into an error result. What a direct call could not
//! do, a nested one cannot either.

use std::sync::Arc;

use serde_json::Value;

use makai_ai::{Message, ToolCall};

use super::{Tool, ToolContext, ToolOutput, ToolSet};
use crate::hooks::{ToolCallDecision, ToolCallInfo};
use crate::message::AgentMessage;

/// A nested call's end.
#[derive(Clone, Debug)]
pub struct NestedCall {
    /// Its id: `<the calling tool's call id>/<n>`, `n` counting from 1.
    pub id: String,
    /// Its result (content and details), as the model would have read it.
    pub output: ToolOutput,
    /// True when it failed, was blocked, or its arguments were not valid.
    pub is_error: bool,
}

/// Aborts a spawned call when its caller stops waiting.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn failed(id: String, text: String) -> NestedCall {
    NestedCall {
        id,
        output: ToolOutput::text(text),
        is_error: true,
    }
}

impl ToolContext {
    /// Calls the tool `name` of `tools` as the loop would, on behalf of this
    /// call (see the module's documentation). Dropping the future cancels
    /// the call. Cancelling this call's run cancels it too.
    /// The call is recorded on this call's result (pi's `nestedCalls`): its
    /// name, arguments, status and duration, never its result.
    pub async fn call_tool(&self, tools: &ToolSet, name: &str, args: Value) -> NestedCall {
        let (id, slot) = self.nested.start(&self.call_id, name, &args);
        let started = std::time::Instant::now();
        let call = self.call_tool_as(id, tools, name, args).await;
        let error = call.is_error.then(|| call.output.text_content());
        self.nested.end(slot, started.elapsed(), error);
        call
    }

    async fn call_tool_as(
        &self,
        id: String,
        tools: &ToolSet,
        name: &str,
        args: Value,
    ) -> NestedCall {
        let Some(tool) = tools.get(name).cloned() else {
            return failed(
                id,
                format!(
                    "Tool '{}' not found. Available tools: {}.",
                    name,
                    tools.names().join(", ")
                ),
            );
        };
        if let Err(problems) = tools.validate(name, &args) {
            return failed(
                id,
                format!(
                    "Invalid arguments for tool '{name}':\n- {}\nCall the tool again with arguments that match its parameter schema.",
                    problems.join("\n- ")
                ),
            );
        }
        let call = ToolCall {
            id: id.clone(),
            name: name.to_string(),
            arguments: match &args {
                Value::Object(m) => m.clone(),
                _ => serde_json::Map::new(),
            },
            ..ToolCall::default()
        };
        let assistant = self
            .snapshot()
            .and_then(|s| {
                s.messages.iter().rev().find_map(|m| match m {
                    AgentMessage::Llm(Message::Assistant(a)) => Some(a.clone()),
                    _ => None,
                })
            })
            .unwrap_or_default();
        let info = ToolCallInfo {
            assistant_message: &assistant,
            tool_call: &call,
            args: &args,
        };
        if let Some(hooks) = &self.hooks
            && let ToolCallDecision::Block(reason) = hooks.before_tool_call(&info).await
        {
            let reason = if reason.trim().is_empty() {
                format!("Tool call '{name}' was blocked.")
            } else {
                reason
            };
            return failed(id, reason);
        }
        let dry_run = self.snapshot().is_some_and(|s| s.config.dry_run) && !tool.read_only();
        let child = ToolContext {
            call_id: id.clone(),
            tool_name: name.to_string(),
            cancel: self.cancel.child_token(),
            cwd: self.cwd.clone(),
            session_id: self.session_id.clone(),
            snapshot: self.snapshot.clone(),
            updater: None,
            hooks: self.hooks.clone(),
            nested: Default::default(),
            declared: self.declared.clone(),
        };
        let (mut output, mut is_error) =
            run_spawned(tool, id.clone(), args.clone(), child, dry_run).await;
        if let Some(hooks) = &self.hooks
            && let Some(o) = hooks.after_tool_call(&info, &output, is_error).await
        {
            o.apply(&mut output, &mut is_error);
        }
        NestedCall {
            id,
            output,
            is_error,
        }
    }
}

async fn run_spawned(
    tool: Arc<dyn Tool>,
    id: String,
    args: Value,
    ctx: ToolContext,
    dry_run: bool,
) -> (ToolOutput, bool) {
    let name = tool.name().to_string();
    let handle = tokio::spawn(super::run_call(tool, id, args, ctx, dry_run));
    let _guard = AbortOnDrop(handle.abort_handle());
    match handle.await {
        Ok(Ok(o)) => (o, false),
        Ok(Err(e)) => (e.into_output(), true),
        Err(e) if e.is_panic() => (
            ToolOutput::text(format!(
                "Tool '{name}' crashed: {}. Try different arguments or another approach.",
                crate::hooks::panic_text(&e.into_panic())
            )),
            true,
        ),
        Err(_) => (
            ToolOutput::text("Not executed to the end: the call was cancelled."),
            true,
        ),
    }
}
