//! pi's labels in `/tree` under tmux: Shift+L sets the highlighted entry's
//! label (a `label` entry in the session file), an empty one clears it,
//! Shift+T shows when labels were set, and the labeled-only filter finds it.
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
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}
