//! `tool_search` in an agent run against the scripted server: what it finds
//! a tool by, and what it declares for the next model call.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use makai_agent::makai_ai::{Api, Model, RetryPolicy};
use makai_agent::{
    AgentContext, AgentLoopConfig, AgentMessage, CancellationToken, EndReason, InProcessClient,
    Tool, ToolContext, ToolError, ToolOutput, ToolSet, ToolSpec, agent_loop,
};
use makai_coding::tools::codemode::IndirectTools;
use makai_coding::tools::tool_search::ToolSearchTool;
use makai_mockllm::{MockServer, RecordedRequest, Scenario, ScriptedResponse};

use crate::common::subagents::tool_names;
use serde_json::{Value, json};

/// An MCP-style tool that answers with its own name.
struct Named(ToolSpec);

#[async_trait]
impl Tool for Named {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    async fn execute(&self, _: &str, _: Value, _: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!("{} ran", self.0.name)))
    }
}

fn named(name: &str, description: &str, parameters: Value) -> Arc<dyn Tool> {
    Arc::new(Named(ToolSpec::new(name, description, parameters)))
}

fn tool_result(r: &RecordedRequest) -> String {
    r.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].to_string())
        .collect()
}

/// pi 1.5.1 (#11803): two tools that read alike are told apart by what
/// their arguments are called and say, also behind a local `$ref` (MCP
/// input schemas keep their models in `$defs`); a definition nothing
/// references does not make a tool a match.
#[tokio::test]
async fn tool_search_finds_a_tool_by_its_arguments_behind_a_ref() {
    let issue = named(
        "mcp__tracker__create",
        "Create an entry.",
        json!({
            "type": "object",
            "properties": {"entry": {"$ref": "#/$defs/Issue"}},
            "required": ["entry"],
            "$defs": {
                "Issue": {"type": "object", "properties": {
                    "milestone": {"type": "string", "description": "The release train it ships in"},
                    "parent": {"$ref": "#/$defs/Issue"}
                }}
            }
        }),
    );
    let label = named(
        "mcp__tracker__add",
        "Create an entry.",
        json!({
            "type": "object",
            "properties": {"colourHex": {"type": "string", "description": "Six hex digits"}},
            "$defs": {"Unused": {"properties": {"milestone": {"description": "release train"}}}}
        }),
    );
    let indirect = IndirectTools::default();
    indirect.set(vec![issue, label], Vec::new());
    let server = MockServer::start(
        Scenario::new()
            .push(ScriptedResponse::tool_call(
                "s1",
                "tool_search",
                json!({"query": "release train milestone"}).to_string(),
            ))
            .push(ScriptedResponse::tool_call(
                "s2",
                "tool_search",
                json!({"query": "colour"}).to_string(),
            ))
            .push(ScriptedResponse::text("Both loaded.")),
    )
    .await
    .unwrap();
    let model = Model::custom(
        Api::OpenAiCompletions,
        "mock",
        "mock-model",
        server.base_url_v1(),
    );
    let mut cfg = AgentLoopConfig::new(model, Arc::new(InProcessClient::new()));
    cfg.options.retry = RetryPolicy::none();
    let tools = ToolSet::new(vec![ToolSearchTool::new(indirect).into_arc()]);
    let run = agent_loop(
        vec![AgentMessage::user("Open a ticket for the next release.")],
        AgentContext::new("You track work.").with_tools(tools),
        cfg,
        CancellationToken::new(),
    );
    let (_, outcome) = tokio::time::timeout(Duration::from_secs(30), run.collect())
        .await
        .expect("the run ended in time")
        .unwrap();
    assert_eq!(outcome.end_reason, EndReason::Completed);

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    // The first search loads only the tool whose referenced model has the
    // words; the other's unreferenced definition does not count.
    assert_eq!(
        tool_names(&requests[1]),
        ["tool_search", "mcp__tracker__create"],
        "{}",
        tool_result(&requests[1])
    );
    assert!(
        tool_result(&requests[1]).contains("Loaded 1 tool"),
        "{}",
        tool_result(&requests[1])
    );
    // A camel-case property name is found by its parts.
    assert_eq!(
        tool_names(&requests[2]),
        ["tool_search", "mcp__tracker__create", "mcp__tracker__add"]
    );
}
