//! Regular mode's frame ([`super::super::regular`]): the greeting, the
//! conversation's rows as the full-screen UI wraps them (its images with
//! them, when the terminal draws them), and the live rows under them (an
//! open list, the status line, the queue, the editor, the footer), drawn
//! with the full-screen UI's widgets.

use std::hash::{Hash, Hasher};
use std::io::Write;
use std::sync::Arc;

use ratatui::layout::{Constraint, Layout, Rect, Size};
use ratatui::text::Line;

use super::{View, chrome, header_lines, popup, refresh_items, text_view};
use crate::tui::app_state::UiState;
use crate::tui::images::Protocol;
use crate::tui::regular::{Document, Part, Run, ScrollbackScreen, buffer_lines};
use crate::tui::screen::draw_offscreen;

/// Draws one frame of regular mode on `screen`, a terminal of `size`.
pub fn draw_regular<W: Write>(
    st: &mut UiState,
    size: Size,
    screen: &mut ScrollbackScreen<W>,
) -> std::io::Result<()> {
    let width = size.width.max(1);
    let view = View {
        images: st.image_output.is_some(),
        ..text_view(st, width)
    };
    refresh_items(st, view);
    // Regular mode compares every row: none stays folded.
    super::fold::unfold_all(st);
    // Images the screen draws over their blank rows (iTerm2's protocol).
    let placing = st
        .image_output
        .as_ref()
        .filter(|o| o.protocol == Protocol::Iterm2);
    let mut images = Vec::new();
    let header = header_lines(st);
    let (live, cursor, cursor_drawn) = live_rows(st, width, size.height);
    let blank = [Line::default()];
    let mut runs = vec![Run {
        part: Part::Greeting,
        stamp: None,
        rows: &header,
    }];
    for (i, entry) in st.cache.entries.iter().enumerate() {
        let Some(entry) = entry else { continue };
        if i > 0 {
            runs.push(Run {
                part: Part::Gap,
                stamp: Some(0),
                rows: &blank,
            });
        }
        if placing.is_some() {
            let at: usize = runs.iter().map(|r| r.rows.len()).sum();
            images.extend(
                entry
                    .images
                    .iter()
                    .map(|(row, image)| (at + row, Arc::clone(image))),
            );
        }
        for rows in entry.rows.runs() {
            runs.push(Run {
                part: Part::Item(i),
                stamp: Some(entry.rev),
                rows,
            });
        }
    }
    let conversation: usize = runs.iter().map(|r| r.rows.len()).sum();
    runs.push(Run {
        part: Part::Live,
        stamp: None,
        rows: &live,
    });
    let mut key = std::hash::DefaultHasher::new();
    view.hash(&mut key);
    let doc = Document {
        runs,
        cursor: cursor.map(|(row, col)| (conversation + usize::from(row), col)),
        cursor_drawn,
        view: key.finish(),
        images,
        tmux: placing.is_some_and(|o| o.tmux),
    };
    screen.draw(size, &doc)
}

/// The live rows `width` columns wide on a terminal `height` rows high,
/// where the cursor goes among them (row, column), and whether it is drawn
/// in them.
fn live_rows(
    st: &UiState,
    width: u16,
    height: u16,
) -> (Vec<Line<'static>>, Option<(u16, u16)>, bool) {
    let editor_rows = chrome::editor_height(st, width);
    let queue_rows = chrome::queue_lines(st).len() as u16;
    let fixed = 1 + queue_rows + editor_rows + 2;
    let list_rows = popup::wanted_height(
        st.selector.as_ref(),
        st.completion.as_ref(),
        st.completion_rows,
    )
    .min(height.saturating_sub(fixed));
    let area = Rect::new(0, 0, width, list_rows + fixed);
    let drawn = draw_offscreen(area, |f| {
        let [list, status, queue, editor, footer] = Layout::vertical([
            Constraint::Length(list_rows),
            Constraint::Length(1),
            Constraint::Length(queue_rows),
            Constraint::Length(editor_rows),
            Constraint::Length(2),
        ])
        .areas(area);
        chrome::draw_status(f, st, status);
        chrome::draw_queue(f, st, queue);
        chrome::draw_editor(f, st, editor);
        chrome::draw_footer(f, st, footer);
        if let Some(sel) = &st.selector {
            popup::draw_selector(f, sel, list);
        } else if let Some(c) = &st.completion {
            popup::draw_completion(f, c, list, st.completion_rows);
        }
        if !st.hardware_cursor {
            f.draw_cursor();
        }
    });
    (
        buffer_lines(&drawn.buffer),
        drawn.cursor.map(|p| (p.y, p.x)),
        drawn.cursor_drawn,
    )
}
