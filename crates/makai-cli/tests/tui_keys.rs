//! pi's keybindings in the interactive UI, driven under tmux: actions rebound
//! and unbound by `keybindings.json` (pi's folder and makai's home), undo,
//! yank-pop, the external editor (Ctrl+G) and suspending to the shell
//! (Ctrl+Z, then `fg`), Alt+key and an arrow key split over a slow link
//! (`PI_TUI_ESC_TIMEOUT`). Skipped (with a message) when tmux is not installed,
//! outside CI.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::os::unix::fs::PermissionsExt;

use common::tmux::{Pane, editor_text, tmux_available};
use common::{Env, Mock, request_text};
use makai_mockllm::{Scenario, ScriptedResponse};

fn editor_is(pane: &Pane, want: &str) -> String {
    pane.wait_for(&format!("the editor to hold {want:?}"), |s| {
        editor_text(s) == want
    })
}

#[test]
fn keybindings_json_rebinds_and_unbinds_actions_and_undo_and_yank_pop_edit() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new());
    let env = Env::new();
    std::fs::create_dir_all(env.pi_dir()).unwrap();
    // pi's file binds the model selector to Alt+M; makai's file (read after
    // it) also takes Ctrl+L away from it and gives Ctrl+L to history.
    std::fs::write(
        env.pi_dir().join("keybindings.json"),
        r#"{"app.model.select": ["alt+m", "ctrl+l"], "app.thinking.toggle": "ctrl+t"}"#,
    )
    .unwrap();
    std::fs::write(
        env.home.path().join("keybindings.json"),
        r#"{"$schema": "https://pi.dev/schemas/keybindings.schema.json",
            "app.model.select": "alt+m",
            "tui.editor.historyPrevious": "ctrl+l",
            "app.not.an.action": "ctrl+q"}"#,
    )
    .unwrap();
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    pane.wait_text("unknown action 'app.not.an.action'");

    // Ctrl+L no longer opens the model selector: with no history it does nothing.
    pane.type_text("x");
    pane.keys(&["C-l"]);
    // Typed after Ctrl+L, "y" reaches the editor: no selector took it.
    pane.type_text("y");
    editor_is(&pane, "xy");
    pane.keys(&["C-u"]);
    pane.keys(&["M-m"]);
    pane.wait_text("┌ Model");
    pane.keys(&["Escape"]);
    // A key sent right after Escape would read as Alt+key: wait for the close.
    pane.wait_for("the selector to close", |s| !s.contains("┌ Model"));

    // Undo (Ctrl+-, sent by terminals as Ctrl+_) takes back a deleted word;
    // yank-pop (Alt+Y) cycles to the text deleted before it.
    pane.type_text("alpha beta");
    editor_is(&pane, "alpha beta");
    pane.keys(&["C-w"]);
    editor_is(&pane, "alpha");
    pane.keys(&["C-_"]);
    editor_is(&pane, "alpha beta");
    pane.keys(&["C-w"]);
    pane.keys(&["C-w"]);
    pane.wait_for("an empty editor", |s| {
        editor_text(s).starts_with("Ask anything")
    });
    pane.keys(&["C-y"]);
    editor_is(&pane, "alpha");
    pane.keys(&["M-y"]);
    editor_is(&pane, "beta");

    // /hotkeys shows the bindings in force, ids included.
    pane.keys(&["C-u"]);
    pane.type_text("/hotkeys");
    pane.keys(&["Enter"]);
    // The list is longer than the screen: scroll back to the line.
    pane.wait_text("(app.session.delete)");
    let mut screen = pane.screen();
    for _ in 0..10 {
        if screen.contains("(app.model.select)") {
            break;
        }
        pane.keys(&["PageUp"]);
        std::thread::sleep(std::time::Duration::from_millis(150));
        screen = pane.screen();
    }
    let line = screen
        .lines()
        .find(|l| l.contains("(app.model.select)"))
        .unwrap();
    assert!(line.contains("Alt+M") && !line.contains("Ctrl+L"), "{line}");
    let shown_after = |s: &str| s.contains("Ctrl+G");
    if !shown_after(&screen) {
        pane.keys(&["C-End"]);
        pane.wait_for("the list's end", shown_after);
    }
    assert_eq!(
        mock.requests().len(),
        0,
        "no key sent anything to the model"
    );
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

#[test]
fn ctrl_g_edits_the_prompt_in_the_external_editor() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("Got the edited prompt")));
    let env = Env::new();
    // An "editor" that rewrites the file as a person would, then exits.
    let editor = env.home.path().join("fake-editor.sh");
    std::fs::write(
        &editor,
        "#!/bin/sh\nprintf 'edited: %s\\nsecond line\\n' \"$(cat \"$1\")\" > \"$1\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&editor, std::fs::Permissions::from_mode(0o755)).unwrap();
    let pane = Pane::start_with(&env, &mock.args(), &[("VISUAL", editor.to_str().unwrap())]);
    pane.wait_text("Ask anything");
    pane.type_text("my draft");
    pane.keys(&["C-g"]);
    editor_is(&pane, "edited: my draft\nsecond line");
    pane.keys(&["Enter"]);
    pane.wait_text("Got the edited prompt");
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 1);
    assert!(
        request_text(&reqs[0]).contains("edited: my draft\\nsecond line"),
        "{}",
        request_text(&reqs[0])
    );
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

#[test]
fn an_external_editor_that_fails_leaves_the_prompt_as_it_was() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new());
    let env = Env::new();
    let pane = Pane::start_with(&env, &mock.args(), &[("VISUAL", "false")]);
    pane.wait_text("Ask anything");
    pane.type_text("keep me");
    pane.keys(&["C-g"]);
    pane.wait_text("External editor: the editor `false` ended with");
    editor_is(&pane, "keep me");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

#[test]
fn ctrl_z_suspends_to_the_shell_and_fg_brings_the_ui_back() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("Back and answering")));
    let env = Env::new();
    let pane = Pane::start_in_shell(&env, &mock.args());
    pane.wait_text("Ask anything");
    pane.type_text("half typed");
    pane.keys(&["C-z"]);
    let screen = pane.wait_text("Stopped");
    assert!(
        !screen.contains("Ask anything"),
        "the shell's screen is back:\n{screen}"
    );
    assert_eq!(
        pane.wait_exit_status("stop"),
        148,
        "the shell saw makai stop (128 + SIGTSTP)"
    );
    pane.resume_job();
    editor_is(&pane, "half typed");
    pane.keys(&["Enter"]);
    pane.wait_text("Back and answering");
    assert_eq!(mock.requests().len(), 1);
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

/// A 1x1 PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae,
    0x42, 0x60, 0x82,
];

#[test]
fn ctrl_v_attaches_a_clipboard_image_to_the_prompt_and_pastes_clipboard_text() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("A single pixel")));
    let env = Env::new();
    // The desktop's clipboard program, as xclip answers: TARGETS, then the
    // image; the mode file switches the clipboard to text.
    let bin = env.home.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let png = env.home.path().join("clip.png");
    std::fs::write(&png, PNG).unwrap();
    let mode = env.home.path().join("clip-mode");
    std::fs::write(&mode, "image").unwrap();
    let script = format!(
        "#!/bin/sh\nif [ \"$(cat '{mode}')\" = text ]; then\n  case \"$*\" in *TARGETS*) printf 'TARGETS\\nUTF8_STRING\\n';; *) printf 'from the clipboard';; esac\n  exit 0\nfi\ncase \"$*\" in\n  *TARGETS*) printf 'TARGETS\\nimage/png\\n' ;;\n  *image/png*) cat '{png}' ;;\n  *) exit 1 ;;\nesac\n",
        mode = mode.display(),
        png = png.display()
    );
    std::fs::write(bin.join("xclip"), script).unwrap();
    std::fs::write(bin.join("wl-paste"), "#!/bin/sh\nexit 1\n").unwrap();
    for name in ["xclip", "wl-paste"] {
        std::fs::set_permissions(bin.join(name), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    // A model that takes images (else makai leaves them out, saying so).
    std::fs::write(
        env.home.path().join("models.json"),
        serde_json::json!({"providers": {"vision": {
            "baseUrl": mock.v1(), "api": "openai-completions", "apiKey": "k",
            "models": [{"id": "eye", "input": ["text", "image"]}]
        }}})
        .to_string(),
    )
    .unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let args = ["--model".to_string(), "vision/eye".to_string()];
    let pane = Pane::start_with(&env, &args, &[("PATH", path.as_str())]);
    pane.wait_text("Ask anything");
    pane.type_text("what is in ");
    pane.keys(&["C-v"]);
    pane.wait_text("Attached [image 1] (image/png");
    editor_is(&pane, "what is in [image 1]");
    pane.keys(&["Enter"]);
    pane.wait_text("A single pixel");
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 1);
    let body = reqs[0].body.to_string();
    use base64::Engine;
    let encoded = base64::engine::general_purpose::STANDARD.encode(PNG);
    assert!(
        body.contains(&format!("data:image/png;base64,{encoded}")),
        "{body}"
    );

    std::fs::write(&mode, "text").unwrap();
    pane.keys(&["C-v"]);
    editor_is(&pane, "from the clipboard");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

/// Esc twice in an empty editor opens `/tree` (pi's default), or what the
/// `doubleEscapeAction` setting names.
#[test]
fn double_escape_in_an_empty_editor_opens_the_tree_or_the_setting_s_choice() {
    if !tmux_available() {
        return;
    }
    for (setting, title) in [(None, "Session tree"), (Some("fork"), "Fork from prompt")] {
        let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("First answer")));
        let env = Env::new();
        if let Some(action) = setting {
            std::fs::write(
                env.home.path().join("settings.json"),
                serde_json::json!({"doubleEscapeAction": action}).to_string(),
            )
            .unwrap();
        }
        let pane = Pane::start(&env, &mock.args());
        pane.wait_text("Ask anything");
        pane.type_text("first question");
        pane.keys(&["Enter"]);
        pane.wait_text("First answer");
        pane.keys(&["Escape"]);
        std::thread::sleep(std::time::Duration::from_millis(100));
        pane.keys(&["Escape"]);
        pane.wait_text(title);
        pane.keys(&["Escape"]);
        pane.wait_for("the selector to close", |s| !s.contains(title));
        assert_eq!(pane.quit_with_ctrl_c(), 0);
    }
}

/// pi's `tui.select.*` actions move every list: rebound in
/// `keybindings.json`, Ctrl+J moves down in `/thinking` and Tab chooses.
#[test]
fn tui_select_bindings_move_and_choose_in_lists() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new().with_fallback(ScriptedResponse::text("ok")));
    let env = Env::new();
    mock.lab_models(&env, serde_json::json!([{"id": "deep", "reasoning": true}]));
    std::fs::write(
        env.home.path().join("keybindings.json"),
        r#"{"tui.select.down": "ctrl+j", "tui.select.confirm": ["enter", "tab"]}"#,
    )
    .unwrap();
    let pane = Pane::start(
        &env,
        &[
            "--model".to_string(),
            "lab/deep".into(),
            "--thinking".into(),
            "off".into(),
        ],
    );
    pane.wait_text("Ask anything");
    pane.type_text("/thinking");
    pane.keys(&["Enter"]);
    pane.wait_text("Thinking level");
    pane.keys(&["C-j", "C-j", "Tab"]);
    pane.wait_text("deep • thinking low");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

/// Types "hello world", then ESC and, 150 ms later (a slow link's split),
/// `rest` and `X`, with `PI_TUI_ESC_TIMEOUT` at each case's timeout; the
/// editor must then hold the case's text.
fn split_after_escape(rest: &str, cases: [(&str, &str); 2]) {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new());
    for (timeout, want) in cases {
        let env = Env::new();
        let pane = Pane::start_with(&env, &mock.args(), &[("PI_TUI_ESC_TIMEOUT", timeout)]);
        pane.wait_text("Ask anything");
        pane.type_text("hello world");
        editor_is(&pane, "hello world");
        pane.keys(&["Escape"]);
        std::thread::sleep(std::time::Duration::from_millis(150));
        pane.type_text(rest);
        pane.type_text("X");
        editor_is(&pane, want);
        assert_eq!(pane.quit_with_ctrl_c(), 0);
    }
}

/// Alt+B split between two reads, as a slow SSH link delivers it: ESC, then
/// `b` 150 ms later. Within `PI_TUI_ESC_TIMEOUT` the two are Alt+B (a word
/// back); past it the ESC is the Escape key and `b` is typed.
#[test]
fn an_escape_split_from_its_key_is_alt_and_the_key_within_pi_s_escape_timeout() {
    split_after_escape("b", [("3000", "hello Xworld"), ("20", "hello worldbX")]);
}

/// The Left arrow split after its ESC, as a slow link delivers it: ESC,
/// then `[D` 150 ms later. Within `PI_TUI_ESC_TIMEOUT` the whole is the
/// arrow (the cursor moves left); past it the ESC is the Escape key and
/// `[D` is typed (what makai did with every such split before).
#[test]
fn an_arrow_key_split_after_its_escape_moves_the_cursor_instead_of_typing_its_rest() {
    split_after_escape("[D", [("3000", "hello worlXd"), ("20", "hello world[DX")]);
}

/// The row of the screen `y` with its styles, as `capture-pane -e` gives it.
fn styled_row(pane: &Pane, y: usize) -> String {
    pane.screen_with_styles()
        .lines()
        .nth(y)
        .unwrap_or_default()
        .to_string()
}

/// pi's cursor: drawn as a reverse-video cell with the terminal's hidden
/// (but moved there, for input methods), in both terminal modes; with
/// `showHardwareCursor` or `PI_HARDWARE_CURSOR=1`, the terminal's own.
#[test]
fn the_cursor_is_drawn_as_pi_s_unless_the_hardware_cursor_is_asked_for() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new());
    // (environment, settings.json, the terminal's cursor shown)
    type Case<'a> = (&'a [(&'a str, &'a str)], Option<&'a str>, bool);
    let cases: [Case<'_>; 4] = [
        (&[], None, false),
        (&[], Some(r#"{"tuiMode": "regular"}"#), false),
        (&[("PI_HARDWARE_CURSOR", "1")], None, true),
        (
            &[("PI_HARDWARE_CURSOR", "1")],
            Some(r#"{"showHardwareCursor": false}"#),
            false,
        ),
    ];
    for (vars, settings, hardware) in cases {
        let env = Env::new();
        if let Some(settings) = settings {
            std::fs::write(env.home.path().join("settings.json"), settings).unwrap();
        }
        let pane = Pane::start_with(&env, &mock.args(), vars);
        pane.wait_text("Ask anything");
        pane.type_text("hello world");
        pane.keys(&["C-a", "M-f"]);
        let screen = editor_is(&pane, "hello world");
        let context = format!("{vars:?} {settings:?}");
        let y = screen
            .lines()
            .position(|l| l.contains("hello world"))
            .unwrap();
        // The cursor after "hello", on the space.
        let x = screen.lines().nth(y).unwrap().find("hello").unwrap() + 5;
        pane.wait_for(&format!("the cursor at column {x}"), |_| {
            pane.value("#{cursor_x},#{cursor_y}") == format!("{x},{y}")
        });
        assert_eq!(
            pane.value("#{cursor_flag}"),
            if hardware { "1" } else { "0" },
            "{context}"
        );
        let reversed = |row: &str| row.matches("\u{1b}[7m").count();
        let row = styled_row(&pane, y);
        assert_eq!(
            row.contains("hello\u{1b}[7m "),
            !hardware,
            "{context}: {row:?}"
        );
        assert_eq!(reversed(&row), usize::from(!hardware), "{context}: {row:?}");
        // The cursor moves on: the cell it left is plain again.
        pane.keys(&["End"]);
        pane.wait_for("the cursor at the end", |_| {
            pane.value("#{cursor_x}") == (x + 6).to_string()
        });
        let row = styled_row(&pane, y);
        assert!(row.contains("hello"), "{context}: {row:?}");
        assert_eq!(
            row.contains("world\u{1b}[7m"),
            !hardware,
            "{context}: {row:?}"
        );
        assert_eq!(reversed(&row), usize::from(!hardware), "{context}: {row:?}");
        assert_eq!(pane.quit_with_ctrl_c(), 0);
    }
}

/// pi's #11345: a key the kitty protocol reports with a private-use code
/// (F13 and up, media keys) typed an invisible character; pasted text keeps
/// such characters (a Nerd Font icon).
#[test]
fn a_private_use_key_types_nothing_and_a_pasted_icon_stays() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new());
    let env = Env::new();
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    pane.type_text("a");
    pane.type_text("\u{E01D}");
    pane.type_text("b");
    editor_is(&pane, "ab");
    pane.paste(" \u{F121} icon");
    editor_is(&pane, "ab \u{F121} icon");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}
