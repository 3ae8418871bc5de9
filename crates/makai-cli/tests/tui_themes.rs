//! pi's themes in the full-screen UI, driven under tmux: a theme file of
//! pi's agent folder chosen by the `theme` setting colours the UI, and
//! `--use-theme` overrides it; the `themes` setting's paths resolve from
//! the settings file's folder; an invalid theme file and an unknown theme
//! name are said, and the built-in theme is used. Skipped (with a message)
//! when tmux is not installed, outside CI.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::tmux::{Pane, tmux_available};
use common::{Env, Mock, s};
use makai_mockllm::{Scenario, ScriptedResponse};
use serde_json::{Value, json};

/// A complete theme named `name` (the built-in dark one's colours) whose
/// user messages have the 256-colour background `user_bg`.
fn theme(name: &str, user_bg: u8) -> String {
    let mut v: Value =
        serde_json::from_str(include_str!("../../makai-theme/themes/dark.json")).unwrap();
    v["name"] = json!(name);
    v["vars"] = json!({"ocean": user_bg});
    v["colors"]["userMessageBg"] = json!("ocean");
    v.to_string()
}

/// Sends one message and returns the screen with its styles once the
/// answer is there.
fn message_screen(pane: &Pane) -> String {
    pane.wait_text("Ask anything");
    pane.type_text("hello there");
    pane.keys(&["Enter"]);
    pane.wait_text("the answer");
    pane.screen_with_styles()
}

#[test]
fn a_theme_file_chosen_by_the_setting_colours_the_ui_and_use_theme_overrides_it() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new().with_fallback(ScriptedResponse::text("the answer")));
    let env = Env::new();
    let themes = env.pi_dir().join("themes");
    std::fs::create_dir_all(&themes).unwrap();
    std::fs::write(themes.join("ocean.json"), theme("ocean", 52)).unwrap();
    std::fs::write(
        themes.join("broken.json"),
        "{\"name\": \"broken\", \"colors\": {}}",
    )
    .unwrap();
    // A `themes` path of the user settings resolves from their folder.
    std::fs::create_dir_all(env.home.path().join("more")).unwrap();
    std::fs::write(
        env.home.path().join("more/forest.json"),
        theme("forest", 22),
    )
    .unwrap();
    env.settings(json!({"theme": "ocean", "themes": ["more"]}));

    let pane = Pane::start(&env, &mock.args());
    let screen = message_screen(&pane);
    assert!(screen.contains("\u{1b}[48;5;52m"), "{screen}");
    assert!(!screen.contains("\u{1b}[48;5;236m"), "{screen}");
    // The broken file is said, naming it and what is missing.
    let plain = pane.screen();
    assert!(
        plain.contains("broken.json") && plain.contains("colours missing"),
        "{plain}"
    );
    // /settings switches to the next theme read, and the conversation
    // drawn already takes its colours.
    pane.type_text("/settings");
    pane.keys(&["Enter"]);
    pane.wait_text("Theme: ocean");
    pane.keys(&["Down", "Down", "Down", "Down", "Down", "Down", "Enter"]);
    pane.wait_text("Theme: forest");
    pane.keys(&["Escape"]);
    let screen = pane.wait_for("the forest theme's colours", |_| {
        pane.screen_with_styles().contains("\u{1b}[48;5;22m")
    });
    assert!(screen.contains("hello there"), "{screen}");
    assert!(!pane.screen_with_styles().contains("\u{1b}[48;5;52m"));
    assert_eq!(pane.quit_with_ctrl_c(), 0);
    drop(pane);

    let mut argv = mock.args();
    argv.extend(s(&["--use-theme", "forest"]));
    let pane = Pane::start(&env, &argv);
    let screen = message_screen(&pane);
    assert!(screen.contains("\u{1b}[48;5;22m"), "{screen}");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
    drop(pane);

    // --no-themes: the discovered and configured themes are not read.
    let mut argv = mock.args();
    argv.extend(s(&["--no-themes"]));
    let pane = Pane::start(&env, &argv);
    let screen = message_screen(&pane);
    assert!(screen.contains("\u{1b}[48;5;236m"), "{screen}");
    let plain = pane.screen();
    assert!(plain.contains("no theme is named 'ocean'"), "{plain}");
    assert!(!plain.contains("broken.json"), "{plain}");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

#[test]
fn the_built_in_light_theme_and_an_unknown_name() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new().with_fallback(ScriptedResponse::text("the answer")));
    let env = Env::new();
    env.settings(json!({"theme": "light/dark"}));
    // A light terminal (COLORFGBG) takes the first of the pair.
    let pane = Pane::start_with(&env, &mock.args(), &[("COLORFGBG", "0;15")]);
    let screen = message_screen(&pane);
    assert!(screen.contains("\u{1b}[48;5;254m"), "{screen}");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
    drop(pane);

    let mut argv = mock.args();
    argv.extend(s(&["--use-theme", "neon"]));
    let pane = Pane::start(&env, &argv);
    let screen = message_screen(&pane);
    assert!(screen.contains("\u{1b}[48;5;236m"), "{screen}");
    let plain = pane.screen();
    assert!(
        plain.contains("no theme is named 'neon'") && plain.contains("the dark theme is used"),
        "{plain}"
    );
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}
