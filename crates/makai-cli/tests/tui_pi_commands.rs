//! pi's slash commands and keys in the interactive UI, driven under tmux:
//! prompt templates and skills on `/`, Ctrl+X and `/copy` (OSC 52 into a tmux
//! buffer; the desktop's clipboard program, and OSC 52 beside it over SSH or
//! with `PI_CLIPBOARD_OSC52=1`), `/settings`, `/scoped-models`, `/login` and `/logout`, `/reload`,
//! `/import` (with the warnings a session switch finds), `/mcp`. Skipped (with
//! a message) when tmux is not installed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use common::tmux::{Pane, WAIT, editor_text, tmux_available};
use common::{Env, Mock, request_text};
use makai_mockllm::{Scenario, ScriptedResponse};

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The tmux paste buffer (what OSC 52 copied), once it holds `want`.
fn wait_buffer(pane: &Pane, want: &str) -> String {
    let start = Instant::now();
    loop {
        let out = pane.tmux(&["show-buffer"]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if text.contains(want) {
            return text;
        }
        if start.elapsed() > WAIT {
            panic!(
                "the tmux buffer never held {want:?} (it has {text:?}); {}",
                pane.diagnostics()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn templates_and_skills_complete_on_slash_expand_and_ctrl_x_copies_the_answer() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::text("Reviewed: looks fine"))
            .push(ScriptedResponse::text("Skill used")),
    );
    let env = Env::new();
    write(
        &env.pi_dir().join("prompts/review.md"),
        "---\ndescription: Review the changes\nargument-hint: \"[focus]\"\n---\nReview the code, focus on $1.\n",
    );
    write(
        &env.work().join(".pi/skills/deploy/SKILL.md"),
        "---\nname: deploy\ndescription: Deploy the service\n---\nRun make deploy.\n",
    );
    // The project's skill loads with -a (the question is tested below).
    let mut args = mock.args();
    args.push("-a".into());
    let pane = Pane::start(&env, &args);
    pane.tmux(&["set-option", "-g", "set-clipboard", "on"]);
    pane.wait_text("Ask anything");
    pane.type_text("/rev");
    let screen = pane.wait_text("Review the changes");
    assert!(screen.contains("/review"), "{screen}");
    assert!(
        screen.contains("[focus]"),
        "the argument hint is shown:\n{screen}"
    );
    // Enter completes a template and leaves room for its arguments.
    pane.keys(&["Enter"]);
    pane.wait_for("the completed template", |s| editor_text(s) == "/review");
    pane.type_text("errors");
    pane.keys(&["Enter"]);
    pane.wait_text("Reviewed: looks fine");
    // Skills complete by their bare name too.
    pane.type_text("/dep");
    pane.wait_text("Deploy the service");
    pane.keys(&["Tab"]);
    pane.wait_for("the completed skill", |s| editor_text(s) == "/skill:deploy");
    pane.keys(&["Enter"]);
    pane.wait_text("Skill used");

    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2);
    assert!(
        request_text(&reqs[0]).contains("Review the code, focus on errors."),
        "{}",
        request_text(&reqs[0])
    );
    assert!(request_text(&reqs[1]).contains("Run make deploy."));
    assert!(request_text(&reqs[1]).contains("available_skills"));

    pane.keys(&["C-x"]);
    wait_buffer(&pane, "Skill used");
    pane.wait_text("Copied the last assistant message");
    // In /tree, Ctrl+X copies the highlighted entry.
    pane.type_text("/tree");
    pane.keys(&["Enter"]);
    pane.wait_text("Reviewed: looks fine");
    // pi's filters: Ctrl+U shows the user messages only, and again the default.
    pane.keys(&["C-u"]);
    let users = pane.wait_text("· user-only ·");
    assert!(!users.contains("assistant: Reviewed"), "{users}");
    pane.keys(&["C-u"]);
    pane.wait_text("· default ·");
    pane.wait_text("Reviewed: looks fine");
    pane.type_text("Reviewed");
    pane.keys(&["C-x"]);
    wait_buffer(&pane, "Reviewed: looks fine");
    pane.keys(&["Escape"]);
    // A key sent right after Escape would read as Alt+key: wait for the close.
    pane.wait_for("the tree to close", |s| !s.contains("Session tree"));
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

#[test]
fn settings_scoped_models_login_logout_reload_import_and_mcp() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("unused")));
    let env = Env::new();
    env.settings(serde_json::json!({"compaction": {"reserveTokens": 9000}, "quietStartup": false}));
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    let run = |line: &str| {
        pane.type_text(line);
        pane.keys(&["Enter"]);
    };

    run("/settings");
    pane.wait_text("Auto-compaction: on");
    pane.keys(&["Enter"]);
    pane.wait_text("Auto-compaction: off");
    pane.keys(&["Down", "Down", "Enter"]);
    pane.wait_text("Steering mode: all");
    pane.keys(&["Escape"]);
    // A key sent right after Escape would read as Alt+key: wait for the close.
    pane.wait_for("the settings to close", |s| !s.contains("Settings (Enter"));
    // Saved in the user settings file, as pi saves its /settings, the
    // file's other keys kept.
    let saved: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(env.home.path().join("settings.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        saved,
        serde_json::json!({"compaction": {"reserveTokens": 9000, "enabled": false},
                           "quietStartup": false, "steeringMode": "all"})
    );

    run("/scoped-models mock*,anthropic/*");
    pane.wait_text("Ctrl+P cycles through: mock*, anthropic/*");

    run("/login");
    pane.wait_text("(no stored credentials)");
    run("/login openai sk-test-123");
    pane.wait_text("API key for openai saved");
    let auth = std::fs::read_to_string(env.home.path().join("auth.json")).unwrap();
    assert!(auth.contains("sk-test-123"), "{auth}");
    run("/logout openai");
    pane.wait_text("Removed the credentials of openai.");
    let auth = std::fs::read_to_string(env.home.path().join("auth.json")).unwrap();
    assert!(!auth.contains("sk-test-123"), "{auth}");

    write(
        &env.home.path().join("prompts/later.md"),
        "---\ndescription: Added while running\n---\nLater.\n",
    );
    run("/reload");
    pane.wait_text("Reloaded: 0 skills, 1 prompt templates, ");
    pane.type_text("/lat");
    pane.wait_text("Added while running");
    pane.keys(&["BSpace", "BSpace", "BSpace", "BSpace"]);
    pane.wait_for("an empty editor", |s| {
        editor_text(s).starts_with("Ask anything")
    });

    let session = env.work().join("old.jsonl");
    std::fs::write(
        &session,
        "{\"type\":\"session\",\"version\":3,\"id\":\"0194bbbb-0000-7000-8000-00000000abcd\",\"timestamp\":\"2026-11-10T10:00:00.000Z\",\"cwd\":\"/elsewhere\"}\n\
         {\"type\":\"message\",\"id\":\"aa000001\",\"parentId\":null,\"timestamp\":\"2026-11-10T10:00:01.000Z\",\"message\":{\"role\":\"user\",\"content\":\"an imported question\",\"timestamp\":1}}\n",
    )
    .unwrap();
    run("/import old.jsonl");
    // Its directory, /elsewhere, does not exist: pi 1.5.2's question; Enter
    // continues it here.
    pane.wait_text("/elsewhere no longer exists");
    pane.keys(&["Enter"]);
    pane.wait_text("Imported session 0194bbbb-0000-7000-8000-00000000abcd");
    pane.wait_text("an imported question");

    run("/mcp");
    pane.wait_text("No MCP servers are configured");
    run("/hotkeys");
    pane.wait_text("Ctrl+X");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

/// Regression: the warning that a sub-agent's session could not be read
/// (so the ledger cannot count what it spent) was shown at start-up only;
/// after `/import` or `/resume` inside the UI it went to stderr, which the
/// full-screen UI hides (and writes over). Now the UI shows it.
#[test]
fn switching_to_a_session_whose_sub_agent_session_is_unreadable_shows_a_warning_in_the_ui() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("first")));
    let env = Env::new();
    let mut args = mock.args();
    args.extend(["-p".to_string(), "hello".to_string()]);
    let out = env.run(&args, "");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let files = env.session_files();
    assert_eq!(files.len(), 1, "{files:?}");
    // A sub-agent started in that session; its file was damaged afterwards.
    common::damage_a_sub_agent_session(&files[0]);

    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    pane.type_text(&format!("/import {}", files[0].display()));
    pane.keys(&["Enter"]);
    pane.wait_text("Imported session");
    pane.wait_text("a sub-agent's session could not be read");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

#[test]
fn the_ui_asks_before_loading_a_projects_skills_and_trust_saves_the_answer() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new());
    let env = Env::new();
    write(
        &env.work().join(".pi/skills/deploy/SKILL.md"),
        "---\nname: deploy\ndescription: Deploy the service\n---\nRun make deploy.\n",
    );
    let pane = Pane::start(&env, &mock.args());
    let screen = pane.wait_text("Trust this project?");
    assert!(screen.contains(".pi/skills"), "{screen}");
    // "always": trusted now, and saved for the next start.
    pane.type_text("a");
    pane.keys(&["Enter"]);
    pane.wait_text("Ask anything");
    pane.type_text("/dep");
    pane.wait_text("Deploy the service");
    let saved = std::fs::read_to_string(env.home.path().join("trust.json")).unwrap();
    let saved: serde_json::Value = serde_json::from_str(&saved).unwrap();
    let work = env.work().canonicalize().unwrap();
    assert_eq!(saved[work.to_str().unwrap()], "trusted", "{saved}");

    pane.keys(&["C-u"]);
    pane.type_text("/trust no");
    pane.keys(&["Enter"]);
    pane.wait_text("is not trusted from the next start");
    let saved = std::fs::read_to_string(env.home.path().join("trust.json")).unwrap();
    let saved: serde_json::Value = serde_json::from_str(&saved).unwrap();
    assert_eq!(saved[work.to_str().unwrap()], "untrusted", "{saved}");
    pane.keys(&["C-u"]);
    pane.quit_with_ctrl_c();

    // The next start asks nothing and loads nothing of the project's.
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    pane.type_text("/trust");
    pane.keys(&["Enter"]);
    pane.wait_text("saved: not trusted");
    pane.type_text("/dep");
    let screen = pane.wait_for("the typed text", |s| editor_text(s) == "/dep");
    assert!(!screen.contains("Deploy the service"), "{screen}");
    pane.keys(&["C-u"]);
    pane.quit_with_ctrl_c();
}

#[test]
fn enable_skill_commands_false_keeps_skills_out_of_the_completion_only() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("Skill used")));
    let env = Env::new();
    write(
        &env.home.path().join("skills/deploy/SKILL.md"),
        "---\nname: deploy\ndescription: Deploy the service\n---\nRun make deploy.\n",
    );
    env.settings(serde_json::json!({"enableSkillCommands": false}));
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    pane.type_text("/dep");
    let screen = pane.wait_for("the typed text", |s| editor_text(s) == "/dep");
    assert!(!screen.contains("Deploy the service"), "{screen}");
    pane.keys(&["BSpace", "BSpace", "BSpace", "BSpace"]);
    pane.wait_text("Ask anything");
    // Typed in full, the skill still loads.
    pane.type_text("/skill:deploy ship it");
    pane.wait_for("the typed command", |s| {
        editor_text(s) == "/skill:deploy ship it"
    });
    pane.keys(&["Enter"]);
    pane.wait_text("Skill used");
    assert!(request_text(&mock.requests()[0]).contains("Run make deploy."));
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

#[test]
fn autocomplete_max_visible_sets_the_completion_rows() {
    if !tmux_available() {
        return;
    }
    let env = Env::new();
    env.settings(serde_json::json!({"autocompleteMaxVisible": 3}));
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("unused")));
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    pane.type_text("/");
    let screen = pane.wait_text("tab/enter insert");
    // The popup's rows: the lines between its borders naming a command.
    let rows: Vec<&str> = screen
        .lines()
        .filter(|l| l.starts_with('│') && l.trim_start_matches(['│', '›', ' ']).starts_with('/'))
        .collect();
    assert_eq!(rows.len(), 3, "{screen}");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

#[test]
fn show_terminal_progress_marks_the_tab_while_a_run_goes() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(
        Scenario::new().push(
            ScriptedResponse::text("after a while")
                .chunk_size(4)
                .delay(300),
        ),
    );
    let env = Env::new();
    env.settings(serde_json::json!({"terminal": {"showTerminalProgress": true}}));
    let raw = env.home.path().join("pane-output.bin");
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    // What makai writes to the terminal, escape sequences included.
    pane.tmux(&["pipe-pane", "-o", &format!("cat >> {}", raw.display())]);
    pane.type_text("go");
    pane.keys(&["Enter"]);
    pane.wait_text("after a while");
    pane.wait_for("the run to end", |s| !s.contains("Working"));
    assert_eq!(pane.quit_with_ctrl_c(), 0);
    let out = String::from_utf8_lossy(&std::fs::read(&raw).unwrap()).to_string();
    let working = out
        .find("\x1b]9;4;3;\x07")
        .expect("progress shown while the run went");
    let cleared = out.rfind("\x1b]9;4;0;\x07").expect("progress cleared");
    assert!(working < cleared);
}

#[test]
fn show_cache_miss_notices_says_when_a_warm_cache_was_missed() {
    if !tmux_available() {
        return;
    }
    use makai_mockllm::Usage;
    let mock = Mock::start(
        Scenario::new()
            .push(
                ScriptedResponse::text("first answer")
                    .usage(Usage::new(5_200, 20).with_cache(5_000, 0)),
            )
            .push(ScriptedResponse::text("second answer").usage(Usage::new(5_400, 20))),
    );
    let env = Env::new();
    env.settings(serde_json::json!({"showCacheMissNotices": true}));
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    pane.type_text("one");
    pane.keys(&["Enter"]);
    let first = pane.wait_text("first answer");
    assert!(!first.contains("Cache miss"), "{first}");
    pane.type_text("two");
    pane.keys(&["Enter"]);
    pane.wait_text("second answer");
    pane.wait_text("Cache miss: 5400 of 5400 prompt tokens");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

#[test]
fn editor_padding_x_pads_the_editors_text() {
    if !tmux_available() {
        return;
    }
    let env = Env::new();
    env.settings(serde_json::json!({"editorPaddingX": 3}));
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("unused")));
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    pane.type_text("padded");
    let screen = pane.wait_for("the typed text", |s| editor_text(s) == "padded");
    // The editor's own column, then three more.
    assert!(
        screen.lines().any(|l| l.trim_end() == "    padded"),
        "{screen}"
    );
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

#[test]
fn export_to_a_jsonl_path_writes_the_session_as_pi_does() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("exported answer")));
    let env = Env::new();
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    pane.type_text("hello");
    pane.keys(&["Enter"]);
    pane.wait_text("exported answer");
    pane.type_text("/export out.jsonl");
    pane.keys(&["Enter"]);
    pane.wait_text("out.jsonl");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
    let exported = std::fs::read_to_string(env.work().join("out.jsonl")).unwrap();
    let stored = std::fs::read_to_string(&env.session_files()[0]).unwrap();
    assert_eq!(exported, stored);
    assert!(exported.starts_with(r#"{"type":"session""#), "{exported}");
}

#[test]
fn share_makes_a_private_gist_through_the_github_cli() {
    if !tmux_available() {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("shared answer")));
    let env = Env::new();
    // A GitHub CLI that keeps what it was asked to upload.
    let bin = env.home.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let kept = env.home.path().join("gist.html");
    let gh = bin.join("gh");
    std::fs::write(
        &gh,
        format!(
            "#!/bin/sh\n[ \"$1 $2\" = \"gist create\" ] || exit 3\nfor last; do :; done\ncp \"$last\" {}\necho '- Creating gist'\necho https://gist.github.com/someone/0123abcd\n",
            kept.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&gh, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let pane = Pane::start_with(&env, &mock.args(), &[("PATH", &path)]);
    pane.wait_text("Ask anything");
    pane.type_text("hello");
    pane.keys(&["Enter"]);
    pane.wait_text("shared answer");
    pane.type_text("/share");
    pane.keys(&["Enter"]);
    pane.wait_text("Session shared: https://gist.github.com/someone/0123abcd");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
    let page = std::fs::read_to_string(&kept).unwrap();
    assert!(
        page.contains("shared answer") && page.contains("<html"),
        "{page}"
    );
}

/// pi's clipboard: the desktop's program takes a copy; the terminal gets it
/// as OSC 52 too only over SSH or with `PI_CLIPBOARD_OSC52=1` (a local copy
/// sent both ways made terminals that ask before taking OSC 52 ask at every
/// copy).
#[test]
fn a_copy_goes_to_the_clipboard_program_and_to_osc_52_over_ssh_or_when_asked() {
    if !tmux_available() {
        return;
    }
    let env_dir = tempfile::tempdir().unwrap();
    let bin = env_dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let copied = env_dir.path().join("copied");
    std::fs::write(
        bin.join("wl-copy"),
        format!("#!/bin/sh\ncat > '{}'\n", copied.display()),
    )
    .unwrap();
    std::fs::set_permissions(bin.join("wl-copy"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let cases: [(&[(&str, &str)], bool); 3] = [
        (&[], false),
        (&[("PI_CLIPBOARD_OSC52", "1")], true),
        (&[("SSH_TTY", "/dev/pts/9")], true),
    ];
    for (vars, osc52) in cases {
        let _ = std::fs::remove_file(&copied);
        let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("Copy me please")));
        let env = Env::new();
        let mut all = vec![("PATH", path.as_str())];
        all.extend_from_slice(vars);
        let pane = Pane::start_with(&env, &mock.args(), &all);
        pane.tmux(&["set-option", "-g", "set-clipboard", "on"]);
        pane.wait_text("Ask anything");
        pane.type_text("say it");
        pane.keys(&["Enter"]);
        pane.wait_text("Copy me please");
        pane.keys(&["C-x"]);
        let how = if osc52 {
            "(wl-copy and the terminal (OSC 52))"
        } else {
            "(wl-copy)"
        };
        pane.wait_text(&format!("Copied the last assistant message {how}"));
        assert_eq!(
            std::fs::read_to_string(&copied).unwrap(),
            "Copy me please",
            "{vars:?}"
        );
        // The status is drawn after the copy was written: tmux has read
        // any OSC 52 sequence by now.
        let buffer = pane.tmux(&["show-buffer"]);
        let buffer = String::from_utf8_lossy(&buffer.stdout);
        if osc52 {
            assert_eq!(buffer, "Copy me please", "{vars:?}");
        } else {
            assert_eq!(buffer, "", "no OSC 52 without SSH or the variable");
        }
        assert_eq!(pane.quit_with_ctrl_c(), 0);
    }
}
