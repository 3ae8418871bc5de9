use std::num::NonZeroU16;

use ratatui::style::{Color, Modifier, Style};

use super::*;
use crate::tui::images::{Protocol, test_image};
use crate::tui::screen::emulated::DrawnImages;
use crate::tui::test_rng::{Rng, Shared};

fn nonzero(n: u16) -> NonZeroU16 {
    NonZeroU16::new(n).unwrap()
}

/// A terminal emulator (the `vt100` crate, with scrollback) fed with what
/// a [`ScrollbackScreen`] writes.
struct Term {
    screen: ScrollbackScreen<Shared>,
    output: Shared,
    parser: vt100::Parser<DrawnImages>,
    size: Size,
}

impl Term {
    /// A terminal of `size` whose cursor is on row `cursor_row`, below that
    /// many rows of a shell's output.
    fn new(size: Size, cursor_row: u16, clear_on_shrink: bool) -> Term {
        let output = Shared::default();
        let mut parser = vt100::Parser::new_with_callbacks(
            nonzero(size.height),
            nonzero(size.width),
            10_000,
            DrawnImages::default(),
        );
        for i in 0..cursor_row {
            parser.process(format!("$ shell line {i}\r\n").as_bytes());
        }
        Term {
            screen: ScrollbackScreen::new(output.clone(), cursor_row, clear_on_shrink),
            output,
            parser,
            size,
        }
    }

    fn resize(&mut self, size: Size) {
        self.size = size;
        self.parser
            .screen_mut()
            .set_size(nonzero(size.height), nonzero(size.width));
    }

    fn draw(&mut self, doc: &Document<'_>) -> usize {
        self.screen.draw(self.size, doc).unwrap();
        let bytes = self.output.0.take();
        self.parser.process(&bytes);
        bytes.len()
    }

    /// The scrollback's rows, then the screen's, without the blank rows
    /// after the last written one.
    fn everything(&mut self) -> Vec<String> {
        let width = self.size.width;
        let screen = self.parser.screen_mut();
        screen.set_scrollback(usize::MAX);
        let back = screen.scrollback();
        let mut rows = Vec::new();
        for offset in (1..=back).rev() {
            self.parser.screen_mut().set_scrollback(offset);
            rows.push(self.parser.screen().rows(0, width).next().unwrap());
        }
        self.parser.screen_mut().set_scrollback(0);
        rows.extend(self.parser.screen().rows(0, width));
        while rows.last().is_some_and(String::is_empty) {
            rows.pop();
        }
        rows
    }

    /// The screen's rows.
    fn screen_rows(&self) -> Vec<String> {
        self.parser.screen().rows(0, self.size.width).collect()
    }
}

/// A document of a greeting, items and live rows.
struct Doc {
    greeting: Vec<Line<'static>>,
    items: Vec<(u64, Vec<Line<'static>>)>,
    live: Vec<Line<'static>>,
    view: u64,
    cursor: Option<(usize, u16)>,
    cursor_drawn: bool,
    images: Vec<(usize, Arc<InlineImage>)>,
}

static GAP: [Line<'static>; 1] = [Line {
    style: Style::new(),
    alignment: None,
    spans: Vec::new(),
}];

impl Doc {
    fn new() -> Doc {
        Doc {
            greeting: vec![Line::from("makai greeting"), Line::default()],
            items: Vec::new(),
            live: vec![
                Line::from("status"),
                Line::from("> editor"),
                Line::from("footer"),
            ],
            view: 1,
            cursor: None,
            cursor_drawn: false,
            images: Vec::new(),
        }
    }

    fn document(&self) -> Document<'_> {
        let mut runs = vec![Run {
            part: Part::Greeting,
            stamp: None,
            rows: &self.greeting,
        }];
        for (i, (rev, rows)) in self.items.iter().enumerate() {
            if i > 0 {
                runs.push(Run {
                    part: Part::Gap,
                    stamp: Some(0),
                    rows: &GAP,
                });
            }
            runs.push(Run {
                part: Part::Item(i),
                stamp: Some(*rev),
                rows,
            });
        }
        runs.push(Run {
            part: Part::Live,
            stamp: None,
            rows: &self.live,
        });
        Document {
            runs,
            cursor: self.cursor,
            cursor_drawn: self.cursor_drawn,
            view: self.view,
            images: self.images.clone(),
            tmux: false,
        }
    }

    /// The rows' texts, as a terminal shows them.
    fn texts(&self) -> Vec<String> {
        let doc = self.document();
        let mut rows: Vec<String> = doc
            .rows_from(0)
            .map(|l| l.to_string().trim_end().to_string())
            .collect();
        while rows.last().is_some_and(String::is_empty) {
            rows.pop();
        }
        rows
    }

    /// Adds a row to item `i` (a new revision).
    fn grow(&mut self, i: usize, text: String) {
        let (rev, rows) = &mut self.items[i];
        *rev += 1;
        rows.push(Line::from(text));
    }
}

fn trimmed(rows: Vec<String>) -> Vec<String> {
    rows.into_iter().map(|r| r.trim_end().to_string()).collect()
}

#[test]
fn a_streaming_answer_goes_into_scrollback_once_under_what_the_shell_wrote() {
    let mut term = Term::new(Size::new(40, 10), 3, false);
    let mut doc = Doc::new();
    doc.items.push((0, vec![Line::from("you: hello")]));
    doc.items.push((0, Vec::new()));
    let mut written = Vec::new();
    for i in 0..60 {
        doc.grow(1, format!("answer row {i}"));
        doc.live[0] = Line::from(format!("status ⠋ frame {i}"));
        written.push(term.draw(&doc.document()));
        let mut want: Vec<String> = (0..3).map(|i| format!("$ shell line {i}")).collect();
        want.extend(doc.texts());
        assert_eq!(trimmed(term.everything()), want, "frame {i}");
        // The live rows are on the screen's last rows once it is full.
        if i > 10 {
            assert_eq!(term.screen_rows()[9].trim_end(), "footer", "frame {i}");
        }
    }
    // A frame writes the new row and the live rows, not the conversation.
    let last = *written.last().unwrap();
    assert!(last < 200, "{last} bytes for one new row");
}

#[test]
fn rows_changed_on_screen_are_written_in_place_and_nothing_is_duplicated() {
    let mut term = Term::new(Size::new(30, 12), 0, false);
    let mut doc = Doc::new();
    doc.items
        .push((0, (0..5).map(|i| Line::from(format!("tool {i}"))).collect()));
    doc.items.push((0, vec![Line::from("answer")]));
    term.draw(&doc.document());
    // The first item changes while on screen (a tool's result came).
    doc.items[0].0 += 1;
    doc.items[0].1[2] = Line::from("tool 2 done");
    doc.items[0].1.push(Line::from("tool 5"));
    term.draw(&doc.document());
    assert_eq!(trimmed(term.everything()), doc.texts());
}

#[test]
fn a_change_above_the_screen_writes_everything_again_and_the_scrollback_matches() {
    let mut term = Term::new(Size::new(30, 8), 0, false);
    let mut doc = Doc::new();
    doc.items.push((
        0,
        (0..20).map(|i| Line::from(format!("first {i}"))).collect(),
    ));
    doc.items.push((
        0,
        (0..20).map(|i| Line::from(format!("second {i}"))).collect(),
    ));
    term.draw(&doc.document());
    assert_eq!(trimmed(term.everything()), doc.texts());
    // The first item, long gone into scrollback, changes.
    doc.items[0].0 += 1;
    doc.items[0].1[1] = Line::from("first 1 changed");
    let bytes = term.draw(&doc.document());
    assert!(bytes > 300, "everything written again: {bytes} bytes");
    assert_eq!(trimmed(term.everything()), doc.texts());
}

#[test]
fn the_item_across_the_screen_s_top_rewrites_the_screen_and_keeps_the_scrollback() {
    let mut term = Term::new(Size::new(30, 8), 0, false);
    let mut doc = Doc::new();
    doc.items
        .push((0, (0..20).map(|i| Line::from(format!("row {i}"))).collect()));
    term.draw(&doc.document());
    // The answer on the screen's top changes a row above the screen (a
    // table's columns widened): the screen is written again, the rows in
    // scrollback stay.
    doc.items[0].0 += 1;
    doc.items[0].1[3] = Line::from("row 3 wider");
    doc.items[0].1[18] = Line::from("row 18 wider");
    let bytes = term.draw(&doc.document());
    assert!(bytes < 300, "only the screen written: {bytes} bytes");
    let all = trimmed(term.everything());
    assert_eq!(all.len(), doc.texts().len(), "{all:#?}");
    assert_eq!(all[5], "row 3", "scrollback keeps what it had");
    assert!(all.contains(&"row 18 wider".to_string()), "{all:#?}");
}

/// A terminal after a list opened over the editor and closed again, the
/// document taller than the screen.
fn list_opened_and_closed(clear_on_shrink: bool) -> (Term, Doc) {
    let mut term = Term::new(Size::new(30, 10), 0, clear_on_shrink);
    let mut doc = Doc::new();
    doc.items
        .push((0, (0..12).map(|i| Line::from(format!("row {i}"))).collect()));
    let live = doc.live.clone();
    doc.live = (0..5)
        .map(|i| Line::from(format!("choice {i}")))
        .chain(live.clone())
        .collect();
    term.draw(&doc.document());
    doc.live = live;
    term.draw(&doc.document());
    assert_eq!(trimmed(term.everything()), doc.texts());
    (term, doc)
}

#[test]
fn a_shrinking_document_is_erased_below_and_grows_back_into_the_blank_rows() {
    let (mut term, mut doc) = list_opened_and_closed(false);
    let screen = trimmed(term.screen_rows());
    assert_eq!(screen[9], "", "the freed rows are blank: {screen:#?}");
    doc.grow(0, "row 12".into());
    term.draw(&doc.document());
    assert_eq!(trimmed(term.everything()), doc.texts());
}

#[test]
fn clear_on_shrink_writes_the_document_again_against_the_screen_s_bottom() {
    let (term, _) = list_opened_and_closed(true);
    assert_eq!(term.screen_rows()[9].trim_end(), "footer");
}

#[test]
fn a_new_size_or_view_writes_everything_again() {
    let mut term = Term::new(Size::new(30, 8), 2, false);
    let mut doc = Doc::new();
    doc.items
        .push((0, (0..15).map(|i| Line::from(format!("row {i}"))).collect()));
    term.draw(&doc.document());
    term.resize(Size::new(24, 6));
    term.draw(&doc.document());
    assert_eq!(
        trimmed(term.everything()),
        doc.texts(),
        "the shell's rows go too"
    );
    doc.view = 2;
    doc.items[0].1[0] = Line::from("row 0, another view");
    term.draw(&doc.document());
    assert_eq!(trimmed(term.everything()), doc.texts());
}

#[test]
fn the_cursor_goes_to_the_editor_and_a_frame_without_changes_writes_nothing() {
    let mut term = Term::new(Size::new(30, 8), 0, false);
    let mut doc = Doc::new();
    doc.items
        .push((0, (0..15).map(|i| Line::from(format!("row {i}"))).collect()));
    let editor_row = doc.texts().len() - 2;
    doc.cursor = Some((editor_row, 5));
    term.draw(&doc.document());
    assert_eq!(term.parser.screen().cursor_position(), (6, 5));
    assert!(!term.parser.screen().hide_cursor());
    assert_eq!(term.draw(&doc.document()), 0);
    doc.cursor = Some((editor_row, 7));
    assert!(term.draw(&doc.document()) > 0);
    assert_eq!(term.parser.screen().cursor_position(), (6, 7));
    doc.cursor = None;
    term.draw(&doc.document());
    assert!(term.parser.screen().hide_cursor());
    // A cursor drawn in the rows (pi's default): the terminal's is moved
    // there for input methods and stays hidden.
    doc.cursor = Some((editor_row, 3));
    doc.cursor_drawn = true;
    term.draw(&doc.document());
    assert_eq!(term.parser.screen().cursor_position(), (6, 3));
    assert!(term.parser.screen().hide_cursor());
}

#[test]
fn handing_off_erases_the_live_rows_and_puts_the_shell_after_the_conversation() {
    let mut term = Term::new(Size::new(30, 8), 0, false);
    let mut doc = Doc::new();
    doc.items.push((0, vec![Line::from("answer")]));
    doc.cursor = Some((4, 2));
    term.draw(&doc.document());
    for _ in 0..2 {
        term.screen.hand_off().unwrap();
        term.parser.process(&term.output.0.take());
        assert_eq!(term.parser.screen().cursor_position(), (3, 0));
        assert!(!term.parser.screen().hide_cursor());
        assert_eq!(trimmed(term.everything()), ["makai greeting", "", "answer"]);
    }
    // Back from the shell: everything is written again.
    term.screen.repaint();
    term.draw(&doc.document());
    assert_eq!(trimmed(term.everything()), doc.texts());
}

#[test]
fn styles_wide_characters_and_links_are_written_as_the_full_screen_draws_them() {
    crate::tui::links::set_for_this_thread(true, std::path::Path::new("/"));
    let mut term = Term::new(Size::new(12, 10), 0, false);
    let mut doc = Doc::new();
    doc.greeting = vec![
        Line::from(vec![
            Span::styled("bold", Style::default().add_modifier(Modifier::BOLD)),
            Span::styled("red", Style::default().fg(Color::Red)),
        ]),
        // Cut at the width, the wide character that does not fit left out.
        Line::from("漢字漢字漢字漢"),
        Line::from("a row longer than twelve"),
        Line::from(Span::styled(
            "docs",
            crate::tui::links::style_for("https://example.com/d"),
        )),
    ];
    term.screen.draw(term.size, &doc.document()).unwrap();
    let bytes = String::from_utf8(term.output.0.take()).unwrap();
    assert!(
        bytes.contains("\u{1b}]8;;https://example.com/d\u{1b}\\docs\u{1b}]8;;\u{1b}\\"),
        "{bytes:?}"
    );
    term.parser.process(bytes.as_bytes());
    let all = trimmed(term.everything());
    assert_eq!(
        &all[..4],
        ["boldred", "漢字漢字漢字", "a row longer", "docs"]
    );
    let screen = term.parser.screen();
    let bold = screen.cell(0, 0).unwrap();
    assert!(bold.bold() && bold.fgcolor() == vt100::Color::Default);
    let red = screen.cell(0, 4).unwrap();
    assert!(!red.bold() && red.fgcolor() == vt100::Color::Idx(1));
    assert_eq!(screen.cell(1, 10).unwrap().contents(), "字");
}

/// Random documents, changed at random places (on screen and above it),
/// grown, shrunk, resized: after each frame the terminal's scrollback and
/// screen hold the document's rows, when no change was above the screen
/// (then the screen's rows are the document's last ones).
#[test]
fn random_frames_keep_the_terminal_showing_the_document() {
    let mut rng = Rng(0x7e61_0a11_5c40_11b3);
    let mut term = Term::new(Size::new(36, 9), 4, false);
    let mut doc = Doc::new();
    for frame in 0..400 {
        match rng.below(8) {
            0 if doc.items.len() < 12 => doc.items.push((0, Vec::new())),
            1..=3 if !doc.items.is_empty() => {
                let i = doc.items.len() - 1;
                for _ in 0..rng.below(4) {
                    doc.grow(i, rng.text(&["word ", "漢字 ", "a "], 6));
                }
            }
            4 if !doc.items.is_empty() => {
                let i = rng.index(doc.items.len());
                let (rev, rows) = &mut doc.items[i];
                if !rows.is_empty() {
                    *rev += 1;
                    let r = rng.index(rows.len());
                    rows[r] = Line::from(format!("changed at frame {frame}"));
                }
            }
            5 => {
                let n = rng.below(6) as usize;
                doc.live = (0..n)
                    .map(|i| Line::from(format!("choice {i}")))
                    .chain([
                        Line::from("status"),
                        Line::from("> editor"),
                        Line::from("footer"),
                    ])
                    .collect();
            }
            6 if rng.below(10) == 0 => {
                let sizes = [Size::new(36, 9), Size::new(28, 7), Size::new(40, 12)];
                term.resize(sizes[rng.index(sizes.len())]);
            }
            _ => {
                let status = doc.live.len() - 3;
                doc.live[status] = Line::from(format!("status {frame}"));
            }
        }
        let rows = doc.texts().len();
        doc.cursor = Some((rows - 2, 2));
        term.draw(&doc.document());
        let texts = doc.texts();
        let screen = trimmed(term.screen_rows());
        // The screen shows the document's rows from its top (blank rows
        // after the end).
        let top = term.screen.top;
        for (y, shown) in screen.iter().enumerate() {
            let row = top + y as i64;
            if row < 0 {
                continue;
            }
            let want = texts.get(row as usize).map_or("", String::as_str);
            assert_eq!(shown, want, "frame {frame}, screen row {y}: {screen:#?}");
        }
        assert_eq!(
            term.parser.screen().cursor_position(),
            (((rows - 2) as i64 - top) as u16, 2),
            "frame {frame}"
        );
    }
}

/// iTerm2's images in regular mode: drawn over their blank rows once those
/// are written and on screen (the cursor put back after), not again while
/// the rows stay, again when they are written again; one whose rows went
/// into the scrollback as they were written stays blank.
#[test]
fn an_image_is_drawn_over_its_rows_when_they_are_written_on_screen() {
    let image = test_image(Protocol::Iterm2, 40, 40);
    assert_eq!((image.columns, image.rows), (4, 2));
    let mut term = Term::new(Size::new(30, 12), 0, false);
    let mut doc = Doc::new();
    let mut user = vec![Line::from("you: look")];
    user.extend(image.lines());
    doc.items.push((0, user));
    doc.items.push((0, vec![Line::from("answer")]));
    // The greeting's two rows, then the user's line: the image at row 3.
    doc.images = vec![(3, Arc::clone(&image))];
    let drawn = |term: &mut Term| -> Vec<(u16, u16)> {
        term.parser
            .callbacks_mut()
            .take()
            .into_iter()
            .map(|(at, _)| at)
            .collect()
    };
    term.draw(&doc.document());
    assert_eq!(drawn(&mut term), vec![(0, 3)]);
    assert_eq!(
        trimmed(term.everything()),
        doc.texts(),
        "the rows as written"
    );
    // Rows below it change: it stays.
    doc.grow(1, "more".to_string());
    term.draw(&doc.document());
    assert_eq!(drawn(&mut term), vec![]);
    assert_eq!(trimmed(term.everything()), doc.texts());
    // Its item changes on screen: its rows are written again, and so is it.
    doc.items[0].0 += 1;
    doc.items[0].1[0] = Line::from("you: look again");
    term.draw(&doc.document());
    assert_eq!(drawn(&mut term), vec![(0, 3)]);
    assert_eq!(trimmed(term.everything()), doc.texts());
    // Gone into the scrollback, then everything written again: its rows
    // pass the screen as they are written, so it is not drawn.
    for i in 0..20 {
        doc.grow(1, format!("row {i}"));
    }
    term.draw(&doc.document());
    assert_eq!(drawn(&mut term), vec![]);
    doc.items[0].0 += 1;
    doc.items[0].1[0] = Line::from("you: changed in the scrollback");
    term.draw(&doc.document());
    assert!(term.screen.take_rewritten(), "everything written again");
    assert_eq!(drawn(&mut term), vec![]);
    assert_eq!(trimmed(term.everything()), doc.texts());
}
