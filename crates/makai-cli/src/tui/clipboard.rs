//! Copying text to the clipboard (`/copy`, Ctrl+X, a selection) and pasting
//! from it (Ctrl+V).
//!
//! A copy goes to the desktop's clipboard program when one works
//! (`wl-copy`, `xclip`, `xsel`, `pbcopy`), as in pi. Over SSH
//! (`SSH_CONNECTION` or `SSH_TTY` set) that program fills the remote
//! machine's clipboard, not the user's, so the text also goes to the
//! terminal as an OSC 52 sequence, which terminals and tmux (`set-clipboard
//! on`) turn into a clipboard entry on the user's side; pi's
//! `PI_CLIPBOARD_OSC52=1` asks for it where no SSH variable tells (a
//! multiplexer attached from another machine, a remote IDE's daemon). With
//! no program working, OSC 52 is all there is, and the status says that the
//! terminal may ignore it. A copy whose OSC 52 sequence would pass
//! [`OSC52_LIMIT`] is not sent that way (terminals cut or choke on them).
//! Pasting an image or text from the clipboard reads it through the
//! desktop's program (`wl-paste`, `xclip`, `xsel`, `pngpaste`/`pbpaste`): a
//! terminal cannot hand over an image.

use std::io::Write;
use std::process::{Command, Stdio};

use base64::Engine;

/// Programs tried in order, with their arguments.
const PROGRAMS: [(&str, &[&str]); 4] = [
    ("wl-copy", &[]),
    ("xclip", &["-selection", "clipboard"]),
    ("xsel", &["--clipboard", "--input"]),
    ("pbcopy", &[]),
];

/// The longest OSC 52 payload sent (base64 bytes): about 768 KiB of text.
pub const OSC52_LIMIT: usize = 1 << 20;

/// Whether a copy also goes to the terminal as OSC 52 after the program's
/// write: over SSH, or when `PI_CLIPBOARD_OSC52=1` says so.
pub fn osc52_wanted(var: impl Fn(&str) -> Option<String>) -> bool {
    let set = |name: &str| var(name).is_some_and(|v| !v.is_empty());
    set("SSH_CONNECTION") || set("SSH_TTY") || var("PI_CLIPBOARD_OSC52").as_deref() == Some("1")
}

/// The OSC 52 sequence that puts `text` on the clipboard; `None` past
/// [`OSC52_LIMIT`].
fn osc52(text: &str) -> Option<String> {
    if text.len().div_ceil(3) * 4 > OSC52_LIMIT {
        return None;
    }
    let encoded = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
    Some(format!("\x1b]52;c;{encoded}\x07"))
}

/// Gives `text` to the first clipboard program that takes it; its name.
fn copy_with_program(text: &str) -> Option<&'static str> {
    PROGRAMS.into_iter().find_map(|(program, args)| {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let written = child
            .stdin
            .take()
            .is_some_and(|mut stdin| stdin.write_all(text.as_bytes()).is_ok());
        // The program forks to keep the selection; its exit status is all we wait for.
        let done = child.wait().is_ok_and(|s| s.success());
        (written && done).then_some(program)
    })
}

/// Copies `text`; returns how (for the status line), or why it could not
/// be copied.
pub fn copy(text: &str) -> Result<String, String> {
    let program = copy_with_program(text);
    if let Some(program) = program.filter(|_| !osc52_wanted(|name| std::env::var(name).ok())) {
        return Ok(program.to_string());
    }
    let Some(sequence) = osc52(text) else {
        return match program {
            Some(program) => Ok(format!(
                "{program}; too long for the terminal's clipboard (OSC 52)"
            )),
            None => Err(format!(
                "no clipboard program (wl-copy, xclip, xsel, pbcopy) took it, and {} KiB is \
                 too long for the terminal's clipboard (OSC 52)",
                text.len() / 1024
            )),
        };
    };
    let mut out = std::io::stdout();
    let sent = out
        .write_all(sequence.as_bytes())
        .and_then(|()| out.flush());
    match (program, sent) {
        (Some(program), Ok(())) => Ok(format!("{program} and the terminal (OSC 52)")),
        (Some(program), Err(_)) => Ok(program.to_string()),
        (None, Ok(())) => Ok(
            "the terminal only, OSC 52: no wl-copy, xclip, xsel or pbcopy works here".to_string(),
        ),
        (None, Err(e)) => Err(format!(
            "no clipboard program works here and the terminal cannot be written to: {e}"
        )),
    }
}

/// What the clipboard held.
#[derive(Debug, PartialEq, Eq)]
pub enum Pasted {
    /// An image: its bytes and MIME type.
    Image(Vec<u8>, &'static str),
    /// Text.
    Text(String),
}

/// Image types asked for, in order of preference.
const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/webp", "image/gif"];

/// Runs `program args` and returns its output when it succeeds with some.
fn output(program: &str, args: &[&str]) -> Option<Vec<u8>> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    (out.status.success() && !out.stdout.is_empty()).then_some(out.stdout)
}

/// An image on the clipboard, as the desktop's program gives it.
fn paste_image() -> Option<Pasted> {
    let offered = |program: &str, args: &[&str]| -> Vec<String> {
        output(program, args)
            .map(|o| {
                String::from_utf8_lossy(&o)
                    .lines()
                    .map(|l| l.trim().to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    let image = |bytes: Vec<u8>| {
        crate::attachments::image_mime(&bytes).map(|mime| Pasted::Image(bytes, mime))
    };
    let wayland = offered("wl-paste", &["--list-types"]);
    if let Some(t) = IMAGE_TYPES.iter().find(|t| wayland.iter().any(|o| o == *t)) {
        return output("wl-paste", &["--no-newline", "--type", t]).and_then(image);
    }
    let x11 = offered("xclip", &["-selection", "clipboard", "-t", "TARGETS", "-o"]);
    if let Some(t) = IMAGE_TYPES.iter().find(|t| x11.iter().any(|o| o == *t)) {
        return output("xclip", &["-selection", "clipboard", "-t", t, "-o"]).and_then(image);
    }
    output("pngpaste", &["-"]).and_then(image)
}

/// Reads the clipboard (Ctrl+V): an image when it holds one, else its text.
pub fn paste() -> Result<Pasted, String> {
    if let Some(image) = paste_image() {
        return Ok(image);
    }
    let text_programs: [(&str, &[&str]); 4] = [
        ("wl-paste", &["--no-newline"]),
        ("xclip", &["-selection", "clipboard", "-o"]),
        ("xsel", &["--clipboard", "--output"]),
        ("pbpaste", &[]),
    ];
    for (program, args) in text_programs {
        if let Some(bytes) = output(program, args) {
            return String::from_utf8(bytes)
                .map(Pasted::Text)
                .map_err(|_| "the clipboard holds neither an image nor text".to_string());
        }
    }
    Err(
        "nothing to paste: no clipboard program (wl-paste, xclip, xsel, pngpaste) gave anything; \
         a terminal paste (Ctrl+Shift+V) still inserts text"
            .to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::test_vars::vars;

    #[test]
    fn osc_52_goes_along_over_ssh_or_when_pi_s_variable_asks() {
        assert!(!osc52_wanted(vars(&[])));
        assert!(osc52_wanted(vars(&[(
            "SSH_CONNECTION",
            "1.2.3.4 5 6.7.8.9 22"
        )])));
        assert!(osc52_wanted(vars(&[("SSH_TTY", "/dev/pts/1")])));
        assert!(osc52_wanted(vars(&[("PI_CLIPBOARD_OSC52", "1")])));
        assert!(!osc52_wanted(vars(&[("PI_CLIPBOARD_OSC52", "0")])));
        assert!(!osc52_wanted(vars(&[("SSH_TTY", "")])));
    }

    #[test]
    fn the_osc_52_sequence_carries_the_text_in_base64_up_to_its_limit() {
        assert_eq!(osc52("héllo").as_deref(), Some("\x1b]52;c;aMOpbGxv\x07"));
        let most = "a".repeat(OSC52_LIMIT / 4 * 3);
        let sent = osc52(&most).unwrap_or_default();
        assert_eq!(sent.len(), OSC52_LIMIT + "\x1b]52;c;\x07".len());
        assert_eq!(osc52(&format!("{most}a")), None);
    }
}
