//! pi's HTTP settings read by the `makai` binary: `httpIdleTimeoutMs` (the
//! longest silence of a model's response) against the scripted server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use makai_mockllm::{Scenario, ScriptedResponse};
use serde_json::json;

/// Events 700 ms apart: longer than a 300 ms idle timeout.
fn slow() -> ScriptedResponse {
    ScriptedResponse::text("slow but complete")
        .chunk_size(5)
        .delay(700)
}

fn run(env: &Env, mock: &Mock) -> std::process::Output {
    let mut argv = mock.args();
    argv.extend(s(&["--no-session", "-p", "hi"]));
    env.run(&argv, "")
}

#[test]
fn http_idle_timeout_ms_fails_a_silent_response_and_disabled_waits_for_it() {
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::text("never finished").stall_after(1))
            .push(slow())
            .push(slow())
            .push(slow()),
    );
    let env = Env::new();
    // Retries off: one attempt per run.
    let settings = |timeout: serde_json::Value| json!({"httpIdleTimeoutMs": timeout, "retry": {"enabled": false}});

    env.settings(settings(json!(300)));
    let out = run(&env, &mock);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the stream stalled: no data for 300ms (idle timeout)"),
        "{}",
        stderr(&out)
    );
    let out = run(&env, &mock);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no data for 300ms"),
        "{}",
        stderr(&out)
    );

    for off in [json!("disabled"), json!(0)] {
        env.settings(settings(off.clone()));
        let out = run(&env, &mock);
        assert_eq!(out.status.code(), Some(0), "{off}: {}", stderr(&out));
        assert_eq!(stdout(&out).trim(), "slow but complete", "{off}");
    }
    assert_eq!(mock.requests().len(), 4);

    // Anything else is a settings error naming the file.
    env.settings(json!({"httpIdleTimeoutMs": "soon"}));
    let out = run(&env, &mock);
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("settings"), "{}", stderr(&out));
}

/// Reads one HTTP head (and its body); returns the first line.
fn read_request(reader: &mut impl std::io::BufRead) -> String {
    let mut first = String::new();
    reader.read_line(&mut first).unwrap();
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap();
        }
        if line == "\r\n" || line.is_empty() {
            break;
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).unwrap();
    first.trim_end().to_string()
}

/// A proxy that takes one `CONNECT`, answers the request sent through the
/// tunnel with one streamed answer, and reports both first lines.
fn fake_proxy() -> (String, std::sync::mpsc::Receiver<(String, String)>) {
    use std::io::{BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let Ok((stream, _)) = listener.accept() else {
            return;
        };
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut out = stream;
        let connect = read_request(&mut reader);
        out.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            .unwrap();
        let request = read_request(&mut reader);
        let chunk = |delta: serde_json::Value, finish: serde_json::Value| {
            format!(
                "data: {}\n\n",
                json!({"id": "p", "object": "chat.completion.chunk", "created": 0, "model": "mock-model",
                       "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            )
        };
        let sse = chunk(
            json!({"role": "assistant", "content": "via the proxy"}),
            json!(null),
        ) + &chunk(json!({}), json!("stop"))
            + "data: [DONE]\n\n";
        write!(
            out,
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{sse}",
            sse.len()
        )
        .unwrap();
        tx.send((connect, request)).unwrap();
    });
    (url, rx)
}

/// `cmd` without the proxy variables of the shell running the tests: the
/// settings file alone decides.
fn without_proxy_vars(mut cmd: std::process::Command) -> std::process::Command {
    for var in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "NO_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "no_proxy",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

#[test]
fn http_proxy_in_the_user_settings_carries_the_requests_and_a_projects_is_ignored() {
    let env = Env::new();
    let (proxy, first_line) = fake_proxy();
    let (project_proxy, project_first_line) = fake_proxy();
    // pi's file (makai's own would win over it).
    std::fs::create_dir_all(env.pi_dir()).unwrap();
    std::fs::write(
        env.pi_dir().join("settings.json"),
        json!({"httpProxy": proxy}).to_string(),
    )
    .unwrap();
    // Trusted, so that its settings are read: the proxy is still not taken.
    std::fs::create_dir_all(env.work().join(".makai")).unwrap();
    std::fs::write(
        env.work().join(".makai").join("settings.json"),
        json!({"httpProxy": project_proxy}).to_string(),
    )
    .unwrap();
    let child = without_proxy_vars(env.cmd())
        .args([
            "--base-url",
            "http://models.example.invalid/v1",
            "--api",
            "openai-completions",
            "--model",
            "mock-model",
            "--api-key",
            "k",
            "--no-session",
            "--approve",
            "-p",
            "hi",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait_output(child, std::time::Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "via the proxy");
    let (connect, request) = first_line
        .recv_timeout(std::time::Duration::from_secs(5))
        .unwrap();
    assert_eq!(connect, "CONNECT models.example.invalid:80 HTTP/1.1");
    assert_eq!(request, "POST /v1/chat/completions HTTP/1.1");
    assert!(
        project_first_line
            .recv_timeout(std::time::Duration::from_millis(200))
            .is_err(),
        "the project's proxy was used"
    );

    // A server on loopback (a local model) is reached directly, and the
    // commands makai runs get the proxy with loopback left out of it.
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::tool_call(
                "c1",
                "bash",
                json!({"command": "echo \"proxy=$HTTPS_PROXY no=$NO_PROXY\""}).to_string(),
            ))
            .push(ScriptedResponse::text("direct")),
    );
    let child = without_proxy_vars(env.cmd())
        .args(mock.args())
        .args(["--no-session", "-p", "hi"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait_output(child, std::time::Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "direct");
    let second = mock.requests()[1].raw_body.clone();
    assert!(
        second.contains(&format!("proxy={proxy} no=localhost,127.0.0.1,::1")),
        "{second}"
    );
}

#[test]
fn retry_provider_settings_add_retries_and_set_the_timeout_as_in_pi() {
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::text("overloaded").with_status(503))
            .push(ScriptedResponse::text("overloaded").with_status(503))
            .push(ScriptedResponse::text("third time lucky"))
            .push(slow()),
    );
    let env = Env::new();
    // No agent-level retries; two at the provider level.
    env.settings(json!({"retry": {"maxRetries": 0, "baseDelayMs": 10, "provider": {"maxRetries": 2, "maxRetryDelayMs": 0}}}));
    let out = run(&env, &mock);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "third time lucky");
    assert_eq!(mock.requests().len(), 3);
    // provider.timeoutMs is the idle timeout when httpIdleTimeoutMs is unset.
    env.settings(json!({"retry": {"enabled": false, "provider": {"timeoutMs": 300}}}));
    let out = run(&env, &mock);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no data for 300ms"),
        "{}",
        stderr(&out)
    );
}

/// pi's `PI_CACHE_RETENTION=long`: Anthropic's prompt cache is asked to
/// last an hour; without it, the five minutes of the default.
#[test]
fn pi_cache_retention_long_asks_for_the_hour() {
    let env = Env::new();
    let mock = Mock::start(Scenario::new().with_fallback(ScriptedResponse::text("ok")));
    let mut args = mock.args_for("anthropic-messages");
    args.extend(s(&["--no-session", "-p", "hi"]));
    for (value, ttl) in [("long", Some("1h")), ("", None)] {
        let out = env.run_with_vars(&args, &[("PI_CACHE_RETENTION", value)]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let request = mock.requests().pop().unwrap();
        let cache = &request.body["system"][0]["cache_control"];
        assert_eq!(cache["type"], "ephemeral", "{}", request.raw_body);
        assert_eq!(cache["ttl"].as_str(), ttl, "PI_CACHE_RETENTION={value}");
    }
}
