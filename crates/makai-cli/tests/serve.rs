//! `makai serve` through the built binary: a remote client prompts the agent
//! session over the makai protocol against the scripted server, sees the
//! events and the session file; a wrong token is refused; SIGTERM stops the
//! server gracefully without losing the message of a running prompt.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use futures::StreamExt;
use makai_mockllm::{Scenario, ScriptedResponse};
use makai_protocol::{ClientError, RemoteProtocolClient, SessionEvents};
use serde_json::{Value, json};

/// A running `makai serve`.
struct Served {
    child: Child,
    url: String,
    token_file: PathBuf,
    stderr: Arc<Mutex<String>>,
}

impl Served {
    fn start(env: &Env, token_file: &Path, extra: &[String]) -> Served {
        let mut child = env
            .cmd()
            .arg("serve")
            .arg("--port")
            .arg("0")
            .arg("--token-file")
            .arg(token_file)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = stderr.clone();
        let mut err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut url = String::new();
        out.read_line(&mut url).unwrap();
        let url = url.trim().to_string();
        assert!(
            url.starts_with("ws://127.0.0.1:") && url.ends_with('/'),
            "first stdout line is not the URL: {url:?}; stderr: {}",
            stderr.lock().unwrap()
        );
        Served {
            child,
            url,
            token_file: token_file.to_path_buf(),
            stderr,
        }
    }

    fn token(&self) -> String {
        std::fs::read_to_string(&self.token_file)
            .unwrap()
            .trim()
            .to_string()
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Stderr once it holds `needle` (or what it holds after 10 s).
    fn stderr_with(&self, needle: &str) -> String {
        let start = Instant::now();
        loop {
            let err = self.stderr();
            if err.contains(needle) || start.elapsed() > Duration::from_secs(10) {
                return err;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Sends SIGTERM and waits for the exit code.
    fn terminate(mut self, limit: Duration) -> (i32, String) {
        let status = std::process::Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        assert!(status.success());
        let start = Instant::now();
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                // Let the reader thread drain the pipe.
                std::thread::sleep(Duration::from_millis(100));
                return (st.code().unwrap_or(-1), self.stderr());
            }
            if start.elapsed() > limit {
                let _ = self.child.kill();
                panic!(
                    "makai serve did not stop within {limit:?}; stderr:\n{}",
                    self.stderr()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Sends one session command and decodes its response.
async fn call(client: &RemoteProtocolClient, command: Value) -> Value {
    client.rpc(&command).await.unwrap().decode().unwrap()
}

/// Events until (and including) one of type `kind`.
async fn events_until(events: &mut SessionEvents, kind: &str) -> Vec<Value> {
    let mut seen = Vec::new();
    loop {
        let next = tokio::time::timeout(Duration::from_secs(30), events.next())
            .await
            .unwrap_or_else(|_| panic!("no {kind} event within 30 s; seen: {seen:#?}"));
        let ev = next
            .unwrap_or_else(|| panic!("the event stream ended before {kind}; seen: {seen:#?}"))
            .unwrap()
            .decode::<Value>()
            .unwrap();
        let done = ev["type"] == kind;
        seen.push(ev);
        if done {
            return seen;
        }
    }
}

fn session_lines(path: &str) -> Vec<Value> {
    json_lines(&std::fs::read_to_string(path).unwrap())
}

#[test]
fn remote_client_prompts_the_session_and_a_wrong_token_is_refused() {
    let env = Env::new();
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::text("hello from the served agent"))
            .push(ScriptedResponse::text("second answer")),
    );
    let token_file = env.home.path().join("tokens").join("serve-token");
    let served = Served::start(&env, &token_file, &mock.args());
    // The session's model connection is open before any client attached.
    let deadline = Instant::now() + Duration::from_secs(10);
    while mock.server.connections() == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(mock.server.connections(), 1);
    assert_eq!(mock.server.served(), 0);
    let token = served.token();
    assert!(token.starts_with("mk_"), "{token}");
    // Printed once, on stderr, with the URL.
    let err = served.stderr_with("Ctrl-C stops");
    assert!(err.contains(&token), "the new token is not shown: {err}");
    assert!(err.contains(&served.url), "{err}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&token_file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    let rt = runtime();
    let url = served.url.clone();
    let session_file = rt.block_on(async {
        // A wrong token is refused before any work.
        let wrong =
            RemoteProtocolClient::connect(&url, "mk_this-is-not-the-right-token-at-all").await;
        assert!(
            matches!(wrong, Err(ClientError::Unauthorized(_))),
            "{wrong:?}"
        );

        let client = RemoteProtocolClient::connect(&url, &token).await.unwrap();
        let state = call(&client, json!({"type": "get_state", "id": "s1"})).await;
        assert_eq!(state["success"], true, "{state}");
        assert_eq!(state["id"], "s1");
        assert_eq!(state["data"]["model"]["id"], "mock-model");
        assert_eq!(state["data"]["isStreaming"], false);

        let mut events = client.subscribe().await.unwrap();
        let r = call(
            &client,
            json!({"type": "prompt", "message": "say hello", "id": "p1"}),
        )
        .await;
        assert_eq!(
            r,
            json!({"type": "response", "command": "prompt", "success": true, "id": "p1",
                "data": {"disposition": "started"}})
        );
        let seen = events_until(&mut events, "agent_end").await;
        let kinds: Vec<&str> = seen.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(kinds.first(), Some(&"agent_start"), "{kinds:?}");
        for k in [
            "turn_start",
            "message_start",
            "message_update",
            "message_end",
            "turn_end",
        ] {
            assert!(kinds.contains(&k), "no {k}: {kinds:?}");
        }
        let end = seen.last().unwrap();
        assert_eq!(
            end["messages"][1]["content"][0]["text"],
            "hello from the served agent"
        );
        assert_eq!(end["willRetry"], false);

        // Errors are responses too; unknown commands say so.
        let bad = call(&client, json!({"type": "warp_drive"})).await;
        assert_eq!(bad["success"], false);
        assert_eq!(bad["error"], "Unknown command: warp_drive");
        // A prompt while idle again, and the transcript.
        call(&client, json!({"type": "prompt", "message": "again"})).await;
        events_until(&mut events, "agent_end").await;
        let msgs = call(&client, json!({"type": "get_messages"})).await;
        assert_eq!(msgs["data"]["messages"].as_array().unwrap().len(), 4);
        let state = call(&client, json!({"type": "get_state"})).await;
        state["data"]["sessionFile"].as_str().unwrap().to_string()
    });
    assert_eq!(mock.requests().len(), 2);
    let lines = session_lines(&session_file);
    let texts: Vec<String> = lines
        .iter()
        .filter(|l| l["type"] == "message")
        .map(|l| l["message"]["content"].to_string())
        .collect();
    assert_eq!(texts.len(), 4, "{lines:#?}");
    assert!(texts[1].contains("hello from the served agent"));
    assert!(texts[3].contains("second answer"));

    let (code, err) = served.terminate(Duration::from_secs(30));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("stopped"), "{err}");

    // A second start reuses the token and does not print it again.
    let again = Served::start(&env, &token_file, &mock.args());
    assert_eq!(again.token(), token);
    let err = again.stderr_with("Ctrl-C stops");
    assert!(err.contains("listening on"), "{err}");
    assert!(!err.contains(&token), "{err}");
    let (code, _) = again.terminate(Duration::from_secs(30));
    assert_eq!(code, 0);
}

#[test]
fn sigterm_lets_the_running_prompt_finish_and_keeps_its_message() {
    let env = Env::new();
    // About 1.5 s of streaming: SIGTERM arrives in the middle of it.
    let mock = Mock::start(Scenario::new().push(
        ScriptedResponse::text("one two three four five six seven eight nine ten").delay(150),
    ));
    let token_file = env.home.path().join("serve-token");
    let served = Served::start(&env, &token_file, &mock.args());
    let token = served.token();
    let rt = runtime();
    let url = served.url.clone();
    let (client, mut events) = rt.block_on(async {
        let client = RemoteProtocolClient::connect(&url, &token).await.unwrap();
        let mut events = client.subscribe().await.unwrap();
        let r = call(&client, json!({"type": "prompt", "message": "count"})).await;
        assert_eq!(r["success"], true, "{r}");
        events_until(&mut events, "message_update").await;
        (client, events)
    });
    let (code, err) = served.terminate(Duration::from_secs(40));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("waiting up to"), "{err}");
    // The subscriber saw the run end before the server closed its stream.
    let seen = rt.block_on(async {
        let mut seen = Vec::new();
        while let Ok(Some(ev)) = tokio::time::timeout(Duration::from_secs(10), events.next()).await
        {
            match ev {
                Ok(v) => seen.push(v.decode::<Value>().unwrap()),
                Err(_) => break,
            }
        }
        seen
    });
    drop(client);
    let end = seen
        .iter()
        .find(|e| e["type"] == "agent_end")
        .unwrap_or_else(|| panic!("no agent_end before shutdown: {seen:#?}"));
    let text = end["messages"][1]["content"][0]["text"].as_str().unwrap();
    assert!(text.ends_with("ten"), "the run was cut: {text}");

    // The whole answer is in the session file.
    let files = env.session_files();
    assert_eq!(files.len(), 1, "{files:?}");
    let lines = session_lines(files[0].to_str().unwrap());
    let assistant = lines
        .iter()
        .find(|l| l["type"] == "message" && l["message"]["role"] == "assistant")
        .unwrap_or_else(|| panic!("no assistant entry: {lines:#?}"));
    assert_eq!(assistant["message"]["stopReason"], "stop");
    assert!(
        assistant["message"]["content"]
            .to_string()
            .contains("nine ten")
    );
}

#[test]
fn serve_usage_errors() {
    let env = Env::new();
    let out = env.run(&s(&["serve", "--bind", "0.0.0.0", "--port", "0"]), "");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--allow-non-loopback"),
        "{}",
        stderr(&out)
    );
    let out = env.run(&s(&["serve", "hello"]), "");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("does not take"), "{}", stderr(&out));
    // A token file others can read is refused with the fix.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let tok = env.home.path().join("open-token");
        std::fs::write(&tok, "mk_0123456789abcdefghijklmnop\n").unwrap();
        std::fs::set_permissions(&tok, std::fs::Permissions::from_mode(0o644)).unwrap();
        let mut argv = s(&["serve", "--port", "0", "--token-file"]);
        argv.push(tok.display().to_string());
        let out = env.run(&argv, "");
        assert_eq!(out.status.code(), Some(1));
        assert!(stderr(&out).contains("chmod 600"), "{}", stderr(&out));
    }
}

#[test]
fn serve_says_once_that_the_project_is_not_trusted_not_once_per_session() {
    let env = Env::new();
    // The project holds a SYSTEM.md, and nothing trusts it.
    let system = env.work().join(".pi").join("SYSTEM.md");
    std::fs::create_dir_all(system.parent().unwrap()).unwrap();
    std::fs::write(&system, "You are the repository's own prompt.").unwrap();
    let mock = Mock::start(Scenario::new());
    let token_file = env.home.path().join("serve-token");
    let served = Served::start(&env, &token_file, &mock.args());
    let token = served.token();
    let rt = runtime();
    rt.block_on(async {
        for id in ["one", "two", "three"] {
            let client = RemoteProtocolClient::connect(&served.url, &token)
                .await
                .unwrap();
            let state = call(&client, json!({"type": "get_state", "id": id})).await;
            assert_eq!(state["success"], true, "{state}");
        }
    });
    let (code, err) = served.terminate(Duration::from_secs(30));
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        err.matches("project not trusted").count(),
        1,
        "three sessions, one warning: {err}"
    );
    assert!(err.contains("MCP servers"), "{err}");
}
