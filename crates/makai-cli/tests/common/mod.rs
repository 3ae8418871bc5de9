//! Helpers for tests that run the built `makai` binary against the scripted server.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub mod node;
pub mod pi_codes;
pub mod pty;
mod rpc;
pub mod tmux;

#[allow(unused_imports)]
pub use rpc::Rpc;

use makai_mockllm::{MockServer, RecordedRequest, Scenario};
use serde_json::{Value, json};

/// The variables naming a session folder (makai's and pi's), which no test
/// inherits from the shell running it.
pub const SESSION_DIR_VARS: [&str; 2] = ["MAKAI_SESSION_DIR", "PI_CODING_AGENT_SESSION_DIR"];

/// Provider key variables removed from every child environment.
pub const KEY_VARS: [&str; 24] = [
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GROQ_API_KEY",
    "OPENROUTER_API_KEY",
    "DEEPSEEK_API_KEY",
    "MISTRAL_API_KEY",
    "XAI_API_KEY",
    "CEREBRAS_API_KEY",
    "TOGETHER_API_KEY",
    "FIREWORKS_API_KEY",
    "COPILOT_GITHUB_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
    "AZURE_OPENAI_API_KEY",
    "AZURE_OPENAI_AD_TOKEN",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_PROFILE",
    "GOOGLE_CLOUD_API_KEY",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "CLOUDSDK_CONFIG",
    "LLAMA_BASE_URL",
    "LLAMA_API_KEY",
];

/// A scripted server running on its own runtime (so tests can block freely).
/// When the test ends without a panic, the server checks every request it
/// received against the wire invariants (each tool result answers a call, no
/// call left unanswered, roles alternate).
pub struct Mock {
    pub server: MockServer,
    _rt: tokio::runtime::Runtime,
}

impl Mock {
    pub fn start(scenario: Scenario) -> Mock {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let server = rt.block_on(MockServer::start(scenario)).unwrap();
        Mock { server, _rt: rt }
    }

    pub fn v1(&self) -> String {
        self.server.base_url_v1()
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.server.requests()
    }

    /// The flags pointing makai at this server.
    pub fn args(&self) -> Vec<String> {
        self.args_for("openai-completions")
    }

    /// The flags pointing makai at this server over wire API `api`.
    pub fn args_for(&self, api: &str) -> Vec<String> {
        vec![
            "--base-url".into(),
            self.v1(),
            "--api".into(),
            api.into(),
            "--model".into(),
            "mock-model".into(),
        ]
    }

    /// Writes `models.json` in `env`'s home: provider `lab` on this server
    /// (Chat Completions, key `k`) with `models`.
    pub fn lab_models(&self, env: &Env, models: Value) {
        std::fs::write(
            env.home.path().join("models.json"),
            json!({"providers": {"lab": {"baseUrl": self.v1(), "api": "openai-completions",
                "apiKey": "k", "models": models}}})
            .to_string(),
        )
        .unwrap();
    }
}

/// A home folder and a work folder for one test.
pub struct Env {
    pub home: tempfile::TempDir,
    pub work: tempfile::TempDir,
}

impl Env {
    pub fn new() -> Env {
        Env {
            home: tempfile::tempdir().unwrap(),
            work: tempfile::tempdir().unwrap(),
        }
    }

    /// Writes `<home>/settings.json`.
    pub fn settings(&self, v: Value) {
        std::fs::write(self.home.path().join("settings.json"), v.to_string()).unwrap();
    }

    /// pi's agent folder for this test (`~/.pi/agent` of a pi user).
    pub fn pi_dir(&self) -> PathBuf {
        self.home.path().join("pi-agent")
    }

    pub fn work(&self) -> &Path {
        self.work.path()
    }

    /// The session files written so far.
    pub fn session_files(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let root = self.home.path().join("sessions");
        let Ok(dirs) = std::fs::read_dir(&root) else {
            return out;
        };
        for d in dirs.flatten() {
            for f in std::fs::read_dir(d.path()).unwrap().flatten() {
                out.push(f.path());
            }
        }
        out.sort();
        out
    }

    /// `makai` with this home, run in the work folder, without provider keys.
    pub fn cmd(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_makai"));
        c.current_dir(self.work.path())
            .env("MAKAI_HOME", self.home.path())
            .env("MAKAI_NO_BROWSER", "1")
            // Without a key makai would install and start its local model.
            .env("MAKAI_AUTO_LOCAL", "0")
            .env("MAKAI_AUTO_TITLE", "0")
            // Logging as the defaults have it, whatever the shell running the tests says.
            .env_remove("MAKAI_LOG")
            .env_remove("MAKAI_LOG_FILE")
            // Prompt caching as the defaults have it.
            .env_remove("PI_CACHE_RETENTION")
            // pi's folders (skills, prompts, models.json) of this test only.
            .env("PI_CODING_AGENT_DIR", self.pi_dir());
        for k in KEY_VARS.iter().chain(&SESSION_DIR_VARS) {
            c.env_remove(k);
        }
        c
    }

    /// Runs `makai args...` with `vars` set and stdin closed.
    pub fn run_with_vars<S: AsRef<std::ffi::OsStr>>(
        &self,
        args: impl IntoIterator<Item = S>,
        vars: &[(&str, &str)],
    ) -> Output {
        let mut cmd = self.cmd();
        cmd.args(args);
        for (k, v) in vars {
            cmd.env(k, v);
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_output(child, Duration::from_secs(60))
    }

    /// Runs `makai args...` with stdin from `input` (empty: closed).
    pub fn run(&self, args: &[String], input: &str) -> Output {
        let mut child = self
            .cmd()
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(input.as_bytes()).unwrap();
        drop(stdin);
        wait_output(child, Duration::from_secs(60))
    }
}

/// Waits for a child with a deadline (kills it and panics when exceeded). Its
/// piped output is read meanwhile, so a child printing more than a pipe holds
/// (the whole model catalog) is not blocked writing.
pub fn wait_output(mut child: Child, limit: Duration) -> Output {
    use std::io::Read;
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            buf
        })
    };
    let out_reader = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err_reader = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "makai did not exit within {limit:?}\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&out_reader.join().unwrap()),
                String::from_utf8_lossy(&err_reader.join().unwrap())
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Output {
        status,
        stdout: out_reader.join().unwrap(),
        stderr: err_reader.join().unwrap(),
    }
}

pub fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// JSON lines of an output.
pub fn json_lines(text: &str) -> Vec<Value> {
    let lines: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    // Session files read as JSON lines are no events; pi-codes reads an
    // entry as an unknown event, so checking every line is harmless.
    lines.iter().for_each(pi_codes::check_record);
    lines
}

/// The text of all messages a chat-completions request sent.
/// The names of the tools a request's body offered (OpenAI's format), in
/// order; none when it offered none.
pub fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// A multi-thread Tokio runtime for an in-process session (the scripted
/// server's `Mock::start` cannot run inside `#[tokio::test]`).
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

pub fn request_text(r: &RecordedRequest) -> String {
    r.body["messages"].to_string()
}

/// Starts a sub-agent in the session at `session_file` (as a run that ended
/// before the sub-agent's result would leave it), then damages the sub-agent's
/// session file beyond reading; returns that file's path.
pub fn damage_a_sub_agent_session(session_file: &Path) -> PathBuf {
    use makai_coding::session::{Session, SharedSession};
    use makai_coding::subagent::{ChildSessions, LinkedSessions};
    let shared = SharedSession::new(Session::open(session_file).unwrap());
    let mut child = LinkedSessions(shared.clone()).create("worker", "call_9");
    child
        .append_message(makai_ai::UserMessage::text("child work"))
        .unwrap();
    let child_path = child.path().unwrap().to_path_buf();
    drop(child);
    drop(shared);
    std::fs::write(&child_path, "damaged beyond reading\n").unwrap();
    child_path
}

/// The parsed arguments of a run in `env`'s work folder against the scripted
/// server at `base_url` (openai-completions, `mock-model`), with `extra`
/// flags, for tests that build the session in-process (`build_with`).
pub fn run_args(env: &Env, base_url: &str, extra: &[&str]) -> makai_cli::cli::Args {
    let mut argv: Vec<String> = [
        "makai",
        "--base-url",
        base_url,
        "--api",
        "openai-completions",
        "--model",
        "mock-model",
        "--cwd",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    argv.push(env.work().display().to_string());
    argv.extend(extra.iter().map(|a| a.to_string()));
    match makai_cli::cli::parse(argv).unwrap() {
        makai_cli::cli::Invocation::Run(args) => *args,
        _ => panic!("not a run"),
    }
}

/// The session for `args`, built in-process with `env`'s home.
pub async fn build_app(env: &Env, args: &makai_cli::cli::Args) -> makai_cli::app::AppSession {
    makai_cli::app::setup::build_with(
        args,
        makai_cli::app::setup::BuildOptions {
            home: Some(env.home.path().to_path_buf()),
            ..Default::default()
        },
    )
    .await
    .unwrap()
}

/// Runs `text` in an in-process session to its end; the session has
/// recorded it and its answer when `wait_settled` returns (it counts the
/// run from its start, before the session sees its first event).
pub async fn ask(app: &makai_cli::app::AppSession, text: &str) {
    app.prompt(text.into(), Vec::new())
        .await
        .unwrap()
        .await
        .unwrap();
    app.wait_settled(Duration::from_secs(10)).await;
}

/// The session for `args`, built in-process with `env`'s home and `layer`
/// around its model client.
pub async fn build_layered(
    env: &Env,
    args: &makai_cli::cli::Args,
    layer: makai_cli::app::setup::ClientLayer,
) -> makai_cli::app::AppSession {
    makai_cli::app::setup::build_with(
        args,
        makai_cli::app::setup::BuildOptions {
            home: Some(env.home.path().to_path_buf()),
            client_layer: Some(layer),
            ..Default::default()
        },
    )
    .await
    .unwrap()
}

/// The id of [`session_started_in`]'s session.
pub const ELSEWHERE_ID: &str = "01a21eef-0a1a-721a-a484-da0c992ad399";

/// A session file (`elsewhere.jsonl` in the test's home) whose header says
/// `cwd` started it, with one user message, `question`.
pub fn session_started_in(env: &Env, cwd: &str, question: &str) -> PathBuf {
    let file = env.home.path().join("elsewhere.jsonl");
    let lines = [
        json!({"type": "session", "version": 3, "id": ELSEWHERE_ID,
               "timestamp": "2026-11-27T10:00:00.000Z", "cwd": cwd}),
        json!({"type": "message", "id": "b1", "parentId": null, "timestamp": "2026-11-27T10:00:01.000Z",
               "message": {"role": "user", "content": [{"type": "text", "text": question}], "timestamp": 1}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&file, text).unwrap();
    file
}

/// `scenario` with an `ls` call and then `then` as the answer after it.
pub fn with_ls_round(scenario: Scenario, then: &str) -> Scenario {
    scenario
        .push(makai_mockllm::ScriptedResponse::tool_call(
            "c1",
            "ls",
            json!({}).to_string(),
        ))
        .push(makai_mockllm::ScriptedResponse::text(then))
}

/// Runs `makai` with `mock`'s arguments and `extra`; asserts it succeeded.
pub fn run_ok(env: &Env, mock: &Mock, extra: &[&str]) -> Output {
    let mut argv = mock.args();
    argv.extend(s(extra));
    let out = env.run(&argv, "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    out
}

/// Asserts that the print run `out` said it ran in the session's own
/// directory and that `listed`, the request after its `ls` round, saw the
/// project's file (of [`project_beside`]) and not the work folder's.
pub fn assert_ran_in_the_project(out: &Output, listed: &str) {
    assert!(
        stderr(out).contains("the session runs in its working directory"),
        "{}",
        stderr(out)
    );
    assert!(listed.contains("only-in-the-project.txt"), "{listed}");
    assert!(!listed.contains("only-in-the-current-dir.txt"), "{listed}");
}

/// A project folder with a file only it has (`only-in-the-project.txt`),
/// and one only the test's work folder has (`only-in-the-current-dir.txt`):
/// an `ls` result says which of the two a tool ran in.
pub fn project_beside(env: &Env) -> tempfile::TempDir {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("only-in-the-project.txt"), "x").unwrap();
    std::fs::write(env.work().join("only-in-the-current-dir.txt"), "x").unwrap();
    project
}

/// Adds `lab/eyes`, an image-capable model on `mock`, in `env`'s `models.json`.
pub fn add_image_model(env: &Env, mock: &Mock) {
    std::fs::write(
        env.home.path().join("models.json"),
        json!({"providers": {"lab": {"baseUrl": mock.v1(), "api": "openai-completions", "apiKey": "k",
               "models": [{"id": "eyes", "input": ["text", "image"]}]}}})
        .to_string(),
    )
    .unwrap();
}

/// Registers makai's own MCP server as `self`, with `extra` options of
/// `makai mcp add`.
pub fn add_self_with(env: &Env, extra: &[&str]) {
    let work = env.work().display().to_string();
    let home = env.home.path().display().to_string();
    let mut argv = s(&["mcp", "add", "self"]);
    argv.extend(s(extra));
    argv.extend(s(&["-e"]));
    let out = env.run(
        &[
            argv,
            s(&[
                &format!("MAKAI_HOME={home}"),
                "--",
                env!("CARGO_BIN_EXE_makai"),
                "mcp",
                "serve",
                "--cwd",
                &work,
            ]),
        ]
        .concat(),
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("Added MCP server 'self'"),
        "{}",
        stdout(&out)
    );
}

/// A model response calling pi's `codemode` tool with `code`.
pub fn codemode_call(id: &str, code: &str) -> makai_mockllm::ScriptedResponse {
    makai_mockllm::ScriptedResponse::tool_call(id, "codemode", json!({ "code": code }).to_string())
}
