//! The `task` tool driven by a real model behind llama-cpp-python's
//! OpenAI-compatible server (`scripts/real-model.sh`; `.ci/run` starts it
//! through `scripts/ci-real-model.sh`).
//!
//! Gated: skipped, saying so, unless MAKAI_REAL_MODEL_URL
//! (`http://127.0.0.1:PORT`) is set; MAKAI_REAL_MODEL_NAME names the model.
//!
//! The model (Qwen2.5-Coder-0.5B) calls a tool only when `tool_choice` names
//! it, so the parent's first turn is forced to `task`; the child runs
//! unforced and answers in text. The test asserts only what that guarantees:
//! one `task` call, a child that ran the same loop against the same server
//! and answered, its transcript in its own session file naming the parent's,
//! and its usage carried on the result (this server streams no token
//! counts, so only its presence is checked).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use makai_agent::makai_ai::testing::RealModelServer;
use makai_agent::makai_ai::{Model, ToolChoice};
use makai_agent::{
    AgentContext, AgentEvent, AgentLoopConfig, AgentMessage, CancellationToken, EndReason,
    InProcessClient, ToolSet, agent_loop,
};
use makai_coding::agent_spec::AgentCatalog;
use makai_coding::session::{Session, SharedSession, subagent_links};
use makai_coding::subagent::{LinkedSessions, SubagentStatus, TaskDetails, TaskEnv, TaskTool};
use makai_coding::tools::{ToolEnv, tools_by_names};

/// Bound for the whole run (three or four short model calls on a busy
/// machine).
const RUN_TIMEOUT: Duration = Duration::from_secs(420);

fn real_model() -> Option<Model> {
    let server =
        RealModelServer::for_test("a_forced_task_call_runs_a_child_on_the_real_model_end_to_end")?;
    let name = server
        .name
        .clone()
        .unwrap_or_else(|| "qwen2.5-coder-0.5b-instruct-q4_k_m".into());
    Some(server.model(name))
}

#[tokio::test]
async fn a_forced_task_call_runs_a_child_on_the_real_model_end_to_end() {
    let Some(model) = real_model() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let sessions = tempfile::tempdir().unwrap();
    std::fs::write(
        work.path().join("secret.txt"),
        "The secret word is: pineapple\n",
    )
    .unwrap();
    let session = SharedSession::new(Session::create(
        sessions.path(),
        work.path().display().to_string(),
    ));
    let task = TaskTool::new(TaskEnv {
        catalog: AgentCatalog::load(work.path(), None),
        models: None,
        sessions: Arc::new(LinkedSessions(session.clone())),
        cwd: work.path().to_path_buf(),
        context_files: Default::default(),
        policy: Default::default(),
    });
    let mut tools = tools_by_names(ToolEnv::new(work.path()), "read,ls").unwrap();
    tools.push(Arc::new(task));

    let config = AgentLoopConfig::builder(model, Arc::new(InProcessClient::new()))
        .tool_choice(ToolChoice::Tool("task".into()))
        .max_turns(3)
        .max_tokens(200)
        .temperature(0.0)
        .max_wall_time(RUN_TIMEOUT)
        .cwd(work.path())
        .build();
    let run = agent_loop(
        vec![AgentMessage::user(
            "Use the task tool. Set its `task` argument to: \"Say hello in one short sentence.\"",
        )],
        AgentContext::new(
            "You are a helpful assistant. Delegate work with the task tool: give it a `task` string.",
        )
        .with_tools(ToolSet::new(tools)),
        config,
        CancellationToken::new(),
    );
    let (events, outcome) =
        tokio::time::timeout(RUN_TIMEOUT + Duration::from_secs(10), run.collect())
            .await
            .unwrap_or_else(|_| panic!("the agent run did not end within {RUN_TIMEOUT:?}"))
            .unwrap();

    let calls: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecutionStart {
                tool_name, args, ..
            } => Some((tool_name.clone(), args.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 1, "one forced call: {calls:?}");
    assert_eq!(calls[0].0, "task");
    let (result, is_error) = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolExecutionEnd {
                tool_name,
                result,
                is_error,
                ..
            } if tool_name == "task" => Some((result.clone(), *is_error)),
            _ => None,
        })
        .expect("the task call ended");
    assert!(
        !is_error,
        "the child answered (arguments {}): {}",
        calls[0].1,
        result.text_content()
    );
    let details: TaskDetails = serde_json::from_value(result.details.clone()).unwrap();
    assert_eq!(details.agents.len(), 1, "{details:?}");
    let child = &details.agents[0];
    assert_eq!(child.agent, "worker");
    assert_eq!(child.status, SubagentStatus::Completed, "{child:?}");
    assert!(child.turns >= 1, "{child:?}");
    assert!(
        child
            .answer
            .as_deref()
            .is_some_and(|a| !a.trim().is_empty()),
        "{child:?}"
    );
    // This server streams no usage, so the figures may be zero; the result
    // still carries the child's usage.
    assert!(result.usage.is_some(), "the child's usage is on the result");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::ToolExecutionUpdate { tool_name, .. } if tool_name == "task")),
        "the child's progress reached the parent's stream"
    );
    assert!(
        matches!(
            outcome.end_reason,
            EndReason::Completed | EndReason::MaxTurns { .. }
        ),
        "{outcome:?}"
    );

    // The child's transcript: its own session file, naming the parent's.
    let links = subagent_links(&session.lock());
    assert_eq!(links.len(), 1);
    let child_session = Session::open(&links[0].session_file).unwrap();
    let parent_path = session.lock().path().unwrap().display().to_string();
    assert_eq!(
        child_session.header().parent_session.as_deref(),
        Some(parent_path.as_str())
    );
    assert!(
        child_session
            .context()
            .messages
            .iter()
            .any(|m| m.as_assistant().is_some()),
        "the child's answer is in its file"
    );
}
