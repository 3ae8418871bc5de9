//! What the full-screen UI spends drawing a streaming answer: at each frame it
//! renders the message received so far (markdown, wrapped to the terminal's
//! width). This runs those renders for one answer growing to `TOKENS` words
//! over `FRAMES` frames and prints the time per frame, twice: rendering the
//! whole text each frame (`markdown::render`), and as the UI does, again only
//! from the first block that can still change (`markdown::Incremental`).
//! The same words as shown thinking (plain text) are wrapped whole at every
//! frame and as the UI does (`wrap_stream::TextStream`). Then it writes the
//! last frame's changed cells (the rows over an empty
//! screen) as crossterm's backend and as `FrameBackend` do, and prints the
//! time each takes. Last, whole frames while the answer streams, drawn and
//! written by `Screen` with the conversation's scroll claimed and not: time
//! and bytes a frame. And the time a transcript search takes over the
//! answer's rows 50 times over.
//!
//! ```text
//! cargo run --profile release-lto -p makai-cli --example tui_render_bench -- [TOKENS] [FRAMES] [WIDTH]
//! ```
//!
//! The answer is prose in paragraphs of 60 words with some bold and inline
//! code, then a list, as a model writes; defaults: 3,000 words, 100 frames,
//! 118 columns (a 120-column terminal).

use std::time::Instant;

use makai_cli::tui::backend::FrameBackend;
use makai_cli::tui::markdown;
use makai_cli::tui::screen::{Screen, changed_cells};
use makai_cli::tui::search::Search;
use makai_cli::tui::wrap::wrap_text;
use makai_cli::tui::wrap_stream::TextStream;
use ratatui::backend::{Backend, CrosstermBackend};
use ratatui::buffer::Buffer;
use ratatui::layout::{Rect, Size};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget};

/// Frames written to measure the output of one.
const OUTPUT_FRAMES: usize = 300;

fn arg(i: usize, default: usize) -> usize {
    std::env::args()
        .nth(i)
        .and_then(|a| a.parse().ok())
        .unwrap_or(default)
}

/// The answer's words, each with the text that follows it.
fn answer(tokens: usize) -> Vec<String> {
    (0..tokens)
        .map(|i| {
            let word = match i % 17 {
                3 => format!("**word{i}**"),
                9 => format!("`code{i}`"),
                _ => format!("word{i}"),
            };
            let after = if i % 60 == 59 {
                if i % 240 == 239 { "\n\n- " } else { "\n\n" }
            } else {
                " "
            };
            word + after
        })
        .collect()
}

/// Renders the answer growing over `frames` frames with `render_frame`;
/// returns the whole text and the time per frame.
fn run(words: &[String], frames: usize, mut render_frame: impl FnMut(&str)) -> (String, f64) {
    let mut text = String::new();
    let mut next = 0;
    let started = Instant::now();
    for frame in 1..=frames {
        let upto = words.len() * frame / frames;
        for w in &words[next..upto] {
            text.push_str(w);
        }
        next = upto;
        render_frame(&text);
    }
    (text, started.elapsed().as_secs_f64() * 1e6 / frames as f64)
}

/// A digest of rows (text and styles): two renders alike print the same one.
fn digest(rows: &[Line<'_>]) -> u64 {
    format!("{rows:?}")
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        })
}

/// Counts the bytes written through it.
struct Counting(std::rc::Rc<std::cell::Cell<usize>>);

impl std::io::Write for Counting {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.set(self.0.get() + buf.len());
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Frames of a 40-row screen whose first 38 rows show `rows` moving up a row
/// a frame, under a status line, drawn and written by `Screen` (the scroll
/// claimed or not); returns the time and bytes per frame.
fn scrolling_frames(rows: &[Line<'static>], width: u16, claim: bool) -> (f64, usize) {
    let size = Size::new(width, 40);
    let written = std::rc::Rc::new(std::cell::Cell::new(0));
    let mut screen = Screen::new(Counting(written.clone()));
    let frames = rows.len().saturating_sub(38).clamp(1, OUTPUT_FRAMES);
    let started = Instant::now();
    for top in 0..frames {
        let status = Line::from(format!("Working… {top}"));
        let drawn = screen.draw(size, |f| {
            // Claimed before the rows are drawn, as the UI does.
            if claim && top > 0 {
                f.scrolled(0..38, 1);
            }
            f.draw_lines(Rect::new(0, 0, width, 38), &rows[top..]);
            f.draw_lines(Rect::new(0, 38, width, 1), [&status]);
        });
        if let Err(e) = drawn {
            eprintln!("drawing failed: {e}");
            std::process::exit(1);
        }
    }
    let us = started.elapsed().as_secs_f64() * 1e6 / frames as f64;
    let bytes = written.get() / frames;
    (us, bytes)
}

/// The frames of [`scrolling_frames`] as buffers, each paired with the one
/// before it moved up a row (what the terminal shows once it scrolled):
/// the time ratatui's difference and makai's take per pair, and the cells of
/// a frame.
fn differences(rows: &[Line<'static>], width: u16) -> (f64, f64, usize) {
    let area = Rect::new(0, 0, width, 40);
    let frames: Vec<Buffer> = (0..rows.len().saturating_sub(38).clamp(1, OUTPUT_FRAMES))
        .map(|top| {
            let mut buf = Buffer::empty(area);
            for (y, line) in (0..38).zip(&rows[top..]) {
                buf.set_line(0, y, line, width);
            }
            buf.set_string(0, 38, format!("Working… {top}"), Style::default());
            buf
        })
        .collect();
    let pairs: Vec<(Buffer, &Buffer)> = frames
        .windows(2)
        .map(|w| {
            let mut shown = w[0].clone();
            let band = &mut shown.content[..38 * usize::from(width)];
            band.rotate_left(usize::from(width));
            let end = band.len();
            band[end - usize::from(width)..]
                .iter_mut()
                .for_each(|c| c.reset());
            (shown, &w[1])
        })
        .collect();
    let time = |diff: &dyn Fn(&Buffer, &Buffer) -> usize| {
        let started = Instant::now();
        let mut changed = 0;
        for _ in 0..10 {
            for (shown, next) in &pairs {
                changed += diff(shown, next);
            }
        }
        std::hint::black_box(changed);
        started.elapsed().as_secs_f64() * 1e6 / (10 * pairs.len().max(1)) as f64
    };
    let ratatuis = time(&|a, b| a.diff(b).len());
    let ours = time(&|a, b| changed_cells(a, b, &[]).len());
    (ratatuis, ours, area.area() as usize)
}

fn main() {
    let tokens = arg(1, 3000).max(1);
    let frames = arg(2, 100).max(1);
    let width = arg(3, 118);
    let words = answer(tokens);
    let mut whole = Vec::new();
    let (text, whole_us) = run(&words, frames, |text| whole = markdown::render(text, width));
    let mut inc = markdown::Incremental::default();
    let (_, inc_us) = run(&words, frames, |text| inc.update(text, width, 0, true));
    let incremental: Vec<Line<'static>> = inc.lines().cloned().collect();
    let (d_whole, d_inc) = (digest(&whole), digest(&incremental));
    println!(
        "tokens={tokens} frames={frames} width={width} rows={} bytes={} digest={d_whole:016x} whole_per_frame_us={whole_us:.1} incremental_per_frame_us={inc_us:.1}",
        whole.len(),
        text.len(),
    );
    // Shown thinking: the same words as plain text, wrapped whole at every
    // frame against wrapped from its last unsettled line.
    let style = Style::default().add_modifier(Modifier::ITALIC);
    let mut wrapped = Vec::new();
    let (_, wrap_us) = run(&words, frames, |text| {
        wrapped = wrap_text(text.trim(), width, style, "")
    });
    let mut stream = TextStream::default();
    let (_, stream_us) = run(&words, frames, |text| stream.update(text, width, style, 0));
    let streamed: Vec<Line<'static>> = stream.lines().cloned().collect();
    println!(
        "thinking: whole_wrap_per_frame_us={wrap_us:.1} text_stream_per_frame_us={stream_us:.1}"
    );
    if digest(&wrapped) != digest(&streamed) {
        eprintln!("the streamed wrap differs");
        std::process::exit(1);
    }
    // Writing a frame: the last 40 rows drawn over an empty screen, the
    // changed cells written by crossterm's backend and by makai's.
    let area = Rect::new(0, 0, width as u16 + 2, 40);
    let mut next = Buffer::empty(area);
    Paragraph::new(whole[whole.len().saturating_sub(40)..].to_vec()).render(area, &mut next);
    let previous = Buffer::empty(area);
    let changed = previous.diff(&next);
    let sink = || std::io::BufWriter::with_capacity(64 * 1024, std::io::sink());
    let time_frames = |draw: &mut dyn FnMut()| {
        let started = Instant::now();
        for _ in 0..OUTPUT_FRAMES {
            draw();
        }
        started.elapsed().as_secs_f64() * 1e6 / OUTPUT_FRAMES as f64
    };
    let crossterm_us = time_frames(&mut || {
        let _ = CrosstermBackend::new(sink()).draw(changed.iter().copied());
    });
    let ours_us = time_frames(&mut || {
        let _ = FrameBackend::new(sink()).draw(changed.iter().copied());
    });
    println!(
        "frame output: {} changed cells, crossterm's backend {crossterm_us:.1} µs, FrameBackend {ours_us:.1} µs",
        changed.len()
    );
    // A frame while the answer streams: the screen's conversation moves up a
    // row at each frame and the whole frame is written by `Screen`, which
    // has the terminal move the rows when the frame says they moved.
    for claim in [false, true] {
        let (us, bytes) = scrolling_frames(&whole, width as u16 + 2, claim);
        println!(
            "streaming frame ({} rows of {} moving up a row): {us:.1} µs and {bytes} bytes a frame, the scroll {}",
            area.height - 2,
            width + 2,
            if claim { "claimed" } else { "not claimed" }
        );
    }
    let (ratatuis_us, ours_us, cells) = differences(&whole, width as u16 + 2);
    println!(
        "the difference of two streaming frames ({cells} cells): ratatui's Buffer::diff {ratatuis_us:.1} µs, changed_cells {ours_us:.1} µs"
    );
    // Finding text in a long conversation (Ctrl+Shift+F): the answer's rows
    // 50 times over, a word that occurs once in each and one in none.
    let long: Vec<&Line<'static>> = (0..50).flat_map(|_| whole.iter()).collect();
    for (query, what) in [
        (format!("word{}", tokens / 2), "50 matches"),
        ("nowhere".to_string(), "none"),
    ] {
        let mut search = Search::open(0);
        search.set_query(query.clone(), 0);
        let started = Instant::now();
        search.refresh(long.iter().copied(), 1, &[]);
        let ms = started.elapsed().as_secs_f64() * 1e3;
        println!(
            "search of {} rows for {query:?} ({what}): {ms:.2} ms, {}",
            long.len(),
            search.status()
        );
    }
    // The same search open while the last of the 50 answers streams: each
    // frame changes that answer's block only, so the search reads again
    // from its last checkpoint before that block.
    let query = format!("word{}", tokens / 2);
    let last = long.len() - whole.len();
    let mut search = Search::open(0);
    search.set_query(query.clone(), 0);
    search.refresh(long.iter().copied(), 1, &[(1, 0), (2, last)]);
    let frames = 20;
    let started = Instant::now();
    for frame in 0..frames {
        let stamp = 2 + frame as u64;
        search.refresh(long.iter().copied(), stamp, &[(1, 0), (stamp + 1, last)]);
    }
    let ms = started.elapsed().as_secs_f64() * 1e3 / frames as f64;
    println!(
        "search of {} rows for {query:?} while the last {} stream: {ms:.2} ms a frame, {}",
        long.len(),
        whole.len(),
        search.status()
    );
    if d_whole != d_inc {
        eprintln!("the incremental render differs: digest {d_inc:016x}");
        std::process::exit(1);
    }
}
