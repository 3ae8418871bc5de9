//! Finding text in the conversation, as pi's fullscreen transcript search
//! does (`tui.altScreen.search`, Ctrl+Shift+F): the rows as drawn are
//! searched, ignoring case, with every run of white space, a row's end
//! included, read as one space, so a phrase wrapped over two rows is found.
//! Every match is underlined and the selected one shown reversed and bold;
//! Enter (Ctrl+G) selects the next, Shift+Enter (Ctrl+Shift+G) the previous,
//! Esc closes. A selected match off screen is brought to a third of the way
//! down the conversation.
//!
//! The matches are found again only when the query, the conversation's rows
//! or what is selected changes, and never more than [`MAX_MATCHES`]: one pass
//! over the rows, keeping no copy of their text.

use ratatui::buffer::CellWidth;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_segmentation::UnicodeSegmentation;

/// Matches kept at most (pi's limit).
pub const MAX_MATCHES: usize = 20_000;

/// Part of a match on one row: cells `start..end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// The conversation row.
    pub row: usize,
    /// First cell.
    pub start: usize,
    /// One past the last cell.
    pub end: usize,
}

/// One match: its segments, top to bottom (more than one when the text
/// runs over a row's end).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Match {
    /// The segments.
    pub segments: Vec<Segment>,
}

impl Match {
    fn first(&self) -> Segment {
        self.segments[0]
    }

    fn last(&self) -> Segment {
        self.segments[self.segments.len() - 1]
    }
}

/// Which match to select when the matches are next found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pick {
    /// The query changed: the first match at or below the anchor row.
    Query,
    /// Keep the selected one.
    Retain,
    /// The one after the selected one (wrapping).
    Next,
    /// The one before it (wrapping).
    Previous,
}

/// An open search.
#[derive(Debug)]
pub struct Search {
    query: String,
    matches: Vec<Match>,
    selected: Option<usize>,
    /// Where the query's first match is looked for from.
    anchor_row: usize,
    pick: Pick,
    /// The query and conversation the matches were found in.
    found_in: Option<(String, u64)>,
    /// The conversation's blocks at the last scan ([`Block`]).
    blocks: Vec<Block>,
    /// The scan's state every [`CHECKPOINT_ROWS`] rows of the last scan: a
    /// conversation whose first rows did not change is scanned again from
    /// the last of them before the first change (an answer streaming with
    /// the search open re-reads only its own rows).
    checkpoints: Vec<Checkpoint>,
}

/// One block of the conversation's rows as the renderer lays them out (the
/// greeting, an item with the blank row before it): a key that changes
/// whenever its rows do, and its first row.
pub type Block = (u64, usize);

/// How often the scan keeps its state.
const CHECKPOINT_ROWS: usize = 64;

/// The scan's state before a row.
#[derive(Clone, Debug)]
struct Checkpoint {
    row: usize,
    state: ScanState,
    /// Matches found before the row.
    found: usize,
}

impl Search {
    /// A search with an empty query, its first match to be looked for from
    /// row `top` (the first row shown).
    pub fn open(top: usize) -> Search {
        Search {
            query: String::new(),
            matches: Vec::new(),
            selected: None,
            anchor_row: top,
            pick: Pick::Query,
            found_in: None,
            blocks: Vec::new(),
            checkpoints: Vec::new(),
        }
    }

    /// The query as typed.
    pub fn query(&self) -> &str {
        &self.query
    }

    /// Replaces the query; its first match is looked for from the selected
    /// match, else from row `top`.
    pub fn set_query(&mut self, query: String, top: usize) {
        if query == self.query {
            return;
        }
        self.anchor_row = self
            .selected
            .and_then(|i| self.matches.get(i))
            .map_or(top, |m| m.first().row);
        self.query = query;
        self.pick = Pick::Query;
    }

    /// Selects the next match (after the matches are found again).
    pub fn next(&mut self) {
        if !self.query.trim().is_empty() {
            self.pick = Pick::Next;
        }
    }

    /// Selects the previous match.
    pub fn previous(&mut self) {
        if !self.query.trim().is_empty() {
            self.pick = Pick::Previous;
        }
    }

    /// "3/12", "No matches", or nothing for an empty query.
    pub fn status(&self) -> String {
        if self.query.trim().is_empty() {
            String::new()
        } else if self.matches.is_empty() {
            "No matches".into()
        } else {
            let at = self.selected.map_or(0, |i| i + 1);
            let more = if self.matches.len() >= MAX_MATCHES {
                "+"
            } else {
                ""
            };
            format!("{at}/{}{more}", self.matches.len())
        }
    }

    /// Finds the matches in `rows` (the conversation's rows, in runs) when
    /// the query or the conversation (`content`, a stamp of it) changed or a
    /// match is to be selected; returns the selected match's first and last
    /// row when it is to be brought into view.
    pub fn refresh<'a>(
        &mut self,
        rows: impl Iterator<Item = &'a Line<'a>>,
        content: u64,
        blocks: &[Block],
    ) -> Option<(usize, usize)> {
        let found_in = (self.query.clone(), content);
        if self.pick == Pick::Retain && self.found_in.as_ref() == Some(&found_in) {
            return None;
        }
        let selected_key = self
            .selected
            .and_then(|i| self.matches.get(i))
            .map(|m| (m.first(), m.last()));
        let same_query = self
            .found_in
            .as_ref()
            .is_some_and(|(q, _)| *q == self.query);
        let resume = if same_query {
            let unchanged = unchanged_rows(&self.blocks, blocks);
            self.checkpoints.retain(|c| c.row <= unchanged);
            self.checkpoints.pop()
        } else {
            self.checkpoints.clear();
            None
        };
        let mut matches = std::mem::take(&mut self.matches);
        match &resume {
            Some(c) => matches.truncate(c.found),
            None => matches.clear(),
        }
        let from = resume.as_ref().map_or(0, |c| c.row);
        self.matches = find(
            rows.skip(from),
            &normalize(&self.query),
            resume,
            matches,
            &mut self.checkpoints,
        );
        self.blocks = blocks.to_vec();
        self.found_in = Some(found_in);
        let pick = std::mem::replace(&mut self.pick, Pick::Retain);
        let n = self.matches.len();
        if n == 0 {
            self.selected = None;
            return None;
        }
        let same = selected_key.and_then(|key| {
            self.matches
                .iter()
                .position(|m| (m.first(), m.last()) == key)
        });
        let base = same.or(self.selected.map(|i| i.min(n - 1)));
        self.selected = Some(match pick {
            Pick::Query => self
                .matches
                .iter()
                .position(|m| m.first().row >= self.anchor_row)
                .unwrap_or(0),
            Pick::Next => base.map_or(0, |i| (i + 1) % n),
            Pick::Previous => base.map_or(n - 1, |i| (i + n - 1) % n),
            Pick::Retain => base.unwrap_or(0),
        });
        let m = &self.matches[self.selected.unwrap_or(0)];
        (pick != Pick::Retain).then(|| (m.first().row, m.last().row))
    }

    /// The highlighted cells of row `row`: (first cell, end, selected).
    pub fn highlights(&self, row: usize) -> Vec<(usize, usize, bool)> {
        // Matches are in row order: the first that may reach this row.
        let from = self.matches.partition_point(|m| m.last().row < row);
        let mut out = Vec::new();
        for (i, m) in self.matches.iter().enumerate().skip(from) {
            if m.first().row > row {
                break;
            }
            let current = self.selected == Some(i);
            out.extend(
                m.segments
                    .iter()
                    .filter(|s| s.row == row)
                    .map(|s| (s.start, s.end, current)),
            );
        }
        out
    }
}

/// The query as matched: white space runs as one space, trimmed, lower case.
fn normalize(query: &str) -> Vec<char> {
    let words: Vec<&str> = query.split_whitespace().collect();
    words
        .join(" ")
        .chars()
        .flat_map(char::to_lowercase)
        .collect()
}

/// The first row at which `now` may differ from `before`: the first row of
/// the first block whose key changed (or that is new); everything when a
/// block was removed.
fn unchanged_rows(before: &[Block], now: &[Block]) -> usize {
    // No blocks: nothing is known to be unchanged.
    if now.is_empty() || now.len() < before.len() {
        return 0;
    }
    match before.iter().zip(now).position(|(b, n)| b != n) {
        Some(i) => now[i].1,
        None => now.get(before.len()).map_or(usize::MAX, |b| b.1),
    }
}

/// Every match of `pattern` (normalized) in `rows`: the rows read as one
/// text, lower case, each run of white space (and each row's end) one space.
/// A Knuth-Morris-Pratt scan that remembers where the last `pattern.len()`
/// characters came from, so no text is copied. With `resume`, `rows` start
/// at its row and the scan goes on from its state, `found` holding the
/// matches before it; the scan's state is kept in `checkpoints` every
/// [`CHECKPOINT_ROWS`] rows.
fn find<'a>(
    rows: impl Iterator<Item = &'a Line<'a>>,
    pattern: &[char],
    resume: Option<Checkpoint>,
    found: Vec<Match>,
    checkpoints: &mut Vec<Checkpoint>,
) -> Vec<Match> {
    if pattern.is_empty() {
        checkpoints.clear();
        return Vec::new();
    }
    let first = resume.as_ref().map_or(0, |c| c.row);
    let mut scan = Scanner {
        pattern,
        table: prefix_table(pattern),
        state: resume.map_or_else(|| ScanState::new(pattern.len()), |c| c.state),
        matches: found,
    };
    for (row, line) in (first..).zip(rows) {
        if row % CHECKPOINT_ROWS == 0 && checkpoints.last().is_none_or(|c| c.row < row) {
            checkpoints.push(Checkpoint {
                row,
                state: scan.state.clone(),
                found: scan.matches.len(),
            });
        }
        // The cells a row shows: those `rows::draw` writes (no control
        // characters, no zero-width ones), ASCII a byte a cell.
        let mut x = 0usize;
        for span in &line.spans {
            let text = span.content.as_ref();
            let more = if text.is_ascii() {
                text.bytes().filter(|b| !b.is_ascii_control()).all(|b| {
                    let cell = Segment {
                        row,
                        start: x,
                        end: x + 1,
                    };
                    x += 1;
                    let lower = char::from(b.to_ascii_lowercase());
                    scan.cell(cell, b == b' ', std::iter::once(lower))
                })
            } else {
                text.graphemes(true).all(|g| {
                    let width = usize::from(g.cell_width());
                    if width == 0 || g.contains(char::is_control) {
                        return true;
                    }
                    let cell = Segment {
                        row,
                        start: x,
                        end: x + width,
                    };
                    x += width;
                    let blank = g.chars().all(char::is_whitespace);
                    scan.cell(cell, blank, g.chars().flat_map(char::to_lowercase))
                })
            };
            if !more {
                return scan.matches;
            }
        }
        scan.state.pending_space |= scan.state.any_text;
    }
    scan.matches
}

/// [`find`]'s scan: the pattern, and where the scan is.
struct Scanner<'p> {
    pattern: &'p [char],
    table: Vec<usize>,
    state: ScanState,
    matches: Vec<Match>,
}

/// Where [`find`]'s scan is (kept at checkpoints to go on from).
#[derive(Clone, Debug)]
struct ScanState {
    /// Where each of the last `pattern.len()` characters came from (none: a
    /// space standing for white space).
    sources: Vec<Option<Segment>>,
    /// Characters of the pattern matched so far.
    matched: usize,
    /// Characters read so far.
    position: usize,
    /// Text was read (white space before any is not a space).
    any_text: bool,
    /// White space was read since the last text: one space goes first.
    pending_space: bool,
}

impl ScanState {
    fn new(pattern_len: usize) -> ScanState {
        ScanState {
            sources: vec![None; pattern_len],
            matched: 0,
            position: 0,
            any_text: false,
            pending_space: false,
        }
    }
}

impl Scanner<'_> {
    /// Reads one cell: white space (`blank`), or text that reads as `chars`
    /// (lower case). False once [`MAX_MATCHES`] are found.
    fn cell(&mut self, cell: Segment, blank: bool, chars: impl Iterator<Item = char>) -> bool {
        if blank {
            self.state.pending_space |= self.state.any_text;
            return true;
        }
        if std::mem::take(&mut self.state.pending_space) && !self.read(' ', None) {
            return false;
        }
        self.state.any_text = true;
        for c in chars {
            if !self.read(c, Some(cell)) {
                return false;
            }
        }
        true
    }

    /// Reads one character (from `source`); false once the limit is reached.
    fn read(&mut self, c: char, source: Option<Segment>) -> bool {
        let len = self.pattern.len();
        self.state.sources[self.state.position % len] = source;
        self.state.position += 1;
        while self.state.matched > 0 && c != self.pattern[self.state.matched] {
            self.state.matched = self.table[self.state.matched - 1];
        }
        if c == self.pattern[self.state.matched] {
            self.state.matched += 1;
        }
        if self.state.matched < len {
            return true;
        }
        let mut segments: Vec<Segment> = Vec::with_capacity(1);
        for p in self.state.position - len..self.state.position {
            let Some(s) = self.state.sources[p % len] else {
                continue;
            };
            match segments.last_mut() {
                // On one row, only white space lies between two parts of a
                // match: it is highlighted with them.
                Some(last) if last.row == s.row => last.end = last.end.max(s.end),
                _ => segments.push(s),
            }
        }
        if !segments.is_empty() {
            self.matches.push(Match { segments });
        }
        self.state.matched = 0;
        self.matches.len() < MAX_MATCHES
    }
}

/// The longest proper prefix of `pattern[..=i]` that is also its suffix, for each `i`.
fn prefix_table(pattern: &[char]) -> Vec<usize> {
    let mut table = vec![0; pattern.len()];
    let mut prefix = 0;
    for i in 1..pattern.len() {
        while prefix > 0 && pattern[i] != pattern[prefix] {
            prefix = table[prefix - 1];
        }
        if pattern[i] == pattern[prefix] {
            prefix += 1;
        }
        table[i] = prefix;
    }
    table
}

/// The style of a match: the theme's match colours over the text's own
/// style, underlined; the selected one reversed and bold
/// ([`super::theme::search_match`]).
fn match_style(style: Style, selected: bool) -> Style {
    style.patch(super::theme::search_match(selected))
}

/// `line` with the cells of `highlights` (from [`Search::highlights`])
/// styled as matches.
pub fn highlight(line: &Line<'_>, highlights: &[(usize, usize, bool)]) -> Line<'static> {
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut x = 0usize;
    for span in &line.spans {
        let mut piece = String::new();
        let mut piece_style: Option<Style> = None;
        for g in span.content.graphemes(true) {
            let width = if g.contains(char::is_control) {
                0
            } else {
                usize::from(g.cell_width())
            };
            let hit = (width > 0)
                .then(|| {
                    highlights
                        .iter()
                        .find(|(start, end, _)| (*start..*end).contains(&x))
                })
                .flatten();
            let style = match hit {
                Some((_, _, selected)) => match_style(span.style, *selected),
                None => span.style,
            };
            if piece_style.is_some_and(|s| s != style) {
                spans.push(Span::styled(
                    std::mem::take(&mut piece),
                    piece_style.unwrap_or(style),
                ));
            }
            piece_style = Some(style);
            piece.push_str(g);
            x += width;
        }
        if let Some(style) = piece_style {
            spans.push(Span::styled(piece, style));
        }
    }
    Line {
        spans,
        style: line.style,
        alignment: line.alignment,
    }
}

#[cfg(test)]
#[path = "search_tests.rs"]
mod tests;
