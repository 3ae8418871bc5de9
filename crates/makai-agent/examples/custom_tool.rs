//! Two ways to write a tool, run through the agent against a local scripted server.
//!
//! ```text
//! cargo run -p makai-agent --example custom_tool
//! ```
//!
//! - `word_count` implements the [`Tool`] trait by hand (JSON Schema written out,
//!   arguments read from JSON, progress reported with `ctx.update`).
//! - `shout` is a [`TypedTool`]: its schema is derived from a Rust struct and it
//!   receives the deserialized struct.
//!
//! The model is makai-mockllm on 127.0.0.1, scripted to call both tools and then
//! answer, so the example needs no API key. Point `Model` at a real provider to
//! use the same tools with a real model.

use std::process::ExitCode;
use std::sync::Arc;

use async_trait::async_trait;
use makai_agent::makai_ai::{Api, Model};
use makai_agent::{
    Agent, AgentEvent, AgentLoopConfig, InProcessClient, Tool, ToolContext, ToolError, ToolOutput,
    ToolSet, ToolSpec, TypedTool,
};
use makai_mockllm::{MockServer, Scenario, ScriptedResponse};
use serde_json::{Value, json};

/// A hand-written tool: counts the words of a text.
struct WordCount {
    spec: ToolSpec,
}

impl WordCount {
    fn new() -> Self {
        let schema = json!({
            "type": "object",
            "properties": {"text": {"type": "string", "description": "The text to count."}},
            "required": ["text"],
            "additionalProperties": false
        });
        WordCount {
            spec: ToolSpec::new("word_count", "Counts the words in a text.", schema)
                .with_label("Word count")
                .with_read_only(true),
        }
    }
}

#[async_trait]
impl Tool for WordCount {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    async fn execute(
        &self,
        _call_id: &str,
        args: Value,
        ctx: ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        // The loop validated `args` against the schema, so `text` is a string.
        let text = args["text"].as_str().unwrap_or_default();
        ctx.update(ToolOutput::text("counting..."));
        let n = text.split_whitespace().count();
        Ok(ToolOutput::text(format!("{n} words")).with_details(json!({"words": n})))
    }
}

/// The arguments of `shout`; the doc comments become schema descriptions.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct ShoutArgs {
    /// What to shout.
    text: String,
    /// How many exclamation marks to add.
    #[serde(default)]
    emphasis: u8,
}

#[tokio::main]
async fn main() -> ExitCode {
    let server = match MockServer::start(
        Scenario::new()
            .push(
                ScriptedResponse::text("Let me check.")
                    .with_tool_call("call_1", "word_count", r#"{"text":"the quick brown fox"}"#)
                    .with_tool_call("call_2", "shout", r#"{"text":"done","emphasis":3}"#),
            )
            .push(ScriptedResponse::text("The text has 4 words. DONE!!!")),
    )
    .await
    {
        Ok(s) => s,
        Err(e) => {
            eprintln!("could not start the scripted server: {e}");
            return ExitCode::FAILURE;
        }
    };

    let shout = TypedTool::new(
        "shout",
        "Returns the text in capitals.",
        |a: ShoutArgs, _ctx| async move {
            Ok(ToolOutput::text(format!(
                "{}{}",
                a.text.to_uppercase(),
                "!".repeat(a.emphasis as usize)
            )))
        },
    )
    .read_only(true);
    println!(
        "derived schema of shout: {}",
        serde_json::to_string(shout.parameters()).unwrap_or_default()
    );

    let model = Model::custom(
        Api::OpenAiCompletions,
        "mock",
        "mock-model",
        server.base_url_v1(),
    );
    let agent = Agent::new(AgentLoopConfig::new(
        model,
        Arc::new(InProcessClient::new()),
    ))
    .with_system_prompt("You are a helpful assistant with tools.")
    .with_tools(ToolSet::new([
        Arc::new(WordCount::new()) as Arc<dyn Tool>,
        shout.into_arc(),
    ]));

    let _printer = agent.subscribe(|e| match e {
        AgentEvent::ToolExecutionStart {
            tool_name, args, ..
        } => println!("-> {tool_name} {args}"),
        AgentEvent::ToolExecutionUpdate { partial_result, .. } => {
            println!("   ... {}", partial_result.text_content())
        }
        AgentEvent::ToolExecutionEnd {
            tool_name,
            result,
            is_error,
            ..
        } => println!(
            "<- {tool_name}: {} (error: {is_error})",
            result.text_content()
        ),
        _ => {}
    });

    match agent
        .prompt("How many words in 'the quick brown fox'?")
        .await
    {
        Ok(outcome) => {
            let answer = outcome
                .messages
                .last()
                .map(|m| m.text())
                .unwrap_or_default();
            println!("assistant: {answer}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("the run failed: {e}");
            ExitCode::FAILURE
        }
    }
}
