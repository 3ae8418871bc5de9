//! Tests of [`super::Screen`]: frames played through a terminal emulator.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::emulated::Emulated;
use super::*;
use crate::tui::test_rng::Rng;

fn random_color(rng: &mut Rng) -> Color {
    match rng.below(4) {
        0 | 1 => Color::Reset,
        2 => Color::Indexed(rng.below(256) as u8),
        _ => Color::Rgb(rng.below(256) as u8, 40, rng.below(256) as u8),
    }
}

/// A line of narrow words (some of several code points) in every style.
fn styled_line(rng: &mut Rng, width: u16) -> Line<'static> {
    let words = ["word", "a", "e\u{301}", "──", "x", "code()", "│ ", "  "];
    let mut spans = Vec::new();
    for _ in 0..rng.below(u64::from(width) / 3 + 1) {
        let mut style = Style::default().fg(random_color(rng));
        if rng.below(4) == 0 {
            style = style.bg(random_color(rng));
        }
        // One of bold and dim at most: the emulator keeps one intensity.
        style = style.add_modifier(match rng.below(8) {
            0 => Modifier::BOLD,
            1 => Modifier::DIM,
            _ => Modifier::empty(),
        });
        for m in [Modifier::ITALIC, Modifier::UNDERLINED, Modifier::REVERSED] {
            if rng.below(6) == 0 {
                style = style.add_modifier(m);
            }
        }
        let word = words[rng.index(words.len())];
        spans.push(Span::styled(format!("{word} "), style));
    }
    Line::from(spans)
}

/// A line of wide and narrow characters, unstyled, starting at an odd or
/// an even column. (How a terminal erases the half of a wide character
/// that a narrow one overwrote differs between terminals and is ratatui's
/// business: unstyled, every way looks the same.)
fn wide_line(rng: &mut Rng, width: u16) -> Line<'static> {
    let words = ["漢字", "🎉", "x", "ab", " "];
    let mut text = " ".repeat(rng.index(2));
    for _ in 0..rng.below(u64::from(width) / 2 + 1) {
        text.push_str(words[rng.index(words.len())]);
    }
    Line::from(text)
}

/// Scrolls a conversation through `document` under a status line, as the
/// UI draws it: its rows moved by one to a few rows a frame, now and then
/// back up or by a page, with the move claimed rightly, wrongly or not at
/// all, a popup over it now and then, a word under a row's line or
/// straight into the buffer over it, in three sizes (the terminal
/// resized twice). After every frame the emulated terminal must show the
/// frame: rows known by their line are skipped only when nothing else
/// was drawn into them.
fn scroll_through(rng: &mut Rng, document: &[Line<'static>]) {
    let sizes = [Size::new(50, 16), Size::new(31, 9), Size::new(80, 24)];
    let mut term = Emulated::new(sizes[0]);
    let mut top = 0usize;
    for frame in 0..450 {
        let size = sizes[frame / 150];
        let conversation = size.height - 2;
        let step: i64 = match rng.below(10) {
            0 => -(rng.below(4) as i64),
            1 => i64::from(conversation) + rng.below(3) as i64,
            2 => 0,
            _ => 1 + rng.below(3) as i64,
        };
        let last_top = top;
        top = (top as i64 + step).clamp(0, (document.len() - usize::from(conversation)) as i64)
            as usize;
        let moved = top as i64 - last_top as i64;
        let claim = match rng.below(8) {
            0 => None,
            1 => Some(moved + 1 + rng.below(3) as i64),
            _ => Some(moved),
        };
        let popup = rng.below(7) == 0;
        // Something drawn into a conversation row before its line, and
        // now and then straight into the buffer.
        let under = (rng.below(5) == 0).then(|| rng.below(u64::from(conversation)) as u16);
        let raw = rng.below(15) == 0;
        let status = Line::from(format!("frame {frame}, row {top}"))
            .style(Style::default().add_modifier(Modifier::BOLD));
        // The UI claims before it draws the rows; claims after them
        // must work as well.
        let claim_first = rng.below(3) > 0;
        term.draw(size, |f| {
            let area = f.area();
            if claim_first && let Some(by) = claim {
                f.scrolled(0..conversation, by as i32);
            }
            if let Some(y) = under {
                f.render_widget(Paragraph::new("under"), Rect::new(3, y, 5, 1));
            }
            f.draw_lines(Rect::new(0, 0, area.width, conversation), &document[top..]);
            f.draw_lines(Rect::new(0, conversation, area.width, 1), [&status]);
            if raw {
                f.buffer_mut().set_string(1, 0, "raw", Style::default());
            }
            if popup {
                let over = Rect::new(0, 1, area.width, 3);
                f.render_widget(ratatui::widgets::Clear, over);
                f.render_widget(Paragraph::new("a popup ──"), over);
            }
            if !claim_first && let Some(by) = claim {
                f.scrolled(0..conversation, by as i32);
            }
            f.set_cursor_position((1, size.height - 1));
        });
        term.assert_shows_the_frame(&format!("frame {frame}, moved {moved}, claimed {claim:?}"));
    }
}

#[test]
fn styled_rows_show_on_the_terminal_whether_the_scroll_claim_is_right_wrong_or_absent() {
    let mut rng = Rng(0x51ab_1e5c_2011_0001);
    let document: Vec<_> = (0..600).map(|_| styled_line(&mut rng, 50)).collect();
    scroll_through(&mut rng, &document);
}

#[test]
fn wide_characters_show_on_the_terminal_whether_the_scroll_claim_is_right_wrong_or_absent() {
    let mut rng = Rng(0x3c6e_f372_fe94_f82b);
    let document: Vec<_> = (0..600)
        .map(|_| {
            if rng.below(2) == 0 {
                wide_line(&mut rng, 50)
            } else {
                Line::from(rng.text(&["word ", "a ", "e\u{301} ", "── "], 20))
            }
        })
        .collect();
    scroll_through(&mut rng, &document);
}

/// pi's drawn cursor: the cell under it in reverse video, the terminal's
/// cursor hidden but moved there; the cell it leaves is drawn plain
/// again although its row's line did not change.
#[test]
fn a_drawn_cursor_reverses_its_cell_and_hides_the_terminal_s_cursor() {
    let size = Size::new(20, 3);
    let mut term = Emulated::new(size);
    let line = Line::from("hello world");
    for (col, drawn) in [(0, true), (4, true), (11, true), (5, false), (2, true)] {
        term.draw(size, |f| {
            f.draw_lines(Rect::new(0, 1, 20, 1), [&line]);
            f.set_cursor_position((col, 1));
            if drawn {
                f.draw_cursor();
            }
        });
        term.assert_shows_the_frame(&format!("cursor at {col}, drawn {drawn}"));
        assert_eq!(term.cursor(), ((col, 1), !drawn), "cursor at {col}");
        let reversed: Vec<u16> = (0..20)
            .filter(|x| term.shown()[(*x, 1)].modifier.contains(Modifier::REVERSED))
            .collect();
        assert_eq!(reversed, if drawn { vec![col] } else { vec![] });
    }
    // No cursor placed: nothing is drawn.
    term.draw(size, |f| {
        f.draw_lines(Rect::new(0, 1, 20, 1), [&line]);
        f.draw_cursor();
    });
    term.assert_shows_the_frame("no cursor");
    assert!(!term.cursor().1);
}

/// The bytes of the second of two frames whose conversation moved up a
/// row, with and without the claim.
fn second_frame_bytes(claim: bool) -> usize {
    let size = Size::new(120, 40);
    let mut rng = Rng(99);
    let document: Vec<Line<'static>> = (0..60).map(|_| styled_line(&mut rng, 120)).collect();
    let mut term = Emulated::new(size);
    for top in 0..2 {
        term.draw(size, |f| {
            f.draw_lines(Rect::new(0, 0, 120, 38), &document[top..]);
            if claim && top > 0 {
                f.scrolled(0..38, 1);
            }
        });
        term.assert_shows_the_frame(&format!("top {top}"));
    }
    term.last_bytes
}

/// The point of the claim: the terminal moves the rows, and only the row
/// that came in is written.
#[test]
fn a_claimed_scroll_writes_the_new_row_instead_of_the_whole_conversation() {
    let with = second_frame_bytes(true);
    let without = second_frame_bytes(false);
    assert!(
        with * 10 < without,
        "{with} bytes with the claim, {without} without"
    );
}

/// An image for iTerm2's protocol, 4 x 2 cells.
fn iterm2_image() -> std::sync::Arc<crate::tui::images::InlineImage> {
    let image = crate::tui::images::test_image(crate::tui::images::Protocol::Iterm2, 40, 40);
    assert_eq!((image.columns, image.rows), (4, 2));
    image
}

/// A conversation of 10 rows in a 30 x 12 screen: `document` from row
/// `top`, the image at its row `image_row`, the scroll from the last frame
/// claimed when `claim` says by how much, a popup over rows 2 to 4 when
/// `popup`.
struct Placing {
    term: Emulated,
    document: Vec<Line<'static>>,
    image: std::sync::Arc<crate::tui::images::InlineImage>,
}

impl Placing {
    fn new(image_row: usize) -> Placing {
        let image = iterm2_image();
        let mut document: Vec<Line<'static>> =
            (0..40).map(|i| Line::from(format!("row {i}"))).collect();
        let blank = image.lines();
        document.splice(image_row..image_row + 2, blank);
        Placing {
            term: Emulated::new(Size::new(30, 12)),
            document,
            image,
        }
    }

    fn frame(&mut self, top: usize, image_row: usize, claim: Option<i32>, popup: bool) {
        let size = Size::new(30, 12);
        let area = Rect::new(0, 0, 30, 10);
        let (document, image) = (&self.document, &self.image);
        self.term.draw(size, |f| {
            if let Some(by) = claim {
                f.scrolled(0..10, by);
            }
            f.draw_lines(area, &document[top..]);
            f.place_image(Placement {
                image: std::sync::Arc::clone(image),
                x: 0,
                y: image_row as i32 - top as i32,
                clip: area,
                tmux: false,
            });
            if popup {
                let over = Rect::new(1, 2, 20, 3);
                f.render_widget(ratatui::widgets::Clear, over);
                f.render_widget(
                    Paragraph::new("a popup").block(ratatui::widgets::Block::bordered()),
                    over,
                );
            }
            f.draw_lines(Rect::new(0, 10, 30, 1), [&Line::from("status")]);
        });
        self.term
            .assert_shows_the_frame(&format!("top {top}, claim {claim:?}, popup {popup}"));
    }

    /// Where the images of the last frames were drawn.
    fn drawn(&mut self) -> Vec<(u16, u16)> {
        self.term
            .images_drawn()
            .into_iter()
            .map(|(at, _)| at)
            .collect()
    }
}

#[test]
fn an_image_over_cells_is_drawn_once_where_it_shows_and_moves_with_a_claimed_scroll() {
    let mut t = Placing::new(5);
    t.frame(0, 5, None, false);
    let drawn = t.term.images_drawn();
    assert_eq!(drawn.len(), 1);
    assert_eq!(drawn[0].0, (0, 5));
    assert!(
        drawn[0].1.starts_with("File=inline=1;size=")
            && drawn[0]
                .1
                .contains(";width=4;height=2;preserveAspectRatio=1:"),
        "{}",
        drawn[0].1
    );
    // The same frame again: the terminal shows it already.
    t.frame(0, 5, None, false);
    assert_eq!(t.drawn(), vec![]);
    // Scrolled up two rows, the move claimed: the terminal moved it.
    t.frame(2, 5, Some(2), false);
    assert_eq!(t.drawn(), vec![]);
    // Moved without a claim: torn down and drawn at its new place.
    t.frame(4, 5, None, false);
    assert_eq!(t.drawn(), vec![(0, 1)]);
    // A resize clears the screen: drawn again.
    t.term.draw(Size::new(31, 12), |_| {});
    t.frame(4, 5, None, false);
    assert_eq!(t.drawn(), vec![(0, 1)]);
}

#[test]
fn an_image_under_a_popup_or_cut_by_the_edge_waits_until_it_shows_whole_on_blank_cells() {
    let mut t = Placing::new(5);
    // Under a popup: not drawn; drawn when the popup goes.
    t.frame(2, 5, None, true);
    assert_eq!(t.drawn(), vec![]);
    t.frame(2, 5, None, false);
    assert_eq!(t.drawn(), vec![(0, 3)]);
    // A popup over it: torn down; drawn again when the popup goes.
    t.frame(2, 5, None, true);
    assert_eq!(t.drawn(), vec![]);
    t.frame(2, 5, None, false);
    assert_eq!(t.drawn(), vec![(0, 3)]);
    // Shown whole, then scrolled half off the top with the claim: the
    // terminal keeps its other half (nothing drawn), and scrolled back
    // down it is drawn whole again.
    t.frame(5, 5, Some(3), false);
    assert_eq!(t.drawn(), vec![]);
    t.frame(6, 5, Some(1), false);
    assert_eq!(t.drawn(), vec![]);
    t.frame(5, 5, Some(-1), false);
    assert_eq!(t.drawn(), vec![(0, 0)]);
    // Cut by the edge when first shown: drawn only once whole.
    let mut t = Placing::new(9);
    t.frame(0, 9, None, false);
    assert_eq!(t.drawn(), vec![]);
    t.frame(1, 9, Some(1), false);
    assert_eq!(t.drawn(), vec![(0, 8)]);
}

/// The cells of an image torn down are written again, so that no part of
/// it stays over the text that took its place.
#[test]
fn an_image_torn_down_has_its_cells_written_again() {
    use super::placed::PlacedImages;
    let image = iterm2_image();
    let screen = Rect::new(0, 0, 30, 12);
    let placement = |y: i32| Placement {
        image: std::sync::Arc::clone(&image),
        x: 0,
        y,
        clip: Rect::new(0, 0, 30, 10),
        tmux: false,
    };
    let blank = Cell::default();
    let mut images = PlacedImages::default();
    let mut cells = Vec::new();
    assert_eq!(
        images.settle(screen, &[placement(3)], &mut cells, |_, _| &blank),
        vec![0]
    );
    assert!(cells.is_empty());
    // Placed again: kept, nothing written.
    assert!(
        images
            .settle(screen, &[placement(3)], &mut cells, |_, _| &blank)
            .is_empty()
    );
    assert!(cells.is_empty());
    // Placed elsewhere: its old cells are written, it is drawn at the new place.
    assert_eq!(
        images.settle(screen, &[placement(6)], &mut cells, |_, _| &blank),
        vec![0]
    );
    let written: Vec<(u16, u16)> = cells.iter().map(|(x, y, _)| (*x, *y)).collect();
    let old: Vec<(u16, u16)> = (3..5).flat_map(|y| (0..4).map(move |x| (x, y))).collect();
    assert_eq!(written, old);
    // A cell of it written by the frame: torn down too, and drawn again.
    let text = Cell::new("x");
    let mut cells = vec![(2, 7, &text)];
    assert_eq!(
        images.settle(screen, &[placement(6)], &mut cells, |_, _| &blank),
        vec![0]
    );
    assert_eq!(cells.len(), 1 + 8);
    // No longer placed: torn down, not drawn.
    let mut cells = Vec::new();
    assert!(
        images
            .settle(screen, &[], &mut cells, |_, _| &blank)
            .is_empty()
    );
    assert_eq!(cells.len(), 8);
}
