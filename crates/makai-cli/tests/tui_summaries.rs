//! Collapsed blocks under tmux, as pi shows them: a skill invoked with
//! `/skill:name` is `[skill] name (ctrl+o to expand)` with the text typed
//! after it as the message, a compaction summary `[compaction] Compacted
//! from N tokens`; a click on one expands it, another collapses it, and
//! Ctrl+O expands them with the tool output.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::tmux::{Pane, tmux_available};
use common::*;
use makai_mockllm::{Scenario, ScriptedResponse};

fn write(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A left click on the first row showing `text` (1-based SGR cell).
fn click_on(pane: &Pane, text: &str) {
    let screen = pane.screen();
    let (row, line) = screen
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains(text))
        .unwrap_or_else(|| panic!("no {text:?} on\n{screen}"));
    let column = line[..line.find(text).unwrap()].chars().count() + 1;
    let row = row + 1;
    pane.type_text(&format!("\u{1b}[<0;{column};{row}M"));
    pane.type_text(&format!("\u{1b}[<0;{column};{row}m"));
}

#[test]
fn a_skill_invocation_is_collapsed_and_a_click_expands_and_collapses_it() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("Deploying now")));
    let env = Env::new();
    write(
        &env.home.path().join("skills/deploy/SKILL.md"),
        "---\nname: deploy\ndescription: Deploy the service\n---\nRun make deploy.\n",
    );
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    pane.type_text("/skill:deploy to staging");
    pane.keys(&["Enter"]);
    let screen = pane.wait_text("Deploying now");
    assert!(
        screen.contains("[skill] deploy (ctrl+o to expand)"),
        "{screen}"
    );
    assert!(screen.contains("to staging"), "{screen}");
    assert!(!screen.contains("Run make deploy."), "{screen}");
    // The model got the instructions all the same.
    assert!(request_text(&mock.requests()[0]).contains("Run make deploy."));

    click_on(&pane, "[skill] deploy");
    let screen = pane.wait_text("Run make deploy.");
    assert!(!screen.contains("ctrl+o to expand"), "{screen}");
    // (Elsewhere than the first click: there it would be a double click.)
    click_on(&pane, "Run make deploy.");
    pane.wait_for("collapsed again", |s| {
        s.contains("[skill] deploy (ctrl+o to expand)") && !s.contains("Run make deploy.")
    });
    // Ctrl+O expands it with the tool output.
    pane.keys(&["C-o"]);
    pane.wait_text("Run make deploy.");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

#[test]
fn a_compaction_summary_is_collapsed_and_a_click_shows_it() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::text("hi there"))
            .push(ScriptedResponse::text("and again"))
            .push(ScriptedResponse::text("## Goal\nWe fixed the build.")),
    );
    let env = Env::new();
    // Keep only the last turn: the first is summarized.
    env.settings(serde_json::json!({"compaction": {"keepRecentTokens": 10}}));
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    pane.type_text("hello");
    pane.keys(&["Enter"]);
    pane.wait_text("hi there");
    pane.type_text("more");
    pane.keys(&["Enter"]);
    pane.wait_text("and again");
    pane.type_text("/compact");
    pane.keys(&["Enter"]);
    let screen = pane.wait_text("[compaction]");
    assert!(screen.contains("Compacted from"), "{screen}");
    assert!(screen.contains("tokens (ctrl+o to expand)"), "{screen}");
    assert!(!screen.contains("We fixed the build."), "{screen}");
    click_on(&pane, "Compacted from");
    pane.wait_text("We fixed the build.");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}
