//! The prompt editor: a multi-line text buffer with a cursor, word motions,
//! kill commands with a kill ring (yank, yank-pop), undo, jumps to a
//! character, a history of sent prompts, and large pastes shown as markers
//! ([`super::paste_markers`]).

use super::paste_markers::Pastes;
use crate::tui::wrap::char_width;

/// How many prompts the history keeps.
const HISTORY_LIMIT: usize = 500;
/// How many edits can be undone.
const UNDO_LIMIT: usize = 200;
/// How many deleted texts the kill ring keeps.
const KILL_RING_LIMIT: usize = 30;

/// The text and cursor at one moment, for undo.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Snapshot {
    lines: Vec<String>,
    row: usize,
    col: usize,
}

/// What the last change to the text was: a run of typed characters is
/// undone as one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum LastEdit {
    #[default]
    Other,
    Typing,
}

/// Where the last yank put its text, so yank-pop can replace it.
#[derive(Debug, Clone, Copy)]
struct Yanked {
    row: usize,
    start: usize,
    end: usize,
    /// Which kill-ring entry was inserted.
    index: usize,
}

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
    /// Texts the kill commands removed, the newest last (Ctrl+Y puts it
    /// back, Alt+Y cycles to older ones).
    kill_ring: Vec<String>,
    /// The last yank, while nothing else happened since.
    yanked: Option<Yanked>,
    /// Earlier states, the newest last.
    undo: Vec<Snapshot>,
    last_edit: LastEdit,
    /// The large pastes whose markers stand in the text.
    pastes: Pastes,
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
            kill_ring: Vec::new(),
            yanked: None,
            undo: Vec::new(),
            last_edit: LastEdit::Other,
            pastes: Pastes::default(),
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

    /// The text to send: [`Editor::text`] with each paste marker replaced
    /// by its paste.
    pub fn expanded_text(&self) -> String {
        self.pastes.expand(&self.text())
    }

    /// Inserts pasted text at the cursor: a large paste as its marker (one
    /// undo step), a small one as [`Editor::insert_str`] does.
    pub fn paste(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        match self.pastes.collapse(&text) {
            Some(marker) => self.insert_str(&marker),
            None => self.insert_str(&text),
        }
    }

    /// The characters of the paste marker ending at the cursor.
    fn marker_before(&self) -> Option<usize> {
        self.pastes
            .ending(&self.line()[..byte_at(self.line(), self.col)])
    }

    /// The characters of the paste marker starting at the cursor.
    fn marker_after(&self) -> Option<usize> {
        self.pastes
            .starting(&self.line()[byte_at(self.line(), self.col)..])
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

    /// Removes all text (the history stays; undo brings it back).
    pub fn clear(&mut self) {
        self.save(LastEdit::Other);
        self.lines = vec![String::new()];
        self.row = 0;
        self.col = 0;
        self.hist_pos = None;
    }

    /// Replaces the text; the cursor goes to the end.
    pub fn set_text(&mut self, text: &str) {
        self.save(LastEdit::Other);
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

    /// Inserts one character at the cursor (a run of typed characters is
    /// one undo step).
    pub fn insert_char(&mut self, c: char) {
        self.save(if c.is_whitespace() {
            LastEdit::Other
        } else {
            LastEdit::Typing
        });
        self.put_char(c);
    }

    fn put_char(&mut self, c: char) {
        if c == '\n' {
            self.split_line();
            return;
        }
        let at = byte_at(self.line(), self.col);
        self.lines[self.row].insert(at, c);
        self.col += 1;
    }

    /// Inserts text (which may hold newlines) at the cursor.
    pub fn insert_str(&mut self, text: &str) {
        self.save(LastEdit::Other);
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        for c in text.chars() {
            if c == '\t' {
                "    ".chars().for_each(|c| self.put_char(c));
            } else if c == '\n' || !c.is_control() {
                self.put_char(c);
            }
        }
    }

    /// Splits the line at the cursor.
    pub fn newline(&mut self) {
        self.save(LastEdit::Other);
        self.split_line();
    }

    fn split_line(&mut self) {
        let at = byte_at(self.line(), self.col);
        let tail = self.lines[self.row].split_off(at);
        self.lines.insert(self.row + 1, tail);
        self.row += 1;
        self.col = 0;
    }

    /// Deletes the character before the cursor (joining lines at a line
    /// start); a paste marker as one.
    pub fn backspace(&mut self) {
        self.save(LastEdit::Other);
        if let Some(n) = self.marker_before() {
            let (a, b) = (
                byte_at(self.line(), self.col - n),
                byte_at(self.line(), self.col),
            );
            self.lines[self.row].replace_range(a..b, "");
            self.col -= n;
        } else if self.col > 0 {
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

    /// Deletes the character under the cursor (joining lines at a line
    /// end); a paste marker as one.
    pub fn delete(&mut self) {
        self.save(LastEdit::Other);
        if let Some(n) = self.marker_after() {
            let (a, b) = (
                byte_at(self.line(), self.col),
                byte_at(self.line(), self.col + n),
            );
            self.lines[self.row].replace_range(a..b, "");
        } else if self.col < char_len(self.line()) {
            let at = byte_at(self.line(), self.col);
            self.lines[self.row].remove(at);
        } else if self.row + 1 < self.lines.len() {
            let next = self.lines.remove(self.row + 1);
            self.lines[self.row].push_str(&next);
        }
    }

    /// Moves left (to the previous line's end at a line start); over a
    /// paste marker at once.
    pub fn left(&mut self) {
        if let Some(n) = self.marker_before() {
            self.col -= n;
        } else if self.col > 0 {
            self.col -= 1;
        } else if self.row > 0 {
            self.row -= 1;
            self.col = char_len(self.line());
        }
    }

    /// Moves right (to the next line's start at a line end); over a paste
    /// marker at once.
    pub fn right(&mut self) {
        if let Some(n) = self.marker_after() {
            self.col += n;
        } else if self.col < char_len(self.line()) {
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
        self.save(LastEdit::Other);
        if self.col == 0 {
            self.backspace();
            return;
        }
        let start = self.word_start();
        let (a, b) = (byte_at(self.line(), start), byte_at(self.line(), self.col));
        self.kill(a..b);
        self.col = start;
    }

    /// Deletes the word after the cursor (Alt+D); at a line end, joins the next line.
    pub fn delete_word_forward(&mut self) {
        self.save(LastEdit::Other);
        let from = self.col;
        if from >= char_len(self.line()) {
            self.delete();
            return;
        }
        self.word_right();
        let (a, b) = (byte_at(self.line(), from), byte_at(self.line(), self.col));
        self.kill(a..b);
        self.col = from;
    }

    /// Deletes from the line start to the cursor.
    pub fn kill_to_start(&mut self) {
        self.save(LastEdit::Other);
        let b = byte_at(self.line(), self.col);
        self.kill(0..b);
        self.col = 0;
    }

    /// Deletes from the cursor to the line end.
    pub fn kill_to_end(&mut self) {
        self.save(LastEdit::Other);
        let a = byte_at(self.line(), self.col);
        let end = self.line().len();
        self.kill(a..end);
    }

    /// Removes bytes `range` of the current line into the kill ring.
    fn kill(&mut self, range: std::ops::Range<usize>) {
        let text: String = self.lines[self.row].drain(range).collect();
        if !text.is_empty() {
            self.kill_ring.push(text);
            if self.kill_ring.len() > KILL_RING_LIMIT {
                self.kill_ring.remove(0);
            }
        }
    }

    /// Inserts the text the last kill command removed (Ctrl+Y).
    pub fn yank(&mut self) {
        let Some(index) = self.kill_ring.len().checked_sub(1) else {
            return;
        };
        self.save(LastEdit::Other);
        self.put_yank(index);
    }

    /// Right after a yank: replaces the yanked text with the kill-ring entry
    /// before it (Alt+Y), cycling; false when the last edit was no yank.
    pub fn yank_pop(&mut self) -> bool {
        let Some(y) = self.yanked else {
            return false;
        };
        if y.row != self.row || y.end != self.col || self.kill_ring.is_empty() {
            self.yanked = None;
            return false;
        }
        self.save(LastEdit::Other);
        let (a, b) = (byte_at(self.line(), y.start), byte_at(self.line(), y.end));
        self.lines[self.row].replace_range(a..b, "");
        self.col = y.start;
        let older = y.index.checked_sub(1).unwrap_or(self.kill_ring.len() - 1);
        self.put_yank(older);
        true
    }

    /// Inserts kill-ring entry `index` (one line) and remembers where.
    fn put_yank(&mut self, index: usize) {
        let text = self.kill_ring[index].clone();
        let (row, start) = (self.row, self.col);
        text.chars().for_each(|c| self.put_char(c));
        self.yanked = (self.row == row).then_some(Yanked {
            row,
            start,
            end: self.col,
            index,
        });
    }

    /// Moves to the next (`forward`) or previous occurrence of `c`, across
    /// lines; false when there is none.
    pub fn jump_to(&mut self, c: char, forward: bool) -> bool {
        let found = if forward {
            (self.row..self.lines.len()).find_map(|r| {
                let skip = if r == self.row { self.col + 1 } else { 0 };
                self.lines[r]
                    .chars()
                    .enumerate()
                    .skip(skip)
                    .find(|(_, ch)| *ch == c)
                    .map(|(i, _)| (r, i))
            })
        } else {
            (0..=self.row).rev().find_map(|r| {
                let before = if r == self.row { self.col } else { usize::MAX };
                self.lines[r]
                    .chars()
                    .enumerate()
                    .take(before)
                    .filter(|(_, ch)| *ch == c)
                    .last()
                    .map(|(i, _)| (r, i))
            })
        };
        match found {
            Some((row, col)) => {
                self.end_edit_group();
                self.row = row;
                self.col = col;
                true
            }
            None => false,
        }
    }

    // ---- undo ----

    /// Remembers the state before a change. A run of typed characters is one
    /// step; a state equal to the last one saved is not saved twice.
    fn save(&mut self, kind: LastEdit) {
        self.yanked = None;
        let continues = kind == LastEdit::Typing && self.last_edit == LastEdit::Typing;
        self.last_edit = kind;
        if continues {
            return;
        }
        let snap = Snapshot {
            lines: self.lines.clone(),
            row: self.row,
            col: self.col,
        };
        if self.undo.last() != Some(&snap) {
            self.undo.push(snap);
            if self.undo.len() > UNDO_LIMIT {
                self.undo.remove(0);
            }
        }
    }

    /// Ends a run of typing (a cursor move does): the next character typed
    /// starts a new undo step, and yank-pop no longer applies.
    pub fn end_edit_group(&mut self) {
        self.last_edit = LastEdit::Other;
        self.yanked = None;
    }

    /// Puts back the state before the last edit; false when there is none.
    pub fn undo(&mut self) -> bool {
        let current = Snapshot {
            lines: self.lines.clone(),
            row: self.row,
            col: self.col,
        };
        while let Some(snap) = self.undo.pop() {
            if snap != current {
                self.lines = snap.lines;
                self.row = snap.row;
                self.col = snap.col;
                self.end_edit_group();
                return true;
            }
        }
        false
    }

    /// The current line up to the cursor.
    pub fn before_cursor(&self) -> &str {
        let b = byte_at(self.line(), self.col);
        &self.line()[..b]
    }

    /// Replaces characters `start..cursor` of the current line with `text`.
    pub fn replace_before_cursor(&mut self, start: usize, text: &str) {
        self.save(LastEdit::Other);
        let start = start.min(self.col);
        let (a, b) = (byte_at(self.line(), start), byte_at(self.line(), self.col));
        self.lines[self.row].replace_range(a..b, text);
        self.col = start + char_len(text);
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

#[path = "editor_history.rs"]
mod history;

#[cfg(test)]
#[path = "editor_tests.rs"]
mod tests;
