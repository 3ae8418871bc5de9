//! pi's large pastes under tmux: a paste of more than 10 lines (or 1,000
//! characters) shows in the editor as one marker, `[paste #1 +40 lines]`;
//! what is sent holds the paste; the history recalls the marker.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::tmux::{Pane, editor_text, tmux_available};
use common::{Env, Mock, request_text};
use makai_mockllm::{Scenario, ScriptedResponse};

#[test]
fn a_large_paste_is_a_marker_in_the_editor_and_whole_in_the_prompt() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("read all forty")));
    let env = Env::new();
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    let log: Vec<String> = (1..=40)
        .map(|i| format!("2026-11-29 error {i:02}"))
        .collect();
    pane.type_text("why this? ");
    pane.paste(&log.join("\n"));
    let screen = pane.wait_text("[paste #1 +40 lines]");
    assert!(!screen.contains("error 40"), "{screen}");
    pane.keys(&["Enter"]);
    pane.wait_text("read all forty");
    // The request's JSON text: the line breaks escaped.
    let asked = request_text(&mock.requests()[0]);
    assert!(
        asked.contains(&format!("why this? {}\"", log.join("\\n"))),
        "{asked}"
    );
    // The history gives the marker back, still standing for the paste.
    pane.keys(&["Up"]);
    let screen = pane.wait_for("the recalled prompt", |s| {
        editor_text(s).contains("why this? [paste #1 +40 lines]")
    });
    assert!(!editor_text(&screen).contains("error 01"), "{screen}");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}
