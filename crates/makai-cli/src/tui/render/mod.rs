//! Drawing a frame: the conversation (scrollable), the status line with the
//! spinner, queued messages, the editor, the footer, and popups over them.

mod cache;
mod chrome;
mod code;
mod fold;
mod items;
mod popup;
mod regular_frame;

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

pub use cache::RenderCache;
use cache::{Rows, render_entry};
pub use items::View;
pub use regular_frame::draw_regular;

use std::borrow::Cow;
use std::sync::Arc;

use super::app_state::UiState;
use super::images::{InlineImage, Protocol};
use super::screen::{Frame, Placement};
use super::search;
use super::theme;
use super::transcript::{Item, ItemKind};

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

/// The view of the conversation `width` columns wide without images (what
/// goes to the terminal's scrollback: regular mode, the exit transcript).
fn text_view(st: &UiState, width: u16) -> View {
    View {
        width: usize::from(width),
        show_thinking: st.show_thinking,
        expand_tools: st.expand_tools,
        theme: theme::generation(),
        images: false,
        margin: st.output_pad,
    }
}

/// The whole conversation as the UI draws it `width` columns wide: the
/// greeting, then each item's rows after a blank one (what the terminal
/// keeps when the UI ends, see [`super::exit_output`]). The items' rows are
/// lent, not copied: a long session's transcript costs no second copy.
pub fn conversation_lines(
    st: &mut UiState,
    width: u16,
) -> impl Iterator<Item = Cow<'_, Line<'static>>> {
    let view = text_view(st, width);
    refresh_items(st, view);
    let header = header_lines(st);
    let items = st.transcript.items();
    let lines = st
        .cache
        .entries
        .iter()
        .enumerate()
        .filter_map(|(i, entry)| entry.as_ref().map(|entry| (i, entry)))
        .flat_map(move |(i, entry)| {
            let gap = (i > 0).then(|| Cow::Owned(Line::default()));
            // A folded item is rendered for the moment it is written.
            let unfolded: Vec<Line<'static>> = match (&entry.rows, items.get(i)) {
                (Rows::Folded(_), Some(item)) => {
                    let rendered = render_entry(item, entry.view, None);
                    rendered.rows.runs().concat()
                }
                _ => Vec::new(),
            };
            let rows = entry
                .rows
                .runs()
                .into_iter()
                .flat_map(|run| run.iter().map(Cow::Borrowed));
            gap.into_iter()
                .chain(rows)
                .chain(unfolded.into_iter().map(Cow::Owned))
        });
    header.into_iter().map(Cow::Owned).chain(lines)
}

/// The text of the conversation's rows `rows` as the last frame drew them
/// (rows past the end are left out; items folded far from the view are
/// rendered again for it).
pub fn row_texts(st: &mut UiState, rows: std::ops::Range<usize>) -> Vec<String> {
    fold::unfold_rows(st, rows.clone());
    let mut out = Vec::new();
    for_rows(st, rows, |_, line| out.push(line.to_string()));
    out
}

/// The address of the link drawn at `at` in the conversation (a cell whose
/// underline colour carries one, [`super::links`]), if any.
pub fn link_at(st: &UiState, at: super::selection::Point) -> Option<std::sync::Arc<str>> {
    let mut found = None;
    for_rows(st, at.row..at.row + 1, |_, line| {
        let mut x = 0usize;
        for span in &line.spans {
            let width = span.width();
            if usize::from(at.col) < x + width {
                found = line
                    .style
                    .patch(span.style)
                    .underline_color
                    .and_then(super::links::url_of);
                return;
            }
            x += width;
        }
    });
    found
}

/// The item of the conversation drawn at row `row` at the last frame
/// (`None`: the greeting or the blank row between two items).
pub fn item_at(st: &UiState, row: usize) -> Option<usize> {
    let mut found = None;
    for_rows(st, row..row + 1, |item, _| found = item);
    found
}

/// Hands each of the conversation's rows `rows`, as the last frame drew
/// them, to `visit` with the index of the item it belongs to (rows past the
/// end are left out).
fn for_rows(
    st: &UiState,
    rows: std::ops::Range<usize>,
    mut visit: impl FnMut(Option<usize>, &Line<'_>),
) {
    let mut at = 0usize;
    let mut take = |item: Option<usize>, line: &Line<'_>, at: &mut usize| {
        if rows.contains(at) {
            visit(item, line);
        }
        *at += 1;
    };
    for line in &header_lines(st) {
        take(None, line, &mut at);
    }
    let blank = Line::default();
    for (i, entry) in st.cache.entries.iter().enumerate() {
        if at >= rows.end {
            break;
        }
        let Some(entry) = entry else { continue };
        if i > 0 {
            take(None, &blank, &mut at);
        }
        if let Rows::Folded(len) = entry.rows {
            // Not rendered: blank rows of the item (read the text after
            // `fold::unfold_rows`).
            for _ in 0..len {
                take(Some(i), &blank, &mut at);
            }
            continue;
        }
        for run in entry.rows.runs() {
            if at + run.len() <= rows.start {
                at += run.len();
                continue;
            }
            for line in run.iter() {
                take(Some(i), line, &mut at);
            }
        }
    }
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
        margin: st.output_pad,
    };
    let header = header_lines(st);
    let keep = st.cache.keep_rows.unwrap_or(fold::KEEP_ROWS);
    fold::refresh_folding(st, view, keep);
    if st.search.is_some() {
        // The search reads every row.
        fold::unfold_all(st);
    }
    let items = st.transcript.items();
    // The conversation's layout (the header, then each item's rows after a
    // blank one), from the rows' counts: items far from the view may be
    // folded (`fold`).
    let mut layout: Vec<(usize, usize, usize)> = Vec::new();
    let mut total = header.len();
    let mut prompt_rows = std::mem::take(&mut st.cache.prompt_rows);
    prompt_rows.clear();
    // Images the screen draws over their blank rows (iTerm2's protocol),
    // with the conversation row each starts at.
    let placing = st
        .image_output
        .as_ref()
        .filter(|o| o.protocol == Protocol::Iterm2)
        .map(|o| o.tmux);
    let mut placed: Vec<(usize, Arc<InlineImage>)> = Vec::new();
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
                total += 1;
            }
            if matches!(item.kind, ItemKind::User(_)) {
                prompt_rows.push(total);
            }
            if placing.is_some() {
                placed.extend(
                    entry
                        .images
                        .iter()
                        .map(|(row, image)| (total + row, Arc::clone(image))),
                );
            }
            let len = entry.rows.len();
            layout.push((i, total, len));
            total += len;
        }
    }
    let height = area.height as usize;
    // Keep a scrolled-up view still while content is added below.
    if st.scroll > 0 && total > st.cache.last_total {
        st.scroll = st.scroll.saturating_add(total - st.cache.last_total);
    }
    let max_scroll = total.saturating_sub(height);
    // The items the view shows are rendered (the search has all of them).
    let end = total - st.scroll.min(max_scroll);
    let start = end.saturating_sub(height);
    for &(i, first, len) in &layout {
        if first < end && first + len > start {
            fold::unfold(&mut st.cache.entries, i, &items[i]);
        }
    }
    // The conversation as runs of rows, each with its number of rows: a
    // frame takes the rows it shows from them, so its cost does not grow
    // with the conversation.
    let blank = [Line::default()];
    let mut runs: Vec<(usize, &[Line<'static>])> = vec![(header.len(), &header)];
    for &(i, _, len) in &layout {
        let Some(Some(entry)) = st.cache.entries.get(i) else {
            continue;
        };
        if i > 0 {
            runs.push((1, &blank));
        }
        match entry.rows {
            Rows::Folded(_) => runs.push((len, &[])),
            ref rows => runs.extend(rows.runs().into_iter().map(|run| (run.len(), run))),
        }
    }
    if let Some(search) = &mut st.search {
        let stamp = content_stamp(items, view, total);
        let rows = runs.iter().flat_map(|(_, run)| run.iter());
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
    st.cache.last_scroll = st.scroll;
    if let Some(tmux) = placing {
        for (row, image) in placed {
            let y = i64::from(area.y) + row as i64 - start as i64;
            let shows =
                y < i64::from(area.bottom()) && y + i64::from(image.rows) > i64::from(area.y);
            if let (true, Ok(y)) = (shows, i32::try_from(y)) {
                f.place_image(Placement {
                    image,
                    x: area.x,
                    y,
                    clip: area,
                    tmux,
                });
            }
        }
    }
    let mut shown: Vec<&Line<'static>> = Vec::with_capacity(end - start);
    let mut at = 0;
    for &(len, run) in &runs {
        let (from, to) = (at, at + len);
        at = to;
        if to <= start {
            continue;
        }
        if from >= end {
            break;
        }
        let wanted = start.saturating_sub(from)..end.min(to) - from;
        // A folded run is never shown (the view's items were rendered
        // above): blank rows keep the others in place if it were.
        match run.get(wanted.clone()) {
            Some(rows) => shown.extend(rows),
            None => shown.extend(std::iter::repeat_n(&blank[0], wanted.len())),
        }
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
    st.cache.more_note = None;
    if st.scroll > 0 && area.height > 0 {
        let note = format!(" ↓ {} more lines (page down or click) ", st.scroll);
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
        st.cache.more_note = Some(r);
    }
    st.scrollbar.draw(f, bar_area, total, start);
    if st.search.is_none() {
        // Items two pages or more from the view give their rows back.
        let near = start.saturating_sub(2 * height)..end + 2 * height;
        fold::fold_far(&mut st.cache.entries, &layout, near, keep);
    }
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
    if !st.hardware_cursor {
        f.draw_cursor();
    }
}

#[cfg(test)]
mod tests;
