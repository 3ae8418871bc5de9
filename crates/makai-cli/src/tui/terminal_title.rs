//! pi's terminal title: `makai - <session name> - <folder>`, or
//! `makai - <folder>` for a session without a name, set when the UI starts
//! and again whenever the name changes (`/name`, a title the model wrote, a
//! session switch). The title before is pushed on the terminal's title
//! stack and popped when the UI ends (xterm's `CSI 22 t` / `CSI 23 t`;
//! a terminal without the stack keeps makai's). Control characters in a
//! name never reach the terminal (they could end the title and send
//! sequences of their own).

use std::io::Write;
use std::path::Path;

/// Saves the title on the stack.
const PUSH: &[u8] = b"\x1b[22;0t";
/// Puts the saved title back.
const POP: &[u8] = b"\x1b[23;0t";

/// The title of a session named `name` in `cwd`.
pub fn title_for(name: Option<&str>, cwd: &Path) -> String {
    let folder = cwd
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| cwd.display().to_string());
    let name = name.map(str::trim).filter(|n| !n.is_empty());
    let title = match name {
        Some(name) => format!("makai - {name} - {folder}"),
        None => format!("makai - {folder}"),
    };
    title
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// The OSC that sets the window and tab title to `title` (already clean).
pub fn sequence(title: &str) -> String {
    format!("\x1b]0;{title}\x07")
}

/// The title the terminal shows, as the UI last set it.
pub struct TerminalTitle {
    /// The session name it was made for (`Some(None)`: no name).
    named: Option<Option<String>>,
}

impl TerminalTitle {
    /// Saves the terminal's title; none is set yet.
    pub fn start() -> TerminalTitle {
        write(PUSH);
        TerminalTitle { named: None }
    }

    /// Sets the title of a session named `name` in `cwd`, unless it was
    /// set for that name last (called on every turn of the UI's loop).
    pub fn update(&mut self, name: Option<&str>, cwd: &Path) {
        if self.named.as_ref().is_some_and(|n| n.as_deref() == name) {
            return;
        }
        write(sequence(&title_for(name, cwd)).as_bytes());
        self.named = Some(name.map(str::to_string));
    }
}

impl Drop for TerminalTitle {
    /// Puts back the title the terminal had.
    fn drop(&mut self) {
        write(POP);
    }
}

/// A terminal that cannot be written to shows no title: nothing to report.
fn write(bytes: &[u8]) {
    let mut out = std::io::stdout();
    let _ = out.write_all(bytes).and_then(|()| out.flush());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_title_names_the_session_and_folder_and_carries_no_control() {
        let cwd = Path::new("/home/me/project");
        assert_eq!(title_for(None, cwd), "makai - project");
        assert_eq!(title_for(Some("  "), cwd), "makai - project");
        assert_eq!(
            title_for(Some("Fix auth"), cwd),
            "makai - Fix auth - project"
        );
        assert_eq!(
            sequence(&title_for(Some("evil\x07\x1b]0;pwned\x1b\\"), cwd)),
            "\x1b]0;makai - evil  ]0;pwned \\ - project\x07"
        );
        assert_eq!(title_for(None, Path::new("/")), "makai - /");
    }
}
