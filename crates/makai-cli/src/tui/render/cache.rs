//! The rows drawn of each conversation item, kept between frames
//! ([`RenderCache`]).

use std::sync::Arc;

use ratatui::layout::Rect;
use ratatui::text::Line;

use super::View;
use super::items;
use crate::tui::images::InlineImage;
use crate::tui::markdown;
use crate::tui::transcript::{Item, ItemKind};
use crate::tui::wrap_stream::TextStream;

/// Rendered lines per conversation item, reused while the item and the view
/// do not change (only the streaming item is rendered again, and of an
/// answer's text or shown thinking only what more text can still change: see
/// [`markdown::Incremental`] and [`TextStream`]); in a long conversation the
/// items far from the view keep only their row count ([`super::fold`]).
#[derive(Default)]
pub struct RenderCache {
    pub(super) entries: Vec<Option<Entry>>,
    /// Total conversation rows at the last frame (to keep a scrolled view still).
    pub(super) last_total: usize,
    /// Rows of the conversation area at the last frame (page size).
    pub page: usize,
    /// The conversation's area and its first row shown, at the last frame.
    pub(super) last_window: Option<(Rect, usize)>,
    /// The scroll offset the last frame was drawn with.
    pub(super) last_scroll: usize,
    /// The first row of each user message, at the last frame (the marks
    /// `tui.altScreen.previousPrompt` and `nextPrompt` jump between).
    pub(super) prompt_rows: Vec<usize>,
    /// Where the "more lines" note was drawn at the last frame (a click on
    /// it goes to the end, as pi's "Jump to latest message").
    pub more_note: Option<Rect>,
    /// The rows kept rendered far from the view ([`fold::KEEP_ROWS`] when
    /// unset).
    pub(super) keep_rows: Option<usize>,
}

impl RenderCache {
    /// The conversation's text area and its first row shown, at the last
    /// frame.
    pub fn window(&self) -> Option<(Rect, usize)> {
        self.last_window
    }

    /// The conversation's text area and the row first shown once the view
    /// is scrolled `scroll` rows up, as the last frame's rows go: what the
    /// next frame shows, before it is drawn (mouse events that scroll come
    /// faster than frames).
    pub fn window_at(&self, scroll: usize) -> Option<(Rect, usize)> {
        let (area, start) = self.last_window?;
        let moved = self.last_scroll as i64 - scroll as i64;
        let start = (start as i64 + moved).clamp(0, i64::MAX) as usize;
        Some((area, start))
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
pub(super) struct Entry {
    pub(super) rev: u64,
    pub(super) view: View,
    pub(super) rows: Rows,
    /// The item's images and the row of its rows each starts at.
    pub(super) images: Vec<(usize, Arc<InlineImage>)>,
}

/// An item's rows, as the kind of item keeps them.
pub(super) enum Rows {
    Plain(Vec<Line<'static>>),
    /// An answer's text.
    Markdown(markdown::Incremental),
    /// Thinking, shown.
    Thinking(TextStream),
    /// So many rows, not kept: the item is far from the view in a long
    /// conversation ([`super::fold`]); drawn again when needed.
    Folded(usize),
}

impl Rows {
    /// The rows, top to bottom, in at most two runs (none when folded:
    /// unfold first, [`super::fold`]).
    pub(super) fn runs(&self) -> [&[Line<'static>]; 2] {
        match self {
            Rows::Plain(lines) => [lines, &[]],
            Rows::Markdown(md) => md.runs(),
            Rows::Thinking(text) => text.runs(),
            Rows::Folded(_) => [&[], &[]],
        }
    }

    /// How many rows there are, folded or not.
    pub(super) fn len(&self) -> usize {
        match self {
            Rows::Folded(n) => *n,
            rows => rows.runs().iter().map(|run| run.len()).sum(),
        }
    }
}

impl RenderCache {
    /// Drops every item's rows: the next frame draws them again (settings
    /// that change how items are drawn but not the [`View`]).
    pub fn forget_rows(&mut self) {
        self.entries.clear();
    }

    /// Brings item `i`'s rows up to date (rows folded stay folded while
    /// the item and the view do not change).
    pub(super) fn refresh(&mut self, i: usize, item: &Item, view: View) {
        if self.entries.len() <= i {
            self.entries.resize_with(i + 1, || None);
        }
        let slot = &mut self.entries[i];
        if matches!(slot, Some(e) if e.rev == item.rev && e.view == view) {
            return;
        }
        *slot = Some(render_entry(item, view, slot.take()));
    }
}

/// Item `item`'s rows for `view`, continuing `previous`'s when it streams
/// (an answer's text, shown thinking).
pub(super) fn render_entry(item: &Item, view: View, previous: Option<Entry>) -> Entry {
    let mut images = Vec::new();
    let rows = match (&item.kind, previous) {
        (ItemKind::Text(text), previous) => {
            let mut md = match previous {
                Some(Entry {
                    rows: Rows::Markdown(md),
                    ..
                }) => md,
                _ => markdown::Incremental::default(),
            };
            md.update(text, items::text_width(view), view.margin, item.open);
            Rows::Markdown(md)
        }
        (ItemKind::Thinking(text), previous) if view.show_thinking && !text.trim().is_empty() => {
            let mut stream = match previous {
                Some(Entry {
                    rows: Rows::Thinking(stream),
                    ..
                }) => stream,
                _ => TextStream::default(),
            };
            stream.update(
                text,
                items::text_width(view),
                items::thinking_style(),
                view.margin,
            );
            Rows::Thinking(stream)
        }
        (kind, _) => {
            let mut lines = items::item_lines(kind, view);
            if view.images {
                for image in &item.images {
                    images.push((lines.len(), Arc::clone(image)));
                    lines.extend(image.lines());
                }
            }
            Rows::Plain(lines)
        }
    };
    Entry {
        rev: item.rev,
        view,
        rows,
        images,
    }
}
