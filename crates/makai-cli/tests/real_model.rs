//! The `makai` binary against a real model behind llama-cpp-python's
//! OpenAI-compatible server (`scripts/real-model.sh`; `.ci/run` starts it).
//!
//! Gated: every test is skipped, saying so, unless MAKAI_REAL_MODEL_URL
//! (`http://127.0.0.1:PORT`) is set; MAKAI_REAL_MODEL_NAME names the model
//! (`scripts/real-model.sh env` prints both). The server answers one request at
//! a time, so the tests here take turns.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "real_model/first_answer.rs"]
mod first_answer;

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Mutex;
use std::time::Duration;

use common::*;
use serde_json::Value;

/// One request at a time to the real server.
static SERVER: Mutex<()> = Mutex::new(());

fn real_model() -> Option<(String, String)> {
    let url = std::env::var("MAKAI_REAL_MODEL_URL")
        .ok()
        .filter(|u| !u.trim().is_empty());
    let Some(url) = url else {
        eprintln!(
            "skipped: MAKAI_REAL_MODEL_URL is not set (run `scripts/real-model.sh start` and \
             `eval \"$(scripts/real-model.sh env)\"` to run the real-model tests)"
        );
        return None;
    };
    let name = std::env::var("MAKAI_REAL_MODEL_NAME")
        .ok()
        .filter(|n| !n.trim().is_empty())
        .unwrap_or_else(|| "qwen2.5-coder-0.5b-instruct-q4_k_m".into());
    Some((url.trim().trim_end_matches('/').to_string(), name))
}

/// Checks a `--mode json` event stream: the session header first, then
/// agent_start ... agent_end, agent_settled, an assistant message that stopped normally with
/// non-empty text, and no error anywhere.
fn assert_well_formed(events: &[Value]) {
    assert!(events.len() >= 4, "{events:#?}");
    assert_eq!(events[0]["type"], "session", "{:#}", events[0]);
    assert_eq!(events[1]["type"], "agent_start", "{:#}", events[1]);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "agent_settled", "{last:#}");
    assert_eq!(events[events.len() - 2]["type"], "agent_end");
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "agent_end").count(),
        1,
        "{kinds:?}"
    );
    for k in ["turn_start", "message_start", "message_end", "turn_end"] {
        assert!(kinds.contains(&k), "no {k}: {kinds:?}");
    }
    let assistant = events
        .iter()
        .rfind(|e| e["type"] == "message_end" && e["message"]["role"] == "assistant")
        .unwrap_or_else(|| panic!("no assistant message_end: {kinds:?}"));
    let message = &assistant["message"];
    assert_eq!(message["stopReason"], "stop", "{message:#}");
    assert!(
        message.get("errorMessage").is_none_or(Value::is_null),
        "{message:#}"
    );
    let text: String = message["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["type"] == "text")
        .filter_map(|c| c["text"].as_str())
        .collect();
    assert!(!text.trim().is_empty(), "empty answer: {message:#}");
}

#[test]
fn json_mode_against_the_real_model_ends_with_agent_settled() {
    let Some((url, name)) = real_model() else {
        return;
    };
    let _turn = SERVER.lock().unwrap_or_else(|e| e.into_inner());
    let env = Env::new();
    let mut cmd = env.cmd();
    cmd.args(["--mode", "json", "--base-url"])
        .arg(format!("{url}/v1"))
        .args(["--api", "openai-completions", "--model", &name, "Say hi"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = wait_output(cmd.spawn().unwrap(), Duration::from_secs(300));
    assert_eq!(out.status.code(), Some(0), "stderr:\n{}", stderr(&out));
    assert_well_formed(&json_lines(&stdout(&out)));
}

/// The cache folder the running server belongs to (as the script computes it).
fn installed_cache_dir() -> Option<PathBuf> {
    let non_empty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(d) = non_empty("MAKAI_LOCAL_MODEL_DIR") {
        return Some(PathBuf::from(d));
    }
    if let Some(h) = non_empty("MAKAI_HOME") {
        return Some(PathBuf::from(h).join("local-model"));
    }
    non_empty("HOME").map(|h| PathBuf::from(h).join(".makai").join("local-model"))
}

#[test]
fn local_flag_reuses_the_running_server_and_leaves_it_running() {
    let Some((url, _)) = real_model() else {
        return;
    };
    let Some(dir) = installed_cache_dir() else {
        eprintln!("skipped: no cache folder (set MAKAI_LOCAL_MODEL_DIR)");
        return;
    };
    let recorded = std::fs::read_to_string(dir.join("server.url")).unwrap_or_default();
    if recorded.trim().trim_end_matches('/') != url {
        eprintln!(
            "skipped: the server at {url} was not started from the cache folder {} \
             (set MAKAI_LOCAL_MODEL_DIR to the folder `scripts/real-model.sh start` used)",
            dir.display()
        );
        return;
    }
    let pid_before = std::fs::read_to_string(dir.join("server.pid")).unwrap();
    let _turn = SERVER.lock().unwrap_or_else(|e| e.into_inner());
    let env = Env::new();
    let mut cmd = env.cmd();
    cmd.env("MAKAI_LOCAL_MODEL_DIR", &dir)
        .args(["--local", "--mode", "json", "Say hi"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = wait_output(cmd.spawn().unwrap(), Duration::from_secs(300));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "stderr:\n{err}");
    assert!(err.contains("reusing the running server"), "{err}");
    let events = json_lines(&stdout(&out));
    assert_well_formed(&events);
    // The server makai did not start is still running, unchanged.
    assert_eq!(
        std::fs::read_to_string(dir.join("server.pid")).unwrap(),
        pid_before
    );
    let pid = pid_before.trim();
    assert!(
        std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "makai stopped a server it did not start"
    );
    // The model recorded in the session is the local provider's.
    let change = env
        .session_files()
        .iter()
        .flat_map(|f| json_lines(&std::fs::read_to_string(f).unwrap()))
        .find(|l| l["type"] == "model_change")
        .unwrap();
    assert_eq!(change["provider"], "local");
}
