//! The mouse in the conversation: the wheel scrolls, the scrollbar is
//! clicked and dragged ([`super::super::scrollbar`]), a click on the "more
//! lines" note goes to the end (pi's "Jump to latest message"), a click on
//! a link opens it ([`super::super::links`]) and one on a collapsed block
//! expands or collapses it ([`super::super::summary`]), and the left button
//! selects text ([`super::super::selection`]), copied when the button
//! comes up with pi's `fullscreenCopyOnSelect`; the right button pastes
//! the clipboard into the editor, as pi's full-screen mode does (the
//! terminal's own right-click menu does not come while makai has the
//! mouse).

use std::time::Instant;

use crossterm::event::{KeyModifiers, MouseButton, MouseEvent, MouseEventKind};

use super::super::event_loop::Ctx;
use super::super::render::{item_at, link_at, row_texts};
use super::super::selection::Point;

/// How many rows around a press are read for a word or a paragraph.
const AROUND: usize = 200;

/// A mouse event.
pub fn on_mouse(ctx: &mut Ctx<'_>, m: MouseEvent) {
    let (scrolled, redraw) = ctx.st.scrollbar.mouse(&m);
    if let Some(scroll) = scrolled {
        ctx.st.scroll = scroll;
    }
    if redraw {
        ctx.st.dirty = true;
        return;
    }
    let alt = m.modifiers.contains(KeyModifiers::ALT);
    match m.kind {
        MouseEventKind::ScrollUp => {
            ctx.st.scroll += ctx.st.wheel.rows(Instant::now(), alt);
        }
        MouseEventKind::ScrollDown => {
            let rows = ctx.st.wheel.rows(Instant::now(), alt);
            ctx.st.scroll = ctx.st.scroll.saturating_sub(rows);
        }
        // A click on the "more lines" note: back to the end.
        MouseEventKind::Down(MouseButton::Left)
            if ctx
                .st
                .cache
                .more_note
                .is_some_and(|r| r.contains(ratatui::layout::Position::new(m.column, m.row))) =>
        {
            ctx.st.scroll = 0;
        }
        MouseEventKind::Down(MouseButton::Left) => match point(ctx, &m, false) {
            Some(at) => {
                let from = at.row.saturating_sub(AROUND);
                let texts = row_texts(&mut *ctx.st, from..at.row + AROUND);
                let text = |row: usize| row.checked_sub(from).and_then(|i| texts.get(i).cloned());
                ctx.st.selection.press(at, Instant::now(), &text);
            }
            None if ctx.st.selection.range().is_some() => ctx.st.selection.clear(),
            None => return,
        },
        MouseEventKind::Down(MouseButton::Right) if ctx.st.selector.is_none() => {
            super::paste_clipboard(ctx);
            return;
        }
        MouseEventKind::Drag(MouseButton::Left) if ctx.st.selection.dragging() => {
            if let Some(at) = edge_scroll(ctx, &m).or_else(|| point(ctx, &m, true)) {
                ctx.st.selection.drag(at);
            }
        }
        MouseEventKind::Up(_) if ctx.st.selection.dragging() => {
            if ctx.st.selection.release() {
                if ctx.st.selection.copy_on_select {
                    copy_selection(ctx);
                }
            } else if ctx.st.selection.single_click_at().is_some()
                && ctx.st.selection.single_click_at() == point(ctx, &m, false)
            {
                // A click (no drag, not the second of a double click) on a
                // link opens it, as pi's links stay clickable while it has
                // the mouse; elsewhere on a collapsed block, it expands or
                // collapses the block (pi's click toggling).
                if !open_link_at(ctx, &m) {
                    toggle_summary_at(ctx, &m);
                }
            }
        }
        _ => return,
    }
    ctx.st.dirty = true;
}

/// A drag on the conversation's first or last row, or past it, scrolls
/// the conversation a row (and a row more for each row past it) and
/// returns where the selection then reaches: the row that came in. `None`
/// inside the conversation, or when it cannot scroll that way.
fn edge_scroll(ctx: &mut Ctx<'_>, m: &MouseEvent) -> Option<Point> {
    let (area, start) = ctx.st.cache.window_at(ctx.st.scroll)?;
    let bottom = (area.y + area.height).saturating_sub(1);
    let col = m
        .column
        .clamp(area.x, (area.x + area.width).saturating_sub(1))
        - area.x;
    if m.row <= area.y {
        let by = usize::from(area.y - m.row) + 1;
        let by = by.min(start);
        if by == 0 {
            return None;
        }
        ctx.st.scroll += by;
        Some(Point {
            row: start - by,
            col,
        })
    } else if m.row >= bottom {
        let by = (usize::from(m.row - bottom) + 1).min(ctx.st.scroll);
        if by == 0 {
            return None;
        }
        ctx.st.scroll -= by;
        Some(Point {
            row: start + usize::from(area.height) - 1 + by,
            col,
        })
    } else {
        None
    }
}

/// Expands or collapses the block under the pointer, if it is one.
fn toggle_summary_at(ctx: &mut Ctx<'_>, m: &MouseEvent) {
    if let Some(item) = point(ctx, m, false).and_then(|at| item_at(ctx.st, at.row)) {
        let expand_all = ctx.st.expand_tools;
        ctx.st.transcript.toggle_summary(item, expand_all);
    }
}

/// Opens the link under the pointer, if there is one (true).
fn open_link_at(ctx: &mut Ctx<'_>, m: &MouseEvent) -> bool {
    let Some(url) = point(ctx, m, false).and_then(|at| link_at(ctx.st, at)) else {
        return false;
    };
    match super::super::links::open(&url) {
        Ok(program) => ctx.st.set_status(
            super::super::transcript::Level::Info,
            format!("Opening {url} ({program})"),
        ),
        Err(e) => ctx.st.set_status(
            super::super::transcript::Level::Error,
            format!("Cannot open {url}: {e}"),
        ),
    }
    true
}

/// The conversation cell under the pointer; `None` off the conversation,
/// unless `clamp` (a drag past its edge reaches its first or last row).
fn point(ctx: &Ctx<'_>, m: &MouseEvent, clamp: bool) -> Option<Point> {
    let (area, start) = ctx.st.cache.window_at(ctx.st.scroll)?;
    let inside = m.row >= area.y
        && m.row < area.y + area.height
        && m.column >= area.x
        && m.column < area.x + area.width;
    if !inside && !clamp {
        return None;
    }
    let row = m
        .row
        .clamp(area.y, (area.y + area.height).saturating_sub(1))
        - area.y;
    let col = m
        .column
        .clamp(area.x, (area.x + area.width).saturating_sub(1))
        - area.x;
    Some(Point {
        row: start + row as usize,
        col,
    })
}

/// Copies the selected text (Ctrl+X, `tui.input.copy`, or the button coming
/// up); false when nothing is selected.
pub fn copy_selection(ctx: &mut Ctx<'_>) -> bool {
    let Some((first, last)) = ctx.st.selection.range() else {
        return false;
    };
    let texts = row_texts(&mut *ctx.st, first.row..last.row + 1);
    let text = |row: usize| {
        row.checked_sub(first.row)
            .and_then(|i| texts.get(i).cloned())
    };
    match ctx.st.selection.text(&text, ctx.st.output_pad as u16) {
        Some(selected) => {
            let chars = selected.chars().count();
            super::super::config_commands::copy_text(
                ctx,
                &selected,
                &format!("{chars} characters"),
            );
            true
        }
        None => false,
    }
}
