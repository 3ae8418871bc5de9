//! The interactive UI, driven for real: the built `makai` runs in a tmux pane
//! (120x40) against the scripted server; keys go in with `send-keys` and the
//! screen is read back with `capture-pane`. Skipped (with a message) when
//! tmux is not installed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{Env, KEY_VARS, Mock};
use makai_mockllm::{Scenario, ScriptedResponse, Usage};

/// How long a screen may take to show what a test waits for.
const WAIT: Duration = Duration::from_secs(20);

static NEXT: AtomicUsize = AtomicUsize::new(0);

fn tmux_available() -> bool {
    let ok = Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!(
            "SKIPPED: tmux is not installed, so the terminal UI cannot be driven \
             (install it with `apt-get install tmux`)"
        );
    }
    ok
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// A tmux server of its own (a private socket) with one pane running makai.
struct Pane {
    socket: String,
    /// makai's stderr (kept out of the screen).
    stderr: std::path::PathBuf,
    /// Where the shell writes makai's exit code.
    exit_file: std::path::PathBuf,
}

impl Pane {
    fn tmux(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux runs")
    }

    /// Starts `makai args...` in the work folder with the test's home.
    fn start(env: &Env, args: &[String]) -> Pane {
        let socket = format!(
            "makai-tui-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        let mut cmd = format!("cd {} && env", quote(&env.work().display().to_string()));
        for k in KEY_VARS.iter().chain(["MAKAI_SESSION_DIR"].iter()) {
            cmd.push_str(&format!(" -u {k}"));
        }
        cmd.push_str(&format!(
            " MAKAI_HOME={} MAKAI_NO_BROWSER=1 MAKAI_AUTO_TITLE=0 TERM=xterm-256color {}",
            quote(&env.home.path().display().to_string()),
            quote(env!("CARGO_BIN_EXE_makai"))
        ));
        for a in args {
            cmd.push(' ');
            cmd.push_str(&quote(a));
        }
        let stderr = env.home.path().join("stderr.txt");
        cmd.push_str(&format!(" 2>{}", quote(&stderr.display().to_string())));
        // The shell waits for makai and writes its exit code (tmux may not
        // have reaped the process when the test asks).
        let exit_file = env.home.path().join("exit-code.txt");
        cmd.push_str(&format!(
            "; echo $? > {}",
            quote(&exit_file.display().to_string())
        ));
        let pane = Pane {
            socket,
            stderr,
            exit_file,
        };
        let out = pane.tmux(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-x",
            "120",
            "-y",
            "40",
            "-s",
            "t",
            &cmd,
            ";",
            "set-option",
            "-t",
            "t",
            "remain-on-exit",
            "on",
        ]);
        assert!(
            out.status.success(),
            "tmux new-session failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        pane
    }

    /// Sends keys by tmux name (`Enter`, `Escape`, `C-c`, `M-Enter`, ...).
    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "t"];
        args.extend_from_slice(keys);
        let out = self.tmux(&args);
        assert!(
            out.status.success(),
            "send-keys failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Types text literally.
    fn type_text(&self, text: &str) {
        let out = self.tmux(&["send-keys", "-t", "t", "-l", text]);
        assert!(out.status.success());
    }

    /// The visible screen.
    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.tmux(&["capture-pane", "-p", "-t", "t"]).stdout).into_owned()
    }

    /// The exit code once makai has ended.
    fn exit_status(&self) -> Option<i32> {
        let text = std::fs::read_to_string(&self.exit_file).ok()?;
        text.trim().parse().ok()
    }

    /// The screen and makai's stderr, for failure messages.
    fn diagnostics(&self) -> String {
        let stderr = std::fs::read_to_string(&self.stderr).unwrap_or_default();
        format!("the screen was:\n{}\nstderr:\n{stderr}", self.screen())
    }

    /// Polls the screen until `pred` holds; panics with the last screen after [`WAIT`].
    fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if pred(&screen) {
                return screen;
            }
            if start.elapsed() > WAIT {
                panic!("timed out waiting for {what}; {}", self.diagnostics());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn wait_text(&self, text: &str) -> String {
        self.wait_for(&format!("{text:?}"), |s| s.contains(text))
    }

    /// Ctrl+C twice, then waits for the process to end; returns its exit code.
    fn quit_with_ctrl_c(&self) -> i32 {
        self.keys(&["C-c"]);
        self.wait_text("Press Ctrl+C again to exit");
        self.keys(&["C-c"]);
        let start = Instant::now();
        loop {
            if let Some(code) = self.exit_status() {
                return code;
            }
            if start.elapsed() > WAIT {
                panic!(
                    "makai did not exit after Ctrl+C twice; {}",
                    self.diagnostics()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let path = self.tmux(&["display-message", "-p", "#{socket_path}"]);
        let _ = self.tmux(&["kill-server"]);
        let path = String::from_utf8_lossy(&path.stdout).trim().to_string();
        if path.contains(&self.socket) {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// The editor's text: the rows between its two horizontal borders.
fn editor_text(screen: &str) -> String {
    let rows: Vec<&str> = screen.lines().collect();
    let borders: Vec<usize> = rows
        .iter()
        .enumerate()
        .filter(|(_, r)| r.starts_with("────────"))
        .map(|(i, _)| i)
        .collect();
    match borders.as_slice() {
        [.., a, b] => rows[a + 1..*b]
            .iter()
            .map(|r| r.trim())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

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
