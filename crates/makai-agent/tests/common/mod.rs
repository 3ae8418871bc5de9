//! Shared helpers for the agent tests.
#![allow(dead_code)]

mod contract;
#[allow(unused_imports)]
pub use contract::assert_contract;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use makai_agent::makai_ai::{Api, Model};
use makai_agent::testing::ScriptedClient;
use makai_agent::{
    AgentContext, AgentEvent, AgentLoopConfig, Tool, ToolContext, ToolError, ToolOutput, ToolSet,
    TypedTool,
};
use serde::Deserialize;

pub fn model() -> Model {
    Model::custom(
        Api::OpenAiCompletions,
        "test",
        "m1",
        "http://127.0.0.1:9/v1",
    )
}

pub fn config(client: Arc<ScriptedClient>) -> AgentLoopConfig {
    AgentLoopConfig::new(model(), client)
}

/// An agent config that reaches `server` over real HTTP through the
/// in-process client, without retries.
pub fn http_config(server: &makai_mockllm::MockServer) -> AgentLoopConfig {
    let model = Model::custom(
        Api::OpenAiCompletions,
        "mock",
        "mock-model",
        server.base_url_v1(),
    );
    let mut cfg = AgentLoopConfig::new(model, Arc::new(makai_agent::InProcessClient::new()));
    cfg.options.retry = makai_agent::makai_ai::RetryPolicy::none();
    cfg
}

/// A compact description of an event: its type, plus the role for message events.
pub fn label(e: &AgentEvent) -> String {
    match e {
        AgentEvent::MessageStart { message } => format!("message_start:{}", message.role()),
        AgentEvent::MessageEnd { message } => format!("message_end:{}", message.role()),
        AgentEvent::ToolExecutionStart { tool_call_id, .. } => {
            format!("tool_execution_start:{tool_call_id}")
        }
        AgentEvent::ToolExecutionEnd { tool_call_id, .. } => {
            format!("tool_execution_end:{tool_call_id}")
        }
        other => other.kind().to_string(),
    }
}

/// Labels with consecutive message_update events collapsed into one "updates".
pub fn outline(events: &[AgentEvent]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for e in events {
        let l = label(e);
        if l == "message_update" {
            if out.last().map(String::as_str) == Some("updates") {
                continue;
            }
            out.push("updates".into());
        } else {
            out.push(l);
        }
    }
    out
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct EchoArgs {
    pub text: String,
}

pub fn echo_tool() -> Arc<dyn Tool> {
    TypedTool::new(
        "echo",
        "Returns its text.",
        |a: EchoArgs, _ctx| async move { Ok(ToolOutput::text(a.text)) },
    )
    .read_only(true)
    .into_arc()
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct SleepArgs {
    pub ms: u64,
}

/// A tool that sleeps `ms` milliseconds and records the peak concurrency.
pub fn sleep_tool(
    name: &'static str,
    read_only: bool,
    active: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
) -> Arc<dyn Tool> {
    TypedTool::new(name, "Sleeps.", move |a: SleepArgs, _ctx: ToolContext| {
        let active = active.clone();
        let peak = peak.clone();
        async move {
            let now = active.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(a.ms)).await;
            active.fetch_sub(1, Ordering::SeqCst);
            Ok(ToolOutput::text(format!("slept {}", a.ms)))
        }
    })
    .read_only(read_only)
    .into_arc()
}

pub fn context(tools: Vec<Arc<dyn Tool>>) -> AgentContext {
    AgentContext::new("You are a test.").with_tools(ToolSet::new(tools))
}

pub fn tool_result_texts(events: &[AgentEvent]) -> Vec<(String, String, bool)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                result,
                is_error,
                ..
            } => Some((tool_call_id.clone(), result.text_content(), *is_error)),
            _ => None,
        })
        .collect()
}

pub fn failing(msg: &str) -> Result<ToolOutput, ToolError> {
    Err(ToolError::failed(msg))
}

/// `(tool call id, text)` of every tool result among `messages`, in order.
pub fn tool_results_of(messages: &[makai_agent::AgentMessage]) -> Vec<(String, String)> {
    messages
        .iter()
        .filter_map(|m| m.as_tool_result())
        .map(|r| (r.tool_call_id.clone(), r.text_content()))
        .collect()
}

/// The events of `stream` up to and including the next `agent_end`.
pub async fn events_until_end(stream: &mut makai_agent::EventStream) -> Vec<AgentEvent> {
    use futures::StreamExt;
    let mut events = Vec::new();
    while let Some(e) = stream.next().await {
        let end = e.kind() == "agent_end";
        events.push(e);
        if end {
            break;
        }
    }
    events
}
