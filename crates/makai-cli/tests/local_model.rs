//! The built-in local model's lifecycle through the built binary, with the
//! embedded `scripts/real-model.sh` and a stand-in server: the cache folder
//! holds a fake virtualenv whose `python -m llama_cpp.server` is a small Python
//! HTTP server speaking the OpenAI chat-completions stream, and a sparse model
//! file with its verification marker, so nothing is downloaded. The real model
//! is exercised by `tests/real_model.rs` (gated on MAKAI_REAL_MODEL_URL).
//!
//! Checks: `--local` starts the server, answers and stops it at exit;
//! `--keep-local` leaves it running and the next run reuses it without
//! stopping it; without any key the local model is chosen automatically and
//! says so; without bash/curl/Python the old "no key" message stays.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::*;

/// What the script expects (see scripts/real-model.sh): the two runtimes' pins.
const XLLAMACPP_PKG: &str = "xllamacpp==2026.4.8672.1";
const LLAMA_CPP_PYTHON_PKG: &str = "llama-cpp-python[server]==0.3.36";
const MODEL_FILE: &str = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf";
const MODEL_SIZE: u64 = 491_400_064;
const MODEL_SHA256: &str = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32";

/// The stand-in for `python -m llama_cpp.server`: answers /openapi.json,
/// /v1/models and streams one chat completion naming the model it was asked for.
const FAKE_SERVER: &str = r#"
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
args = sys.argv[1:]
port = int(args[args.index("--port") + 1])
alias = args[args.index("--model_alias") + 1]
class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def send_json(self, obj):
        body = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        if self.path == "/openapi.json": self.send_json({"openapi": "3.0"})
        elif self.path == "/v1/models": self.send_json({"object": "list", "data": [{"id": alias, "object": "model"}]})
        else: self.send_error(404)
    def do_POST(self):
        n = int(self.headers.get("content-length", "0"))
        req = json.loads(self.rfile.read(n))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        def chunk(delta, finish=None):
            c = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": req["model"],
                 "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            self.wfile.write(b"data: " + json.dumps(c).encode() + b"\n\n")
        chunk({"role": "assistant", "content": "local answer"})
        chunk({"content": " from " + req["model"]})
        if "tool_choice" in req:
            chunk({"content": " tool_choice=" + json.dumps(req["tool_choice"], sort_keys=True)})
        chunk({}, "stop")
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
"#;

fn have(program: &str) -> bool {
    std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {program}"))
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// A cache folder with a fake install of the runtime `pkg` (one of the pins
/// above); `None` (and a note) without python3/curl.
fn fake_cache(root: &Path, pkg: &str) -> Option<PathBuf> {
    for p in ["python3", "curl", "flock", "setsid"] {
        if !have(p) {
            eprintln!("skipped: the local-model lifecycle test needs {p} on PATH");
            return None;
        }
    }
    let dir = root.join("local-model");
    let bin = dir.join("venv").join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(dir.join("models")).unwrap();
    std::fs::write(dir.join("fake_server.py"), FAKE_SERVER).unwrap();
    // `python -c '<import check>'` succeeds; the servers (`python -m
    // llama_cpp.server ...`, `python .../xllamacpp_server.py ...`) run the
    // stand-in, keeping the name the script looks for in their command line;
    // anything else goes to the real python3.
    let wrapper = format!(
        "#!/usr/bin/env bash\n\
         if [[ \"$1\" == -c && ( \"$2\" == *'import llama_cpp'* || \"$2\" == *xllamacpp* ) ]]; then exit 0; fi\n\
         if [[ \"$1\" == -m && \"$2\" == llama_cpp.server ]]; then exec python3 {fake} \"$@\"; fi\n\
         if [[ \"$1\" == */xllamacpp_server.py ]]; then exec python3 {fake} \"$@\"; fi\n\
         exec python3 \"$@\"\n",
        fake = dir.join("fake_server.py").display()
    );
    let python = bin.join("python");
    std::fs::write(&python, wrapper).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        dir.join("venv").join(".makai-installed"),
        format!("{pkg}\n"),
    )
    .unwrap();
    let model = dir.join("models").join(MODEL_FILE);
    let f = std::fs::File::create(&model).unwrap();
    f.set_len(MODEL_SIZE).unwrap(); // sparse: no disk used
    drop(f);
    std::thread::sleep(std::time::Duration::from_millis(1100));
    std::fs::write(
        dir.join("models").join(format!("{MODEL_FILE}.verified")),
        format!("{MODEL_SHA256}\n"),
    )
    .unwrap();
    Some(dir)
}

fn run_local(env: &Env, dir: &Path, args: &[&str]) -> Output {
    let mut cmd = env.cmd();
    cmd.env_remove("MAKAI_AUTO_LOCAL")
        .env("MAKAI_LOCAL_MODEL_DIR", dir)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    wait_output(cmd.spawn().unwrap(), std::time::Duration::from_secs(120))
}

/// PID of the running stand-in server, if any.
fn server_pid(dir: &Path) -> Option<u32> {
    let pid: u32 = std::fs::read_to_string(dir.join("server.pid"))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let cmdline = String::from_utf8_lossy(&cmdline);
    (cmdline.contains("llama_cpp.server") || cmdline.contains("xllamacpp_server")).then_some(pid)
}

fn stop_script(dir: &Path) {
    let _ = std::process::Command::new("bash")
        .arg(dir.join("real-model.sh"))
        .arg("stop")
        .env("MAKAI_LOCAL_MODEL_DIR", dir)
        .output();
}

#[test]
fn local_flag_starts_answers_and_stops_and_keep_local_reuses() {
    let env = Env::new();
    let Some(dir) = fake_cache(env.home.path(), XLLAMACPP_PKG) else {
        return;
    };
    let out = run_local(&env, &dir, &["--local", "-p", "hello"]);
    let (so, se) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "stdout:\n{so}\nstderr:\n{se}");
    assert_eq!(
        so.trim(),
        "local answer from qwen2.5-coder-0.5b-instruct-q4_k_m"
    );
    // The script's progress went through to stderr.
    assert!(
        se.contains("real-model: server: starting xllamacpp on http://127.0.0.1:"),
        "{se}"
    );
    // Its launcher of llama.cpp's server was written beside the model.
    assert!(dir.join("xllamacpp_server.py").is_file());
    assert!(se.contains("already installed"), "{se}");
    // The embedded script was written to the cache folder, and the server stopped.
    assert_eq!(
        std::fs::read_to_string(dir.join("real-model.sh")).unwrap(),
        std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scripts/real-model.sh"
        ))
        .unwrap()
    );
    assert!(
        server_pid(&dir).is_none(),
        "the server still runs after makai exited"
    );
    assert!(!dir.join("server.url").exists());

    // --keep-local: left running.
    let out = run_local(&env, &dir, &["--local", "--keep-local", "-p", "hi"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let pid = server_pid(&dir).expect("--keep-local left no server running");
    // The next run reuses it and, not having started it, leaves it running.
    let out = run_local(&env, &dir, &["--local", "--mode", "json", "again"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("reusing the running server"),
        "{}",
        stderr(&out)
    );
    let events = json_lines(&stdout(&out));
    assert_eq!(events.last().unwrap()["type"], "agent_settled");
    assert_eq!(events[0]["type"], "session");
    assert_eq!(server_pid(&dir), Some(pid));
    // The session records the local model.
    let model_change = env
        .session_files()
        .iter()
        .flat_map(|f| json_lines(&std::fs::read_to_string(f).unwrap()))
        .find(|l| l["type"] == "model_change")
        .unwrap();
    assert_eq!(model_change["provider"], "local");
    stop_script(&dir);
    assert!(server_pid(&dir).is_none());
}

/// Regression: the forced first call went out as `"required"` to
/// llama-cpp-python's server too, which ignores it (the model answered in
/// text); each runtime gets the form it honours.
#[test]
fn a_forced_tool_call_goes_out_in_the_local_servers_dialect() {
    for (pkg, expected) in [
        (XLLAMACPP_PKG, r#"tool_choice="required""#),
        (
            LLAMA_CPP_PYTHON_PKG,
            r#"tool_choice={"function": {"name": "ls"}, "type": "function"}"#,
        ),
    ] {
        let env = Env::new();
        let Some(dir) = fake_cache(env.home.path(), pkg) else {
            return;
        };
        let out = run_local(&env, &dir, &["--local", "--tools", "ls", "-p", "hello"]);
        let (so, se) = (stdout(&out), stderr(&out));
        assert_eq!(out.status.code(), Some(0), "stdout:\n{so}\nstderr:\n{se}");
        assert!(so.contains(expected), "{pkg}: {so}");
        assert!(server_pid(&dir).is_none(), "not stopped at exit");
    }
}

#[test]
fn an_installed_llama_cpp_python_is_still_used() {
    let env = Env::new();
    let Some(dir) = fake_cache(env.home.path(), LLAMA_CPP_PYTHON_PKG) else {
        return;
    };
    let out = run_local(&env, &dir, &["--local", "-p", "hello"]);
    let (so, se) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "stdout:\n{so}\nstderr:\n{se}");
    assert!(so.contains("local answer"), "{so}");
    assert!(
        se.contains(&format!("server: {LLAMA_CPP_PYTHON_PKG} already installed")),
        "{se}"
    );
    assert!(
        se.contains("real-model: server: starting llama-cpp-python on http://127.0.0.1:"),
        "{se}"
    );
    assert!(server_pid(&dir).is_none(), "not stopped at exit");
}

#[test]
fn without_a_key_the_local_model_is_chosen_and_says_so() {
    let env = Env::new();
    let Some(dir) = fake_cache(env.home.path(), XLLAMACPP_PKG) else {
        return;
    };
    let out = run_local(&env, &dir, &["-p", "hello"]);
    let se = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{se}");
    assert!(se.contains("no API key or login found"), "{se}");
    assert!(se.contains("MAKAI_AUTO_LOCAL=0"), "{se}");
    assert!(stdout(&out).contains("local answer"), "{}", stdout(&out));
    assert!(server_pid(&dir).is_none(), "not stopped at exit");
    // With a base URL given, nothing local happens (the usual flags rule).
    let out = run_local(
        &env,
        &dir,
        &[
            "-p",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--api",
            "openai-completions",
            "--model",
            "m",
            "x",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(!stderr(&out).contains("real-model:"), "{}", stderr(&out));
    stop_script(&dir);
}

#[test]
fn offline_an_installed_local_model_still_answers_and_a_missing_one_is_not_installed() {
    let env = Env::new();
    let Some(dir) = fake_cache(env.home.path(), XLLAMACPP_PKG) else {
        return;
    };
    let out = run_local(&env, &dir, &["--offline", "-p", "hello"]);
    let se = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{se}");
    assert!(
        se.contains("offline: it is used if it is installed"),
        "{se}"
    );
    assert!(stdout(&out).contains("local answer"), "{}", stdout(&out));
    assert!(server_pid(&dir).is_none(), "not stopped at exit");

    // The server package no longer counts as installed: offline, the script
    // stops before installing anything, and says why.
    std::fs::remove_file(dir.join("venv").join(".makai-installed")).unwrap();
    let out = run_local(&env, &dir, &["--local", "--offline", "-p", "hello"]);
    let se = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{se}");
    assert!(
        se.contains("is not installed in") && se.contains("nothing is downloaded"),
        "{se}"
    );
    assert!(!se.contains("installing"), "{se}");
    assert!(!dir.join("venv").join(".makai-installed").exists());
    assert!(!dir.join("pip-install.log").exists());
    stop_script(&dir);
}

#[test]
fn without_bash_or_python_the_old_no_key_message_stays() {
    let env = Env::new();
    let empty = tempfile::tempdir().unwrap();
    let mut cmd = env.cmd();
    cmd.env_remove("MAKAI_AUTO_LOCAL")
        .env("PATH", empty.path())
        .env("MAKAI_LOCAL_MODEL_DIR", env.home.path().join("lm"))
        .args(["-p", "hello"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let out = wait_output(cmd.spawn().unwrap(), std::time::Duration::from_secs(60));
    let se = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{se}");
    assert!(
        se.contains("ANTHROPIC_API_KEY") && se.contains("makai auth login"),
        "{se}"
    );
    assert!(se.contains("needs bash, curl"), "{se}");
    assert!(!se.contains("no API key or login found, so"), "{se}");

    // --local says what is missing.
    let mut cmd = env.cmd();
    cmd.env("PATH", empty.path())
        .env("MAKAI_LOCAL_MODEL_DIR", env.home.path().join("lm"))
        .args(["--local", "-p", "hello"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let out = wait_output(cmd.spawn().unwrap(), std::time::Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("--local: the built-in local model needs"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("bash"), "{}", stderr(&out));
}

#[test]
fn local_conflicts_with_an_explicit_endpoint() {
    let env = Env::new();
    let out = env.run(&s(&["--local", "--model", "x", "-p", "hi"]), "");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--local") || stderr(&out).contains("--model"),
        "{}",
        stderr(&out)
    );
}
