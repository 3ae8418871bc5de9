//! Folding the rows of items far from the view (full-screen mode).
//!
//! An item's rows stay rendered so that a frame takes the rows it shows
//! without rendering anything; kept for every item of a long conversation
//! they were most of the UI's memory (a 2,000-turn session draws about
//! 140,000 rows). A frame renders the items keeping at most [`KEEP_ROWS`]
//! rendered as it goes, folding the oldest past it ([`refresh_folding`]),
//! and after drawing folds the items farthest from the view
//! ([`fold_far`]). A folded item keeps its row count ([`Rows::Folded`])
//! and is rendered again ([`unfold`]) when a frame shows it, the search
//! opens, a selection's text is read, or regular mode (which compares
//! every row) takes over; the exit transcript renders it for the moment it
//! is written. Rows rendered again are the rows folded: same item
//! revision, same view.

use std::ops::Range;

use super::View;
use super::cache::{Entry, Rows, render_entry};
use crate::tui::app_state::UiState;
use crate::tui::transcript::Item;

/// The rows kept rendered, beyond those near the view, before items far
/// from it are folded (a few MB of rows).
pub(super) const KEEP_ROWS: usize = 20_000;

/// Renders item `i`'s rows again if they were folded.
pub(super) fn unfold(entries: &mut [Option<Entry>], i: usize, item: &Item) {
    let Some(slot) = entries.get_mut(i) else {
        return;
    };
    if let Some(Entry {
        rows: Rows::Folded(_),
        view,
        ..
    }) = slot
    {
        let view: View = *view;
        *slot = Some(render_entry(item, view, None));
    }
}

/// Renders every folded item again.
pub(super) fn unfold_all(st: &mut UiState) {
    let items = st.transcript.items();
    for (i, item) in items.iter().enumerate() {
        unfold(&mut st.cache.entries, i, item);
    }
}

/// Renders again the folded items with rows among the conversation's
/// rows `rows` (as the last frame laid them out: the greeting, then each
/// item's rows after a blank one).
pub(super) fn unfold_rows(st: &mut UiState, rows: Range<usize>) {
    let mut at = super::header_lines(st).len();
    let items = st.transcript.items();
    for (i, item) in items.iter().enumerate() {
        if at >= rows.end {
            break;
        }
        let Some(Some(entry)) = st.cache.entries.get(i) else {
            continue;
        };
        if i > 0 {
            at += 1;
        }
        let len = entry.rows.len();
        if at + len > rows.start {
            unfold(&mut st.cache.entries, i, item);
        }
        at += len;
    }
}

/// Brings every item's rows up to date for `view` (as `refresh_items`
/// does) keeping at most `keep` rows rendered as it goes: past it, the
/// oldest items are folded until half that many are, so a long
/// conversation never has all its rows rendered at once (the view's items
/// are rendered again after, when they were among them).
pub(super) fn refresh_folding(st: &mut UiState, view: View, keep: usize) {
    let items = st.transcript.items();
    let entries = &mut st.cache.entries;
    entries.truncate(items.len());
    if entries.len() < items.len() {
        entries.resize_with(items.len(), || None);
    }
    let mut kept = 0;
    let mut oldest = 0;
    for (i, item) in items.iter().enumerate() {
        st.cache.refresh(i, item, view);
        let entries = &mut st.cache.entries;
        kept += rendered(&entries[i]);
        if kept > keep {
            while kept > keep / 2 && oldest < i {
                kept -= fold(&mut entries[oldest]);
                oldest += 1;
            }
        }
    }
}

/// The rows `entry` has rendered.
fn rendered(entry: &Option<Entry>) -> usize {
    match entry {
        Some(Entry {
            rows: Rows::Folded(_),
            ..
        })
        | None => 0,
        Some(entry) => entry.rows.len(),
    }
}

/// Folds `entry`; returns the rows it gave back.
fn fold(entry: &mut Option<Entry>) -> usize {
    let count = rendered(entry);
    if let Some(entry) = entry.as_mut()
        && count > 0
    {
        entry.rows = Rows::Folded(count);
    }
    count
}

/// Folds the items whose rows lie outside `near` (conversation rows) when
/// more than `keep` rows ([`KEEP_ROWS`]) are rendered, the oldest first,
/// until half that many are; `layout` is each item's index, first row and
/// row count. The last item (it may be streaming) is never folded.
pub(super) fn fold_far(
    entries: &mut [Option<Entry>],
    layout: &[(usize, usize, usize)],
    near: Range<usize>,
    keep: usize,
) {
    let mut kept: usize = entries.iter().map(rendered).sum();
    if kept <= keep {
        return;
    }
    let last = layout.last().map(|(i, _, _)| *i);
    for &(i, first, len) in layout {
        if kept <= keep / 2 {
            break;
        }
        if Some(i) == last || (first < near.end && first + len > near.start) {
            continue;
        }
        if let Some(slot) = entries.get_mut(i) {
            kept -= fold(slot);
        }
    }
}
