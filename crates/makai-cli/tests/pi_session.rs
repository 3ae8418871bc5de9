//! The real-pi session round trip: pi's own CLI (npm
//! `@mariozechner/pi-coding-agent`, installed by `scripts/setup-pi-client.sh`)
//! runs on Node against the scripted server through its `~/.pi/agent/models.json`
//! (a custom `openai-completions` provider) in a temporary HOME. A session pi
//! wrote (with a tool round) continues in makai, and the session makai appended
//! to continues in pi, each side's next request carrying the whole history.
//!
//! Skipped, saying why, when Node or the package is unavailable on a developer
//! machine; under CI (`CI` set) that is a failure, since `.ci/run` installs it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::*;
use makai_mockllm::{RecordedRequest, Scenario, ScriptedResponse};
use serde_json::{Value, json};

/// pi's CLI entry point, or `None` (with the reason printed) when unavailable.
fn pi_cli() -> Option<PathBuf> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/setup-pi-client.sh");
    let unavailable = |why: String| {
        assert!(
            std::env::var_os("CI").is_none(),
            "pi's CLI must be available in CI (.ci/run installs it): {why}"
        );
        eprintln!("SKIPPED real-pi session test: {why}");
        None
    };
    let out = match Command::new("bash")
        .arg(&script)
        .stderr(Stdio::piped())
        .output()
    {
        Ok(o) => o,
        Err(e) => return unavailable(format!("cannot run {}: {e}", script.display())),
    };
    if !out.status.success() {
        return unavailable(format!(
            "the pi package could not be installed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let cli = dir.join("node_modules/@mariozechner/pi-coding-agent/dist/cli.js");
    if !cli.is_file() {
        return unavailable(format!("{} is missing", cli.display()));
    }
    Some(cli)
}

/// Runs pi's CLI with HOME set to the test's home (so it reads the test's
/// `~/.pi/agent/models.json`), offline, in the work folder.
fn run_pi(cli: &Path, env: &Env, args: &[&str]) -> Output {
    let mut cmd = Command::new("node");
    cmd.arg(cli)
        .args(args)
        .current_dir(env.work())
        .env("HOME", env.home.path())
        .env("PI_OFFLINE", "1")
        .env("PI_SKIP_VERSION_CHECK", "1")
        .env_remove("PI_CODING_AGENT_DIR")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for k in KEY_VARS {
        cmd.env_remove(k);
    }
    wait_output(cmd.spawn().unwrap(), Duration::from_secs(120))
}

/// The role and text of every message a chat-completions request sent
/// (tool calls as `call:name`, tool results as `tool:text`).
fn transcript(r: &RecordedRequest) -> Vec<String> {
    r.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system" && m["role"] != "developer")
        .map(|m| {
            let text = match &m["content"] {
                Value::String(s) => s.clone(),
                Value::Array(parts) => parts
                    .iter()
                    .filter_map(|p| p["text"].as_str())
                    .collect::<Vec<_>>()
                    .join(""),
                _ => String::new(),
            };
            let calls: Vec<String> = m["tool_calls"]
                .as_array()
                .map(|c| {
                    c.iter()
                        .map(|c| format!("call:{}", c["function"]["name"].as_str().unwrap()))
                        .collect()
                })
                .unwrap_or_default();
            format!(
                "{}:{}{}",
                m["role"].as_str().unwrap(),
                text.trim(),
                calls.join(",")
            )
        })
        .collect()
}

#[test]
fn pi_session_continues_in_makai_and_back_in_pi() {
    let Some(cli) = pi_cli() else { return };
    let env = Env::new();
    std::fs::write(
        env.work().join("notes.txt"),
        "the secret word is marmalade\n",
    )
    .unwrap();
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::new().with_tool_call(
                "call_read_1",
                "read",
                r#"{"path":"notes.txt"}"#,
            ))
            .push(ScriptedResponse::text("pi read it: marmalade"))
            .push(ScriptedResponse::text("makai remembers marmalade"))
            .push(ScriptedResponse::text("pi again, still marmalade")),
    );
    // pi's models.json: a custom OpenAI-compatible provider at the scripted server.
    let pi_agent = env.home.path().join(".pi/agent");
    std::fs::create_dir_all(&pi_agent).unwrap();
    let models = json!({"providers": {"mock": {
        "baseUrl": mock.v1(),
        "api": "openai-completions",
        "apiKey": "test-key",
        "models": [{"id": "mock-model", "name": "Mock", "contextWindow": 32000, "maxTokens": 4096}]
    }}});
    std::fs::write(pi_agent.join("models.json"), models.to_string()).unwrap();
    let sessions = env.home.path().join("shared-sessions");
    let sessions_arg = sessions.display().to_string();

    // 1. pi writes a session with a tool round.
    let out = run_pi(
        &cli,
        &env,
        &[
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "--session-dir",
            &sessions_arg,
            "-p",
            "what is in notes.txt?",
        ],
    );
    assert!(
        out.status.success(),
        "pi failed: {}\n{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(
        stdout(&out).contains("pi read it: marmalade"),
        "{}",
        stdout(&out)
    );
    let files: Vec<PathBuf> = std::fs::read_dir(&sessions)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let file = files[0].clone();
    let file_arg = file.display().to_string();

    // 2. makai continues pi's session.
    let argv = s(&[
        "--provider",
        "mock",
        "--base-url",
        &mock.v1(),
        "--api",
        "openai-completions",
        "--model",
        "mock-model",
        "--session",
        &file_arg,
        "-p",
        "and what did you find?",
    ]);
    let out = env.run(&argv, "");
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(stdout(&out), "makai remembers marmalade\n");

    // 3. pi continues the session makai appended to.
    let out = run_pi(
        &cli,
        &env,
        &[
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "--session",
            &file_arg,
            "-p",
            "one more time?",
        ],
    );
    assert!(
        out.status.success(),
        "pi failed on makai's session: {}\n{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(stdout(&out).contains("pi again, still marmalade"));

    let reqs = mock.requests();
    assert_eq!(reqs.len(), 4, "{reqs:#?}");
    // makai's request keeps the invariants (pi writes `content: null` on
    // tool-call-only assistant messages, which OpenAI accepts and the
    // invariant check refuses, so pi's own requests are not checked).
    let broken = makai_mockllm::invariants::check_request(&reqs[2]);
    assert!(broken.is_empty(), "{broken:?}");
    let first_part = ["user:what is in notes.txt?", "assistant:call:read"];
    let tool = transcript(&reqs[1]);
    assert_eq!(tool[..2], first_part, "{tool:?}");
    assert!(
        tool[2].starts_with("tool:") && tool[2].contains("marmalade"),
        "{tool:?}"
    );
    let makai = transcript(&reqs[2]);
    assert_eq!(
        makai[3..],
        [
            "assistant:pi read it: marmalade",
            "user:and what did you find?"
        ],
        "makai's request must carry pi's whole history: {makai:?}"
    );
    assert_eq!(makai[..3], tool[..3]);
    let pi = transcript(&reqs[3]);
    assert_eq!(
        pi[..5],
        makai[..],
        "pi's request must carry makai's turn: {pi:?}"
    );
    assert_eq!(
        pi[5..],
        ["assistant:makai remembers marmalade", "user:one more time?"]
    );
    // Both tools wrote one tree: every line is valid for both, nothing duplicated.
    let text = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let messages = lines.iter().filter(|l| l["type"] == "message").count();
    assert_eq!(messages, 8, "{text}");
    // Mock's drop checks every recorded request against makai's invariants;
    // pi's own requests (checked above) are not makai's to answer for.
    mock.server.clear_requests();
}
