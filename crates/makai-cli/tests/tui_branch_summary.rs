//! pi's branch summarization under tmux: moving to another branch in
//! `/tree` asks "Summarize branch?"; "Summarize" has the model summarize the
//! branch left (its messages, the files its calls read and changed), the
//! summary joins the branch entered as a `branch_summary` entry, shown
//! collapsed; "Summarize with custom prompt" asks what to focus on; No
//! summary moves at once; `branchSummary.skipPrompt` never asks.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::tmux::{Pane, tmux_available};
use common::*;
use makai_mockllm::{Scenario, ScriptedResponse};

/// A mock answering the two prompts of [`tree_on_first_answer`], then `more`.
fn two_answers_then(more: impl IntoIterator<Item = ScriptedResponse>) -> Mock {
    Mock::start(
        Scenario::new()
            .push(ScriptedResponse::text("answer one"))
            .push(ScriptedResponse::text("answer two"))
            .extend(more),
    )
}

/// A session of two prompts, then `/tree` on the first answer: the second
/// prompt and its answer are the branch left.
fn tree_on_first_answer(mock: &Mock, env: &Env) -> Pane {
    let pane = Pane::start(env, &mock.args());
    pane.wait_text("Ask anything");
    for (prompt, answer) in [
        ("first prompt", "answer one"),
        ("second prompt", "answer two"),
    ] {
        pane.type_text(prompt);
        pane.keys(&["Enter"]);
        pane.wait_text(answer);
    }
    pane.type_text("/tree");
    pane.keys(&["Enter"]);
    pane.wait_text("Session tree");
    pane.type_text("answer one");
    pane.wait_for("the filtered tree", |s| {
        s.contains("filter: answer one") && !s.contains("second prompt  ")
    });
    pane.keys(&["Enter"]);
    pane
}

/// The session file's `branch_summary` entries.
fn branch_summaries(env: &Env) -> Vec<serde_json::Value> {
    env.session_files()
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .lines()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(&l).ok())
        .filter(|e| e["type"] == "branch_summary")
        .collect()
}

#[test]
fn summarize_writes_the_branch_summary_where_the_conversation_goes_on() {
    if !tmux_available() {
        return;
    }
    let mock = two_answers_then([
        ScriptedResponse::text("## Goal\nTried the second idea."),
        ScriptedResponse::text("answer three"),
    ]);
    let env = Env::new();
    let pane = tree_on_first_answer(&mock, &env);
    pane.wait_text("Summarize branch?");
    pane.keys(&["Down", "Enter"]);
    let screen = pane.wait_text("Summarized the branch left");
    assert!(screen.contains("[branch]"), "{screen}");
    assert!(
        screen.contains("Branch summary (ctrl+o to expand)"),
        "{screen}"
    );
    assert!(!screen.contains("answer two"), "{screen}");
    // The summary call saw the branch left, not the one kept.
    let asked = request_text(&mock.requests()[2]);
    assert!(
        asked.contains("second prompt") && asked.contains("answer two"),
        "{asked}"
    );
    assert!(asked.contains("## Constraints & Preferences"), "{asked}");
    let entries = branch_summaries(&env);
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0]["summary"], "## Goal\nTried the second idea.");
    assert_eq!(entries[0]["details"]["readFiles"], serde_json::json!([]));
    assert!(entries[0]["usage"]["output"].as_u64().unwrap() > 0);
    // The next prompt goes on after the summary, which the model reads.
    pane.type_text("go on");
    pane.keys(&["Enter"]);
    pane.wait_text("answer three");
    let sent = request_text(&mock.requests()[3]);
    assert!(
        sent.contains("Tried the second idea.") && sent.contains("first prompt"),
        "{sent}"
    );
    assert!(!sent.contains("second prompt"), "{sent}");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

#[test]
fn a_custom_prompt_focuses_the_summary_and_skip_prompt_never_asks() {
    if !tmux_available() {
        return;
    }
    let mock = two_answers_then([ScriptedResponse::text("## Goal\nFocused.")]);
    let env = Env::new();
    let pane = tree_on_first_answer(&mock, &env);
    pane.wait_text("Summarize branch?");
    pane.keys(&["Down", "Down", "Enter"]);
    pane.wait_text("What should the summary focus on?");
    pane.type_text("the failing test");
    pane.keys(&["Enter"]);
    pane.wait_text("Summarized the branch left");
    let asked = request_text(&mock.requests()[2]);
    assert!(asked.contains("the failing test"), "{asked}");
    assert_eq!(pane.quit_with_ctrl_c(), 0);

    let mock = two_answers_then([]);
    let env = Env::new();
    env.settings(serde_json::json!({"branchSummary": {"skipPrompt": true}}));
    let pane = tree_on_first_answer(&mock, &env);
    let screen = pane.wait_text("Moved to the chosen entry");
    assert!(!screen.contains("Summarize branch?"), "{screen}");
    assert!(branch_summaries(&env).is_empty());
    assert_eq!(mock.requests().len(), 2, "no summary call");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

#[test]
fn esc_while_the_summary_is_written_cancels_the_move() {
    if !tmux_available() {
        return;
    }
    let mock = two_answers_then([
        ScriptedResponse::text("a summary that never ends").stall_after(1),
        ScriptedResponse::text("answer three"),
    ]);
    let env = Env::new();
    let pane = tree_on_first_answer(&mock, &env);
    pane.wait_text("Summarize branch?");
    pane.keys(&["Down", "Enter"]);
    pane.wait_text("Summarizing the branch… (esc to cancel)");
    pane.keys(&["Escape"]);
    let screen = pane.wait_text("the branch summary was cancelled; nothing moved.");
    assert!(screen.contains("answer two"), "{screen}");
    assert!(branch_summaries(&env).is_empty());
    // The next run is not shown as aborting, and goes on the same branch.
    pane.type_text("next");
    pane.keys(&["Enter"]);
    pane.wait_text("answer three");
    let sent = request_text(&mock.requests()[3]);
    assert!(sent.contains("second prompt"), "{sent}");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}
