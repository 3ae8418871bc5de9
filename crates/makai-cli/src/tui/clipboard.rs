//! Copying text to the clipboard (`/copy`, Ctrl+X): an OSC 52 sequence to the
//! terminal, which terminals and tmux (`set-clipboard on`) turn into a
//! clipboard entry even over SSH, plus the desktop's clipboard program when
//! one is installed (`wl-copy`, `xclip`, `xsel`, `pbcopy`).

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
