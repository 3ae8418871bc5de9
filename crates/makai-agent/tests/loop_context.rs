//! What the model sees of the transcript: `transform_context`, and tools a
//! tool declares for the next model call.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::Arc;

use async_trait::async_trait;
use common::*;
use makai_agent::makai_ai::Message;
use makai_agent::testing::{ScriptedClient, ScriptedResponse};
use makai_agent::{
    AgentHooks, AgentMessage, CancellationToken, ToolContext, ToolOutput, TypedTool, agent_loop,
};
use serde_json::json;

/// Sends the model only the newest message.
struct NewestOnly;

#[async_trait]
impl AgentHooks for NewestOnly {
    async fn transform_context(
        &self,
        messages: &[AgentMessage],
        _cancel: &CancellationToken,
    ) -> Option<Vec<AgentMessage>> {
        messages.last().map(|m| vec![m.clone()])
    }
}

#[tokio::test]
async fn transform_context_decides_what_the_model_sees_and_the_transcript_keeps_everything() {
    let client = ScriptedClient::new([ScriptedResponse::text("second answer")]);
    let mut cfg = config(client.clone());
    cfg.hooks = Arc::new(NewestOnly);
    let ctx = context(vec![]).with_messages(vec!["first question".into(), "earlier".into()]);
    let (events, outcome) = agent_loop(
        vec!["second question".into()],
        ctx,
        cfg,
        CancellationToken::new(),
    )
    .collect()
    .await
    .unwrap();
    assert_contract(&events);
    let sent = &client.requests()[0].context.messages;
    assert_eq!(sent.len(), 1, "{sent:?}");
    let Message::User(u) = &sent[0] else {
        panic!("{sent:?}")
    };
    assert_eq!(AgentMessage::from(u.clone()).text(), "second question");
    assert_eq!(outcome.messages.len(), 2);
    assert_eq!(outcome.messages[1].text(), "second answer");
    let kept: Vec<String> = outcome.context.messages.iter().map(|m| m.text()).collect();
    assert_eq!(
        kept,
        [
            "first question",
            "earlier",
            "second question",
            "second answer"
        ]
    );
}

#[tokio::test]
async fn without_a_transform_the_model_sees_the_whole_transcript() {
    let client = ScriptedClient::new([ScriptedResponse::text("ok")]);
    let ctx = context(vec![]).with_messages(vec!["first question".into()]);
    let outcome = agent_loop(
        vec!["second question".into()],
        ctx,
        config(client.clone()),
        CancellationToken::new(),
    )
    .join()
    .await
    .unwrap();
    let sent: Vec<String> = client.requests()[0]
        .context
        .messages
        .iter()
        .map(|m| AgentMessage::from(m.clone()).text())
        .collect();
    assert_eq!(sent, ["first question", "second question"]);
    assert_eq!(outcome.messages.len(), 2);
}

/// A tool that declares `echo` (which the run was not given) for the next
/// model call, as pi's `tool_search` does.
fn loader_tool() -> Arc<dyn makai_agent::Tool> {
    TypedTool::new(
        "loader",
        "Declares echo.",
        |_a: EchoArgs, ctx: ToolContext| async move {
            let declared = ctx.declare_tools(vec![echo_tool(), echo_tool()]);
            Ok(ToolOutput::text(format!("declared: {declared}")))
        },
    )
    .read_only(true)
    .into_arc()
}

#[tokio::test]
async fn a_tool_declares_tools_for_the_next_model_call_and_the_transcript_records_them() {
    let client = ScriptedClient::new([
        ScriptedResponse::tool_call("c1", "loader", json!({"text": ""})),
        ScriptedResponse::tool_call("c2", "echo", json!({"text": "now declared"})),
        ScriptedResponse::text("ok"),
    ]);
    let (events, outcome) = agent_loop(
        vec!["go".into()],
        context(vec![loader_tool()]),
        config(client.clone()),
        CancellationToken::new(),
    )
    .collect()
    .await
    .unwrap();
    assert_contract(&events);
    let names = |i: usize| -> Vec<String> {
        client.requests()[i]
            .context
            .tools
            .iter()
            .map(|t| t.name.clone())
            .collect()
    };
    assert_eq!(names(0), ["loader"]);
    assert_eq!(
        names(1),
        ["loader", "echo"],
        "declared once, from the next call"
    );
    let results = tool_result_texts(&events);
    assert_eq!(results[0].1, "declared: true");
    assert_eq!(results[1], ("c2".into(), "now declared".into(), false));
    // The transcript records the change after the turn's results, as pi's
    // system message, which the model never reads as a message.
    let roles: Vec<&str> = outcome.messages.iter().map(|m| m.role()).collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "toolResult",
            "system",
            "assistant",
            "toolResult",
            "assistant"
        ]
    );
    let AgentMessage::System(system) = &outcome.messages[3] else {
        panic!("{:?}", outcome.messages[3]);
    };
    let added = system.tools_added.as_ref().unwrap();
    assert_eq!(added.len(), 1);
    assert_eq!(added[0].name, "echo");
    assert_eq!(added[0].description, "Returns its text.");
    assert_eq!(
        makai_agent::declared_tool_changes(&outcome.messages),
        ["echo"]
    );
    assert!(
        client.requests()[1]
            .context
            .messages
            .iter()
            .all(|m| m.role() != "system")
    );
    // pi's JSON, field for field.
    let json = serde_json::to_value(&outcome.messages[3]).unwrap();
    assert_eq!(json["role"], "system");
    assert_eq!(json["content"], "");
    assert_eq!(json["toolsAdded"][0]["name"], "echo");
    let back: AgentMessage = serde_json::from_value(json).unwrap();
    assert_eq!(back, outcome.messages[3]);
    assert!(outcome.context.tools.get("echo").is_some());
    // Outside a run nothing is declared.
    assert!(!ToolContext::detached("x", ".").declare_tools(vec![echo_tool()]));
}

#[tokio::test]
async fn an_agent_keeps_the_tools_a_run_declared_for_its_next_run() {
    let client = ScriptedClient::new([
        ScriptedResponse::tool_call("c1", "loader", json!({"text": ""})),
        ScriptedResponse::text("loaded"),
        ScriptedResponse::text("still there"),
    ]);
    let agent = makai_agent::Agent::new(config(client.clone()))
        .with_tools(makai_agent::ToolSet::new(vec![loader_tool()]));
    agent.prompt("load").await.unwrap();
    agent.prompt("again").await.unwrap();
    let names: Vec<String> = client.requests()[2]
        .context
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(names, ["loader", "echo"]);
    assert!(agent.state().tools.get("echo").is_some());
}
