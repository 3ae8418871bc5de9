//! The fixture of the `task` tool tests: a working folder with agent specs,
//! a session folder, the scripted server, and helpers that tell parent and
//! child requests apart (by their system prompts and task texts).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use makai_agent::makai_ai::{Api, Model, ModelCost, RetryPolicy};
use makai_agent::{
    AgentContext, AgentEvent, AgentLoopConfig, AgentMessage, AgentRun, CancellationToken,
    InProcessClient, RunOutcome, Tool, ToolSet, agent_loop,
};
use makai_coding::agent_spec::AgentCatalog;
use makai_coding::session::{Session, SharedSession};
use makai_coding::subagent::{LinkedSessions, TaskDetails, TaskEnv, TaskTool};
use makai_coding::tools::{ToolEnv, tools_by_names};
use makai_mockllm::{MockServer, RecordedRequest, Scenario, ScriptedResponse as Mock};
use serde_json::Value;

pub const PARENT: &str = "PARENT-AGENT";

/// A working folder with agent specs, a session folder and the server.
pub struct Fixture {
    pub work: tempfile::TempDir,
    pub sessions: tempfile::TempDir,
    pub session: SharedSession,
    pub server: MockServer,
}

impl Fixture {
    pub async fn new(
        responder: impl Fn(&RecordedRequest) -> Mock + Send + Sync + 'static,
    ) -> Fixture {
        let work = tempfile::tempdir().unwrap();
        let sessions = tempfile::tempdir().unwrap();
        let agents = work.path().join(".makai/agents");
        std::fs::create_dir_all(&agents).unwrap();
        std::fs::write(
            agents.join("explore.toml"),
            "description = \"Reads and searches, never edits.\"\nsystem_prompt = \"EXPLORER spec.\"\ntools = [\"read\", \"ls\", \"grep\"]\n",
        )
        .unwrap();
        std::fs::write(
            agents.join("scribe.toml"),
            "system_prompt = \"SCRIBE spec.\"\ntools = [\"read\", \"write\", \"bash\"]\n",
        )
        .unwrap();
        std::fs::write(
            agents.join("delegator.toml"),
            "system_prompt = \"DELEGATOR spec.\"\ntools = [\"read\", \"task\"]\n",
        )
        .unwrap();
        std::fs::write(
            agents.join("deep.toml"),
            "system_prompt = \"DEEP spec.\"\ntools = [\"read\", \"task\"]\n[subagents]\nmax_depth = 2\n",
        )
        .unwrap();
        std::fs::write(
            agents.join("thrifty.toml"),
            "system_prompt = \"THRIFTY spec.\"\ntools = [\"read\"]\n[limits]\nmax_cost = 0.001\n",
        )
        .unwrap();
        std::fs::write(
            work.path().join("notes.txt"),
            "The code word is SECRET-42.\n",
        )
        .unwrap();
        let session = SharedSession::new(Session::create(
            sessions.path(),
            work.path().display().to_string(),
        ));
        let server = MockServer::start(Scenario::from_responder(Arc::new(responder)))
            .await
            .unwrap();
        Fixture {
            work,
            sessions,
            session,
            server,
        }
    }

    pub fn model(&self) -> Model {
        Model::custom(
            Api::OpenAiCompletions,
            "mock",
            "mock-model",
            self.server.base_url_v1(),
        )
    }

    pub fn task_tool(&self) -> Arc<dyn Tool> {
        Arc::new(TaskTool::new(TaskEnv {
            catalog: AgentCatalog::load(self.work.path(), None),
            models: None,
            sessions: Arc::new(LinkedSessions(self.session.clone())),
            cwd: self.work.path().to_path_buf(),
            context_files: Default::default(),
            policy: Default::default(),
        }))
    }

    /// The parent's tools: the named built-ins in `env`, plus `task`.
    pub fn tools(&self, env: ToolEnv, names: &str) -> ToolSet {
        let mut tools = tools_by_names(env, names).unwrap();
        tools.push(self.task_tool());
        ToolSet::new(tools)
    }

    pub fn config(&self) -> AgentLoopConfig {
        let mut cfg = AgentLoopConfig::new(self.model(), Arc::new(InProcessClient::new()));
        cfg.options.retry = RetryPolicy::none();
        cfg.cwd = self.work.path().to_path_buf();
        cfg
    }

    pub fn start(&self, tools: ToolSet, cfg: AgentLoopConfig) -> AgentRun {
        agent_loop(
            vec![AgentMessage::user("Please delegate.")],
            AgentContext::new(format!("{PARENT} system prompt.")).with_tools(tools),
            cfg,
            CancellationToken::new(),
        )
    }

    pub fn child_files(&self) -> Vec<PathBuf> {
        let parent = self.session.lock().path().unwrap().to_path_buf();
        let mut files: Vec<PathBuf> = std::fs::read_dir(self.sessions.path())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| *p != parent)
            .collect();
        files.sort();
        files
    }
}

pub async fn finish(run: AgentRun) -> (Vec<AgentEvent>, RunOutcome) {
    tokio::time::timeout(Duration::from_secs(30), run.collect())
        .await
        .expect("the run ended in time")
        .unwrap()
}

pub fn is_parent(r: &RecordedRequest) -> bool {
    r.raw_body.contains(PARENT)
}

pub fn has_tool_result(r: &RecordedRequest) -> bool {
    r.body["messages"]
        .as_array()
        .is_some_and(|ms| ms.iter().any(|m| m["role"] == "tool"))
}

pub fn tool_names(r: &RecordedRequest) -> Vec<String> {
    r.body["tools"]
        .as_array()
        .map(|ts| {
            ts.iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// The parent: first a `task` call with `args`, then a closing answer.
pub fn parent_turn(r: &RecordedRequest, args: Value) -> Mock {
    if has_tool_result(r) {
        Mock::text("Parent is done.")
    } else {
        Mock::tool_call("t1", "task", args.to_string())
    }
}

/// The `task` call's end event: its result text, error flag and details.
pub fn task_end(
    events: &[AgentEvent],
) -> (
    String,
    bool,
    TaskDetails,
    Option<makai_agent::makai_ai::Usage>,
) {
    events
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolExecutionEnd {
                tool_name,
                result,
                is_error,
                ..
            } if tool_name == "task" => Some((
                result.text_content(),
                *is_error,
                serde_json::from_value(result.details.clone()).unwrap(),
                result.usage.as_deref().copied(),
            )),
            _ => None,
        })
        .expect("a task call ended")
}

pub fn read_session(path: &Path) -> Session {
    Session::open(path).unwrap()
}

/// $100 per million tokens: a hundredth of a cent a token.
pub fn priced(mut m: Model) -> Model {
    m.cost = ModelCost {
        input: 100.0,
        output: 100.0,
        ..Default::default()
    };
    m.max_tokens = 50;
    m
}
