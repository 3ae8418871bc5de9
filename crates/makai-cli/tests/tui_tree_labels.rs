//! pi's `/tree` keys under tmux: Shift+L sets the highlighted entry's
//! label (a `label` entry in the session file), an empty one clears it,
//! Shift+T shows when labels were set, and the labeled-only filter finds it;
//! Ctrl+Left / Ctrl+Right fold and unfold branch segments.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::tmux::{Pane, tmux_available};
use common::*;
use makai_mockllm::{Scenario, ScriptedResponse};

/// The `label` entries of the session file.
fn labels(env: &Env) -> Vec<serde_json::Value> {
    let files = env.session_files();
    assert_eq!(files.len(), 1);
    std::fs::read_to_string(&files[0])
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["type"] == "label")
        .collect()
}

/// The rows of the open popup.
fn popup(screen: &str) -> String {
    screen
        .lines()
        .filter(|l| l.starts_with('│'))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn shift_l_labels_an_entry_of_the_tree_and_clears_it() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new().with_fallback(ScriptedResponse::text("noted")));
    let env = Env::new();
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    for prompt in ["alpha step", "beta step"] {
        pane.type_text(prompt);
        pane.keys(&["Enter"]);
        pane.wait_for("the answer", |s| s.matches("noted").count() >= 1);
    }
    pane.wait_for("two answers", |s| s.matches("noted").count() >= 2);
    pane.type_text("/tree");
    pane.keys(&["Enter"]);
    pane.wait_text("Session tree");
    // Highlight the first prompt, then label it.
    pane.type_text("alpha");
    pane.wait_for("the filtered tree", |s| {
        popup(s).contains("alpha step") && !popup(s).contains("beta step")
    });
    pane.keys(&["L"]);
    pane.wait_text("Label the entry");
    pane.type_text("milestone");
    pane.keys(&["Enter"]);
    pane.wait_text("[milestone]");
    let set = labels(&env);
    assert_eq!(set.len(), 1, "{set:?}");
    assert_eq!(set[0]["label"], "milestone");
    let files = env.session_files();
    let text = std::fs::read_to_string(&files[0]).unwrap();
    let target = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["id"] == set[0]["targetId"])
        .expect("the label names an entry");
    assert_eq!(target["message"]["role"], "user");
    assert!(target.to_string().contains("alpha step"), "{target}");

    // When it was set, and the labeled-only filter.
    pane.keys(&["T"]);
    pane.wait_text("[milestone @ 20");
    pane.keys(&["C-l"]);
    pane.wait_for("labeled only", |s| {
        s.contains("labeled-only") && popup(s).contains("alpha step") && !popup(s).contains("beta")
    });

    // An empty label clears it.
    pane.keys(&["L"]);
    pane.wait_text("Label the entry");
    for _ in 0.."milestone".len() {
        pane.keys(&["BSpace"]);
    }
    pane.keys(&["Enter"]);
    pane.wait_for("the label gone", |s| {
        s.contains("Session tree") && !s.contains("[milestone")
    });
    let set = labels(&env);
    assert_eq!(set.len(), 2, "{set:?}");
    assert!(
        set[1].get("label").is_none_or(serde_json::Value::is_null),
        "{}",
        set[1]
    );
    pane.keys(&["Escape"]);
    // Closed before Ctrl+C (sent at once, the two can reach makai in one
    // read: one key, Alt+Ctrl+C).
    pane.wait_for("the tree to close", |s| popup(s).is_empty());
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

/// A session whose second answer branched: `root → answer ─┬─ left → l-answer`
/// and `└─ right → r-answer`.
fn branched_session(env: &Env) -> std::path::PathBuf {
    let path = env.work().join("branched.jsonl");
    let header = serde_json::json!({"type": "session", "version": 3,
        "id": "0194bbbb-0000-7000-8000-00000000f01d",
        "timestamp": "2026-11-10T10:00:00.000Z", "cwd": env.work()});
    let message = |id: &str, parent: Option<&str>, role: &str, text: &str| {
        let message = if role == "user" {
            serde_json::json!({"role": "user", "content": text, "timestamp": 1})
        } else {
            serde_json::json!({"role": "assistant", "content": [{"type": "text", "text": text}],
                "api": "openai-completions", "provider": "x", "model": "y",
                "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                "stopReason": "stop", "timestamp": 1})
        };
        serde_json::json!({"type": "message", "id": id, "parentId": parent,
            "timestamp": "2026-11-10T10:00:01.000Z", "message": message})
        .to_string()
    };
    let lines = [
        header.to_string(),
        message("e1", None, "user", "root question"),
        message("e2", Some("e1"), "assistant", "root answer"),
        message("e3", Some("e2"), "user", "left question"),
        message("e4", Some("e3"), "assistant", "left answer"),
        message("e5", Some("e2"), "user", "right question"),
        message("e6", Some("e5"), "assistant", "right answer"),
    ];
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

/// pi's `app.tree.foldOrUp` / `unfoldOrDown`: Ctrl+Left folds the branch
/// segment highlighted (its rows hidden, `⊞` before it), or moves up to the
/// previous segment start; Ctrl+Right unfolds it, or moves down to the next.
#[test]
fn ctrl_left_and_right_fold_and_unfold_branch_segments_of_the_tree() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new().with_fallback(ScriptedResponse::text("unused")));
    let env = Env::new();
    let mut args = mock.args();
    args.extend([
        "--session".to_string(),
        branched_session(&env).display().to_string(),
    ]);
    let pane = Pane::start(&env, &args);
    pane.wait_text("right answer");
    pane.type_text("/tree");
    pane.keys(&["Enter"]);
    pane.wait_text("Session tree");
    let row = |s: &str, text: &str| {
        popup(s)
            .lines()
            .find(|l| l.contains(text))
            .map(str::to_string)
            .unwrap_or_default()
    };
    pane.wait_for("the segment starts marked", |s| {
        row(s, "root question").contains('⊟')
            && row(s, "left question").contains('⊟')
            && row(s, "right question").contains('⊟')
            && !row(s, "root answer").contains('⊟')
    });
    // The current leaf (right answer) is highlighted: up to its segment's
    // start, then fold it.
    pane.keys(&["C-Left"]);
    pane.keys(&["C-Left"]);
    pane.wait_for("the right branch folded", |s| {
        row(s, "right question").contains('⊞')
            && !popup(s).contains("right answer")
            && popup(s).contains("left answer")
    });
    // Up to the left branch, fold it too; then the root folds everything.
    pane.keys(&["C-Left", "C-Left"]);
    pane.wait_for("the left branch folded", |s| {
        row(s, "left question").contains('⊞') && !popup(s).contains("left answer")
    });
    pane.keys(&["C-Left", "C-Left"]);
    pane.wait_for("everything under the root folded", |s| {
        row(s, "root question").contains('⊞') && !popup(s).contains("root answer")
    });
    // Unfold the root: the branches come back as they were, folded.
    pane.keys(&["C-Right"]);
    pane.wait_for("the root open", |s| {
        row(s, "root question").contains('⊟')
            && row(s, "left question").contains('⊞')
            && row(s, "right question").contains('⊞')
    });
    // Down to the left branch and open it (Alt+Right is the same action).
    pane.keys(&["C-Right", "M-Right"]);
    pane.wait_for("the left branch open", |s| {
        popup(s).contains("left answer") && !popup(s).contains("right answer")
    });
    pane.keys(&["Escape"]);
    // Closed before Ctrl+C (sent at once, the two can reach makai in one
    // read: one key, Alt+Ctrl+C).
    pane.wait_for("the tree to close", |s| popup(s).is_empty());
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}
