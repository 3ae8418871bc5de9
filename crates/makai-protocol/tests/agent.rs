//! The agent on the remote client behaves exactly as on the in-process one;
//! agent sessions (RPC commands and events) over the protocol.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::Arc;

use async_trait::async_trait;
use common::*;
use futures::StreamExt;
use serde_json::{Value, json};

use makai_agent::{
    Agent, AgentContext, AgentEvent, AgentLoopConfig, CancellationToken, InProcessClient,
    ProtocolClient, Tool, ToolContext, ToolError, ToolOutput, ToolSet, agent_loop,
};
use makai_ai::{Api, RetryPolicy};
use makai_mockllm::ScriptedResponse;
use makai_protocol::testing::EchoSession;
use makai_protocol::{ClientError, ErrorCode, RemoteProtocolClient, ServerConfig};

struct Echo(makai_agent::ToolSpec);

#[async_trait]
impl Tool for Echo {
    fn spec(&self) -> &makai_agent::ToolSpec {
        &self.0
    }
    async fn execute(
        &self,
        _id: &str,
        args: Value,
        _ctx: ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(args["text"].as_str().unwrap_or_default()))
    }
}

fn tools() -> ToolSet {
    let schema =
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
    ToolSet::new(vec![Arc::new(Echo(makai_agent::ToolSpec::new(
        "echo",
        "Returns its text.",
        schema,
    ))) as Arc<dyn Tool>])
}

fn scripts() -> Vec<ScriptedResponse> {
    vec![
        ScriptedResponse::text("Hello there, how can I help?"),
        ScriptedResponse::new()
            .with_thinking("I should echo.")
            .with_text("Let me echo that.")
            .with_tool_call("call_1", "echo", r#"{"text":"pong"}"#),
        ScriptedResponse::text("The tool said pong."),
    ]
}

/// JSON of the events with wall-clock timestamps and durations removed (a
/// tool's `durationMs` is 0 or 6 as the machine's load has it).
fn normalized(events: &[AgentEvent]) -> Vec<Value> {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                m.remove("timestamp");
                m.remove("durationMs");
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    events
        .iter()
        .map(|e| {
            let mut v = serde_json::to_value(e).unwrap();
            strip(&mut v);
            v
        })
        .collect()
}

async fn run_loop(client: Arc<dyn ProtocolClient>, base_url: String, prompt: &str) -> Vec<Value> {
    let mut config = AgentLoopConfig::new(model_for(base_url, Api::AnthropicMessages), client);
    config.options.retry = RetryPolicy::none();
    let context = AgentContext::new("You are a test.").with_tools(tools());
    let run = agent_loop(
        vec![prompt.into()],
        context,
        config,
        CancellationToken::new(),
    );
    let (events, outcome) = tokio::time::timeout(WAIT, run.collect())
        .await
        .unwrap()
        .unwrap();
    assert!(outcome.turns >= 1);
    normalized(&events)
}

/// agent_loop: a text reply, then a turn with thinking, text and one tool
/// call, give the same events over the wire as in process.
#[tokio::test]
async fn agent_loop_is_the_same_over_the_wire() {
    let local_llm = mock(scripts()).await;
    let remote_llm = mock(scripts()).await;
    let server = start(ServerConfig::ephemeral(TOKEN)).await;
    let remote: Arc<dyn ProtocolClient> = Arc::new(client(&server.ws_url()).await);
    for prompt in ["hi", "ping"] {
        let local = run_loop(
            Arc::new(InProcessClient::new()),
            local_llm.base_url_v1(),
            prompt,
        )
        .await;
        let over_wire = run_loop(remote.clone(), remote_llm.base_url_v1(), prompt).await;
        assert_eq!(over_wire, local, "prompt {prompt}");
        let types: Vec<&str> = local.iter().map(|e| e["type"].as_str().unwrap()).collect();
        if prompt == "ping" {
            assert!(types.contains(&"tool_execution_end"), "{types:?}");
        }
    }
    // The LLM saw the same requests.
    let bodies = |s: &makai_mockllm::MockServer| {
        s.requests()
            .iter()
            .map(|r| r.body.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(bodies(&remote_llm), bodies(&local_llm));
}

/// The stateful Agent ends with the same transcript on both clients.
#[tokio::test]
async fn agent_transcript_is_the_same_over_the_wire() {
    async fn transcript(client: Arc<dyn ProtocolClient>, base_url: String) -> Vec<Value> {
        let mut config = AgentLoopConfig::new(model_for(base_url, Api::OpenAiCompletions), client);
        config.options.retry = RetryPolicy::none();
        let agent = Agent::new(config)
            .with_system_prompt("You are a test.")
            .with_tools(tools());
        agent.prompt("hi").await.unwrap();
        agent.prompt("ping").await.unwrap();
        let messages: Vec<Value> = agent
            .messages()
            .iter()
            .map(|m| serde_json::to_value(m).unwrap())
            .collect();
        let mut v = Value::Array(messages);
        fn strip(v: &mut Value) {
            match v {
                Value::Object(m) => {
                    m.remove("timestamp");
                    m.values_mut().for_each(strip);
                }
                Value::Array(a) => a.iter_mut().for_each(strip),
                _ => {}
            }
        }
        strip(&mut v);
        v.as_array().unwrap().clone()
    }
    let local_llm = mock(scripts()).await;
    let remote_llm = mock(scripts()).await;
    let server = start(ServerConfig::ephemeral(TOKEN)).await;
    let remote = Arc::new(client(&server.tcp_url().unwrap()).await);
    let local = transcript(Arc::new(InProcessClient::new()), local_llm.base_url_v1()).await;
    let over_wire = transcript(remote, remote_llm.base_url_v1()).await;
    assert_eq!(
        local.len(),
        6,
        "user, assistant, user, assistant+call, result, assistant"
    );
    assert_eq!(over_wire, local);
}

/// Sends one session command and decodes its response.
async fn call(remote: &RemoteProtocolClient, command: Value) -> Value {
    remote.rpc(&command).await.unwrap().decode().unwrap()
}

/// rpc_command reaches the session handler; its events arrive as agent_event.
#[tokio::test]
async fn agent_session_commands_and_events() {
    let session = Arc::new(EchoSession::new());
    let server = start(ServerConfig::ephemeral(TOKEN).with_session(session.clone())).await;
    let remote = client(&server.ws_url()).await;
    let mut events = remote.subscribe().await.unwrap();
    eventually("subscribed", || session.subscribers() == 1).await;
    let resp = call(
        &remote,
        json!({"type": "prompt", "message": "one two three", "id": "r1"}),
    )
    .await;
    assert_eq!(
        resp,
        json!({"type": "response", "command": "prompt", "success": true, "id": "r1"})
    );
    let mut got = Vec::new();
    while got.len() < 5 {
        got.push(
            tokio::time::timeout(WAIT, events.next())
                .await
                .unwrap()
                .unwrap()
                .unwrap()
                .decode::<Value>()
                .unwrap(),
        );
    }
    let types: Vec<&str> = got.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "agent_start",
            "message_update",
            "message_update",
            "message_update",
            "agent_end"
        ]
    );
    assert_eq!(got[2]["delta"], "two");
    let state = call(&remote, json!({"type": "get_state"})).await;
    assert_eq!(state["data"]["prompts"], 1);
    let bad = call(&remote, json!({"type": "warp"})).await;
    assert_eq!(bad["success"], false);
    // Many calls in flight at once on one connection, each answered on its own id.
    let calls = (0..50).map(|i| {
        let remote = remote.clone();
        async move { call(&remote, json!({"type": "get_state", "id": i})).await }
    });
    let answers = futures::future::join_all(calls).await;
    for (i, a) in answers.iter().enumerate() {
        assert_eq!(a["id"], i);
    }
    // Unsubscribing ends the server-side subscription.
    drop(events);
    eventually("unsubscribed", || {
        session.subscribers() == 0 && server.stats().streams == 0
    })
    .await;
}

#[tokio::test]
async fn without_a_session_rpc_is_refused_clearly() {
    let server = start(ServerConfig::ephemeral(TOKEN)).await;
    let remote = client(&server.ws_url()).await;
    let err = remote.rpc(&json!({"type": "get_state"})).await.unwrap_err();
    let ClientError::Server { code, message } = err else {
        panic!("{err:?}")
    };
    assert_eq!(code, ErrorCode::NoSession);
    assert!(message.contains("no agent session"), "{message}");
    let mut events = remote.subscribe().await.unwrap();
    let end = tokio::time::timeout(WAIT, events.next()).await.unwrap();
    assert!(
        matches!(end, Some(Err(ClientError::StreamEnded(ref m))) if m.contains("no agent session")),
        "{end:?}"
    );
}
