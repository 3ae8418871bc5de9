//! The mouse in the conversation under tmux, driven as a terminal reports it
//! (SGR mouse sequences). pi's `fullscreenScrollbar`: the pointer on the
//! rightmost column shows the scrollbar, a click on its track scrolls there,
//! and `hidden` never shows it; a click on the "more lines" note goes back to
//! the end. Selecting text: a drag, a double click (a
//! word), copied when the button comes up (`fullscreenCopyOnSelect`) or with
//! Ctrl+X; what was copied is read back from tmux's buffer (OSC 52).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::tmux::{Pane, tmux_available};
use common::*;
use makai_mockllm::{Scenario, ScriptedResponse};

/// An SGR mouse report: `button` at 1-based (`column`, `row`), pressed
/// (`M`) or released (`m`).
fn mouse(pane: &Pane, button: u8, column: u16, row: u16, end: char) {
    pane.type_text(&format!("\u{1b}[<{button};{column};{row}{end}"));
}

/// The screen's rightmost column (the pane is 120 columns wide).
fn right_column(screen: &str) -> String {
    screen
        .lines()
        .map(|l| l.chars().nth(119).unwrap_or(' '))
        .collect()
}

fn long_answer_pane(setting: &str) -> (Mock, Env, Pane) {
    let answer: Vec<String> = (1..=120).map(|i| format!("answer line {i}")).collect();
    let mock =
        Mock::start(Scenario::new().with_fallback(ScriptedResponse::text(answer.join("\n\n"))));
    let env = Env::new();
    env.settings(serde_json::json!({"fullscreenScrollbar": setting}));
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    pane.type_text("a long one please");
    pane.keys(&["Enter"]);
    pane.wait_text("answer line 120");
    (mock, env, pane)
}

#[test]
fn the_pointer_shows_the_scrollbar_and_a_click_on_its_track_scrolls_there() {
    if !tmux_available() {
        return;
    }
    let (_mock, _env, pane) = long_answer_pane("auto");
    assert!(!right_column(&pane.screen()).contains('┃'));
    // The pointer moves onto the rightmost column: the bar, its thumb at
    // the bottom (the conversation shows its end).
    mouse(&pane, 35, 120, 10, 'M');
    pane.wait_for("the scrollbar", |s| {
        let col = right_column(s);
        col.contains('┃') && col.contains('│')
    });
    // A click at the track's top scrolls to the conversation's start.
    mouse(&pane, 0, 120, 1, 'M');
    mouse(&pane, 0, 120, 1, 'm');
    pane.wait_for("the start of the conversation", |s| {
        s.contains("a long one please")
            && s.contains("more lines")
            && !s.contains("answer line 120")
    });
    // The pointer leaves: the bar goes.
    mouse(&pane, 35, 60, 10, 'M');
    pane.wait_for("no scrollbar", |s| !right_column(s).contains('┃'));
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

#[test]
fn a_hidden_scrollbar_never_shows_and_its_column_is_text() {
    if !tmux_available() {
        return;
    }
    let (_mock, _env, pane) = long_answer_pane("hidden");
    mouse(&pane, 35, 120, 10, 'M');
    mouse(&pane, 0, 120, 1, 'M');
    mouse(&pane, 0, 120, 1, 'm');
    // The wheel still scrolls (64: up) a few rows: once it has, the click
    // before it was read, and it had not gone to the start.
    mouse(&pane, 64, 60, 10, 'M');
    let screen = pane.wait_text("more lines");
    assert!(!right_column(&screen).contains('┃'), "{screen}");
    assert!(!screen.contains("a long one please"), "{screen}");
    // A click on the "more lines" note goes back to the end (pi's "Jump to
    // latest message").
    let (column, row) = find(&screen, "more lines");
    mouse(&pane, 0, column, row, 'M');
    mouse(&pane, 0, column, row, 'm');
    pane.wait_for("the end again", |s| {
        s.contains("answer line 120") && !s.contains("more lines")
    });
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

/// `/settings` switches the mode (auto, always, hidden) and saves it as pi
/// does; `always` shows the bar with no pointer near it.
#[test]
fn settings_switches_the_scrollbar_to_always_and_saves_it() {
    if !tmux_available() {
        return;
    }
    let (_mock, env, pane) = long_answer_pane("auto");
    pane.type_text("/settings");
    pane.keys(&["Enter"]);
    pane.wait_text("Scrollbar: auto");
    pane.type_text("scrollbar");
    pane.keys(&["Enter"]);
    pane.wait_text("Scrollbar: always");
    pane.keys(&["Escape"]);
    pane.wait_for("the bar in its own column", |s| {
        !s.contains("Scrollbar: always") && right_column(s).contains('┃')
    });
    let saved: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(env.home.path().join("settings.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(saved["fullscreenScrollbar"], "always");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

/// The screen position (1-based column, row) where `text` starts.
fn find(screen: &str, text: &str) -> (u16, u16) {
    for (row, line) in screen.lines().enumerate() {
        if let Some(at) = line.find(text) {
            let column = line[..at].chars().count();
            return (column as u16 + 1, row as u16 + 1);
        }
    }
    panic!("{text:?} is not on the screen:\n{screen}");
}

/// A pane answered with a few paragraphs, tmux taking OSC 52 copies into
/// its buffer.
fn selection_pane(settings: serde_json::Value) -> (Mock, Env, Pane) {
    let mock = Mock::start(Scenario::new().with_fallback(ScriptedResponse::text(
        "Intro line.\n\nselect these words here\n\nThe end.",
    )));
    let env = Env::new();
    env.settings(settings);
    let pane = Pane::start(&env, &mock.args());
    pane.tmux(&["set-option", "-s", "set-clipboard", "on"]);
    pane.wait_text("Ask anything");
    pane.type_text("go");
    pane.keys(&["Enter"]);
    pane.wait_text("The end.");
    (mock, env, pane)
}

fn copied(pane: &Pane) -> String {
    String::from_utf8_lossy(&pane.tmux(&["show-buffer"]).stdout).into_owned()
}

#[test]
fn a_drag_and_a_double_click_select_text_that_is_copied_when_the_button_comes_up() {
    if !tmux_available() {
        return;
    }
    let (_mock, _env, pane) = selection_pane(serde_json::json!({}));
    let (column, row) = find(&pane.screen(), "these words");
    mouse(&pane, 0, column, row, 'M');
    mouse(&pane, 32, column + 10, row, 'M');
    mouse(&pane, 0, column + 10, row, 'm');
    pane.wait_text("Copied 11 characters");
    assert_eq!(copied(&pane), "these words");
    // A double click: the word under it.
    let (column, row) = find(&pane.screen(), "here");
    for _ in 0..2 {
        mouse(&pane, 0, column + 1, row, 'M');
        mouse(&pane, 0, column + 1, row, 'm');
    }
    pane.wait_text("Copied 4 characters");
    assert_eq!(copied(&pane), "here");
    // A drag over two paragraphs, from the margin of the first (pi's
    // `outputPad`, left out of the copy) to the sixth letter of the last.
    let (_, intro) = find(&pane.screen(), "Intro line.");
    mouse(&pane, 0, 1, intro, 'M');
    mouse(&pane, 32, 7, row, 'M');
    mouse(&pane, 0, 7, row, 'm');
    pane.wait_for("the copy of two paragraphs", |_| {
        copied(&pane) == "Intro line.\n\nselect"
    });
    // Ctrl+C (pi's `tui.input.copy`) copies a selection rather than
    // clearing the editor, and drops it.
    pane.tmux(&["delete-buffer"]);
    pane.keys(&["C-c"]);
    pane.wait_for("the copy by Ctrl+C", |_| {
        copied(&pane) == "Intro line.\n\nselect"
    });
    assert!(!pane.screen().contains("Press Ctrl+C again"));
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

#[test]
fn without_copy_on_select_ctrl_x_copies_the_selection() {
    if !tmux_available() {
        return;
    }
    let (_mock, _env, pane) = selection_pane(serde_json::json!({"fullscreenCopyOnSelect": false}));
    let (column, row) = find(&pane.screen(), "these words");
    mouse(&pane, 0, column, row, 'M');
    mouse(&pane, 32, column + 4, row, 'M');
    mouse(&pane, 0, column + 4, row, 'm');
    // Drawn reversed, not copied yet.
    pane.wait_for("the selection drawn", |_| {
        pane.screen_with_styles().contains("\u{1b}[7mthese")
    });
    assert!(!pane.screen().contains("Copied"));
    pane.keys(&["C-x"]);
    pane.wait_text("Copied 5 characters");
    assert_eq!(copied(&pane), "these");
    // Esc drops it; Ctrl+X then copies the last answer again.
    pane.keys(&["Escape"]);
    pane.wait_for("no selection", |_| {
        !pane.screen_with_styles().contains("\u{1b}[7mthese")
    });
    pane.keys(&["C-x"]);
    pane.wait_text("Copied the last assistant message");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

/// The first "answer line N" on the screen.
fn first_answer_line(screen: &str) -> u32 {
    screen
        .lines()
        .find_map(|l| l.trim().strip_prefix("answer line "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no answer line on\n{screen}"))
}

#[test]
fn a_drag_to_the_conversation_s_top_row_scrolls_it_and_the_selection_follows() {
    if !tmux_available() {
        return;
    }
    let (_mock, _env, pane) = long_answer_pane("hidden");
    pane.tmux(&["set-option", "-s", "set-clipboard", "on"]);
    let before = pane.screen();
    let top = first_answer_line(&before);
    let (first_column, last) = find(&before, "answer line 120");
    mouse(&pane, 0, first_column, last, 'M');
    // Each move along the top row scrolls a row up.
    for column in (1..=4).rev() {
        mouse(&pane, 32, column, 1, 'M');
    }
    mouse(&pane, 0, 1, 1, 'm');
    pane.wait_text("Copied");
    let after = pane.screen();
    assert!(first_answer_line(&after) < top, "{before}\n---\n{after}");
    let copied = copied(&pane);
    assert!(
        copied.contains(&format!("answer line {}", top - 1)),
        "the row that came in is selected: {copied:?}"
    );
    // From the row now on top (four rows came in, one a move, however the
    // moves and the frames interleave) to the cell pressed first: the first
    // of the last line.
    // (Its margin, pi's `outputPad`, left out.)
    let top_row = after.lines().next().unwrap().trim();
    assert!(copied.starts_with(top_row), "{top_row:?} / {copied:?}");
    assert_eq!(
        first_answer_line(&after) + 2,
        top,
        "four rows: two answer lines\n{before}\n---\n{after}"
    );
    assert!(copied.ends_with("answer line 119\n\na"), "{copied:?}");
    // Esc drops the selection (Ctrl+C would copy it again).
    pane.keys(&["Escape"]);
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

/// pi's full-screen mode: a right click pastes the clipboard's text into
/// the editor (read through the desktop's program, here a stand-in xclip).
#[test]
fn a_right_click_pastes_the_clipboard_into_the_editor() {
    use std::os::unix::fs::PermissionsExt;
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new().with_fallback(ScriptedResponse::text("ok")));
    let env = Env::new();
    let bin = env.home.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(
        bin.join("xclip"),
        "#!/bin/sh\ncase \"$*\" in *TARGETS*) printf 'TARGETS\\nUTF8_STRING\\n';; *) printf 'pasted by a right click';; esac\n",
    )
    .unwrap();
    std::fs::write(bin.join("wl-paste"), "#!/bin/sh\nexit 1\n").unwrap();
    for name in ["xclip", "wl-paste"] {
        std::fs::set_permissions(bin.join(name), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let pane = Pane::start_with(&env, &mock.args(), &[("PATH", path.as_str())]);
    pane.wait_text("Ask anything");
    pane.type_text("note: ");
    // The right button (2) pressed and released over the conversation.
    mouse(&pane, 2, 10, 5, 'M');
    mouse(&pane, 2, 10, 5, 'm');
    pane.wait_for("the clipboard's text in the editor", |s| {
        common::tmux::editor_text(s) == "note: pasted by a right click"
    });
    // The left button pastes nothing.
    mouse(&pane, 0, 10, 5, 'M');
    mouse(&pane, 0, 10, 5, 'm');
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(
        common::tmux::editor_text(&pane.screen()),
        "note: pasted by a right click"
    );
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}
