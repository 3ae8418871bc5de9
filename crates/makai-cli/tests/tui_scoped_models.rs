//! pi's model selectors in the interactive UI, driven under tmux: Ctrl+S in
//! `/model` and `/thinking` saves the default, and `/scoped-models` checks,
//! orders and saves the models Ctrl+P cycles through. Skipped (with a
//! message) when tmux is not installed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::tmux::{Pane, tmux_available};
use common::{Env, Mock, s};
use makai_mockllm::{Scenario, ScriptedResponse};
use serde_json::json;

/// pi's Ctrl+S in `/model` and `/thinking` (`app.models.save`,
/// `app.thinking.save`): the highlighted choice is chosen and saved as the
/// default of later sessions.
#[test]
fn ctrl_s_in_model_and_thinking_saves_the_default() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new().with_fallback(ScriptedResponse::text("ok")));
    let env = Env::new();
    mock.lab_models(
        &env,
        json!([{"id": "quick"}, {"id": "deep", "reasoning": true}]),
    );
    env.settings(json!({"theme": "dark"}));
    let pane = Pane::start(&env, &s(&["--model", "lab/quick"]));
    pane.wait_text("Ask anything");
    pane.type_text("/model");
    pane.keys(&["Enter"]);
    // The picker opens once the models are listed (in the background):
    // typed before, the filter would go to the editor.
    pane.wait_for("the model picker", |s| s.contains("lab · 128k context"));
    pane.type_text("lab deep");
    pane.wait_for("the filtered models", |s| s.contains("lab · "));
    pane.keys(&["C-s"]);
    pane.wait_for("the switch", |s| {
        s.contains("lab/deep is the default model now") || s.contains("deep • thinking")
    });
    pane.type_text("/thinking");
    pane.keys(&["Enter"]);
    pane.wait_text("Thinking level");
    pane.type_text("high");
    pane.keys(&["C-s"]);
    pane.wait_text("deep • thinking high");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
    let saved: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(env.home.path().join("settings.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        saved,
        json!({"theme": "dark", "defaultProvider": "lab", "defaultModel": "deep", "defaultThinkingLevel": "high"})
    );
}

/// pi's scoped models selector: Enter checks a model, Ctrl+P (in the
/// selector) a provider's, Ctrl+X clears, Alt+Up moves one earlier in the
/// cycle, Ctrl+S saves `enabledModels`; Ctrl+P on the main screen then
/// cycles through the checked models in their order.
#[test]
fn scoped_models_selector_checks_orders_and_saves_the_cycle() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new().with_fallback(ScriptedResponse::text("ok")));
    let env = Env::new();
    std::fs::write(
        env.home.path().join("models.json"),
        json!({"providers": {
            "lab": {"baseUrl": mock.v1(), "api": "openai-completions", "apiKey": "k",
                "models": [{"id": "ant"}, {"id": "bee"}, {"id": "cat"}]},
            "far": {"baseUrl": mock.v1(), "api": "openai-completions", "apiKey": "k",
                "models": [{"id": "x1"}, {"id": "x2"}]}}})
        .to_string(),
    )
    .unwrap();
    let pane = Pane::start(&env, &s(&["--model", "lab/cat"]));
    pane.wait_text("Ask anything");
    pane.type_text("/scoped-models");
    pane.keys(&["Enter"]);
    pane.wait_text("Scoped models");
    // A provider at once, then none.
    pane.type_text("x1");
    pane.keys(&["C-p"]);
    pane.keys(&["BSpace", "BSpace"]);
    pane.wait_for("far's models checked", |s| {
        s.lines()
            .filter(|l| l.contains("far/x") && l.contains('✓'))
            .count()
            == 2
    });
    pane.keys(&["C-x"]);
    pane.wait_for("none checked", |s| {
        !s.lines().any(|l| l.starts_with('│') && l.contains('✓'))
    });
    // lab/ant, then lab/bee moved before it.
    pane.type_text("lab/ant");
    pane.keys(&["Enter"]);
    for _ in 0.."lab/ant".len() {
        pane.keys(&["BSpace"]);
    }
    pane.type_text("lab/");
    pane.keys(&["Down", "Enter", "M-Up"]);
    pane.keys(&["C-s"]);
    pane.wait_text("· saved");
    pane.keys(&["Escape"]);
    let saved: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(env.home.path().join("settings.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(saved["enabledModels"], json!(["lab/bee", "lab/ant"]));
    // The cycle: bee, then ant, then back to where it started.
    pane.keys(&["C-p"]);
    pane.wait_text("bee • thinking");
    pane.keys(&["C-p"]);
    pane.wait_text("ant • thinking");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

/// A model `enabledModels` pins a thinking level for (`lab/deep:high`) shows
/// the pin in the selector and keeps it when the selection is saved.
#[test]
fn scoped_models_selector_keeps_a_pinned_thinking_level() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new().with_fallback(ScriptedResponse::text("ok")));
    let env = Env::new();
    mock.lab_models(
        &env,
        json!([{"id": "deep", "reasoning": true}, {"id": "flat"}]),
    );
    env.settings(json!({"enabledModels": ["lab/deep:high"]}));
    let pane = Pane::start(&env, &[]);
    pane.wait_text("Ask anything");
    pane.type_text("/scoped-models");
    pane.keys(&["Enter"]);
    pane.wait_for("the pin in deep's row", |s| {
        s.lines()
            .any(|l| l.contains("lab/deep") && l.contains('✓') && l.contains("thinking high"))
    });
    pane.type_text("flat");
    pane.keys(&["Enter", "C-s"]);
    pane.wait_text("· saved");
    pane.keys(&["Escape"]);
    let saved: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(env.home.path().join("settings.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(saved["enabledModels"], json!(["lab/deep:high", "lab/flat"]));
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}
