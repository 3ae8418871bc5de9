//! [`FrameBackend`]: ratatui's crossterm backend, with a frame's changed
//! cells written straight into the output buffer.
//!
//! While an answer streams the conversation scrolls at every frame, so nearly
//! every cell of the screen changes and is written again. Crossterm's backend
//! writes each cell's symbol as a `Print` command (a `fmt::write` through an
//! adapter) and each cursor move through `fmt` as well: a fifth of the UI's
//! instructions while an answer streams. This backend writes the same bytes
//! (the tests compare them with crossterm's backend) with `write_all` and a
//! small integer formatter; colour and attribute changes, rarer, still go
//! through crossterm's commands. A cell's underline colour is not written:
//! it carries the cell's hyperlink ([`super::links`]), written as OSC 8
//! around the cells that have it. Everything else is crossterm's backend.

use std::io::{self, Write};

use ratatui::backend::{Backend, ClearType, CrosstermBackend, IntoCrossterm, WindowSize};
use ratatui::buffer::Cell;
use ratatui::crossterm::queue;
use ratatui::crossterm::style::{
    Attribute, Color as CrosstermColor, Colors, SetAttribute, SetBackgroundColor, SetColors,
    SetForegroundColor, SetUnderlineColor,
};
use ratatui::layout::{Position, Size};
use ratatui::style::{Color, Modifier};

/// See the module documentation.
pub struct FrameBackend<W: Write> {
    inner: CrosstermBackend<W>,
}

impl<W: Write> FrameBackend<W> {
    /// A backend writing to `writer` (buffer it: ratatui flushes at the end
    /// of each frame).
    pub fn new(writer: W) -> Self {
        FrameBackend {
            inner: CrosstermBackend::new(writer),
        }
    }
}

/// Writes the cursor move to (`x`, `y`) as crossterm's `MoveTo` does.
pub(super) fn move_to(w: &mut impl Write, x: u16, y: u16) -> io::Result<()> {
    let mut out = [0u8; 16];
    let mut len = 0;
    let mut put = |bytes: &[u8]| {
        out[len..len + bytes.len()].copy_from_slice(bytes);
        len += bytes.len();
    };
    put(b"\x1b[");
    put(decimal(u32::from(y) + 1).as_slice());
    put(b";");
    put(decimal(u32::from(x) + 1).as_slice());
    put(b"H");
    w.write_all(&out[..len])
}

/// The decimal digits of `n` (at most 65,536 here: five digits).
fn decimal(mut n: u32) -> Digits {
    let mut digits = Digits {
        bytes: [0; 10],
        start: 10,
    };
    loop {
        digits.start -= 1;
        digits.bytes[digits.start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return digits;
        }
    }
}

struct Digits {
    bytes: [u8; 10],
    start: usize,
}

impl Digits {
    fn as_slice(&self) -> &[u8] {
        &self.bytes[self.start..]
    }
}

/// Writes the attribute changes from `from` to `to`, in the order and form
/// crossterm's backend writes them: removals first (bold and dim share one
/// reset, after which those still wanted are set again), then additions.
pub(super) fn modifier_change(w: &mut impl Write, from: Modifier, to: Modifier) -> io::Result<()> {
    let removed = from - to;
    let added = to - from;
    let mut set = |a: Attribute| queue!(w, SetAttribute(a));
    if removed.contains(Modifier::REVERSED) {
        set(Attribute::NoReverse)?;
    }
    let intensity_reset = removed.intersects(Modifier::BOLD | Modifier::DIM);
    if intensity_reset {
        set(Attribute::NormalIntensity)?;
        if to.contains(Modifier::DIM) {
            set(Attribute::Dim)?;
        }
        if to.contains(Modifier::BOLD) {
            set(Attribute::Bold)?;
        }
    }
    for (modifier, off) in [
        (Modifier::ITALIC, Attribute::NoItalic),
        (Modifier::UNDERLINED, Attribute::NoUnderline),
        (Modifier::CROSSED_OUT, Attribute::NotCrossedOut),
        (Modifier::HIDDEN, Attribute::NoHidden),
    ] {
        if removed.contains(modifier) {
            set(off)?;
        }
    }
    if removed.intersects(Modifier::SLOW_BLINK | Modifier::RAPID_BLINK) {
        set(Attribute::NoBlink)?;
    }
    if added.contains(Modifier::REVERSED) {
        set(Attribute::Reverse)?;
    }
    if added.contains(Modifier::BOLD) && !intensity_reset {
        set(Attribute::Bold)?;
    }
    if added.contains(Modifier::ITALIC) {
        set(Attribute::Italic)?;
    }
    if added.contains(Modifier::UNDERLINED) {
        set(Attribute::Underlined)?;
    }
    if added.contains(Modifier::DIM) && !intensity_reset {
        set(Attribute::Dim)?;
    }
    for (modifier, on) in [
        (Modifier::CROSSED_OUT, Attribute::CrossedOut),
        (Modifier::HIDDEN, Attribute::Hidden),
        (Modifier::SLOW_BLINK, Attribute::SlowBlink),
        (Modifier::RAPID_BLINK, Attribute::RapidBlink),
    ] {
        if added.contains(modifier) {
            set(on)?;
        }
    }
    Ok(())
}

/// Writes cells one after another from where the cursor is: each cell's
/// colours, attributes and link (its underline colour, [`super::links`])
/// are changed only where they differ from the cell before.
#[derive(Default)]
pub(super) struct Pen {
    fg: Color,
    bg: Color,
    link: Color,
    link_open: bool,
    modifier: Modifier,
}

impl Pen {
    /// Writes `cell` at the cursor.
    pub(super) fn put(&mut self, w: &mut impl Write, cell: &Cell) -> io::Result<()> {
        if cell.modifier != self.modifier {
            modifier_change(w, self.modifier, cell.modifier)?;
            self.modifier = cell.modifier;
        }
        if cell.fg != self.fg || cell.bg != self.bg {
            queue!(
                w,
                SetColors(Colors::new(
                    cell.fg.into_crossterm(),
                    cell.bg.into_crossterm()
                ))
            )?;
            self.fg = cell.fg;
            self.bg = cell.bg;
        }
        if cell.underline_color != self.link {
            // The underline colour is the cell's link (`links`).
            if self.link_open {
                super::links::write_close(w)?;
            }
            self.link_open = false;
            if let Some(url) = super::links::url_of(cell.underline_color) {
                super::links::write_open(w, &url)?;
                self.link_open = true;
            }
            self.link = cell.underline_color;
        }
        w.write_all(cell.symbol().as_bytes())
    }

    /// Closes an open link and resets colours and attributes.
    pub(super) fn finish(self, w: &mut impl Write) -> io::Result<()> {
        if self.link_open {
            super::links::write_close(w)?;
        }
        queue!(
            w,
            SetForegroundColor(CrosstermColor::Reset),
            SetBackgroundColor(CrosstermColor::Reset),
            SetUnderlineColor(CrosstermColor::Reset),
            SetAttribute(Attribute::Reset),
        )
    }
}

impl<W: Write> Write for FrameBackend<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Write::flush(&mut self.inner)
    }
}

impl<W: Write> Backend for FrameBackend<W> {
    type Error = io::Error;

    fn draw<'a, I>(&mut self, content: I) -> io::Result<()>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        let w = &mut self.inner;
        let mut pen = Pen::default();
        let mut last: Option<(u16, u16)> = None;
        for (x, y, cell) in content {
            if !matches!(last, Some((lx, ly)) if x == lx.wrapping_add(1) && y == ly) {
                move_to(w, x, y)?;
            }
            last = Some((x, y));
            pen.put(w, cell)?;
        }
        pen.finish(w)
    }

    fn append_lines(&mut self, n: u16) -> io::Result<()> {
        self.inner.append_lines(n)
    }

    fn hide_cursor(&mut self) -> io::Result<()> {
        self.inner.hide_cursor()
    }

    fn show_cursor(&mut self) -> io::Result<()> {
        self.inner.show_cursor()
    }

    fn get_cursor_position(&mut self) -> io::Result<Position> {
        self.inner.get_cursor_position()
    }

    fn set_cursor_position<P: Into<Position>>(&mut self, position: P) -> io::Result<()> {
        self.inner.set_cursor_position(position)
    }

    fn clear(&mut self) -> io::Result<()> {
        self.inner.clear()
    }

    fn clear_region(&mut self, clear_type: ClearType) -> io::Result<()> {
        self.inner.clear_region(clear_type)
    }

    fn size(&self) -> io::Result<Size> {
        self.inner.size()
    }

    fn window_size(&mut self) -> io::Result<WindowSize> {
        self.inner.window_size()
    }

    fn flush(&mut self) -> io::Result<()> {
        Backend::flush(&mut self.inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::test_rng::{Rng, Shared};

    /// What crossterm's backend and ours write for `cells`.
    fn both(cells: &[(u16, u16, Cell)]) -> (Vec<u8>, Vec<u8>) {
        let (expected, got) = (Shared::default(), Shared::default());
        Backend::draw(
            &mut CrosstermBackend::new(expected.clone()),
            cells.iter().map(|(x, y, c)| (*x, *y, c)),
        )
        .unwrap();
        FrameBackend::new(got.clone())
            .draw(cells.iter().map(|(x, y, c)| (*x, *y, c)))
            .unwrap();
        (expected.0.take(), got.0.take())
    }

    const MODIFIERS: [Modifier; 9] = [
        Modifier::BOLD,
        Modifier::DIM,
        Modifier::ITALIC,
        Modifier::UNDERLINED,
        Modifier::SLOW_BLINK,
        Modifier::RAPID_BLINK,
        Modifier::REVERSED,
        Modifier::HIDDEN,
        Modifier::CROSSED_OUT,
    ];

    fn color(rng: &mut Rng) -> Color {
        match rng.below(5) {
            0 => Color::Reset,
            1 => Color::Cyan,
            2 => Color::Indexed(rng.below(256) as u8),
            3 => Color::Rgb(rng.below(256) as u8, 7, 200),
            _ => Color::DarkGray,
        }
    }

    /// Cells as a frame's diff hands them over: runs along a row, jumps
    /// within and between rows, styles that change now and then.
    fn cells(rng: &mut Rng, count: usize) -> Vec<(u16, u16, Cell)> {
        let symbols = ["a", " ", "Z", "─", "漢", "🎉", "e\u{301}", "│"];
        let (mut x, mut y) = (0u16, 0u16);
        let mut cell = Cell::default();
        let mut out = Vec::new();
        for _ in 0..count {
            match rng.below(10) {
                0 => x += 2 + rng.below(30) as u16,
                1 => {
                    y += 1 + rng.below(3) as u16;
                    x = rng.below(5) as u16;
                }
                2 => y = rng.below(2000) as u16,
                _ => x += 1,
            }
            if rng.below(4) == 0 {
                let mut modifier = Modifier::empty();
                for m in MODIFIERS {
                    if rng.below(3) == 0 {
                        modifier |= m;
                    }
                }
                cell.modifier = modifier;
            }
            if rng.below(4) == 0 {
                cell.fg = color(rng);
            }
            if rng.below(6) == 0 {
                cell.bg = color(rng);
            }
            cell.set_symbol(symbols[rng.below(symbols.len() as u64) as usize]);
            out.push((x, y, cell.clone()));
        }
        out
    }

    #[test]
    fn frames_are_written_byte_for_byte_as_crossterms_backend_writes_them() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for frame in 0..300 {
            let (expected, got) = both(&cells(&mut rng, frame * 7));
            assert_eq!(
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(&expected),
                "frame {frame}"
            );
        }
    }

    #[test]
    fn every_change_of_attributes_is_written_as_crossterms_backend_writes_it() {
        let all: Vec<Modifier> = (0u16..512)
            .map(|bits| {
                MODIFIERS
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| bits & (1 << i) != 0)
                    .fold(Modifier::empty(), |acc, (_, m)| acc | *m)
            })
            .collect();
        let mut rng = Rng(7);
        for _ in 0..20_000 {
            let from = all[rng.below(512) as usize];
            let to = all[rng.below(512) as usize];
            let mut a = Cell::default();
            a.modifier = from;
            let mut b = Cell::default();
            b.modifier = to;
            let (expected, got) = both(&[(0, 0, a), (1, 0, b)]);
            assert_eq!(got, expected, "{from:?} -> {to:?}");
        }
    }

    #[test]
    fn a_cell_s_link_is_written_as_osc_8_around_its_cells_and_no_underline_colour_is() {
        crate::tui::links::set_for_this_thread(true, std::path::Path::new("/"));
        let one = crate::tui::links::style_for("https://example.com/one");
        let two = crate::tui::links::style_for("https://example.com/two");
        fn cell(symbol: &str, link: ratatui::style::Style) -> Cell {
            let mut c = Cell::default();
            c.set_symbol(symbol);
            c.underline_color = link.underline_color.unwrap_or(Color::Reset);
            c
        }
        let plain = ratatui::style::Style::default();
        let cells = [
            (0, 0, cell("a", plain)),
            (1, 0, cell("b", one)),
            (2, 0, cell("c", one)),
            (3, 0, cell("d", two)),
            (9, 0, cell("e", plain)),
            (0, 1, cell("f", one)),
        ];
        let (_, got) = both(&cells);
        let got = String::from_utf8(got).unwrap();
        let open_one = "\x1b]8;;https://example.com/one\x1b\\";
        let open_two = "\x1b]8;;https://example.com/two\x1b\\";
        let close = "\x1b]8;;\x1b\\";
        let a = got.find('a').unwrap();
        let rest = &got[a..];
        assert!(
            rest.starts_with(&format!(
                "a{open_one}bc{close}{open_two}d\x1b[1;10H{close}e"
            )),
            "{rest:?}"
        );
        assert!(
            got.ends_with(&format!(
                "{open_one}f{close}\x1b[39m\x1b[49m\x1b[59m\x1b[0m"
            )),
            "{got:?}"
        );
        // Without its links the frame is the bytes crossterm writes for
        // the cells without underline colours.
        let unlinked: Vec<_> = cells
            .iter()
            .map(|(x, y, c)| (*x, *y, cell(c.symbol(), plain)))
            .collect();
        let (expected, _) = both(&unlinked);
        let stripped = got
            .replace(open_one, "")
            .replace(open_two, "")
            .replace(close, "");
        assert_eq!(stripped, String::from_utf8(expected).unwrap());
    }
}
