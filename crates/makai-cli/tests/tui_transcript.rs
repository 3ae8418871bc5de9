//! The conversation of the interactive UI as pi 1.5's fullscreen mode has
//! it, driven under tmux: transcript search (Ctrl+Shift+F, Enter / Ctrl+G
//! for the next match, Esc to close), jumps between user messages
//! (Ctrl+Shift+Up / Down) and what the terminal keeps when the UI ends
//! (`fullscreenExitOutput`), pi's `outputPad` margin, and LaTeX math in
//! an answer drawn as Unicode. Skipped (with a message) when tmux is not
//! installed, outside CI.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::tmux::{Pane, editor_text, tmux_available};
use common::{Env, Mock};
use makai_mockllm::{Scenario, ScriptedResponse};

/// Ctrl+Shift+F, Ctrl+Shift+Up and Ctrl+Shift+Down as a terminal that
/// reports modified keys unambiguously sends them (CSI u and xterm's
/// modified cursor keys; 6 is Ctrl+Shift).
const CTRL_SHIFT_F: &str = "\u{1b}[102;6u";
const CTRL_SHIFT_UP: &str = "\u{1b}[1;6A";
const CTRL_SHIFT_DOWN: &str = "\u{1b}[1;6B";
const SHIFT_ENTER: &str = "\u{1b}[13;2u";

/// An answer of `rows` numbered lines, `word` on the fifth.
fn long_answer(rows: usize, word: &str) -> ScriptedResponse {
    let text: Vec<String> = (1..=rows)
        .map(|i| {
            if i == 5 {
                format!("row {i} has the {word} in it")
            } else {
                format!("row {i} of the long answer")
            }
        })
        .collect();
    ScriptedResponse::text(text.join("\n\n"))
}

/// The conversation rows of the screen: those above the status line, which
/// is above the editor's top border.
fn conversation(screen: &str) -> Vec<String> {
    let rows: Vec<&str> = screen.lines().collect();
    let border = rows
        .iter()
        .position(|r| r.starts_with("────────"))
        .unwrap_or(rows.len());
    rows[..border.saturating_sub(1)]
        .iter()
        .map(|r| r.to_string())
        .collect()
}

#[test]
fn ctrl_shift_f_finds_text_above_the_screen_and_enter_moves_between_matches() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(
        Scenario::new()
            .push(long_answer(40, "needle"))
            .push(ScriptedResponse::text("A short needle answer.")),
    );
    let env = Env::new();
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    pane.type_text("first question");
    pane.keys(&["Enter"]);
    pane.wait_text("row 40 of the long answer");
    pane.type_text("second question");
    pane.keys(&["Enter"]);
    let screen = pane.wait_text("A short needle answer.");
    assert!(
        !screen.contains("row 5 has the needle"),
        "the first match starts off screen:\n{screen}"
    );

    pane.type_text(CTRL_SHIFT_F);
    pane.wait_text("Find transcript");
    // Typed text goes to the search, not to the editor; upper case matches.
    pane.type_text("NEEDLE");
    // The first match at or below the top of the screen is the short
    // answer's, the second of two.
    let screen = pane.wait_text("2/2");
    assert!(screen.contains("A short needle answer."), "{screen}");
    assert!(editor_text(&screen).starts_with("Ask anything"), "{screen}");
    // Enter selects the next one, wrapping to the first, above the screen:
    // the view goes there.
    pane.keys(&["Enter"]);
    let screen = pane.wait_for("the match above the screen to be shown", |s| {
        s.contains("1/2") && s.contains("row 5 has the needle in it")
    });
    assert!(!screen.contains("A short needle answer."), "{screen}");
    // The selected match is drawn bold and reversed (tmux shows the
    // attributes of the cells).
    let styled = pane.screen_with_styles();
    let row = styled
        .lines()
        .find(|l| l.contains("row 5 has the"))
        .unwrap_or_default();
    // The escape sequences between the text before the match and the match.
    let (before, _) = row.split_once("needle").unwrap_or_default();
    let sgr = before.rsplit("has the ").next().unwrap_or_default();
    let bold_reversed =
        sgr.contains("\u{1b}[1;7m") || (sgr.contains("\u{1b}[1m") && sgr.contains("\u{1b}[7m"));
    assert!(bold_reversed, "{row:?}");
    // In the colours of the theme's match (the built-in dark theme's
    // `selectedBg`, grey 237, and the text's own colour), reversed.
    assert!(sgr.contains("48;5;237m"), "{row:?}");
    // Ctrl+G is "next" too, Shift+Enter "previous".
    pane.keys(&["C-g"]);
    pane.wait_text("2/2");
    pane.type_text(SHIFT_ENTER);
    pane.wait_text("1/2");
    // Backspace edits the query.
    pane.keys(&["BSpace", "BSpace"]);
    pane.type_text("zz");
    pane.wait_text("No matches");
    // Esc closes the search; typing reaches the editor again.
    pane.keys(&["Escape"]);
    pane.wait_for("the search to close", |s| !s.contains("Find transcript"));
    pane.type_text("after");
    pane.wait_for("the editor to take keys", |s| editor_text(s) == "after");
    assert_eq!(mock.requests().len(), 2, "the search sent nothing");
    pane.keys(&["C-u"]);
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

#[test]
fn ctrl_shift_up_and_down_jump_between_the_user_messages() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(
        Scenario::new()
            .push(long_answer(30, "pin"))
            .push(long_answer(30, "pin"))
            .push(ScriptedResponse::text("The last answer.")),
    );
    let env = Env::new();
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    for (i, question) in ["question one", "question two", "question three"]
        .iter()
        .enumerate()
    {
        pane.type_text(question);
        pane.keys(&["Enter"]);
        if i < 2 {
            pane.wait_for("the answer", |s| {
                s.contains("row 30 of the long answer") && !s.contains("Working")
            });
        }
    }
    pane.wait_text("The last answer.");
    let top = |s: &str| conversation(s).first().cloned().unwrap_or_default();
    pane.type_text(CTRL_SHIFT_UP);
    let screen = pane.wait_for("question two at the top", |s| {
        top(s).contains("question two")
    });
    assert!(!screen.contains("question one"), "{screen}");
    pane.type_text(CTRL_SHIFT_UP);
    pane.wait_for("question one at the top", |s| {
        top(s).contains("question one")
    });
    // At the first message, up again stays.
    pane.type_text(CTRL_SHIFT_UP);
    pane.type_text(CTRL_SHIFT_DOWN);
    pane.wait_for("question two at the top again", |s| {
        top(s).contains("question two")
    });
    assert_eq!(mock.requests().len(), 3);
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

#[test]
fn leaving_the_ui_leaves_the_transcript_or_only_the_resume_hint_as_pi_s_setting_says() {
    if !tmux_available() {
        return;
    }
    let answer = || ScriptedResponse::text("Here is **the answer** you wanted.");
    let mock = Mock::start(Scenario::new().push(answer()).push(answer()));
    for resume_hint_only in [false, true] {
        let env = Env::new();
        if resume_hint_only {
            env.settings(serde_json::json!({"fullscreenExitOutput": "resume-hint"}));
        }
        let pane = Pane::start(&env, &mock.args());
        pane.wait_text("Ask anything");
        pane.type_text("my question");
        pane.keys(&["Enter"]);
        pane.wait_text("Here is the answer you wanted.");
        assert_eq!(pane.quit_with_ctrl_c(), 0);
        let screen = pane.output_after_exit();
        let sessions = env.session_files();
        assert_eq!(sessions.len(), 1, "one session was saved");
        let header = std::fs::read_to_string(&sessions[0]).unwrap();
        let header: serde_json::Value =
            serde_json::from_str(header.lines().next().unwrap()).unwrap();
        let id = header["id"].as_str().unwrap();
        assert!(
            screen.contains(&format!("To resume this session: makai --session {id}")),
            "{screen}"
        );
        assert_eq!(
            screen.contains("Here is the answer you wanted."),
            !resume_hint_only,
            "the transcript stays in the terminal unless the setting says resume-hint:\n{screen}"
        );
        assert_eq!(
            screen.contains("my question"),
            !resume_hint_only,
            "{screen}"
        );
        assert!(
            !screen.contains("Ask anything"),
            "the editor is not kept:\n{screen}"
        );
    }
}

#[test]
fn leaving_a_ui_that_saved_nothing_gives_no_resume_hint() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new());
    let env = Env::new();
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
    let screen = pane.output_after_exit();
    assert!(!screen.contains("To resume"), "{screen}");
    assert!(screen.contains("makai v"), "the greeting stays:\n{screen}");
}

/// pi's `outputPad`: the conversation's items a column in from each side
/// unless it is 0, in full-screen mode and in regular mode's scrollback; a
/// line too long for the narrower column wraps a word earlier.
#[test]
fn the_output_margin_is_pi_s_one_column_unless_the_setting_says_none() {
    if !tmux_available() {
        return;
    }
    // 119 columns of words: one row at 120 columns, two at 118.
    let long = "word ".repeat(23) + "zzzz";
    assert_eq!(long.len(), 119);
    let cases = [
        (serde_json::json!({}), 1),
        (serde_json::json!({"outputPad": 0}), 0),
        (serde_json::json!({"tuiMode": "regular"}), 1),
    ];
    for (settings, margin) in cases {
        let mock = Mock::start(Scenario::new().push(ScriptedResponse::text(&long)));
        let env = Env::new();
        env.settings(settings.clone());
        let pane = Pane::start(&env, &mock.args());
        pane.wait_text("Ask anything");
        pane.type_text("pad it");
        pane.keys(&["Enter"]);
        let screen = pane.wait_text("zzzz");
        let pad = " ".repeat(margin);
        // A prompt's text starts a column into its background either way.
        let prompt = " pad it";
        assert!(
            screen.lines().any(|l| l.trim_end() == prompt),
            "{settings}: the prompt {prompt:?} in\n{screen}"
        );
        let rows: Vec<&str> = screen
            .lines()
            .filter(|l| l.contains("word") || l.contains("zzzz"))
            .collect();
        let wanted = if margin == 0 { 1 } else { 2 };
        assert_eq!(rows.len(), wanted, "{settings}:\n{screen}");
        for row in rows {
            assert!(
                row.strip_prefix(pad.as_str())
                    .is_some_and(|r| r.starts_with('w') || r.starts_with('z')),
                "{settings}: {row:?}"
            );
            // The right margin stays blank.
            assert!(row.trim_end().len() <= 120 - margin, "{settings}: {row:?}");
        }
        assert_eq!(pane.quit_with_ctrl_c(), 0);
    }
}

/// pi's LaTeX rendering: inline math in its line, display math laid out
/// in rows (a stacked fraction), math it cannot render as its source, and
/// prices left as they are.
#[test]
fn latex_math_in_an_answer_is_drawn_as_unicode() {
    if !tmux_available() {
        return;
    }
    let answer = "Energy is $E = mc^2$ and it costs $5 and $10.\n\n\
                  $$\n\\frac{a+b}{c}\n$$\n\n\
                  Unknown $\\nosuchcommand{x}$ stays. Done.";
    let mock = Mock::start(Scenario::new().with_fallback(ScriptedResponse::text(answer)));
    let env = Env::new();
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    pane.type_text("some maths");
    pane.keys(&["Enter"]);
    let screen = pane.wait_text("stays. Done.");
    assert!(
        screen.contains("Energy is E = mc² and it costs $5 and $10."),
        "{screen}"
    );
    assert!(
        screen.contains("Unknown $\\nosuchcommand{x}$ stays."),
        "{screen}"
    );
    let rows: Vec<&str> = screen.lines().map(str::trim).collect();
    let top = rows.iter().position(|r| *r == "a + b");
    assert!(
        top.is_some_and(|i| rows[i + 1] == "───────" && rows[i + 2] == "c"),
        "{screen}"
    );
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}
