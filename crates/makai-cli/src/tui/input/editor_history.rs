//! The editor's history of sent prompts: recorded, browsed with Up and
//! Down, the text being written kept as the draft.

use super::{Editor, HISTORY_LIMIT};

impl Editor {
    /// Records a sent prompt (not twice in a row).
    pub fn push_history(&mut self, text: &str) {
        if text.trim().is_empty() || self.history.last().is_some_and(|l| l == text) {
            return;
        }
        self.history.push(text.to_string());
        if self.history.len() > HISTORY_LIMIT {
            self.history.remove(0);
        }
    }

    /// True while browsing the history.
    pub fn browsing_history(&self) -> bool {
        self.hist_pos.is_some()
    }

    /// Shows the previous prompt; false when there is none.
    pub fn history_prev(&mut self) -> bool {
        let pos = match self.hist_pos {
            None if self.history.is_empty() => return false,
            None => {
                self.draft = self.text();
                self.history.len() - 1
            }
            Some(0) => return false,
            Some(p) => p - 1,
        };
        self.hist_pos = Some(pos);
        let text = self.history[pos].clone();
        self.set_text(&text);
        true
    }

    /// Shows the next prompt, or the draft after the newest; false when not browsing.
    pub fn history_next(&mut self) -> bool {
        let Some(pos) = self.hist_pos else {
            return false;
        };
        if pos + 1 < self.history.len() {
            self.hist_pos = Some(pos + 1);
            let text = self.history[pos + 1].clone();
            self.set_text(&text);
        } else {
            self.hist_pos = None;
            let draft = std::mem::take(&mut self.draft);
            self.set_text(&draft);
        }
        true
    }

    /// Leaves history browsing (the shown text becomes the draft).
    pub fn stop_browsing(&mut self) {
        self.hist_pos = None;
    }
}
