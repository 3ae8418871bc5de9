//! Terminal hyperlinks (OSC 8) under tmux, as pi draws them: with
//! `PI_HYPERLINKS=1` (tmux hides the terminal behind it, so detection says
//! no) a markdown link's text, a bare address and the path of a `read` are
//! links, and the address no longer follows the link's text; without it,
//! tmux's client not showing hyperlinks, nothing is sent and the address
//! is shown. What makai wrote is read from `pipe-pane` (tmux 3.3 itself
//! drops OSC 8).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::tmux::{Pane, tmux_available};
use common::*;
use makai_mockllm::{Scenario, ScriptedResponse};
use serde_json::json;

const ANSWER: &str = "Read [the guide](https://example.com/guide) or https://example.org/faq.";

/// Has the model read `notes.txt` and answer with links; returns what
/// makai wrote to the terminal, the screen at the end, and the file's
/// address.
fn answer_with_links(vars: &[(&str, &str)]) -> (String, String, String) {
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::tool_call(
                "c1",
                "read",
                json!({"path": "notes.txt"}).to_string(),
            ))
            .push(ScriptedResponse::text(ANSWER)),
    );
    let env = Env::new();
    std::fs::write(env.work().join("notes.txt"), "a note\n").unwrap();
    let raw = env.home.path().join("pane-output.bin");
    let pane = Pane::start_with(&env, &mock.args(), vars);
    pane.wait_text("Ask anything");
    pane.tmux(&["pipe-pane", "-o", &format!("cat >> {}", raw.display())]);
    pane.type_text("where are the docs");
    pane.keys(&["Enter"]);
    pane.wait_text("example.org/faq.");
    let screen = pane.screen();
    assert_eq!(pane.quit_with_ctrl_c(), 0);
    let out = String::from_utf8_lossy(&std::fs::read(&raw).unwrap()).to_string();
    let work = std::fs::canonicalize(env.work()).unwrap();
    let file = url::Url::from_file_path(work.join("notes.txt")).unwrap();
    (out, screen, file.to_string())
}

/// The start of a link to `url`.
fn open(url: &str) -> String {
    format!("\x1b]8;;{url}\x1b\\")
}

#[test]
fn links_and_the_read_path_are_hyperlinks_when_forced_and_the_address_is_not_repeated() {
    if !tmux_available() {
        return;
    }
    let (out, screen, file) = answer_with_links(&[("PI_HYPERLINKS", "1")]);
    assert!(
        screen.contains("Read the guide or https://example.org/faq."),
        "{screen}"
    );
    assert!(!screen.contains("(https://example.com/guide)"), "{screen}");
    for (url, text) in [
        ("https://example.com/guide", "the guide"),
        ("https://example.org/faq", "https://example.org/faq"),
        (file.as_str(), "notes.txt"),
    ] {
        let at = out
            .find(&open(url))
            .unwrap_or_else(|| panic!("no link to {url} in {out:?}"));
        let after = &out[at + open(url).len()..];
        // The cells follow, a style change or a cursor move at most apart.
        let printed: String = strip_escapes(after).chars().take(text.len()).collect();
        assert_eq!(printed, text, "{after:?}");
        assert!(after.contains("\x1b]8;;\x1b\\"), "the link to {url} ends");
    }
}

#[test]
fn without_hyperlinks_nothing_is_sent_and_the_address_follows_the_text() {
    if !tmux_available() {
        return;
    }
    // Inside tmux detection asks tmux, whose detached client shows none.
    let (out, screen, _) = answer_with_links(&[]);
    assert!(
        screen.contains("Read the guide (https://example.com/guide) or https://example.org/faq."),
        "{screen}"
    );
    assert!(!out.contains("\x1b]8;"), "{out:?}");
}

/// `text` without its escape sequences (CSI and OSC).
fn strip_escapes(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('[') => {
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            Some(']') => {
                while let Some(c) = chars.next() {
                    if c == '\x07' || (c == '\x1b' && chars.next_if_eq(&'\\').is_some()) {
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    out
}

#[test]
fn a_click_on_a_link_opens_it_with_the_browser_and_a_drag_over_it_selects() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text(ANSWER)));
    let env = Env::new();
    let opened = env.home.path().join("opened.txt");
    let browser = env.home.path().join("browser.sh");
    std::fs::write(
        &browser,
        format!("#!/bin/sh\necho \"$1\" >> {}\n", opened.display()),
    )
    .unwrap();
    std::fs::set_permissions(
        &browser,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let browser = browser.display().to_string();
    let pane = Pane::start_with(
        &env,
        &mock.args(),
        &[("PI_HYPERLINKS", "1"), ("BROWSER", &browser)],
    );
    pane.wait_text("Ask anything");
    pane.type_text("where are the docs");
    pane.keys(&["Enter"]);
    let screen = pane.wait_text("example.org/faq.");
    let (row, line) = screen
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains("Read the guide"))
        .unwrap();
    // 1-based cells (ASCII: bytes are columns).
    let guide = (line.find("guide").unwrap() + 1, row + 1);
    let faq = (line.find("org/faq").unwrap() + 1, row + 1);
    let click = |button: u8, (column, row): (usize, usize)| {
        pane.type_text(&format!("\u{1b}[<{button};{column};{row}M"));
        pane.type_text(&format!("\u{1b}[<{button};{column};{row}m"));
    };
    let opened_lines = |n: usize| {
        let start = std::time::Instant::now();
        loop {
            let text = std::fs::read_to_string(&opened).unwrap_or_default();
            if text.lines().count() >= n || start.elapsed() > std::time::Duration::from_secs(10) {
                return text;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    };
    click(0, guide);
    pane.wait_text("Opening https://example.com/guide");
    assert_eq!(opened_lines(1), "https://example.com/guide\n");
    // A drag over the link selects (and copies) it: nothing opens; the next
    // click, on the bare address, opens that.
    // (It starts a cell further: at the clicked cell it would be a double click.)
    let (column, row) = (guide.0 + 1, guide.1);
    pane.type_text(&format!("\u{1b}[<0;{column};{row}M"));
    pane.type_text(&format!("\u{1b}[<32;{};{row}M", column + 3));
    pane.type_text(&format!("\u{1b}[<0;{};{row}m", column + 3));
    pane.wait_text("Copied");
    click(0, faq);
    assert_eq!(
        opened_lines(2),
        "https://example.com/guide\nhttps://example.org/faq\n"
    );
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}
