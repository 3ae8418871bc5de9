//! pi's session picker (`/resume`) under tmux: Ctrl+R renames the
//! highlighted session (a `session_info` entry in its file), Ctrl+N shows
//! only named sessions, Ctrl+P shows where each is stored, Ctrl+D deletes
//! one after a yes and never the current one, Ctrl+S switches between the
//! threaded order and the newest first.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::tmux::{Pane, tmux_available};
use common::*;
use makai_mockllm::{Scenario, ScriptedResponse};

#[test]
fn the_session_picker_renames_filters_shows_paths_and_deletes() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new().with_fallback(ScriptedResponse::text("noted")));
    let env = Env::new();
    for topic in ["first topic", "second topic"] {
        let mut args = mock.args();
        args.extend(s(&["-p", topic]));
        let out = env.run(&args, "");
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        // Sessions a second apart are listed newest first.
        std::thread::sleep(std::time::Duration::from_millis(1100));
    }
    assert_eq!(env.session_files().len(), 2);
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    pane.type_text("current work");
    pane.keys(&["Enter"]);
    pane.wait_text("noted");
    pane.type_text("/resume");
    pane.keys(&["Enter"]);
    pane.wait_for("the picker", |s| {
        s.contains("first topic") && s.contains("second topic") && s.contains("^r rename")
    });
    // The current session cannot be deleted.
    pane.keys(&["C-d"]);
    pane.wait_text("the current session cannot be deleted");

    // Rename "second topic" (the row below the current session).
    pane.keys(&["Down"]);
    pane.keys(&["C-r"]);
    pane.wait_text("Rename session");
    pane.type_text("Kept for later");
    pane.keys(&["Enter"]);
    pane.wait_for("the renamed row", |s| {
        s.contains("Kept for later") && s.contains("first topic")
    });
    let named = env
        .session_files()
        .into_iter()
        .find(|f| std::fs::read_to_string(f).unwrap().contains("second topic"))
        .unwrap();
    let text = std::fs::read_to_string(&named).unwrap();
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "session_info", "{last}");
    assert_eq!(last["name"], "Kept for later");

    // Only named sessions, then all again.
    pane.keys(&["C-n"]);
    pane.wait_for("named only", |s| {
        s.contains("named only") && s.contains("Kept for later") && !s.contains("first topic")
    });
    pane.keys(&["C-n"]);
    pane.wait_text("first topic");
    // Where each is stored.
    pane.keys(&["C-p"]);
    pane.wait_text("/sessions/");

    // Delete "first topic" after a yes (Enter alone keeps it).
    pane.type_text("first");
    pane.keys(&["C-d"]);
    pane.wait_text("Delete “first topic”?");
    pane.keys(&["Enter"]);
    pane.wait_for("the picker again", |s| {
        s.contains("first topic") && s.contains("Resume session")
    });
    assert_eq!(env.session_files().len(), 3);
    pane.type_text("first");
    pane.keys(&["C-d"]);
    pane.wait_text("Delete “first topic”?");
    pane.keys(&["Up", "Enter"]);
    pane.wait_for("the session gone", |s| {
        s.contains("deleted “first topic”") && s.contains("Kept for later")
    });
    let files = env.session_files();
    assert_eq!(files.len(), 2, "{files:?}");
    assert!(
        files
            .iter()
            .all(|f| !std::fs::read_to_string(f).unwrap().contains("first topic"))
    );
    // pi's sort modes: threaded (the default), newest first.
    pane.keys(&["C-s"]);
    pane.wait_text("newest first");
    pane.keys(&["C-s"]);
    pane.wait_for("threaded", |s| {
        s.contains("· threaded") && s.contains("Kept for later")
    });
    pane.keys(&["Escape"]);
    // The picker closes before Ctrl+C is sent: sent at once, under load the
    // two reached makai in one read, which crossterm reads as one key,
    // Alt+Ctrl+C, and that closed the picker instead.
    pane.wait_for("the picker to close", |s| !s.contains("· threaded"));
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}
