//! Print and JSON modes through the built binary against the scripted server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::*;
use makai_mockllm::{BenchPacing, Scenario, ScriptedResponse, Usage, bench_responder};
use serde_json::{Value, json};

fn args(mock: &Mock, extra: &[&str]) -> Vec<String> {
    let mut a = mock.args();
    a.extend(s(extra));
    a
}

#[test]
fn print_mode_prints_the_answer_and_exits_0() {
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("Hello from the mock")));
    let env = Env::new();
    let out = env.run(&args(&mock, &["-p", "say hi"]), "");
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(stdout(&out), "Hello from the mock\n");
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 1);
    assert!(request_text(&reqs[0]).contains("say hi"));
    // The system prompt of the default agent went along.
    assert_eq!(reqs[0].body["messages"][0]["role"], "system");
}

/// pi 1.4's fix: an answer cut off at the output token limit is written
/// as far as it goes, with a warning on stderr, and the exit code is 1.
#[test]
fn an_answer_cut_off_at_the_output_limit_is_written_with_a_warning_and_exit_1() {
    let mock =
        Mock::start(Scenario::new().push(
            ScriptedResponse::text("The first half of").stop(makai_mockllm::StopKind::Length),
        ));
    let env = Env::new();
    let out = env.run(&args(&mock, &["-p", "write a lot"]), "");
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    assert_eq!(stdout(&out), "The first half of\n");
    assert!(
        stderr(&out).contains("the answer was cut off: the model reached its output token limit"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn print_mode_prints_only_the_final_message_not_narration_before_tool_calls() {
    let env = Env::new();
    let mock = Mock::start(
        Scenario::new()
            .push(
                ScriptedResponse::new()
                    .with_text("Let me look at the files first.")
                    .with_tool_call("c1", "ls", "{}"),
            )
            .push(ScriptedResponse::text("There are no files.")),
    );
    let out = env.run(&args(&mock, &["-p", "what is here?"]), "");
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(stdout(&out), "There are no files.\n");
    // The tool round really happened: the narration and the ls result went back.
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2);
    let second = request_text(&reqs[1]);
    assert!(
        second.contains("Let me look at the files first."),
        "{second}"
    );
}

#[test]
fn print_mode_writes_each_text_block_of_the_last_prompt_on_its_own_line() {
    let env = Env::new();
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::text("answer to the first"))
            .push(
                ScriptedResponse::new()
                    .with_text("part one")
                    .with_text("part two"),
            ),
    );
    // Anthropic's wire keeps the two text items as two blocks.
    let argv = s(&[
        "--base-url",
        &mock.v1(),
        "--api",
        "anthropic-messages",
        "--model",
        "mock-model",
        "-p",
        "first",
        "second",
    ]);
    let out = env.run(&argv, "");
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    // Only the run's last assistant message, one line per text block (pi).
    assert_eq!(stdout(&out), "part one\npart two\n");
    assert_eq!(mock.requests().len(), 2);
}

#[test]
fn json_mode_writes_header_then_pi_events_ending_with_agent_end() {
    let mock = Mock::start(
        Scenario::new().push(ScriptedResponse::text("Hi there").usage(Usage::new(11, 3))),
    );
    let env = Env::new();
    let out = env.run(&args(&mock, &["--mode", "json", "hello"]), "");
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let lines = json_lines(&stdout(&out));
    assert_eq!(lines[0]["type"], "session");
    assert_eq!(lines[0]["version"], 3);
    let kinds: Vec<&str> = lines[1..]
        .iter()
        .map(|l| l["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.first(), Some(&"agent_start"));
    // pi 1.x: agent_end, then agent_settled once nothing more will run.
    assert_eq!(kinds[kinds.len() - 2..], ["agent_end", "agent_settled"]);
    assert_eq!(lines.last().unwrap()["aborted"], false);
    for k in [
        "turn_start",
        "message_start",
        "message_update",
        "message_end",
        "turn_end",
    ] {
        assert!(kinds.contains(&k), "missing {k}: {kinds:?}");
    }
    let update = lines
        .iter()
        .find(|l| l["type"] == "message_update")
        .unwrap();
    assert!(
        update.get("message").is_none(),
        "pi's delta-only form: {update}"
    );
    assert!(update["assistantMessageEvent"]["contentIndex"].is_number());
    assert_eq!(
        update["usage"]["input"], 0,
        "usage is reported at message_end: {update}"
    );
    // pi 1.5.2: a streaming assistant message's reason is `pending` until
    // its `message_end`.
    let started = lines
        .iter()
        .find(|l| l["type"] == "message_start" && l["message"]["role"] == "assistant")
        .unwrap();
    assert_eq!(started["message"]["stopReason"], "pending", "{started}");
    let ended = lines
        .iter()
        .find(|l| l["type"] == "message_end" && l["message"]["role"] == "assistant")
        .unwrap();
    assert_eq!(ended["message"]["stopReason"], "stop", "{ended}");
    let end = &lines[lines.len() - 2];
    assert_eq!(end["willRetry"], false);
    let assistant = &end["messages"][1];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(assistant["stopReason"], "stop");
    assert_eq!(assistant["usage"]["input"], 11);
    assert_eq!(assistant["content"][0]["text"], "Hi there");
}

/// The bench script's answer of `tokens` tokens (no tool calls), each SSE
/// event written on its own `delay` apart.
fn streamed_answer(tokens: usize, delay: Duration) -> (Mock, String) {
    let mock = Mock::start(Scenario::from_responder(bench_responder(
        tokens,
        0,
        BenchPacing::Stream { delay },
    )));
    let mut text: String = (0..tokens - 1).map(|i| format!("w{i} ")).collect();
    text.push_str("[final]");
    (mock, text)
}

/// The text of the `text_delta` events among `lines`, in order.
fn deltas_text(lines: &[Value]) -> String {
    lines
        .iter()
        .filter(|l| l["type"] == "message_update")
        .map(|l| &l["assistantMessageEvent"])
        .filter(|e| e["type"] == "text_delta")
        .map(|e| e["delta"].as_str().unwrap())
        .collect()
}

/// JSON lines leave in bursts (the events read from the network together, in
/// one write) and one by one (an event that arrives alone): either way each
/// one whole, none lost or reordered.
#[test]
fn json_mode_writes_every_delta_of_a_streamed_answer_in_order() {
    for delay in [Duration::ZERO, Duration::from_micros(300)] {
        let (mock, text) = streamed_answer(2000, delay);
        let env = Env::new();
        let out = env.run(&args(&mock, &["--mode", "json", "hello"]), "");
        assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
        let lines = json_lines(&stdout(&out));
        assert_eq!(lines[0]["type"], "session");
        assert_eq!(lines.last().unwrap()["type"], "agent_settled");
        assert_eq!(deltas_text(&lines), text, "delay {delay:?}");
        let end = lines
            .iter()
            .find(|l| l["type"] == "message_end" && l["message"]["role"] == "assistant")
            .unwrap();
        assert_eq!(end["message"]["content"][0]["text"], text.as_str());
    }
}

/// The writer that replaced the RPC and JSON modes' writer thread: a reader
/// that goes away mid-answer fails the run with the reason on stderr, and
/// the process still exits.
#[test]
fn json_mode_whose_reader_goes_away_mid_answer_fails_and_says_why() {
    use std::io::{BufRead, BufReader};
    let (mock, _) = streamed_answer(3000, Duration::from_millis(1));
    let env = Env::new();
    let mut child = env
        .cmd()
        .args(args(&mock, &["--mode", "json", "hello"]))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    // Read until the answer streams, then stop reading.
    let mut line = String::new();
    while !line.contains("text_delta") {
        line.clear();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "stdout ended early"
        );
    }
    drop(reader);
    let out = wait_output(child, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    assert!(
        stderr(&out).contains("could not write to stdout"),
        "stderr: {}",
        stderr(&out)
    );
}

#[test]
fn a_tool_round_with_every_builtin_tool() {
    let env = Env::new();
    std::fs::write(env.work().join("notes.txt"), "alpha\nbeta\n").unwrap();
    let calls = [
        ("c1", "read", json!({"path": "notes.txt"})),
        (
            "c2",
            "write",
            json!({"path": "out.txt", "content": "one two\n"}),
        ),
        (
            "c3",
            "edit",
            json!({"path": "out.txt", "edits": [{"oldText": "two", "newText": "three"}]}),
        ),
        ("c4", "bash", json!({"command": "echo from-bash"})),
        ("c5", "grep", json!({"pattern": "beta"})),
        ("c6", "find", json!({"pattern": "*.txt"})),
        ("c7", "ls", json!({})),
    ];
    let mut scenario = Scenario::new();
    for (id, name, a) in &calls {
        scenario = scenario.push(ScriptedResponse::tool_call(*id, *name, a.to_string()));
    }
    let mock = Mock::start(scenario.push(ScriptedResponse::text("All done")));
    let out = env.run(&args(&mock, &["--mode", "json", "use the tools"]), "");
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let lines = json_lines(&stdout(&out));
    let ends: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "tool_execution_end")
        .collect();
    assert_eq!(ends.len(), 7);
    for (end, (id, name, _)) in ends.iter().zip(calls.iter()) {
        assert_eq!(end["toolCallId"], *id);
        assert_eq!(end["toolName"], *name);
        assert_eq!(end["isError"], false, "{name} failed: {end}");
    }
    let text = |i: usize| {
        ends[i]["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(text(0).contains("alpha"), "read: {}", text(0));
    assert_eq!(
        std::fs::read_to_string(env.work().join("out.txt")).unwrap(),
        "one three\n"
    );
    assert!(text(3).contains("from-bash"));
    assert!(text(4).contains("notes.txt"), "grep: {}", text(4));
    assert!(text(5).contains("out.txt"), "find: {}", text(5));
    assert!(text(6).contains("notes.txt"), "ls: {}", text(6));
    // Every result went back to the model.
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 8);
    assert!(request_text(&reqs[7]).contains("from-bash"));
}

#[test]
fn dry_run_changes_nothing() {
    let env = Env::new();
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::tool_call(
                "c1",
                "write",
                r#"{"path":"x.txt","content":"x"}"#,
            ))
            .push(ScriptedResponse::text("ok")),
    );
    let out = env.run(&args(&mock, &["--dry-run", "-p", "write"]), "");
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(!env.work().join("x.txt").exists());
    assert!(request_text(&mock.requests()[1]).contains("Dry run"));
}

#[test]
fn verbose_shows_tool_calls_and_usage_on_stderr() {
    let env = Env::new();
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::tool_call("c1", "ls", "{}").usage(Usage::new(100, 10)))
            .push(ScriptedResponse::text("done").usage(Usage::new(120, 5))),
    );
    let out = env.run(&args(&mock, &["-p", "--verbose", "look"]), "");
    assert_eq!(out.status.code(), Some(0));
    let err = stderr(&out);
    assert!(err.contains("→ ls"), "{err}");
    assert!(err.contains("turn 1: 100 in, 10 out"), "{err}");
    assert!(err.contains("session: 220 in, 15 out"), "{err}");
    assert_eq!(stdout(&out), "done\n");
}

#[test]
fn piped_stdin_and_file_attachments_join_the_prompt() {
    let env = Env::new();
    std::fs::write(env.work().join("spec.md"), "THE-SPEC-TEXT").unwrap();
    let png = [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0];
    std::fs::write(env.work().join("pic.png"), png).unwrap();
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("seen")));
    let out = env.run(
        &args(&mock, &["-p", "@spec.md", "@pic.png", "summarize"]),
        "PIPED-INPUT\n",
    );
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let body = request_text(&mock.requests()[0]);
    assert!(body.contains("PIPED-INPUT"), "{body}");
    assert!(body.contains("THE-SPEC-TEXT"), "{body}");
    assert!(body.contains("summarize"), "{body}");
    // The mock model is text-only: makai-ai replaces the image with a note.
    let missing = env.run(&args(&mock, &["-p", "@nope.txt", "x"]), "");
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("@nope.txt"));
}

#[test]
fn continue_and_resume_reload_the_session() {
    let env = Env::new();
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::text("first answer"))
            .push(ScriptedResponse::text("second answer"))
            .push(ScriptedResponse::text("third answer")),
    );
    let out = env.run(&args(&mock, &["-p", "first question"]), "");
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let files = env.session_files();
    assert_eq!(files.len(), 1);
    let text = std::fs::read_to_string(&files[0]).unwrap();
    let entries = json_lines(&text);
    assert_eq!(entries[0]["type"], "session");
    let messages: Vec<&Value> = entries.iter().filter(|e| e["type"] == "message").collect();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[1]["message"]["role"], "assistant");

    let out = env.run(&args(&mock, &["-c", "-p", "second question"]), "");
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let body = request_text(&mock.requests()[1]);
    assert!(
        body.contains("first question") && body.contains("first answer"),
        "{body}"
    );
    assert_eq!(env.session_files().len(), 1, "continued in the same file");

    let id = entries[0]["id"].as_str().unwrap().to_string();
    let out = env.run(
        &args(&mock, &["--session", &id[..13], "-p", "third question"]),
        "",
    );
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let body = request_text(&mock.requests()[2]);
    assert!(
        body.contains("second answer") && body.contains("third question"),
        "{body}"
    );

    // --no-session leaves no file behind.
    let mock2 = Mock::start(Scenario::new().push(ScriptedResponse::text("x")));
    let before = env.session_files().len();
    let out = env.run(&args(&mock2, &["--no-session", "-p", "q"]), "");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(env.session_files().len(), before);
}

#[test]
fn http_401_fails_with_exit_1_and_the_reason() {
    let env = Env::new();
    let mock = Mock::start(
        Scenario::new().push(
            ScriptedResponse::new()
                .with_status(401)
                .with_body(r#"{"error":{"message":"Incorrect API key provided"}}"#),
        ),
    );
    let out = env.run(&args(&mock, &["-p", "hi"]), "");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("401") || err.contains("Incorrect API key"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(stdout(&out), "");
}

#[test]
fn http_429_is_retried_then_reported() {
    let env = Env::new();
    env.settings(json!({"retry": {"maxRetries": 1, "baseDelayMs": 10, "maxDelayMs": 2000}}));
    let rate_limited = || {
        ScriptedResponse::new()
            .with_status(429)
            .with_header("retry-after", "0")
            .with_body(r#"{"error":{"message":"Rate limit reached"}}"#)
    };
    // One 429, then success: the retry is visible in JSON mode.
    let mock = Mock::start(
        Scenario::new()
            .push(rate_limited())
            .push(ScriptedResponse::text("after retry")),
    );
    let out = env.run(&args(&mock, &["--mode", "json", "hi"]), "");
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let lines = json_lines(&stdout(&out));
    assert!(
        lines.iter().any(|l| l["type"] == "auto_retry_start"),
        "no retry event"
    );
    assert_eq!(mock.requests().len(), 2);
    // Always 429: exit 1 with the reason.
    let mock = Mock::start(Scenario::new().push(rate_limited()).push(rate_limited()));
    let out = env.run(&args(&mock, &["-p", "hi"]), "");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).to_lowercase().contains("rate limit"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn no_key_at_all_explains_what_to_do() {
    let env = Env::new();
    let out = env.run(&s(&["-p", "hello"]), "");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    for needle in [
        "ANTHROPIC_API_KEY",
        "makai auth login",
        "--base-url http://127.0.0.1:11434/v1 --api openai-completions --model NAME",
    ] {
        assert!(err.contains(needle), "missing {needle}: {err}");
    }
    assert!(
        !err.contains("panicked") && !err.contains("backtrace"),
        "{err}"
    );
    // A named hosted model without its key says which variable to set.
    let out = env.run(
        &s(&["-p", "--model", "anthropic/claude-sonnet-4-5", "hi"]),
        "",
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("ANTHROPIC_API_KEY"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn usage_errors_exit_2_and_name_the_flag() {
    let env = Env::new();
    for (argv, flag) in [
        (s(&["--frobnicate"]), "--frobnicate"),
        (s(&["--thinking", "lots", "-p", "x"]), "--thinking"),
        (s(&["--mode", "yaml"]), "--mode"),
        (s(&["--api", "openai-completions", "-p", "x"]), "--base-url"),
        (s(&["--model", "no-such-model-xyz", "-p", "x"]), "--model"),
    ] {
        let out = env.run(&argv, "");
        assert_eq!(out.status.code(), Some(2), "{argv:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(flag), "{argv:?}: {}", stderr(&out));
    }
}

#[test]
fn version_and_list_models() {
    let env = Env::new();
    let out = env.run(&s(&["--version"]), "");
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).starts_with("makai "));
    std::fs::write(
        env.home.path().join("models.json"),
        r#"{"providers":{"ollama":{"baseUrl":"http://127.0.0.1:11434/v1","api":"openai-completions","models":[{"id":"qwen-local"}]}}}"#,
    )
    .unwrap();
    let out = env.run(&s(&["--list-models"]), "");
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(
        text.contains("anthropic/claude-sonnet-4-5") && text.contains("ollama/qwen-local"),
        "{text}"
    );
    let out = env.run(&s(&["--list-models", "qwen"]), "");
    assert!(!stdout(&out).contains("claude"));
}
