//! pi's Mermaid rendering (`markdown.mermaid`) under tmux: a ```mermaid
//! block of an answer drawn as a box-drawing diagram, and as its code once
//! `/reload` reads the setting turned `"off"`. Skipped (with a message)
//! when tmux is not installed, outside CI.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::tmux::{Pane, tmux_available};
use common::{Env, Mock};
use makai_mockllm::{Scenario, ScriptedResponse};
use serde_json::json;

#[test]
fn a_mermaid_flowchart_in_an_answer_is_drawn_and_off_shows_its_code() {
    if !tmux_available() {
        return;
    }
    let answer =
        "The flow:\n\n```mermaid\nflowchart LR\n  A[Start] --> B[End]\n```\n\nThat is all.";
    let mock = Mock::start(Scenario::new().with_fallback(ScriptedResponse::text(answer)));
    let env = Env::new();
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    pane.type_text("draw it");
    pane.keys(&["Enter"]);
    let screen = pane.wait_text("That is all.");
    let rows: Vec<&str> = screen.lines().map(str::trim).collect();
    let top = rows.iter().position(|r| *r == "┌───────┐     ┌─────┐");
    assert!(
        top.is_some_and(
            |i| rows[i + 1] == "│ Start │────▸│ End │" && rows[i + 2] == "└───────┘     └─────┘"
        ),
        "{screen}"
    );
    assert!(!screen.contains("flowchart LR"), "{screen}");

    env.settings(json!({"markdown": {"mermaid": "off"}}));
    pane.type_text("/reload");
    pane.keys(&["Enter"]);
    let screen = pane.wait_text("A[Start] --> B[End]");
    assert!(screen.contains("```mermaid"), "{screen}");
    assert!(screen.contains("flowchart LR"), "{screen}");
    assert!(!screen.contains("│ Start │"), "{screen}");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

/// pi's `"final"` mode: while the answer streams the block shows as its
/// code, even once its closing fence came; when the answer ends it is
/// drawn.
#[test]
fn final_mode_draws_the_diagram_once_the_answer_ended() {
    if !tmux_available() {
        return;
    }
    let words: Vec<String> = (1..=30).map(|i| format!("word{i}")).collect();
    let answer = format!(
        "```mermaid\nflowchart LR\n  A[Start] --> B[End]\n```\n\n{}",
        words.join(" ")
    );
    let mock = Mock::start(
        Scenario::new().with_fallback(ScriptedResponse::text(answer).chunk_size(6).delay(80)),
    );
    let env = Env::new();
    env.settings(json!({"markdown": {"mermaid": "final"}}));
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    pane.type_text("draw it");
    pane.keys(&["Enter"]);
    // The fence closed and more text streams: still the code.
    let screen = pane.wait_text("word2");
    assert!(screen.contains("flowchart LR"), "{screen}");
    assert!(!screen.contains("│ Start │"), "{screen}");
    let screen = pane.wait_for("the diagram once the answer ended", |s| {
        s.contains("│ Start │────▸│ End │")
    });
    assert!(screen.contains("word30"), "{screen}");
    assert!(!screen.contains("flowchart LR"), "{screen}");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}
