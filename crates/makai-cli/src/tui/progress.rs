//! pi's `terminal.showTerminalProgress`: while a run or a compaction goes,
//! the terminal's tab shows progress (OSC 9;4, indeterminate), cleared when
//! it ends and when the UI exits. Off by default, as in pi.

use std::io::Write;

/// OSC 9;4 state 3: indeterminate progress.
const WORKING: &[u8] = b"\x1b]9;4;3;\x07";
/// OSC 9;4 state 0: no progress.
const CLEAR: &[u8] = b"\x1b]9;4;0;\x07";

/// The progress shown in the terminal's tab.
#[derive(Debug, Default)]
pub struct TerminalProgress {
    enabled: bool,
    shown: bool,
}

impl TerminalProgress {
    /// Progress as the settings say (`terminal.showTerminalProgress`).
    pub fn new(settings: &makai_coding::Settings) -> Self {
        let enabled = settings
            .extra
            .get("terminal")
            .and_then(|t| t.get("showTerminalProgress"))
            .and_then(serde_json::Value::as_bool)
            == Some(true);
        TerminalProgress {
            enabled,
            shown: false,
        }
    }

    /// Shows progress while `working`, clears it after.
    pub fn update(&mut self, working: bool) {
        if self.enabled && working != self.shown {
            self.shown = working;
            write(if working { WORKING } else { CLEAR });
        }
    }

    /// Clears any progress shown (the UI is ending).
    pub fn finish(&mut self) {
        self.update(false);
    }
}

fn write(sequence: &[u8]) {
    let mut out = std::io::stdout();
    // A terminal that cannot be written to has no tab to show it in.
    let _ = out.write_all(sequence).and_then(|()| out.flush());
}
