//! Regular mode under tmux (pi's `tuiMode: "regular"`, `--tui-mode
//! regular`): makai stays on the normal screen, under what the shell wrote;
//! the conversation goes into the terminal's scrollback once, in order, and
//! stays there when makai ends; the editor and footer stay under the
//! conversation and are gone when makai ends; the mouse is the terminal's.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::tmux::{Pane, tmux_available};
use common::*;
use makai_mockllm::{Scenario, ScriptedResponse};

/// An answer of `n` numbered rows (a code block keeps one a row).
fn numbered(tag: &str, n: usize) -> String {
    let rows: Vec<String> = (1..=n).map(|i| format!("{tag} row {i:02}")).collect();
    format!("Here they are:\n\n```\n{}\n```", rows.join("\n"))
}

/// How many rows of `all` are exactly `row` (after the block's indent).
fn count(all: &str, row: &str) -> usize {
    all.lines().filter(|l| l.trim() == row).count()
}

/// Fails unless each of the `n` rows of `tag` is in `all` once, in order.
fn once_in_order(all: &str, tag: &str, n: usize) {
    let mut last = 0;
    for i in 1..=n {
        let row = format!("{tag} row {i:02}");
        assert_eq!(count(all, &row), 1, "{row} in\n{all}");
        let at = all.find(&row).unwrap();
        assert!(at > last, "{row} out of order in\n{all}");
        last = at;
    }
}

#[test]
fn the_conversation_goes_into_the_scrollback_once_and_stays_when_makai_ends() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::text(numbered("first", 60)))
            .push(ScriptedResponse::text(numbered("second", 30))),
    );
    let env = Env::new();
    let mut args = mock.args();
    args.extend(["--tui-mode".to_string(), "regular".to_string()]);
    let pane = Pane::start_in_shell(&env, &args);
    pane.wait_text("Ask anything");
    // The normal screen, under the shell's command line; no mouse reports.
    assert_eq!(pane.value("#{alternate_on}"), "0");
    assert_eq!(pane.value("#{mouse_any_flag}"), "0");
    assert!(pane.screen().contains("shell$"), "{}", pane.screen());

    pane.type_text("count to sixty");
    pane.keys(&["Enter"]);
    pane.wait_text("first row 60");
    pane.wait_for("the run over", |s| !s.contains("Working"));
    let all = pane.screen_and_scrollback();
    once_in_order(&all, "first", 60);
    assert!(
        all.find("shell$").unwrap() < all.find("count to sixty").unwrap(),
        "{all}"
    );
    // The editor is under the answer, on the screen's last rows.
    let screen = pane.screen();
    let rows: Vec<&str> = screen.lines().collect();
    let editor = rows
        .iter()
        .rposition(|r| r.contains("Ask anything"))
        .unwrap();
    let answer = rows
        .iter()
        .position(|r| r.contains("first row 60"))
        .unwrap();
    assert!(editor > answer && editor + 6 > rows.len(), "{screen}");

    pane.type_text("and to thirty");
    pane.keys(&["Enter"]);
    pane.wait_text("second row 30");
    pane.wait_for("the run over", |s| !s.contains("Working"));
    let all = pane.screen_and_scrollback();
    once_in_order(&all, "first", 60);
    once_in_order(&all, "second", 30);

    // Expanding the tool output is another view: everything is written
    // again, the scrollback with it, still once.
    pane.keys(&["C-o"]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    pane.wait_text("second row 30");
    let all = pane.screen_and_scrollback();
    once_in_order(&all, "first", 60);
    once_in_order(&all, "second", 30);

    assert_eq!(pane.quit_with_ctrl_c(), 0);
    let after = pane.output_after_exit();
    once_in_order(&after, "first", 60);
    once_in_order(&after, "second", 30);
    // The editor and footer went with makai; the way back stays.
    assert!(!after.contains("Ask anything"), "{after}");
    assert!(
        after.contains("To resume this session: makai --session"),
        "{after}"
    );
    assert_eq!(after.matches("and to thirty").count(), 1, "{after}");
}

#[test]
fn the_setting_chooses_regular_mode_lists_open_above_the_editor_and_settings_switch_it() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("short answer")));
    let env = Env::new();
    std::fs::write(
        env.home.path().join("settings.json"),
        r#"{"tuiMode": "regular"}"#,
    )
    .unwrap();
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    assert_eq!(pane.value("#{alternate_on}"), "0");
    pane.type_text("hello");
    pane.keys(&["Enter"]);
    pane.wait_text("short answer");
    // A selector opens between the conversation and the editor, and goes.
    pane.type_text("/settings");
    pane.keys(&["Enter"]);
    let screen = pane.wait_text("esc cancel");
    let rows: Vec<&str> = screen.lines().collect();
    let list = rows.iter().position(|r| r.contains("esc cancel")).unwrap();
    let answer = rows
        .iter()
        .position(|r| r.contains("short answer"))
        .unwrap();
    let editor = rows.iter().rposition(|r| r.contains('─')).unwrap();
    assert!(answer < list && list < editor, "{screen}");
    pane.keys(&["Escape"]);
    pane.wait_for("the list gone", |s| !s.contains("esc cancel"));
    // Ctrl+Shift+F leaves the search to the terminal, and says so.
    pane.type_text("\u{1b}[102;6u");
    let screen = pane.wait_text("use its own search");
    assert!(!screen.contains("Find transcript"), "{screen}");

    // `/settings` switches the mode at once, and saves it.
    let settings = || -> serde_json::Value {
        serde_json::from_str(
            &std::fs::read_to_string(env.home.path().join("settings.json")).unwrap(),
        )
        .unwrap()
    };
    let switch = |to: &str| {
        pane.type_text("/settings");
        pane.keys(&["Enter"]);
        pane.wait_text("TUI mode");
        pane.type_text("TUI mode");
        pane.keys(&["Enter"]);
        pane.wait_text(&format!("TUI mode: {to}"));
        pane.keys(&["Escape"]);
        pane.wait_for("the list gone", |s| !s.contains("esc cancel"));
    };
    switch("fullscreen");
    assert_eq!(pane.value("#{alternate_on}"), "1");
    assert_eq!(settings()["tuiMode"], "fullscreen");
    assert!(pane.screen().contains("short answer"), "{}", pane.screen());
    switch("regular");
    assert_eq!(pane.value("#{alternate_on}"), "0");
    assert_eq!(settings()["tuiMode"], "regular");
    let all = pane.screen_and_scrollback();
    assert_eq!(all.matches("short answer").count(), 1, "{all}");

    assert_eq!(pane.quit_with_ctrl_c(), 0);
    let after = pane.output_after_exit();
    assert_eq!(after.matches("short answer").count(), 1, "{after}");
}

#[test]
fn ctrl_z_leaves_the_conversation_above_the_shell_and_fg_writes_it_once_again() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::text("before the break"))
            .push(ScriptedResponse::text("after the break")),
    );
    let env = Env::new();
    let mut args = mock.args();
    args.extend(["--tui-mode".to_string(), "regular".to_string()]);
    let pane = Pane::start_in_shell(&env, &args);
    pane.wait_text("Ask anything");
    pane.type_text("first");
    pane.keys(&["Enter"]);
    pane.wait_text("before the break");
    pane.wait_for("the run over", |s| !s.contains("Working"));
    pane.keys(&["C-z"]);
    let screen = pane.wait_text("Stopped");
    // The shell goes on under the conversation; the editor is gone.
    assert!(!screen.contains("Ask anything"), "{screen}");
    assert!(
        screen.find("before the break").unwrap() < screen.find("Stopped").unwrap(),
        "{screen}"
    );
    assert_eq!(pane.wait_exit_status("stop"), 148);
    pane.resume_job();
    pane.wait_text("Ask anything");
    pane.type_text("second");
    pane.keys(&["Enter"]);
    pane.wait_text("after the break");
    pane.wait_for("the run over", |s| !s.contains("Working"));
    let all = pane.screen_and_scrollback();
    assert_eq!(all.matches("before the break").count(), 1, "{all}");
    assert_eq!(all.matches("after the break").count(), 1, "{all}");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

/// Regressions: the exit output followed the mode makai started in, so an
/// answer given after `/settings` switched to full-screen left nothing in
/// the terminal when makai ended; and what regular mode had written before
/// the switch stayed in the scrollback, so the exit transcript showed it
/// twice.
#[test]
fn the_exit_output_follows_the_mode_the_ui_ended_in() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::text("answered in regular mode"))
            .push(ScriptedResponse::text("answered in full screen")),
    );
    let env = Env::new();
    let mut args = mock.args();
    args.extend(["--tui-mode".to_string(), "regular".to_string()]);
    let pane = Pane::start(&env, &args);
    pane.wait_text("Ask anything");
    pane.type_text("first");
    pane.keys(&["Enter"]);
    pane.wait_text("answered in regular mode");
    pane.type_text("/settings");
    pane.keys(&["Enter"]);
    pane.wait_text("TUI mode");
    pane.type_text("TUI mode");
    pane.keys(&["Enter"]);
    pane.wait_text("TUI mode: fullscreen");
    pane.keys(&["Escape"]);
    pane.wait_for("the list gone", |s| !s.contains("esc cancel"));
    assert_eq!(pane.value("#{alternate_on}"), "1");
    pane.type_text("hello");
    pane.keys(&["Enter"]);
    pane.wait_text("answered in full screen");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
    let after = pane.output_after_exit();
    for answer in ["answered in regular mode", "answered in full screen"] {
        assert_eq!(after.matches(answer).count(), 1, "{answer}:\n{after}");
    }
    assert!(
        after.find("answered in regular mode") < after.find("answered in full screen"),
        "{after}"
    );
}
