//! Drawing a frame: the conversation (scrollable), the status line with the
//! spinner, queued messages, the editor, the footer, and popups over them.

mod chrome;
mod code;
mod items;
mod popup;

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

pub use items::View;

use super::app_state::UiState;
use super::markdown;
use super::screen::Frame;
use super::search;
use super::theme;
use super::transcript::{Item, ItemKind};
use super::wrap_stream::TextStream;

/// Rendered lines per conversation item, reused while the item and the view
/// do not change (only the streaming item is rendered again, and of an
/// answer's text or shown thinking only what more text can still change: see
/// [`markdown::Incremental`] and [`TextStream`]).
#[derive(Default)]
pub struct RenderCache {
    entries: Vec<Option<Entry>>,
    /// Total conversation rows at the last frame (to keep a scrolled view still).
    last_total: usize,
    /// Rows of the conversation area at the last frame (page size).
    pub page: usize,
    /// The conversation's area and its first row shown, at the last frame.
    last_window: Option<(Rect, usize)>,
    /// The first row of each user message, at the last frame (the marks
    /// `tui.altScreen.previousPrompt` and `nextPrompt` jump between).
    prompt_rows: Vec<usize>,
}

impl RenderCache {
    /// The conversation's text area and its first row shown, at the last
    /// frame.
    pub fn window(&self) -> Option<(Rect, usize)> {
        self.last_window
    }

    /// The conversation row shown first at the last frame.
    pub fn top_row(&self) -> usize {
        self.last_window.map_or(0, |(_, start)| start)
    }

    /// The scroll offset (rows up from the bottom) that shows the user
    /// message before (`forward` false) or after the one shown first at the
    /// last frame at the top; `None` when there is none that way.
    pub fn prompt_scroll(&self, forward: bool) -> Option<usize> {
        let top = self.top_row();
        let row = if forward {
            self.prompt_rows.iter().copied().find(|r| *r > top)?
        } else {
            self.prompt_rows.iter().copied().rev().find(|r| *r < top)?
        };
        Some(self.last_total.saturating_sub(row + self.page))
    }
}

/// One item's rows, with the item's change counter and the view they were
/// rendered for.
struct Entry {
    rev: u64,
    view: View,
    rows: Rows,
}

enum Rows {
    Plain(Vec<Line<'static>>),
    /// An answer's text.
    Markdown(markdown::Incremental),
    /// Thinking, shown.
    Thinking(TextStream),
}

impl Rows {
    /// The rows, top to bottom, in at most two runs.
    fn runs(&self) -> [&[Line<'static>]; 2] {
        match self {
            Rows::Plain(lines) => [lines, &[]],
            Rows::Markdown(md) => md.runs(),
            Rows::Thinking(text) => text.runs(),
        }
    }
}

impl RenderCache {
    /// Brings item `i`'s rows up to date.
    fn refresh(&mut self, i: usize, item: &Item, view: View) {
        if self.entries.len() <= i {
            self.entries.resize_with(i + 1, || None);
        }
        let slot = &mut self.entries[i];
        if matches!(slot, Some(e) if e.rev == item.rev && e.view == view) {
            return;
        }
        let rows = match (&item.kind, slot.take()) {
            (ItemKind::Text(text), previous) => {
                let mut md = match previous {
                    Some(Entry {
                        rows: Rows::Markdown(md),
                        ..
                    }) => md,
                    _ => markdown::Incremental::default(),
                };
                md.update(text, items::text_width(view));
                Rows::Markdown(md)
            }
            (ItemKind::Thinking(text), previous)
                if view.show_thinking && !text.trim().is_empty() =>
            {
                let mut stream = match previous {
                    Some(Entry {
                        rows: Rows::Thinking(stream),
                        ..
                    }) => stream,
                    _ => TextStream::default(),
                };
                stream.update(text, items::text_width(view), items::thinking_style());
                Rows::Thinking(stream)
            }
            (kind, _) => {
                let mut lines = items::item_lines(kind, view);
                if view.images {
                    for image in &item.images {
                        lines.extend(image.lines());
                    }
                }
                Rows::Plain(lines)
            }
        };
        *slot = Some(Entry {
            rev: item.rev,
            view,
            rows,
        });
    }
}

/// The greeting at the top of the conversation (none with `quietStartup`).
fn header_lines(st: &UiState) -> Vec<Line<'static>> {
    if st.quiet_startup {
        return Vec::new();
    }
    vec![
        Line::from(vec![
            Span::styled("makai", theme::bold().fg(theme::accent())),
            Span::styled(format!(" v{}", env!("CARGO_PKG_VERSION")), theme::dim()),
            Span::styled(format!("  {}", st.footer.cwd), theme::dim()),
        ]),
        Line::from(Span::styled(
            "enter send · alt+enter follow-up · esc abort · ctrl+c twice exit · / commands · @ files · /hotkeys",
            theme::dim(),
        )),
        Line::default(),
    ]
}

/// Brings every item's rows up to date for `view`.
fn refresh_items(st: &mut UiState, view: View) {
    let items = st.transcript.items();
    st.cache.entries.truncate(items.len());
    for (i, item) in items.iter().enumerate() {
        st.cache.refresh(i, item, view);
    }
}

/// The whole conversation as the UI draws it `width` columns wide: the
/// greeting, then each item's rows after a blank one (what the terminal
/// keeps when the UI ends, see [`super::exit_output`]).
pub fn conversation_lines(st: &mut UiState, width: u16) -> Vec<Line<'static>> {
    let view = View {
        width: usize::from(width),
        show_thinking: st.show_thinking,
        expand_tools: st.expand_tools,
        theme: theme::generation(),
        images: false,
    };
    refresh_items(st, view);
    let mut out = header_lines(st);
    for (i, entry) in st.cache.entries.iter().enumerate() {
        if let Some(entry) = entry {
            if i > 0 {
                out.push(Line::default());
            }
            for run in entry.rows.runs() {
                out.extend(run.iter().cloned());
            }
        }
    }
    out
}

/// The text of the conversation's rows `rows` as the last frame drew them
/// (rows past the end are left out).
pub fn row_texts(st: &UiState, rows: std::ops::Range<usize>) -> Vec<String> {
    let mut out = Vec::new();
    let mut at = 0usize;
    let mut take = |line: &Line<'_>, at: &mut usize| {
        if rows.contains(at) {
            out.push(line.to_string());
        }
        *at += 1;
    };
    for line in &header_lines(st) {
        take(line, &mut at);
    }
    let blank = Line::default();
    for (i, entry) in st.cache.entries.iter().enumerate() {
        if at >= rows.end {
            break;
        }
        let Some(entry) = entry else { continue };
        if i > 0 {
            take(&blank, &mut at);
        }
        for run in entry.rows.runs() {
            if at + run.len() <= rows.start {
                at += run.len();
                continue;
            }
            for line in run.iter() {
                take(line, &mut at);
            }
        }
    }
    out
}

/// Draws the conversation into `area`, honouring the scroll offset, and its
/// scrollbar down the rightmost column.
fn draw_conversation(f: &mut Frame<'_>, st: &mut UiState, bar_area: Rect) {
    // The text's area: a column narrower when the scrollbar keeps its own.
    let area = Rect {
        width: bar_area
            .width
            .saturating_sub(st.scrollbar.reserved())
            .max(1),
        ..bar_area
    };
    let view = View {
        width: area.width as usize,
        show_thinking: st.show_thinking,
        expand_tools: st.expand_tools,
        theme: theme::generation(),
        images: st.image_output.is_some(),
    };
    let header = header_lines(st);
    refresh_items(st, view);
    let items = st.transcript.items();
    // The conversation as runs of rows (the header, then each item's rows
    // after a blank one): a frame takes the rows it shows from them, so its
    // cost does not grow with the conversation.
    let blank = [Line::default()];
    let mut runs: Vec<&[Line<'static>]> = vec![&header];
    let mut total = header.len();
    let mut prompt_rows = std::mem::take(&mut st.cache.prompt_rows);
    prompt_rows.clear();
    // The blocks of rows the search may skip when they did not change.
    let mut blocks: Vec<search::Block> = Vec::new();
    if st.search.is_some() {
        blocks.push((block_key(&header, view), 0));
    }
    for (i, item) in items.iter().enumerate() {
        if let Some(Some(entry)) = st.cache.entries.get(i) {
            if st.search.is_some() {
                blocks.push((block_key(&item.rev, view), total));
            }
            if i > 0 {
                runs.push(&blank);
                total += 1;
            }
            if matches!(item.kind, ItemKind::User(_)) {
                prompt_rows.push(total);
            }
            for run in entry.rows.runs() {
                runs.push(run);
                total += run.len();
            }
        }
    }
    let height = area.height as usize;
    // Keep a scrolled-up view still while content is added below.
    if st.scroll > 0 && total > st.cache.last_total {
        st.scroll += total - st.cache.last_total;
    }
    let max_scroll = total.saturating_sub(height);
    if let Some(search) = &mut st.search {
        let stamp = content_stamp(items, view, total);
        let rows = runs.iter().flat_map(|run| run.iter());
        // A selected match off screen comes to a third of the way down.
        if let Some((first, last)) = search.refresh(rows, stamp, &blocks) {
            let end = total - st.scroll.min(max_scroll);
            let start = end.saturating_sub(height);
            if first < start || last >= end {
                let top = first.saturating_sub(height / 3);
                st.scroll = total.saturating_sub(top + height);
            }
        }
    }
    st.cache.last_total = total;
    st.cache.page = height;
    st.cache.prompt_rows = prompt_rows;
    st.scroll = st.scroll.min(max_scroll);
    let end = total - st.scroll;
    let start = end.saturating_sub(height);
    // The rows on screen moved by as many rows as the first one shown (rows
    // are kept per item, so a row's index stays its own while the answer
    // grows below): the terminal moves them, and only the rest is written.
    if let Some((last_area, last_start)) = st.cache.last_window
        && last_area == area
        && start != last_start
    {
        // A move past the area's height is no scroll (the screen ignores it).
        let by = i32::try_from(start as i64 - last_start as i64).unwrap_or(i32::MAX);
        f.scrolled(area.top()..area.bottom(), by);
    }
    st.cache.last_window = Some((area, start));
    let mut shown: Vec<&Line<'static>> = Vec::with_capacity(end - start);
    let mut at = 0;
    for run in &runs {
        let (from, to) = (at, at + run.len());
        at = to;
        if to <= start {
            continue;
        }
        if from >= end {
            break;
        }
        shown.extend(&run[start.saturating_sub(from)..end.min(to) - from]);
    }
    match &st.search {
        Some(search) => {
            // Rows with a match are drawn restyled.
            let lit: Vec<Option<Line<'static>>> = shown
                .iter()
                .enumerate()
                .map(|(i, line)| {
                    let marks = search.highlights(start + i);
                    (!marks.is_empty()).then(|| search::highlight(line, &marks))
                })
                .collect();
            let rows = shown
                .iter()
                .zip(&lit)
                .map(|(line, lit)| lit.as_ref().unwrap_or(*line));
            f.draw_lines(area, rows);
        }
        None => f.draw_lines(area, shown),
    }
    // The text selected with the mouse, reversed.
    if st.selection.range().is_some() {
        let buf = f.buffer_mut();
        for y in 0..area.height.min((end - start) as u16) {
            if let Some(cols) = st.selection.columns(start + y as usize) {
                for x in cols.start.min(area.width)..cols.end.min(area.width) {
                    buf[(area.x + x, area.y + y)]
                        .modifier
                        .insert(Modifier::REVERSED);
                }
            }
        }
    }
    if st.scroll > 0 && area.height > 0 {
        let note = format!(" ↓ {} more lines (page down) ", st.scroll);
        let w = note.chars().count() as u16;
        let r = Rect {
            x: area.x + area.width.saturating_sub(w),
            y: area.y + area.height - 1,
            width: w.min(area.width),
            height: 1,
        };
        f.render_widget(
            Paragraph::new(Span::styled(
                note,
                theme::warning().add_modifier(Modifier::REVERSED),
            )),
            r,
        );
    }
    st.scrollbar.draw(f, bar_area, total, start);
}

/// A stamp of the conversation's rows: it changes when an item changes, is
/// added or dropped, or the view or the number of rows changes (item
/// revisions only grow).
/// The key of a block of rows for the search: what its rows are drawn from.
fn block_key(what: &impl std::hash::Hash, view: View) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    (what, view).hash(&mut h);
    h.finish()
}

fn content_stamp(items: &[Item], view: View, total: usize) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    let newest = items.iter().map(|i| i.rev).max();
    (items.len(), newest, view, total).hash(&mut h);
    h.finish()
}

/// Draws one frame.
pub fn draw(f: &mut Frame<'_>, st: &mut UiState) {
    let area = f.area();
    let editor_rows = chrome::editor_height(st, area.width);
    let queue_rows = chrome::queue_lines(st).len() as u16;
    let [conv, status, queue, editor, footer] = Layout::vertical([
        Constraint::Min(1),
        Constraint::Length(1),
        Constraint::Length(queue_rows),
        Constraint::Length(editor_rows),
        Constraint::Length(2),
    ])
    .areas(area);
    draw_conversation(f, st, conv);
    chrome::draw_status(f, st, status);
    chrome::draw_queue(f, st, queue);
    chrome::draw_editor(f, st, editor);
    chrome::draw_footer(f, st, footer);
    let above_editor = Rect {
        x: area.x,
        y: area.y,
        width: area.width,
        height: editor.y.saturating_sub(area.y),
    };
    if let Some(sel) = &st.selector {
        popup::draw_selector(f, sel, above_editor);
    } else if let Some(c) = &st.completion {
        popup::draw_completion(f, c, above_editor, st.completion_rows);
    } else if let Some(search) = &st.search {
        popup::draw_search(f, search, conv);
    }
}

#[cfg(test)]
mod tests {
    use ratatui::layout::Size;

    use super::*;
    use crate::tui::input::complete::{Completion, CompletionItem, CompletionKind};
    use crate::tui::screen::Screen;
    use crate::tui::selectors::{SelectItem, Selector, SelectorKind};
    use crate::tui::transcript::{ItemKind, Level, ToolCallView, ToolState};

    fn busy_state() -> UiState {
        let mut st = UiState::default();
        st.transcript
            .push(ItemKind::User("a question\nover two lines".into()));
        st.transcript.push(ItemKind::Thinking("pondering".into()));
        st.transcript
            .push(ItemKind::Text("# Title\n\n- item\n\n```\ncode\n```".into()));
        st.transcript.push(ItemKind::Tool(ToolCallView {
            id: "c".into(),
            name: "bash".into(),
            args: serde_json::json!({"command": "ls -la\necho done"}),
            partial_args: String::new(),
            result: Some("a\nb\nc\nd\ne\nf\ng\nh".into()),
            is_error: false,
            diff: None,
            state: ToolState::Done,
        }));
        st.transcript.notice(Level::Error, "something failed");
        st.editor
            .insert_str("a long prompt that wraps\nand a second line");
        st.steering = vec!["steer".into()];
        st.follow_up = vec!["later".into()];
        st.running = true;
        st.show_thinking = true;
        st
    }

    /// A screen of `width` x `height` writing into memory, and a frame of
    /// it drawn from `st`.
    struct Term {
        screen: Screen<Vec<u8>>,
        size: Size,
    }

    impl Term {
        fn new(width: u16, height: u16) -> Term {
            Term {
                screen: Screen::new(Vec::new()),
                size: Size { width, height },
            }
        }

        fn draw(&mut self, st: &mut UiState) {
            self.screen.draw(self.size, |f| draw(f, st)).unwrap();
        }
    }

    fn screen(term: &Term) -> String {
        let buf = term.screen.shown();
        let mut out = String::new();
        for y in 0..buf.area.height {
            for x in 0..buf.area.width {
                out.push_str(buf[(x, y)].symbol());
            }
            out.push('\n');
        }
        out
    }

    #[test]
    fn draws_at_every_small_size_without_panicking() {
        for with_popup in 0..3 {
            let mut st = busy_state();
            match with_popup {
                1 => {
                    st.selector = Some(Selector::new(
                        "Pick",
                        SelectorKind::Tree,
                        (0..30)
                            .map(|i| SelectItem::new(format!("row {i}"), "detail", "v"))
                            .collect(),
                    ))
                }
                2 => {
                    st.completion = Some(Completion {
                        kind: CompletionKind::Path,
                        start: 0,
                        items: vec![CompletionItem {
                            insert: "@src/".into(),
                            label: "src/".into(),
                            detail: "folder".into(),
                            is_dir: true,
                        }],
                        selected: 0,
                    })
                }
                _ => {}
            }
            for w in 0..30u16 {
                for h in 0..14u16 {
                    Term::new(w, h).draw(&mut st);
                }
            }
        }
    }

    #[test]
    fn a_frame_shows_conversation_queue_editor_and_footer() {
        let mut st = busy_state();
        st.footer.model = "mock-model".into();
        let mut term = Term::new(60, 40);
        term.draw(&mut st);
        let text = screen(&term);
        for expected in [
            "a question",
            "pondering",
            "Title",
            "• item",
            "● bash $ ls -la",
            "… 2 more lines (ctrl+o to expand)",
            "something failed",
            "Working…",
            "Steering: steer",
            "Follow-up: later",
            "and a second line",
            "mock-model • thinking off",
        ] {
            assert!(text.contains(expected), "missing {expected:?} in\n{text}");
        }
        // Scrolling up keeps the view still and says how much is below.
        st.scroll = 3;
        let mut small = Term::new(60, 16);
        small.draw(&mut st);
        assert!(
            screen(&small).contains("↓ 3 more lines"),
            "{}",
            screen(&small)
        );
    }

    /// A frame takes the rows it shows from the items' runs of rows: at
    /// every scroll offset, a small screen shows the rows a screen tall
    /// enough for the whole conversation shows at the same place.
    #[test]
    fn every_scroll_offset_shows_its_window_of_the_whole_conversation() {
        let mut st = busy_state();
        for i in 0..12 {
            st.transcript.push(ItemKind::User(format!("question {i}")));
            st.transcript.push(ItemKind::Text(format!(
                "Answer {i}, **bold**:\n\n- one {i}\n- two {i}\n\n```\ncode {i}\n```"
            )));
        }
        let mut tall = Term::new(40, 1000);
        tall.draw(&mut st);
        let all: Vec<String> = screen(&tall).lines().map(str::to_string).collect();
        let total = st.cache.last_total;
        assert!(total > 100, "{total} rows");
        let mut small = Term::new(40, 20);
        small.draw(&mut st);
        let page = st.cache.page;
        for scroll in 0..=total - page {
            st.scroll = scroll;
            small.draw(&mut st);
            let shown: Vec<String> = screen(&small).lines().map(str::to_string).collect();
            let end = total - scroll;
            // The last row may carry the "more lines" note.
            let rows = if scroll > 0 { page - 1 } else { page };
            assert_eq!(
                shown[..rows],
                all[end - page..end - page + rows],
                "scrolled up {scroll} of {total} rows"
            );
        }
    }

    /// pi's `fullscreenScrollbar: "always"`: the conversation keeps clear of
    /// the rightmost column, where the track and the thumb follow the scroll.
    #[test]
    fn an_always_scrollbar_has_its_own_column_and_its_thumb_follows_the_scroll() {
        use crate::tui::scrollbar::{Mode, Scrollbar};
        let mut st = busy_state();
        for i in 0..30 {
            st.transcript
                .push(ItemKind::Text(format!("{} {i}", "word ".repeat(20))));
        }
        st.scrollbar = Scrollbar::new(Mode::Always);
        let mut term = Term::new(40, 24);
        term.draw(&mut st);
        let page = st.cache.page as u16;
        let column = |term: &Term| -> String {
            let buf = term.screen.shown();
            (0..page)
                .map(|y| buf[(39, y)].symbol().to_string())
                .collect()
        };
        let at_bottom = column(&term);
        assert!(
            at_bottom.ends_with('┃') && at_bottom.starts_with('│'),
            "{at_bottom}"
        );
        // The conversation is drawn as on a screen a column narrower.
        let rows = |term: &Term, width: u16| -> Vec<String> {
            let buf = term.screen.shown();
            (0..page)
                .map(|y| (0..width).map(|x| buf[(x, y)].symbol()).collect())
                .collect()
        };
        let mut narrow_st = busy_state();
        for i in 0..30 {
            narrow_st
                .transcript
                .push(ItemKind::Text(format!("{} {i}", "word ".repeat(20))));
        }
        narrow_st.scrollbar = Scrollbar::new(Mode::Hidden);
        let mut narrow = Term::new(39, 24);
        narrow.draw(&mut narrow_st);
        assert_eq!(narrow_st.cache.page, st.cache.page);
        assert_eq!(rows(&term, 39), rows(&narrow, 39));
        st.scroll = st.cache.last_total;
        term.draw(&mut st);
        let at_top = column(&term);
        assert!(at_top.starts_with('┃') && at_top.ends_with('│'), "{at_top}");
        // `auto` (the default) draws nothing there until the pointer comes.
        st.scrollbar = Scrollbar::new(Mode::Auto);
        st.scroll = 0;
        term.draw(&mut st);
        assert!(!column(&term).contains('┃'), "{}", column(&term));
    }

    /// An answer streaming in, drawn at each step into a terminal emulator;
    /// returns the bytes written. With `claims` false the conversation's
    /// scroll is never claimed (ratatui's `Terminal` could not).
    fn stream_an_answer(claims: bool) -> usize {
        use std::sync::Arc;

        use makai_agent::{AgentEvent, AgentMessage};
        use makai_ai::{AssistantMessage, AssistantMessageEvent as E};

        use crate::tui::screen::emulated::Emulated;

        let update = |ev: E| AgentEvent::MessageUpdate {
            message: None,
            assistant_message_event: ev,
        };
        let mut st = UiState::default();
        st.transcript.apply(&AgentEvent::MessageStart {
            message: Arc::new(AgentMessage::user("hello")),
        });
        st.transcript.apply(&AgentEvent::MessageStart {
            message: Arc::new(AssistantMessage::default().into()),
        });
        st.transcript
            .apply(&update(E::TextStart { content_index: 0 }));
        let size = Size::new(60, 20);
        let mut term = Emulated::new(size);
        let mut bytes = 0;
        let mut rng = crate::tui::test_rng::Rng(0x2545_f491_4f6c_dd1d);
        let words = [
            "the ",
            "model ",
            "writes ",
            "**prose** ",
            "`code` ",
            "and ",
            "more: ",
        ];
        for i in 0..150 {
            let delta = format!("{i}. {}\n\n", rng.text(&words, 12)).into();
            st.transcript.apply(&update(E::TextDelta {
                content_index: 0,
                delta,
            }));
            if !claims {
                st.cache.last_window = None;
            }
            term.draw(size, |f| draw(f, &mut st));
            term.assert_shows_the_frame(&format!("line {i}"));
            bytes += term.last_bytes;
        }
        bytes
    }

    /// While an answer streams, the conversation moves up at each frame: the
    /// terminal moves its rows, and only the new ones are written.
    #[test]
    fn a_streaming_answer_scrolls_the_terminal_instead_of_writing_the_conversation_again() {
        let with = stream_an_answer(true);
        let without = stream_an_answer(false);
        assert!(
            with * 3 < without,
            "{with} bytes with the scroll claimed, {without} without"
        );
    }

    /// An answer, thinking and then text, streamed through the transcript and
    /// drawn at every step: the cache's frames equal those drawn from a fresh
    /// cache (everything rendered anew), and the settled rows of both blocks
    /// are kept between frames.
    #[test]
    fn a_streaming_answer_draws_as_a_fresh_render_does_and_keeps_its_settled_rows() {
        use std::sync::Arc;

        use makai_agent::{AgentEvent, AgentMessage};
        use makai_ai::{AssistantMessage, AssistantMessageEvent as E};

        let update = |ev: E| AgentEvent::MessageUpdate {
            message: None,
            assistant_message_event: ev,
        };
        let mut st = UiState {
            show_thinking: true,
            ..Default::default()
        };
        st.transcript.apply(&AgentEvent::MessageStart {
            message: Arc::new(AgentMessage::user("hello")),
        });
        st.transcript.apply(&AgentEvent::MessageStart {
            message: Arc::new(AssistantMessage::default().into()),
        });
        let thinking: String = (0..20)
            .map(|i| format!("Step {i}: the model weighs one more thing.\n"))
            .collect();
        let answer: String = (0..12)
            .map(|i| {
                format!("Paragraph {i} has **some** words, `code` and more words.\n\n- a\n- b\n\n")
            })
            .collect();
        // Tall enough to show every row: the whole conversation is compared.
        let mut term = Term::new(30, 400);
        let mut fresh = Term::new(30, 400);
        for (index, text) in [(0, &thinking), (1, &answer)] {
            st.transcript.apply(&update(if index == 0 {
                E::ThinkingStart { content_index: 0 }
            } else {
                E::TextStart { content_index: 1 }
            }));
            for chunk in text.as_bytes().chunks(9) {
                let delta = String::from_utf8(chunk.to_vec()).unwrap().into();
                st.transcript.apply(&update(if index == 0 {
                    E::ThinkingDelta {
                        content_index: 0,
                        delta,
                    }
                } else {
                    E::TextDelta {
                        content_index: 1,
                        delta,
                    }
                }));
                term.draw(&mut st);
                let kept = std::mem::take(&mut st.cache);
                fresh.draw(&mut st);
                st.cache = kept;
                assert_eq!(screen(&term), screen(&fresh));
            }
        }
        let thinking_settled = match st.cache.entries.get(1) {
            Some(Some(Entry {
                rows: Rows::Thinking(t),
                ..
            })) => t.settled_rows(),
            _ => 0,
        };
        let answer_settled = match st.cache.entries.get(2) {
            Some(Some(Entry {
                rows: Rows::Markdown(md),
                ..
            })) => md.settled_rows(),
            _ => 0,
        };
        assert!(
            thinking_settled >= 19,
            "thinking rows settled: {thinking_settled}"
        );
        assert!(answer_settled > 40, "answer rows settled: {answer_settled}");
    }
}
