//! pi's themes in the full-screen UI, driven under tmux: a theme file of
//! pi's agent folder chosen by the `theme` setting colours the UI, and
//! `--use-theme` overrides it; the `themes` setting's paths resolve from
//! the settings file's folder; an invalid theme file and an unknown theme
//! name are said, and the built-in theme is used; a terminal that reports a
//! light background gets the light theme; `markdown.codeBlockIndent`
//! prefixes code blocks. The tmux tests are skipped (with
//! a message) when tmux is not installed, outside CI; one plays the
//! terminal itself on a pseudo-terminal.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::pty::SpeakingTerminal;
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
/// A scripted server answering "the answer", a test home, and pi's theme
/// folder there holding an "ocean" theme (background colour 52); returns
/// the folder too.
fn ocean_home() -> (Mock, Env, std::path::PathBuf) {
    let mock = Mock::start(Scenario::new().with_fallback(ScriptedResponse::text("the answer")));
    let env = Env::new();
    let themes = env.pi_dir().join("themes");
    std::fs::create_dir_all(&themes).unwrap();
    std::fs::write(themes.join("ocean.json"), theme("ocean", 52)).unwrap();
    (mock, env, themes)
}

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
    let (mock, env, themes) = ocean_home();
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
    // The choice is saved in the user settings, as pi saves it.
    let saved = std::fs::read_to_string(env.home.path().join("settings.json")).unwrap();
    let saved: Value = serde_json::from_str(&saved).unwrap();
    assert_eq!(saved, json!({"theme": "forest", "themes": ["more"]}));
    env.settings(json!({"theme": "ocean", "themes": ["more"]}));

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

#[test]
fn a_terminal_that_says_it_is_light_gets_the_light_theme() {
    let mock = Mock::start(Scenario::new().with_fallback(ScriptedResponse::text("the answer")));
    let env = Env::new();
    let mut term = SpeakingTerminal::start(&env, &mock.args());
    term.wait_for("/ for commands");
    assert!(
        term.output().contains("\x1b]11;?"),
        "makai asked the colours"
    );
    term.type_text("hello there\r");
    // The words are drawn apart (the terminal keeps the space between).
    term.wait_for("answer");
    let shown = term.output();
    // The user message's background: the light theme's grey 254, not the
    // dark theme's 236 (crossterm writes it with the foreground: `39;48;5;254m`).
    assert!(shown.contains("48;5;254m hello there"), "{shown:?}");
    assert!(!shown.contains("48;5;236m"), "{shown:?}");
    term.type_text("\x03");
    term.wait_for("Press Ctrl+C again to exit");
    term.type_text("\x03");
    assert_eq!(term.wait_exit(std::time::Duration::from_secs(20)), Some(0));
}

/// How the user message's background reaches the terminal: the theme
/// "paper" gives it as `#f0f0f0`, written as such to a terminal with 24-bit
/// colour and as the nearest of the 256 colours to the others.
fn user_message_background(vars: &[(&str, &str)], terminal: Option<Value>) -> &'static str {
    let mock = Mock::start(Scenario::new().with_fallback(ScriptedResponse::text("the answer")));
    let env = Env::new();
    let themes = env.pi_dir().join("themes");
    std::fs::create_dir_all(&themes).unwrap();
    let mut paper: Value =
        serde_json::from_str(include_str!("../../makai-theme/themes/dark.json")).unwrap();
    paper["name"] = json!("paper");
    paper["colors"]["userMessageBg"] = json!("#f0f0f0");
    std::fs::write(themes.join("paper.json"), paper.to_string()).unwrap();
    let mut settings = json!({"theme": "paper"});
    if let Some(terminal) = terminal {
        settings["terminal"] = terminal;
    }
    env.settings(settings);
    let mut term = SpeakingTerminal::start_with(&env, &mock.args(), vars);
    term.wait_for("/ for commands");
    term.type_text("hello there\r");
    term.wait_for("answer");
    let shown = term.output();
    let which = if shown.contains("48;2;240;240;240m hello there") {
        "24-bit"
    } else if shown.contains("48;5;255m hello there") {
        "256"
    } else {
        panic!("no user message background in {shown:?}")
    };
    term.type_text("\x03");
    term.wait_for("Press Ctrl+C again to exit");
    term.type_text("\x03");
    assert_eq!(term.wait_exit(std::time::Duration::from_secs(20)), Some(0));
    which
}

/// pi's overrides of true-colour detection: `terminal.trueColor` first,
/// then `PI_TRUE_COLOR`, then what the terminal says (`COLORTERM`).
#[test]
fn true_colour_follows_pi_s_setting_then_its_variable_then_the_terminal() {
    assert_eq!(user_message_background(&[], None), "256");
    assert_eq!(
        user_message_background(&[("COLORTERM", "truecolor")], None),
        "24-bit"
    );
    assert_eq!(
        user_message_background(&[("PI_TRUE_COLOR", "1")], None),
        "24-bit"
    );
    assert_eq!(
        user_message_background(
            &[("PI_TRUE_COLOR", "1"), ("COLORTERM", "truecolor")],
            Some(json!({"trueColor": false}))
        ),
        "256"
    );
    assert_eq!(
        user_message_background(
            &[("COLORTERM", "truecolor"), ("PI_TRUE_COLOR", "0")],
            Some(json!({"trueColor": "auto"}))
        ),
        "256"
    );
}

/// `edit`'s diff is drawn once, below its message, in the theme's diff
/// colours (it was drawn as the result's plain text, its file header
/// included, the first lines only).
#[test]
fn an_edit_s_diff_is_drawn_in_the_theme_s_diff_colours() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::tool_call(
                "c1",
                "edit",
                json!({"path": "a.txt", "oldText": "old line", "newText": "new line"}).to_string(),
            ))
            .push(ScriptedResponse::text("edited it")),
    );
    let env = Env::new();
    std::fs::write(env.work().join("a.txt"), "keep\nold line\n").unwrap();
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    pane.type_text("change the line");
    pane.keys(&["Enter"]);
    pane.wait_text("edited it");
    assert_eq!(
        std::fs::read_to_string(env.work().join("a.txt")).unwrap(),
        "keep\nnew line\n"
    );
    let plain = pane.screen();
    assert_eq!(plain.matches("-old line").count(), 1, "{plain}");
    assert!(!plain.contains("--- a/a.txt"), "{plain}");
    assert!(
        plain.contains("Successfully replaced 1 block(s) in a.txt."),
        "{plain}"
    );
    let styled = pane.screen_with_styles();
    // The built-in dark theme: removed lines red (colour 1), added ones
    // green (2).
    let line = |text: &str| {
        styled
            .lines()
            .find(|l| l.contains(text))
            .unwrap_or_default()
            .to_string()
    };
    assert!(line("-old line").contains("\u{1b}[38;5;1m"), "{styled}");
    assert!(line("+new line").contains("\u{1b}[38;5;2m"), "{styled}");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

/// pi's `markdown.codeBlockIndent` prefixes a code block's lines (it was
/// ignored: two spaces whatever the setting).
#[test]
fn code_blocks_take_the_indent_of_the_setting() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new().with_fallback(ScriptedResponse::text(
        "Here:\n\n```rust\nlet x = 1;\n```\n",
    )));
    let env = Env::new();
    env.settings(json!({"markdown": {"codeBlockIndent": "│ "}}));
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    pane.type_text("show code");
    pane.keys(&["Enter"]);
    let screen = pane.wait_text("let x = 1;");
    assert!(
        screen.lines().any(|l| l.starts_with(" │ let x = 1;")),
        "{screen}"
    );
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

/// pi's `syntax*` colours: a code block of the answer in a language a
/// grammar knows, and a `read` result of a file whose name says its
/// language, are drawn in the theme's syntax colours.
#[test]
fn code_is_drawn_in_the_theme_s_syntax_colours() {
    if !tmux_available() {
        return;
    }
    let env = Env::new();
    std::fs::write(env.work().join("tool.py"), "import os\n# a comment line\n").unwrap();
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::tool_call(
                "c1",
                "read",
                r#"{"path":"tool.py"}"#,
            ))
            .push(ScriptedResponse::text(
                "Done:\n\n```python\ndef greet():\n    return \"hi\"\n```\n",
            )),
    );
    let mut v: Value =
        serde_json::from_str(include_str!("../../makai-theme/themes/dark.json")).unwrap();
    v["name"] = json!("vivid");
    v["colors"]["syntaxKeyword"] = json!(201);
    v["colors"]["syntaxString"] = json!(202);
    v["colors"]["syntaxComment"] = json!(203);
    let themes = env.pi_dir().join("themes");
    std::fs::create_dir_all(&themes).unwrap();
    std::fs::write(themes.join("vivid.json"), v.to_string()).unwrap();
    env.settings(json!({"theme": "vivid"}));
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    pane.type_text("show me");
    pane.keys(&["Enter"]);
    pane.wait_text("return");
    let screen = pane.screen_with_styles();
    for (what, sgr) in [
        ("def", "\u{1b}[38;5;201mdef"),
        ("return", "\u{1b}[38;5;201mreturn"),
        ("\"hi\"", "\u{1b}[38;5;202m\"hi\""),
        ("the read file's keyword", "\u{1b}[38;5;201mimport"),
        (
            "the read file's comment",
            "\u{1b}[38;5;203m# a comment line",
        ),
    ] {
        assert!(screen.contains(sgr), "{what}: {screen}");
    }
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

/// pi's `/reload` reloads themes: the active theme's file changed while
/// makai runs is drawn as it now says, the conversation shown included; a
/// theme file that became invalid is said, and an active theme whose file
/// is gone keeps its colours, with a notice.
#[test]
fn reload_reads_the_theme_files_again_and_draws_with_the_changed_theme() {
    if !tmux_available() {
        return;
    }
    let (mock, env, themes) = ocean_home();
    let ocean = themes.join("ocean.json");
    env.settings(json!({"theme": "ocean"}));

    let pane = Pane::start(&env, &mock.args());
    let screen = message_screen(&pane);
    assert!(screen.contains("\u{1b}[48;5;52m"), "{screen}");

    std::fs::write(&ocean, theme("ocean", 17)).unwrap();
    std::fs::write(themes.join("broken.json"), "{\"name\": \"broken\"").unwrap();
    pane.type_text("/reload");
    pane.keys(&["Enter"]);
    let plain = pane.wait_text("Reloaded: 0 skills, 0 prompt templates, ");
    assert!(plain.contains("broken.json"), "{plain}");
    let screen = pane.wait_for("the changed theme's colours", |_| {
        pane.screen_with_styles().contains("\u{1b}[48;5;17m")
    });
    assert!(screen.contains("hello there"), "{screen}");
    assert!(!pane.screen_with_styles().contains("\u{1b}[48;5;52m"));

    // The active theme's file gone: its colours stay, and the user hears why.
    std::fs::remove_file(&ocean).unwrap();
    pane.type_text("/reload");
    pane.keys(&["Enter"]);
    pane.wait_text("the theme ocean is no longer there");
    assert!(pane.screen_with_styles().contains("\u{1b}[48;5;17m"));
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

/// `/reload` reads the settings again too: a `theme` setting changed
/// while makai runs switches the UI to the theme it names (here one of a
/// folder the `themes` setting names since), an MCP server
/// added starts, and a setting the session was built with is named as
/// waiting for the next start.
#[test]
fn reload_switches_to_the_theme_the_changed_setting_names() {
    if !tmux_available() {
        return;
    }
    let (mock, env, _) = ocean_home();
    // A folder the `themes` setting names only after the start.
    let more = env.home.path().join("more-themes");
    std::fs::create_dir_all(&more).unwrap();
    std::fs::write(more.join("forest.json"), theme("forest", 22)).unwrap();
    env.settings(json!({"theme": "ocean"}));

    let pane = Pane::start(&env, &mock.args());
    let screen = message_screen(&pane);
    assert!(screen.contains("\u{1b}[48;5;52m"), "{screen}");

    let elsewhere = env.home.path().join("elsewhere");
    env.settings(json!({"theme": "forest", "themes": [more], "sessionDir": elsewhere}));
    // An MCP server added outside the session starts at the reload.
    common::add_self_with(&env, &["--exposure", "direct"]);
    pane.type_text("/reload");
    pane.keys(&["Enter"]);
    pane.wait_text("4 settings changed (mcpServers, sessionDir, theme,");
    pane.wait_text("MCP servers started: self");
    pane.wait_text("takes effect when makai starts again: sessionDir");
    let screen = pane.wait_for("the forest theme's colours", |_| {
        pane.screen_with_styles().contains("\u{1b}[48;5;22m")
    });
    assert!(screen.contains("hello there"), "{screen}");
    assert!(!pane.screen_with_styles().contains("\u{1b}[48;5;52m"));
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

/// A session of another directory reopened there (`/import`) is drawn
/// with that project's theme (its `.pi/themes` and its `theme` setting), as
/// a start there would draw it.
#[test]
fn a_session_reopened_in_its_directory_is_drawn_with_its_projects_theme() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new().with_fallback(ScriptedResponse::text("the answer")));
    let env = Env::new();
    env.settings(json!({"defaultProjectTrust": "always"}));
    let project = common::project_beside(&env);
    let themes = project.path().join(".pi/themes");
    std::fs::create_dir_all(&themes).unwrap();
    std::fs::write(themes.join("forest.json"), theme("forest", 22)).unwrap();
    std::fs::write(
        project.path().join(".pi/settings.json"),
        json!({"theme": "forest"}).to_string(),
    )
    .unwrap();
    let file = common::session_started_in(
        &env,
        project.path().to_str().unwrap(),
        "the earlier question",
    );

    let pane = Pane::start(&env, &mock.args());
    let screen = message_screen(&pane);
    assert!(!screen.contains("\u{1b}[48;5;22m"), "{screen}");
    pane.type_text(&format!("/import {}", file.display()));
    pane.keys(&["Enter"]);
    pane.wait_text("Imported session");
    let screen = pane.wait_for("the project's theme", |_| {
        pane.screen_with_styles().contains("\u{1b}[48;5;22m")
    });
    assert!(screen.contains("the earlier question"), "{screen}");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}
