//! The interactive UI, driven for real: the built `makai` runs in a tmux pane
//! (120x40) against the scripted server; keys go in with `send-keys` and the
//! screen is read back with `capture-pane`. Skipped (with a message) when
//! tmux is not installed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::tmux::{Pane, editor_text, tmux_available};
use common::{Env, Mock};
use makai_mockllm::{Scenario, ScriptedResponse, Usage};

#[test]
fn streams_the_answer_shows_the_footer_and_help_and_exits_on_ctrl_c_twice() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(
        Scenario::new().push(
            ScriptedResponse::text(
                "## Greeting\n\nHello from **the mock** model.\n\n- first point\n- second point",
            )
            .usage(Usage::new(1234, 56)),
        ),
    );
    let env = Env::new();
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    pane.type_text("hi there");
    pane.keys(&["Enter"]);
    let screen = pane.wait_text("Hello from the mock model.");
    assert!(
        screen.contains(" hi there"),
        "the prompt is shown:\n{screen}"
    );
    assert!(screen.contains("Greeting"), "{screen}");
    assert!(
        !screen.contains("**"),
        "markdown is rendered, not shown raw:\n{screen}"
    );
    assert!(screen.contains("• first point"), "{screen}");
    // The footer: tokens, cost, context use and the model with its thinking level.
    let screen = pane.wait_text("↑1.2k");
    let footer = screen.lines().last().unwrap_or("").to_string();
    assert!(footer.contains("↑1.2k ↓56"), "footer: {footer}");
    assert!(
        footer.contains('$') && footer.contains("%/"),
        "footer: {footer}"
    );
    assert!(
        footer.contains("mock-model • thinking off"),
        "footer: {footer}"
    );
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 1);
    assert!(common::request_text(&reqs[0]).contains("hi there"));

    pane.type_text("/help");
    pane.keys(&["Enter"]);
    let screen = pane.wait_for("the /help output", |s| {
        s.contains("Commands:") && s.contains("/quit")
    });
    for cmd in [
        "/model",
        "/thinking",
        "/resume",
        "/tree",
        "/fork",
        "/export",
        "/quit",
    ] {
        assert!(screen.contains(cmd), "/help lists {cmd}:\n{screen}");
    }
    assert_eq!(
        mock.requests().len(),
        1,
        "a command is not sent to the model"
    );
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

#[test]
fn a_tool_round_shows_the_call_its_result_and_expands_it() {
    if !tmux_available() {
        return;
    }
    let lines: Vec<String> = (1..=12).map(|i| format!("entry number {i}")).collect();
    let mock = Mock::start(
        Scenario::new()
            .push(
                ScriptedResponse::new()
                    .with_text("Let me read it.")
                    .with_tool_call("call_1", "read", r#"{"path":"notes.txt"}"#),
            )
            .push(ScriptedResponse::text("The notes list twelve entries.")),
    );
    let env = Env::new();
    std::fs::write(env.work().join("notes.txt"), lines.join("\n")).unwrap();
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    pane.type_text("what is in notes.txt?");
    pane.keys(&["Enter"]);
    let screen = pane.wait_text("The notes list twelve entries.");
    assert!(
        screen.contains("● read notes.txt"),
        "the call and its arguments:\n{screen}"
    );
    assert!(screen.contains("entry number 1"), "the result:\n{screen}");
    assert!(
        !screen.contains("entry number 12"),
        "the result is cut short:\n{screen}"
    );
    assert!(screen.contains("more lines (ctrl+o to expand)"), "{screen}");
    // The tool result went back to the model.
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2);
    assert!(common::request_text(&reqs[1]).contains("entry number 12"));

    pane.keys(&["C-o"]);
    let screen = pane.wait_text("entry number 12");
    assert!(!screen.contains("ctrl+o to expand"), "{screen}");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

/// A long answer streamed slowly (one word per event, `ms` apart).
fn slow_answer(words: usize, ms: u64) -> ScriptedResponse {
    let text: Vec<String> = (1..=words).map(|i| format!("word{i}")).collect();
    ScriptedResponse::text(text.join(" ")).delay(ms)
}

/// `/reload` while an answer streams waits (pi's reload asks its caller to
/// wait): nothing a run uses is replaced under it; once the answer is done
/// it reloads.
#[test]
fn reload_waits_for_the_answer_to_finish() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(
        Scenario::new()
            .push(slow_answer(40, 100))
            .with_fallback(ScriptedResponse::text("ok")),
    );
    let env = Env::new();
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    pane.type_text("take your time");
    pane.keys(&["Enter"]);
    pane.wait_text("word3");
    pane.type_text("/reload");
    pane.keys(&["Enter"]);
    pane.wait_text("/reload waits for the answer: run it again once it is done.");
    pane.wait_text("word40");
    pane.wait_for("the answer to end", |s| !s.contains("Working…"));
    pane.type_text("/reload");
    pane.keys(&["Enter"]);
    pane.wait_text("Reloaded: ");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

/// Esc aborts a slow stream; the steering message queued meanwhile goes
/// back to the editor.
#[test]
fn esc_aborts_a_slow_stream_and_returns_queued_messages_to_the_editor() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new().push(slow_answer(200, 100)));
    let env = Env::new();
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    pane.type_text("take your time");
    pane.keys(&["Enter"]);
    let screen = pane.wait_text("word3");
    assert!(
        screen.contains("Working…"),
        "a spinner while the answer streams:\n{screen}"
    );
    pane.type_text("change course");
    pane.keys(&["Enter"]);
    pane.wait_text("Steering: change course");
    pane.keys(&["Escape"]);
    let screen = pane.wait_text("Aborted.");
    assert!(
        !screen.contains("word200"),
        "the stream stopped early:\n{screen}"
    );
    let screen = pane.wait_for("the spinner to stop", |s| {
        !s.contains("Working…") && !s.contains("Aborting…")
    });
    assert!(
        !screen.contains("Steering:"),
        "the queue is empty:\n{screen}"
    );
    assert_eq!(
        editor_text(&screen),
        "change course",
        "the queued message is back in the editor:\n{screen}"
    );
    assert_eq!(
        mock.requests().len(),
        1,
        "the steering message was not sent"
    );
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

#[test]
fn alt_enter_queues_a_follow_up_that_runs_after_the_answer() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(
        Scenario::new()
            .push(slow_answer(30, 60))
            .push(ScriptedResponse::text("Follow-up answered.")),
    );
    let env = Env::new();
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    pane.type_text("first question");
    pane.keys(&["Enter"]);
    pane.wait_text("word2");
    pane.type_text("and then this");
    pane.keys(&["M-Enter"]);
    pane.wait_text("Follow-up: and then this");
    let screen = pane.wait_text("Follow-up answered.");
    assert!(
        screen.contains("word30"),
        "the first answer finished first:\n{screen}"
    );
    assert!(
        !screen.contains("Follow-up: and then this"),
        "no longer queued:\n{screen}"
    );
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2);
    assert!(common::request_text(&reqs[1]).contains("and then this"));
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

#[test]
fn tree_switches_branches_and_at_completes_paths() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::text("answer one"))
            .push(ScriptedResponse::text("answer two"))
            .push(ScriptedResponse::text("answer three")),
    );
    let env = Env::new();
    std::fs::write(env.work().join("notes-alpha.txt"), "x").unwrap();
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    pane.type_text("first prompt");
    pane.keys(&["Enter"]);
    pane.wait_text("answer one");
    pane.type_text("second prompt");
    pane.keys(&["Enter"]);
    pane.wait_text("answer two");

    // /tree: pick the second prompt; the leaf moves before it and the prompt
    // returns to the editor.
    pane.type_text("/tree");
    pane.keys(&["Enter"]);
    pane.wait_text("Session tree");
    pane.type_text("second");
    pane.wait_for("the filtered tree", |s| {
        s.contains("filter: second") && !s.contains("answer one  ")
    });
    pane.keys(&["Enter"]);
    // pi's question about the branch left: its first choice, no summary.
    pane.wait_text("Summarize branch?");
    pane.keys(&["Enter"]);
    let screen = pane.wait_text("Moved before the prompt");
    assert_eq!(editor_text(&screen), "second prompt", "{screen}");
    assert!(
        !screen.contains("answer two"),
        "the other branch is not shown:\n{screen}"
    );
    pane.keys(&["C-u"]);
    pane.type_text("other branch");
    pane.keys(&["Enter"]);
    pane.wait_text("answer three");
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3);
    let sent = common::request_text(&reqs[2]);
    assert!(
        sent.contains("first prompt") && sent.contains("other branch"),
        "{sent}"
    );
    assert!(
        !sent.contains("second prompt"),
        "the new branch leaves the old prompt out: {sent}"
    );

    // @ completion.
    pane.type_text("see @notes-al");
    pane.wait_text("notes-alpha.txt  ");
    pane.keys(&["Tab"]);
    let screen = pane.wait_for("the completed path", |s| {
        editor_text(s) == "see @notes-alpha.txt"
    });
    assert!(
        !screen.contains("tab/enter insert"),
        "the popup closed:\n{screen}"
    );
    pane.keys(&["C-u"]);

    // /name shows in the footer.
    pane.type_text("/name my branch");
    pane.keys(&["Enter"]);
    pane.wait_for("the name in the footer", |s| {
        s.lines()
            .rev()
            .nth(1)
            .is_some_and(|l| l.contains("• my branch"))
    });
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

/// Regression: a session file that could not be written was said on stderr
/// only, which the full-screen UI hides (and the line wrote over its
/// screen). Now the UI shows it; the answer is still shown.
#[test]
fn a_session_file_that_cannot_be_written_is_said_in_the_ui() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("Answer kept on screen")));
    let env = Env::new();
    let folder = env.work().join("sessions-here");
    let mut args = mock.args();
    args.extend([
        "--session".to_string(),
        folder.join("s.jsonl").display().to_string(),
    ]);
    let pane = Pane::start(&env, &args);
    pane.wait_text("Ask anything");
    // The session's folder is created with its first entry: a file in its
    // place makes that fail.
    std::fs::write(&folder, "not a folder").unwrap();
    pane.type_text("hi there");
    pane.keys(&["Enter"]);
    pane.wait_text("Answer kept on screen");
    pane.wait_text("could not write the session file");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

/// Regression: what opening the session had to say (here: a torn last line
/// skipped) went to stderr only, behind the full-screen UI. Now the UI shows
/// it when it starts.
#[test]
fn a_warning_from_opening_the_session_is_shown_when_the_ui_starts() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("unused")));
    let env = Env::new();
    let path = env.work().join("torn.jsonl");
    // The session's own directory is this one (one that is gone would be
    // asked about first).
    let header = serde_json::json!({"type": "session", "version": 3,
        "id": "0194bbbb-0000-7000-8000-00000000abcd",
        "timestamp": "2026-11-10T10:00:00.000Z", "cwd": env.work()});
    std::fs::write(
        &path,
        format!("{header}\n") + "\
         {\"type\":\"message\",\"id\":\"aa000001\",\"parentId\":null,\"timestamp\":\"2026-11-10T10:00:01.000Z\",\"message\":{\"role\":\"user\",\"content\":\"an earlier question\",\"timestamp\":1}}\n\
         {\"type\":\"message\",\"id\":\"aa000002\",\"parentId\":\"aa00",
    )
    .unwrap();
    let mut args = mock.args();
    args.extend(["--session".to_string(), path.display().to_string()]);
    let pane = Pane::start(&env, &args);
    pane.wait_text("an earlier question");
    pane.wait_text("skipped a torn last line");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

#[test]
fn pi_quiet_startup_and_hide_thinking_block_start_the_ui_quiet_and_folded() {
    if !tmux_available() {
        return;
    }
    let answer =
        || ScriptedResponse::text("The answer is 42.").with_thinking("secret chain of thought");
    let mock = Mock::start(Scenario::new().push(answer()).push(answer()));
    for (settings, quiet) in [
        (serde_json::json!({}), false),
        (
            serde_json::json!({"quietStartup": true, "hideThinkingBlock": true}),
            true,
        ),
    ] {
        let env = Env::new();
        env.settings(settings);
        let pane = Pane::start(&env, &mock.args());
        let screen = pane.wait_text("Ask anything");
        assert_eq!(
            !screen.contains("ctrl+c twice exit"),
            quiet,
            "the greeting:\n{screen}"
        );
        pane.type_text("question");
        pane.keys(&["Enter"]);
        let screen = pane.wait_text("The answer is 42.");
        assert_eq!(
            !screen.contains("secret chain of thought"),
            quiet,
            "the thinking block:\n{screen}"
        );
        if quiet {
            assert!(
                screen.contains("Thinking… (ctrl+t to show or hide)"),
                "{screen}"
            );
            // Shown again on request.
            pane.keys(&["C-t"]);
            pane.wait_text("secret chain of thought");
        }
        assert_eq!(pane.quit_with_ctrl_c(), 0);
    }
}
