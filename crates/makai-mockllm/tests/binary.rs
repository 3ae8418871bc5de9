//! The `makai-mockllm` binary loads a JSON scenario and serves it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use common::*;
use serde_json::json;

/// Kills the child even if the test panics.
struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(args: &[&str]) -> (Kill, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_makai-mockllm"))
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let child = Kill(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_owned();
    let port: u16 = url.rsplit(':').next().unwrap().parse().unwrap();
    assert!(port > 0);
    assert_eq!(url, format!("http://127.0.0.1:{port}"));
    (child, url)
}

#[tokio::test]
async fn serves_a_json_scenario_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("scenario.json");
    std::fs::write(
        &file,
        r#"{
          "responses": [
            {"items": [{"text": "from the file"},
                       {"tool_call": {"id": "c1", "name": "read", "arguments": {"path": "a"}}}]},
            {"status": 429, "headers": [["retry-after", "3"]],
             "body_override": "{\"error\":{\"message\":\"slow down\"}}"}
          ],
          "fallback": {"items": [{"text": "fallback"}]}
        }"#,
    )
    .unwrap();
    let (_child, url) = spawn(&["--scenario", file.to_str().unwrap()]);
    let body = json!({"model": "m", "stream": true, "messages": []});
    let (status, _, text) = post(&format!("{url}/v1/chat/completions"), &body).await;
    assert_eq!(status, 200);
    let a = assemble_chat(&parse_sse(&text));
    assert_eq!(a.text, "from the file");
    assert_eq!(a.tool_calls[0].2, r#"{"path":"a"}"#);

    let resp = client()
        .post(format!("{url}/v1/messages"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 429);
    assert_eq!(resp.headers()["retry-after"], "3");

    let (_, _, text) = post(&format!("{url}/v1/messages"), &body).await;
    assert_eq!(assemble_anthropic(&parse_sse(&text)).text, "fallback");
}

#[tokio::test]
async fn default_scenario_and_bench_mode() {
    let (_child, url) = spawn(&[]);
    let resp = client()
        .get(format!("{url}/v1/models"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let body = json!({"model": "m", "stream": true, "input": []});
    let (_, _, text) = post(&format!("{url}/v1/responses"), &body).await;
    assert!(
        assemble_responses(&parse_sse(&text))
            .text
            .starts_with("Hello from makai-mockllm!")
    );

    let (_child, url) = spawn(&[
        "--bench-tokens",
        "3",
        "--bench-tool-rounds",
        "1",
        "--no-record",
    ]);
    let body = json!({"model": "m", "stream": true, "messages": []});
    let (_, _, text) = post(&format!("{url}/v1/chat/completions"), &body).await;
    let a = assemble_chat(&parse_sse(&text));
    assert_eq!(a.text, "w0 w1 w2 ");
    assert_eq!(a.tool_calls[0].1, "echo");
}

#[tokio::test]
async fn example_scenario_file_runs() {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/scenario.json");
    let (_child, url) = spawn(&["--scenario", file, "--port", "0"]);
    let body = json!({"model": "m", "stream": true, "messages": []});
    let (_, _, text) = post(&format!("{url}/v1/messages"), &body).await;
    let a = assemble_anthropic(&parse_sse(&text));
    assert_eq!(a.tool_calls[0].1, "read");
    assert_eq!(a.stop.as_deref(), Some("tool_use"));
    let (_, _, text) = post(&format!("{url}/v1/chat/completions"), &body).await;
    assert!(
        assemble_chat(&parse_sse(&text))
            .text
            .starts_with("The README")
    );
}

#[test]
fn bad_scenario_file_fails_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.json");
    std::fs::write(&file, r#"[{"itemz": []}]"#).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_makai-mockllm"))
        .args(["--scenario", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("itemz"), "{err}");
}
