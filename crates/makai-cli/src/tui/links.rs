//! Terminal hyperlinks (OSC 8), as pi draws them: a markdown link's text,
//! a bare `http(s)://` address in an answer, and the path in the title of a
//! built-in file tool (`read`, `write`, `edit`, `ls`, `find`, `grep`, as a
//! `file://` address) open on a click in terminals that say they can
//! (pi's `terminal.hyperlinks` setting, `PI_HYPERLINKS`, and its detection:
//! [`detect`]). Elsewhere a link keeps its address after its text, as
//! before.
//!
//! ratatui's cells have no room for a hyperlink, and makai never colours an
//! underline: **a cell's `underline_color` carries the number of its link**
//! (`Color::Rgb`, 24 bits; `Color::Reset`: none). Styles carry it through
//! wrapping, selection and the frame's difference unchanged; the backend
//! ([`super::backend`]) and the exit transcript ([`super::exit_output`])
//! turn it back into the address ([`url_of`]) and write OSC 8 around the
//! cells that have it. Addresses are numbered once per process
//! ([`style_for`]).

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use ratatui::style::{Color, Style};

/// The longest address sent (terminals cap theirs near 2 KiB).
const MAX_URL_BYTES: usize = 2048;

/// The most addresses numbered (24 bits of an RGB colour, 0 meaning none).
const MAX_LINKS: usize = (1 << 24) - 1;

/// How long tmux may take to say whether its client shows hyperlinks (pi
/// waits as long).
const TMUX_PROBE_TIMEOUT: Duration = Duration::from_millis(250);

/// Whether links are drawn, and the directory relative paths are in.
static STATE: RwLock<Option<(bool, PathBuf)>> = RwLock::new(None);

/// The addresses numbered so far: number `n` is `urls[n - 1]`.
static TABLE: Mutex<Table> = Mutex::new(Table {
    urls: Vec::new(),
    numbers: None,
});

struct Table {
    urls: Vec<Arc<str>>,
    numbers: Option<HashMap<Arc<str>, u32>>,
}

#[cfg(test)]
thread_local! {
    /// A test's own choice, so that tests running side by side do not see
    /// each other's.
    static TEST_STATE: std::cell::RefCell<Option<(bool, PathBuf)>> =
        const { std::cell::RefCell::new(None) };
}

/// Whether the terminal shows OSC 8 hyperlinks, as pi decides it: pi's
/// `terminal.hyperlinks` setting (`true`, `false`; `"auto"` or unset:
/// detect), else `PI_HYPERLINKS` (`1`, `0`; `auto` or unset: detect), else
/// the terminal's word for itself (`var` reads its environment). Inside
/// tmux, only when tmux says its client shows them (`tmux_forwards`, asked
/// only then); never inside screen; kitty, Ghostty, WezTerm, Warp, iTerm2,
/// Windows Terminal, Alacritty, VS Code's, Zed's, Rex and Orca do; JetBrains'
/// terminal and unknown ones are taken not to, so that no address is hidden
/// behind text a terminal cannot open.
pub fn detect(
    setting: Option<&serde_json::Value>,
    var: impl Fn(&str) -> Option<String>,
    tmux_forwards: impl FnOnce() -> bool,
) -> bool {
    if let Some(forced) = setting.and_then(serde_json::Value::as_bool) {
        return forced;
    }
    match var("PI_HYPERLINKS").as_deref().map(str::trim) {
        Some("1") => return true,
        Some("0") => return false,
        _ => {}
    }
    let lower = |name: &str| var(name).unwrap_or_default().to_ascii_lowercase();
    let set = |name: &str| var(name).is_some_and(|v| !v.is_empty());
    let (program, term) = (lower("TERM_PROGRAM"), lower("TERM"));
    if set("TMUX") || term.starts_with("tmux") {
        return tmux_forwards();
    }
    if term.starts_with("screen") {
        return false;
    }
    if lower("TERMINAL_EMULATOR") == "jetbrains-jediterm" {
        return false;
    }
    let known_program = [
        "kitty",
        "ghostty",
        "wezterm",
        "warpterminal",
        "iterm.app",
        "alacritty",
        "vscode",
        "zed",
        "rex",
        "orca",
    ];
    known_program.contains(&program.as_str())
        || term.contains("kitty")
        || term.contains("ghostty")
        || term == "alacritty"
        || [
            "KITTY_WINDOW_ID",
            "GHOSTTY_RESOURCES_DIR",
            "WEZTERM_PANE",
            "WARP_SESSION_ID",
            "WARP_TERMINAL_SESSION_UUID",
            "ITERM_SESSION_ID",
            "WT_SESSION",
            "ALACRITTY_WINDOW_ID",
        ]
        .iter()
        .any(|name| set(name))
}

/// Whether the tmux client makai is attached to passes hyperlinks on (its
/// `client_termfeatures` name `hyperlinks`); false when tmux does not
/// answer within a quarter of a second.
pub fn tmux_forwards_hyperlinks() -> bool {
    let Ok(mut child) = Command::new("tmux")
        .args(["display-message", "-p", "#{client_termfeatures}"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
    else {
        return false;
    };
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => break,
            Ok(None) if started.elapsed() < TMUX_PROBE_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(5));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return false;
            }
        }
    }
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = io::Read::read_to_string(&mut stdout, &mut out);
    }
    out.split(',').any(|feature| feature.trim() == "hyperlinks")
}

/// Decides once per session of the UI whether links are drawn (from the
/// `terminal` settings and the environment, [`detect`]) and where relative
/// paths of tool titles are (`base`, the session's working directory).
pub fn configure(terminal: Option<&serde_json::Value>, base: &Path) {
    let on = detect(
        terminal.and_then(|t| t.get("hyperlinks")),
        |name| std::env::var(name).ok(),
        tmux_forwards_hyperlinks,
    );
    *STATE.write().unwrap_or_else(|e| e.into_inner()) = Some((on, base.to_path_buf()));
}

/// Sets, for this thread only, whether links are drawn and the directory
/// of relative paths (tests).
#[cfg(test)]
pub fn set_for_this_thread(on: bool, base: &Path) {
    TEST_STATE.with(|s| *s.borrow_mut() = Some((on, base.to_path_buf())));
}

/// Whether links are drawn, and the directory of relative paths.
fn state() -> Option<(bool, PathBuf)> {
    #[cfg(test)]
    if let Some(state) = TEST_STATE.with(|s| s.borrow().clone()) {
        return Some(state);
    }
    STATE.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Whether links are drawn.
pub fn enabled() -> bool {
    state().is_some_and(|(on, _)| on)
}

/// The style that makes text a link to `url` (to patch over the text's
/// own): nothing when links are not drawn or `url` is not one a terminal
/// should be handed (see [`sendable`]).
pub fn style_for(url: &str) -> Style {
    if !enabled() {
        return Style::default();
    }
    let Some(url) = sendable(url) else {
        return Style::default();
    };
    match number(&url) {
        Some(n) => Style::default().underline_color(colour_of(n)),
        None => Style::default(),
    }
}

/// The style that makes a tool title's `path` a link to the file
/// (`file://`, relative paths taken from the session's directory).
pub fn style_for_path(path: &str) -> Style {
    let Some((true, base)) = state() else {
        return Style::default();
    };
    let path = Path::new(path);
    let absolute = if matches!(path.to_str(), Some("" | ".")) {
        base
    } else if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    };
    match url::Url::from_file_path(&absolute) {
        Ok(url) => style_for(url.as_str()),
        Err(()) => Style::default(),
    }
}

/// `url` as sent to the terminal: an address of a scheme a terminal opens
/// (`http`, `https`, `mailto`, `file`, `ftp`), at most 2 KiB, with bytes
/// outside printable ASCII percent-encoded; `None` for anything else, and
/// for addresses with control characters or spaces, which could end the
/// escape sequence early.
pub fn sendable(url: &str) -> Option<String> {
    if url.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return None;
    }
    let scheme = url.split_once(':')?.0.to_ascii_lowercase();
    if !matches!(
        scheme.as_str(),
        "http" | "https" | "mailto" | "file" | "ftp"
    ) {
        return None;
    }
    let mut out = String::with_capacity(url.len());
    for b in url.bytes() {
        if b.is_ascii_graphic() {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    (out.len() <= MAX_URL_BYTES).then_some(out)
}

/// The number of `url`, numbered now if it is new; `None` when the table
/// is full.
fn number(url: &str) -> Option<u32> {
    let mut table = TABLE.lock().unwrap_or_else(|e| e.into_inner());
    let Table { urls, numbers } = &mut *table;
    let numbers = numbers.get_or_insert_with(HashMap::new);
    if let Some(n) = numbers.get(url) {
        return Some(*n);
    }
    if urls.len() >= MAX_LINKS {
        return None;
    }
    let url: Arc<str> = Arc::from(url);
    urls.push(url.clone());
    let n = u32::try_from(urls.len()).ok()?;
    numbers.insert(url, n);
    Some(n)
}

fn colour_of(n: u32) -> Color {
    Color::Rgb((n >> 16) as u8, (n >> 8) as u8, n as u8)
}

/// The address a cell's underline colour carries, if any.
pub fn url_of(underline: Color) -> Option<Arc<str>> {
    let Color::Rgb(r, g, b) = underline else {
        return None;
    };
    let n = (usize::from(r) << 16) | (usize::from(g) << 8) | usize::from(b);
    let table = TABLE.lock().unwrap_or_else(|e| e.into_inner());
    n.checked_sub(1).and_then(|i| table.urls.get(i)).cloned()
}

/// Writes the start of a link to `url`.
pub fn write_open(out: &mut impl Write, url: &str) -> io::Result<()> {
    write!(out, "\x1b]8;;{url}\x1b\\")
}

/// Writes the end of a link.
pub fn write_close(out: &mut impl Write) -> io::Result<()> {
    out.write_all(b"\x1b]8;;\x1b\\")
}

/// Opens `url` with the user's opener: `$BROWSER` when set (the first of
/// its `:`-separated programs), else `xdg-open` (`open` on macOS). Returns
/// the program started.
pub fn open(url: &str) -> Result<String, String> {
    let url = sendable(url).ok_or_else(|| "not an address makai opens".to_string())?;
    let program = std::env::var("BROWSER")
        .ok()
        .and_then(|b| b.split(':').next().map(str::trim).map(str::to_string))
        .filter(|b| !b.is_empty())
        .unwrap_or_else(|| {
            if cfg!(target_os = "macos") {
                "open".to_string()
            } else {
                "xdg-open".to_string()
            }
        });
    Command::new(&program)
        .arg(&url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map(|mut child| {
            // Reaped when it ends, without waiting for it here.
            std::thread::spawn(move || child.wait());
            program.clone()
        })
        .map_err(|e| format!("{program}: {e}"))
}

/// The bare `http://` and `https://` addresses of `text`, as byte ranges:
/// each starts the text or follows a character that is not a letter or
/// digit, and ends before a space, a quote or `<>\`; trailing punctuation
/// (`.,:;!?`), and `)` without its `(` in the address, stay out (GitHub's
/// rules for autolinks).
pub fn bare_urls(text: &str) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(found) = text[from..].find("http") {
        let start = from + found;
        from = start + 4;
        let rest = &text[start..];
        if !(rest.starts_with("http://") || rest.starts_with("https://")) {
            continue;
        }
        if text[..start]
            .chars()
            .next_back()
            .is_some_and(char::is_alphanumeric)
        {
            continue;
        }
        let len = rest
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '\\'))
            .unwrap_or(rest.len());
        let mut url = &rest[..len];
        loop {
            let trimmed = url.trim_end_matches(['.', ',', ':', ';', '!', '?']);
            let trimmed = match trimmed.strip_suffix(')') {
                Some(inner) if inner.matches('(').count() < inner.matches(')').count() + 1 => inner,
                _ => trimmed,
            };
            if trimmed.len() == url.len() {
                break;
            }
            url = trimmed;
        }
        let scheme_only = url.trim_end_matches('/').ends_with(':');
        if !scheme_only {
            out.push(start..start + url.len());
        }
        from = start + url.len().max(4);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::tui::test_vars::vars as env;

    #[test]
    fn known_terminals_show_links_and_unknown_ones_multiplexers_and_jetbrains_do_not() {
        let never = || panic!("tmux asked outside tmux");
        for shows in [
            &[("TERM_PROGRAM", "WezTerm")][..],
            &[("TERM", "xterm-kitty")],
            &[("KITTY_WINDOW_ID", "3")],
            &[("TERM_PROGRAM", "ghostty")],
            &[("ITERM_SESSION_ID", "w0t0p0")],
            &[("WT_SESSION", "abc")],
            &[("TERM_PROGRAM", "vscode")],
            &[("TERM", "alacritty")],
            &[("ALACRITTY_WINDOW_ID", "1")],
            &[("TERM_PROGRAM", "zed")],
        ] {
            assert!(detect(None, env(shows), never), "{shows:?}");
        }
        for hides in [
            &[][..],
            &[("TERM", "xterm-256color")],
            &[("TERM", "screen-256color"), ("TERM_PROGRAM", "WezTerm")],
            &[
                ("TERMINAL_EMULATOR", "JetBrains-JediTerm"),
                ("TERM", "xterm-256color"),
            ],
        ] {
            assert!(!detect(None, env(hides), never), "{hides:?}");
        }
    }

    #[test]
    fn inside_tmux_links_follow_what_tmux_says_of_its_client() {
        let tmux = &[
            ("TMUX", "/tmp/tmux-1/default,1,0"),
            ("TERM_PROGRAM", "WezTerm"),
        ];
        assert!(detect(None, env(tmux), || true));
        assert!(!detect(None, env(tmux), || false));
        assert!(detect(None, env(&[("TERM", "tmux-256color")]), || true));
    }

    #[test]
    fn the_setting_wins_over_the_variable_and_the_variable_over_detection() {
        let never = || panic!("detection ran although forced");
        let off = serde_json::json!(false);
        let on = serde_json::json!(true);
        let auto = serde_json::json!("auto");
        let forced_on = &[("PI_HYPERLINKS", "1"), ("TMUX", "x")];
        assert!(!detect(Some(&off), env(forced_on), never));
        assert!(detect(Some(&on), env(&[("PI_HYPERLINKS", "0")]), never));
        assert!(detect(Some(&auto), env(forced_on), never));
        assert!(!detect(
            None,
            env(&[("PI_HYPERLINKS", "0"), ("WT_SESSION", "1")]),
            never
        ));
        // `auto` and anything else detect.
        assert!(detect(
            None,
            env(&[("PI_HYPERLINKS", "auto"), ("WT_SESSION", "1")]),
            never
        ));
    }

    #[test]
    fn addresses_that_could_end_the_sequence_are_not_sent() {
        assert_eq!(
            sendable("https://a.example/x?y=1#z").as_deref(),
            Some("https://a.example/x?y=1#z")
        );
        assert_eq!(sendable("https://a.example/\x1b\\x"), None);
        assert_eq!(sendable("https://a.example/\x07"), None);
        assert_eq!(sendable("https://a.example/a b"), None);
        assert_eq!(sendable("javascript:alert(1)"), None);
        assert_eq!(sendable("docs/readme.md"), None);
        assert_eq!(
            sendable("https://例え.jp/ü").as_deref(),
            Some("https://%E4%BE%8B%E3%81%88.jp/%C3%BC")
        );
        assert_eq!(
            sendable(&format!("https://a.example/{}", "x".repeat(3000))),
            None
        );
    }

    #[test]
    fn a_link_s_number_travels_in_the_underline_colour_and_comes_back_as_its_address() {
        set_for_this_thread(true, Path::new("/work"));
        let style = style_for("https://example.com/travel");
        let back = url_of(style.underline_color.unwrap()).unwrap();
        assert_eq!(&*back, "https://example.com/travel");
        assert_eq!(
            style_for("https://example.com/travel"),
            style,
            "one number an address"
        );
        assert_ne!(style_for("https://example.com/other"), style);
        assert_eq!(url_of(Color::Reset), None);
        assert_eq!(url_of(Color::Rgb(0, 0, 0)), None);
        set_for_this_thread(false, Path::new("/work"));
        assert_eq!(style_for("https://example.com/travel"), Style::default());
    }

    #[test]
    fn a_tool_path_links_to_the_file_in_the_session_s_directory() {
        set_for_this_thread(true, Path::new("/work/my project"));
        let url = |path: &str| url_of(style_for_path(path).underline_color.unwrap()).unwrap();
        assert_eq!(
            &*url("src/main.rs"),
            "file:///work/my%20project/src/main.rs"
        );
        assert_eq!(&*url("/etc/hosts"), "file:///etc/hosts");
        assert_eq!(&*url(""), "file:///work/my%20project");
        assert_eq!(&*url("."), "file:///work/my%20project");
    }

    #[test]
    fn bare_addresses_are_found_without_their_trailing_punctuation() {
        fn found(text: &str) -> Vec<&str> {
            bare_urls(text).into_iter().map(|r| &text[r]).collect()
        }
        assert_eq!(
            found("see https://example.com/a."),
            ["https://example.com/a"]
        );
        assert_eq!(
            found("(at https://en.wikipedia.org/wiki/Rust_(language)) and http://x.io/?q=1,"),
            [
                "https://en.wikipedia.org/wiki/Rust_(language)",
                "http://x.io/?q=1"
            ]
        );
        assert_eq!(
            found("\"https://q.example\" <https://a.example>"),
            ["https://q.example", "https://a.example"]
        );
        assert_eq!(
            found("xhttps://no.example and https:// and http"),
            Vec::<&str>::new()
        );
        assert_eq!(
            found("ünïcode https://ü.example/ü"),
            ["https://ü.example/ü"]
        );
    }
}
