//! Copying text to the clipboard (`/copy`, Ctrl+X): an OSC 52 sequence to the
//! terminal, which terminals and tmux (`set-clipboard on`) turn into a
//! clipboard entry even over SSH, plus the desktop's clipboard program when
//! one is installed (`wl-copy`, `xclip`, `xsel`, `pbcopy`). Pasting an image
//! or text from the clipboard (Ctrl+V) reads it through the desktop's
//! program (`wl-paste`, `xclip`, `xsel`, `pngpaste`/`pbpaste`): a terminal
//! cannot hand over an image.

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

/// Copies `text`; returns how (for the status line). Fails only when the
/// terminal cannot be written to.
pub fn copy(text: &str) -> Result<String, String> {
    let encoded = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
    let mut out = std::io::stdout();
    out.write_all(format!("\x1b]52;c;{encoded}\x07").as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| format!("cannot write to the terminal: {e}"))?;
    for (program, args) in PROGRAMS {
        if let Ok(mut child) = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        {
            let written = child
                .stdin
                .take()
                .is_some_and(|mut stdin| stdin.write_all(text.as_bytes()).is_ok());
            // The program forks to keep the selection; its exit status is all we wait for.
            let done = child.wait().is_ok_and(|s| s.success());
            if written && done {
                return Ok(format!("terminal and {program}"));
            }
        }
    }
    Ok("terminal (OSC 52)".into())
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
