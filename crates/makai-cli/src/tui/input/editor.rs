//! The prompt editor: a multi-line text buffer with a cursor, word motions,
//! kill commands and a history of sent prompts.

use crate::tui::wrap::char_width;

/// How many prompts the history keeps.
const HISTORY_LIMIT: usize = 500;

/// A multi-line text buffer with a cursor (row, character column).
#[derive(Debug, Clone)]
pub struct Editor {
    lines: Vec<String>,
    row: usize,
    col: usize,
    history: Vec<String>,
    /// Position in the history while browsing it.
    hist_pos: Option<usize>,
    /// The text being written before browsing started.
    draft: String,
    /// The text the last kill command removed (Ctrl+Y puts it back).
    killed: String,
}

impl Default for Editor {
    fn default() -> Self {
        Editor {
            lines: vec![String::new()],
            row: 0,
            col: 0,
            history: Vec::new(),
            hist_pos: None,
            draft: String::new(),
            killed: String::new(),
        }
    }
}

/// Byte offset of character `col` in `s` (the end when past it).
fn byte_at(s: &str, col: usize) -> usize {
    s.char_indices().nth(col).map_or(s.len(), |(i, _)| i)
}

fn char_len(s: &str) -> usize {
    s.chars().count()
}

impl Editor {
    /// The whole text, lines joined with `\n`.
    pub fn text(&self) -> String {
        self.lines.join("\n")
    }

    /// The lines.
    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    /// The cursor: row and character column.
    pub fn cursor(&self) -> (usize, usize) {
        (self.row, self.col)
    }

    /// True when there is no text.
    pub fn is_empty(&self) -> bool {
        self.lines.len() == 1 && self.lines[0].is_empty()
    }

    /// Removes all text (the history stays).
    pub fn clear(&mut self) {
        self.lines = vec![String::new()];
        self.row = 0;
        self.col = 0;
        self.hist_pos = None;
    }

    /// Replaces the text; the cursor goes to the end.
    pub fn set_text(&mut self, text: &str) {
        self.lines = text.split('\n').map(str::to_string).collect();
        if self.lines.is_empty() {
            self.lines.push(String::new());
        }
        self.row = self.lines.len() - 1;
        self.col = char_len(&self.lines[self.row]);
    }

    fn line(&self) -> &str {
        &self.lines[self.row]
    }

    /// Inserts one character at the cursor.
    pub fn insert_char(&mut self, c: char) {
        if c == '\n' {
            self.newline();
            return;
        }
        let at = byte_at(self.line(), self.col);
        self.lines[self.row].insert(at, c);
        self.col += 1;
    }

    /// Inserts text (which may hold newlines) at the cursor.
    pub fn insert_str(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        for c in text.chars() {
            if c == '\t' {
                self.insert_str_plain("    ");
            } else if c == '\n' || !c.is_control() {
                self.insert_char(c);
            }
        }
    }

    fn insert_str_plain(&mut self, s: &str) {
        for c in s.chars() {
            self.insert_char(c);
        }
    }

    /// Splits the line at the cursor.
    pub fn newline(&mut self) {
        let at = byte_at(self.line(), self.col);
        let tail = self.lines[self.row].split_off(at);
        self.lines.insert(self.row + 1, tail);
        self.row += 1;
        self.col = 0;
    }

    /// Deletes the character before the cursor (joining lines at a line start).
    pub fn backspace(&mut self) {
        if self.col > 0 {
            let at = byte_at(self.line(), self.col - 1);
            self.lines[self.row].remove(at);
            self.col -= 1;
        } else if self.row > 0 {
            let line = self.lines.remove(self.row);
            self.row -= 1;
            self.col = char_len(&self.lines[self.row]);
            self.lines[self.row].push_str(&line);
        }
    }

    /// Deletes the character under the cursor (joining lines at a line end).
    pub fn delete(&mut self) {
        if self.col < char_len(self.line()) {
            let at = byte_at(self.line(), self.col);
            self.lines[self.row].remove(at);
        } else if self.row + 1 < self.lines.len() {
            let next = self.lines.remove(self.row + 1);
            self.lines[self.row].push_str(&next);
        }
    }

    /// Moves left (to the previous line's end at a line start).
    pub fn left(&mut self) {
        if self.col > 0 {
            self.col -= 1;
        } else if self.row > 0 {
            self.row -= 1;
            self.col = char_len(self.line());
        }
    }

    /// Moves right (to the next line's start at a line end).
    pub fn right(&mut self) {
        if self.col < char_len(self.line()) {
            self.col += 1;
        } else if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.col = 0;
        }
    }

    /// Moves up a line; false when already on the first line.
    pub fn up(&mut self) -> bool {
        if self.row == 0 {
            return false;
        }
        self.row -= 1;
        self.col = self.col.min(char_len(self.line()));
        true
    }

    /// Moves down a line; false when already on the last line.
    pub fn down(&mut self) -> bool {
        if self.row + 1 >= self.lines.len() {
            return false;
        }
        self.row += 1;
        self.col = self.col.min(char_len(self.line()));
        true
    }

    /// To the start of the line.
    pub fn home(&mut self) {
        self.col = 0;
    }

    /// To the end of the line.
    pub fn end(&mut self) {
        self.col = char_len(self.line());
    }

    /// The column of the start of the word before the cursor.
    fn word_start(&self) -> usize {
        let chars: Vec<char> = self.line().chars().collect();
        let mut i = self.col.min(chars.len());
        while i > 0 && chars[i - 1].is_whitespace() {
            i -= 1;
        }
        while i > 0 && !chars[i - 1].is_whitespace() {
            i -= 1;
        }
        i
    }

    /// Moves to the start of the previous word.
    pub fn word_left(&mut self) {
        if self.col == 0 {
            self.left();
        } else {
            self.col = self.word_start();
        }
    }

    /// Moves past the end of the next word.
    pub fn word_right(&mut self) {
        let chars: Vec<char> = self.line().chars().collect();
        if self.col >= chars.len() {
            self.right();
            return;
        }
        let mut i = self.col;
        while i < chars.len() && chars[i].is_whitespace() {
            i += 1;
        }
        while i < chars.len() && !chars[i].is_whitespace() {
            i += 1;
        }
        self.col = i;
    }

    /// Deletes the word before the cursor.
    pub fn delete_word_back(&mut self) {
        if self.col == 0 {
            self.backspace();
            return;
        }
        let start = self.word_start();
        let (a, b) = (byte_at(self.line(), start), byte_at(self.line(), self.col));
        self.killed = self.lines[self.row][a..b].to_string();
        self.lines[self.row].replace_range(a..b, "");
        self.col = start;
    }

    /// Deletes the word after the cursor (Alt+D); at a line end, joins the next line.
    pub fn delete_word_forward(&mut self) {
        let from = self.col;
        if from >= char_len(self.line()) {
            self.delete();
            return;
        }
        self.word_right();
        let (a, b) = (byte_at(self.line(), from), byte_at(self.line(), self.col));
        self.killed = self.lines[self.row][a..b].to_string();
        self.lines[self.row].replace_range(a..b, "");
        self.col = from;
    }

    /// Deletes from the line start to the cursor.
    pub fn kill_to_start(&mut self) {
        let b = byte_at(self.line(), self.col);
        self.killed = self.lines[self.row][..b].to_string();
        self.lines[self.row].replace_range(..b, "");
        self.col = 0;
    }

    /// Deletes from the cursor to the line end.
    pub fn kill_to_end(&mut self) {
        let a = byte_at(self.line(), self.col);
        self.killed = self.lines[self.row][a..].to_string();
        self.lines[self.row].truncate(a);
    }

    /// Inserts the text the last kill command removed (Ctrl+Y).
    pub fn yank(&mut self) {
        let text = self.killed.clone();
        self.insert_str(&text);
    }

    /// The current line up to the cursor.
    pub fn before_cursor(&self) -> &str {
        let b = byte_at(self.line(), self.col);
        &self.line()[..b]
    }

    /// Replaces characters `start..cursor` of the current line with `text`.
    pub fn replace_before_cursor(&mut self, start: usize, text: &str) {
        let start = start.min(self.col);
        let (a, b) = (byte_at(self.line(), start), byte_at(self.line(), self.col));
        self.lines[self.row].replace_range(a..b, text);
        self.col = start + char_len(text);
    }

    // ---- history ----

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

    // ---- layout ----

    /// The rows as shown at `width` columns (long lines wrap by character) and
    /// the cursor's row and column among them.
    pub fn layout(&self, width: usize) -> (Vec<String>, (usize, usize)) {
        let width = width.max(2);
        let mut rows = Vec::new();
        let mut cursor = (0, 0);
        for (r, line) in self.lines.iter().enumerate() {
            let mut cur = String::new();
            let mut w = 0;
            for (c_i, c) in line.chars().enumerate() {
                if r == self.row && c_i == self.col {
                    cursor = (rows.len(), w);
                }
                let cw = char_width(c);
                if w + cw > width {
                    rows.push(std::mem::take(&mut cur));
                    w = 0;
                    if r == self.row && c_i == self.col {
                        cursor = (rows.len(), 0);
                    }
                }
                cur.push(c);
                w += cw;
            }
            if r == self.row && self.col >= char_len(line) {
                cursor = if w >= width {
                    (rows.len() + 1, 0)
                } else {
                    (rows.len(), w)
                };
                if w >= width {
                    rows.push(std::mem::take(&mut cur));
                }
            }
            rows.push(cur);
        }
        (rows, cursor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(s: &str) -> Editor {
        let mut e = Editor::default();
        e.insert_str(s);
        e
    }

    #[test]
    fn kills_can_be_yanked_back_and_alt_d_deletes_the_next_word() {
        let mut e = Editor::default();
        e.insert_str("one two three");
        e.home();
        e.delete_word_forward();
        assert_eq!(e.text(), " two three");
        e.end();
        e.delete_word_back();
        assert_eq!(e.text(), " two ");
        e.home();
        e.yank();
        assert_eq!(e.text(), "three two ");
        e.kill_to_end();
        assert_eq!(e.text(), "three");
        e.home();
        e.yank();
        assert_eq!(e.text(), " two three");
    }

    #[test]
    fn edits_across_lines() {
        let mut e = typed("hello wörld");
        e.newline();
        e.insert_str("second");
        assert_eq!(e.text(), "hello wörld\nsecond");
        e.home();
        e.backspace();
        assert_eq!(e.text(), "hello wörldsecond");
        assert_eq!(e.cursor(), (0, 11));
        e.delete_word_back();
        assert_eq!(e.text(), "hello second");
        e.end();
        e.word_left();
        e.kill_to_end();
        assert_eq!(e.text(), "hello ");
        e.insert_str("a\r\nb\tc");
        assert_eq!(e.text(), "hello a\nb    c");
        e.kill_to_start();
        assert_eq!(e.lines(), ["hello a", ""]);
        assert!(e.up());
        assert!(!e.up());
        e.end();
        e.delete();
        assert_eq!(e.text(), "hello a");
    }

    #[test]
    fn history_browses_and_restores_the_draft() {
        let mut e = Editor::default();
        e.push_history("first");
        e.push_history("second");
        e.push_history("second");
        e.insert_str("draft");
        assert!(e.history_prev());
        assert_eq!(e.text(), "second");
        assert!(e.history_prev());
        assert_eq!(e.text(), "first");
        assert!(!e.history_prev());
        assert!(e.history_next());
        assert!(e.history_next());
        assert_eq!(e.text(), "draft");
        assert!(!e.history_next());
    }

    #[test]
    fn layout_wraps_and_places_the_cursor() {
        let mut e = typed("abcdef");
        let (rows, cur) = e.layout(4);
        assert_eq!(rows, ["abcd", "ef"]);
        assert_eq!(cur, (1, 2));
        e.set_text("abcd");
        let (rows, cur) = e.layout(4);
        assert_eq!(rows, ["abcd", ""]);
        assert_eq!(cur, (1, 0));
        e.set_text("ab\ncd");
        e.up();
        e.home();
        e.right();
        assert_eq!(e.layout(10).1, (0, 1));
        e.replace_before_cursor(0, "XY");
        assert_eq!(e.text(), "XYb\ncd");
    }
}
