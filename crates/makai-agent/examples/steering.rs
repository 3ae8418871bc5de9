//! Steering and follow-ups: talking to an agent while it works.
//!
//! ```text
//! cargo run -p makai-agent --example steering
//! ```
//!
//! The scripted model (makai-mockllm on 127.0.0.1) asks for three slow tool calls.
//! While the first one runs, another task steers the agent: the remaining calls
//! are skipped (each gets the result `Skipped due to queued user message.`) and
//! the steering message goes to the model next. A follow-up queued at the start
//! runs once the agent would otherwise stop.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use makai_agent::makai_ai::{Api, Model};
use makai_agent::{
    Agent, AgentEvent, AgentLoopConfig, InProcessClient, ToolOutput, ToolSet, TypedTool,
};
use makai_mockllm::{MockServer, Scenario, ScriptedResponse};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Step {
    /// Which step to run.
    name: String,
}

#[tokio::main]
async fn main() -> ExitCode {
    let scenario = Scenario::new()
        .push(
            ScriptedResponse::text("Running the three steps.")
                .with_tool_call("s1", "step", r#"{"name":"build"}"#)
                .with_tool_call("s2", "step", r#"{"name":"test"}"#)
                .with_tool_call("s3", "step", r#"{"name":"deploy"}"#),
        )
        .push(ScriptedResponse::text(
            "Understood: I stopped after the build and will not deploy.",
        ))
        .push(ScriptedResponse::text("Summary: only the build ran."));
    let server = match MockServer::start(scenario).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("could not start the scripted server: {e}");
            return ExitCode::FAILURE;
        }
    };
    let step = TypedTool::new("step", "Runs a build step.", |a: Step, ctx| async move {
        // Long work that honours cancellation.
        tokio::select! {
            _ = ctx.cancel_token().cancelled() => Ok(ToolOutput::text(format!("{} cancelled", a.name))),
            _ = tokio::time::sleep(Duration::from_millis(300)) => Ok(ToolOutput::text(format!("{} ok", a.name))),
        }
    })
    .into_arc();
    let model = Model::custom(
        Api::AnthropicMessages,
        "mock",
        "mock-model",
        server.base_url_v1(),
    );
    let agent = Agent::new(AgentLoopConfig::new(
        model,
        Arc::new(InProcessClient::new()),
    ))
    .with_tools(ToolSet::new([step]));

    // A UI-like task: print events; steer as soon as the first tool starts.
    let mut events = agent.subscribe_stream();
    let ui_agent = agent.clone();
    let ui = tokio::spawn(async move {
        let mut steered = false;
        while let Some(e) = events.next().await {
            match &e {
                AgentEvent::ToolExecutionStart { tool_call_id, .. } => {
                    println!("tool {tool_call_id} started");
                    if !steered {
                        steered = true;
                        ui_agent.steer("Stop after the build, do not deploy.");
                    }
                }
                AgentEvent::ToolExecutionEnd {
                    tool_call_id,
                    result,
                    ..
                } => println!("tool {tool_call_id}: {}", result.text_content()),
                AgentEvent::QueueUpdate {
                    steering,
                    follow_up,
                } => println!("queues: steering={steering:?} follow-up={follow_up:?}"),
                AgentEvent::MessageEnd { message } if message.is_assistant() => {
                    println!("assistant: {}", message.text())
                }
                AgentEvent::AgentEnd { end_reason, .. } => {
                    println!("run ended: {}", end_reason.describe());
                    break;
                }
                _ => {}
            }
        }
    });

    agent.follow_up("Then summarize what ran.");
    let outcome = agent.prompt("Build, test and deploy.").await;
    let _ = ui.await;
    match outcome {
        Ok(o) => {
            println!("{} messages added in {} turns", o.messages.len(), o.turns);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("the run failed: {e}");
            ExitCode::FAILURE
        }
    }
}
