//! Popups drawn over the conversation: list selectors and completion lists
//! just above the editor, the transcript search at its top right.

use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};

use crate::tui::input::complete::Completion;
use crate::tui::screen::Frame;
use crate::tui::search::Search;
use crate::tui::selectors::Selector;
use crate::tui::theme;
use crate::tui::wrap::{str_width, truncate};

/// Rows of list a popup shows at most.
const MAX_ROWS: usize = 14;

/// The rect of a popup with `rows` list rows, at the bottom of `above`.
fn popup_rect(above: Rect, rows: usize) -> Rect {
    let h = (rows as u16 + 2).min(above.height);
    Rect {
        x: above.x,
        y: above.y + above.height - h,
        width: above.width,
        height: h,
    }
}

/// The rows the open selector or completion list takes, with its border
/// (regular mode makes room for it above the status line).
pub fn wanted_height(
    sel: Option<&Selector>,
    completion: Option<&Completion>,
    max_rows: usize,
) -> u16 {
    let rows = match (sel, completion) {
        (Some(sel), _) => sel.visible().len().clamp(1, MAX_ROWS),
        (None, Some(c)) if !c.items.is_empty() => {
            let max_rows = if max_rows == 0 { MAX_ROWS } else { max_rows };
            c.items.len().min(max_rows)
        }
        _ => return 0,
    };
    rows as u16 + 2
}

/// The first row of a window of `height` rows that shows `selected`.
fn window_start(selected: usize, len: usize, height: usize) -> usize {
    if len <= height {
        0
    } else {
        selected.saturating_sub(height / 2).min(len - height)
    }
}

/// One list row: pointer, label (padded to `label_col` columns when given),
/// mark, and the detail (after the label column, or right-aligned).
fn row(
    label: &str,
    detail: &str,
    mark: &str,
    selected: bool,
    width: usize,
    label_col: Option<usize>,
) -> Line<'static> {
    let pointer = if selected { "› " } else { "  " };
    let base = if selected {
        Style::default()
            .fg(theme::accent())
            .add_modifier(Modifier::BOLD)
    } else {
        Style::default()
    };
    let label = truncate(label, width.saturating_sub(4).max(1));
    let used = 2 + str_width(&label) + str_width(mark);
    let room = width.saturating_sub(used + 2);
    let detail = if detail.is_empty() || room < 4 {
        String::new()
    } else {
        truncate(detail, room)
    };
    let pad = match label_col {
        Some(col) => col.saturating_sub(str_width(&label) + str_width(mark)) + 2,
        None => width.saturating_sub(used + str_width(&detail)).max(2),
    };
    let pad = if used + pad + str_width(&detail) > width {
        2
    } else {
        pad
    };
    Line::from(vec![
        Span::styled(pointer, base),
        Span::styled(label, base),
        Span::styled(mark.to_string(), theme::success()),
        Span::raw(" ".repeat(pad)),
        Span::styled(detail, theme::dim()),
    ])
}

/// A selector: filter on the title, the list below.
pub fn draw_selector(f: &mut Frame<'_>, sel: &Selector, above: Rect) {
    let visible = sel.visible();
    let rows = visible.len().clamp(1, MAX_ROWS);
    let area = popup_rect(above, rows);
    let inner_h = area.height.saturating_sub(2) as usize;
    let width = area.width.saturating_sub(2) as usize;
    let bottom = match &sel.prompt {
        Some(label) => format!(" {label}: {}▏ · enter save · esc cancel ", sel.filter),
        None => {
            let filter = if sel.filter.is_empty() {
                "type to filter".to_string()
            } else {
                format!("filter: {}", sel.filter)
            };
            let own = sel
                .hint
                .as_deref()
                .map(|h| format!(" · {h}"))
                .unwrap_or_default();
            format!(" {filter} · ↑↓ move · enter choose{own} · esc cancel ")
        }
    };
    let block = Block::bordered()
        .border_style(Style::default().fg(theme::border_accent()))
        .title(Span::styled(format!(" {} ", sel.title), theme::bold()))
        .title_bottom(Span::styled(bottom, theme::dim()));
    let start = window_start(sel.selected, visible.len(), inner_h);
    // `/tree`'s fold markers (`⊟` open, `⊞` folded) in a gutter of their own.
    let folds = sel.fold_marks();
    let mut lines: Vec<Line<'static>> = visible
        .iter()
        .enumerate()
        .skip(start)
        .take(inner_h)
        .map(|(pos, &i)| {
            let it = &sel.items[i];
            let mark = if it.current { " ✓" } else { "" };
            let label = match folds.get(i) {
                Some(fold) => std::borrow::Cow::Owned(format!("{}{}", fold.glyph(), it.label)),
                None => std::borrow::Cow::Borrowed(it.label.as_str()),
            };
            row(&label, &it.detail, mark, pos == sel.selected, width, None)
        })
        .collect();
    if lines.is_empty() {
        lines.push(Line::from(Span::styled(
            "  (nothing matches)",
            theme::dim(),
        )));
    }
    f.render_widget(Clear, area);
    f.render_widget(Paragraph::new(lines).block(block), area);
}

/// A completion list of at most `max_rows` rows (0: [`MAX_ROWS`]).
pub fn draw_completion(f: &mut Frame<'_>, c: &Completion, above: Rect, max_rows: usize) {
    if c.items.is_empty() {
        return;
    }
    let max_rows = if max_rows == 0 { MAX_ROWS } else { max_rows };
    let rows = c.items.len().min(max_rows);
    let area = popup_rect(above, rows);
    let inner_h = area.height.saturating_sub(2) as usize;
    let width = area.width.saturating_sub(2) as usize;
    let start = window_start(c.selected, c.items.len(), inner_h);
    let col = c
        .items
        .iter()
        .map(|i| str_width(&i.label))
        .max()
        .unwrap_or(0)
        .min(width / 2);
    let lines: Vec<Line<'static>> = c
        .items
        .iter()
        .enumerate()
        .skip(start)
        .take(inner_h)
        .map(|(i, it)| row(&it.label, &it.detail, "", i == c.selected, width, Some(col)))
        .collect();
    let block = Block::bordered()
        .border_style(theme::dim())
        .title_bottom(Span::styled(" tab/enter insert · esc close ", theme::dim()));
    f.render_widget(Clear, area);
    f.render_widget(Paragraph::new(lines).block(block), area);
}

/// The transcript search: a box at the top right of the conversation (two
/// fifths of its width, at least 24 columns), the query in it with the
/// cursor, the match count on its border.
pub fn draw_search(f: &mut Frame<'_>, search: &Search, conversation: Rect) {
    let width = (conversation.width * 2 / 5)
        .max(24)
        .min(conversation.width.saturating_sub(2));
    if width < 8 || conversation.height < 4 {
        return;
    }
    let area = Rect {
        x: conversation.right() - width - 1,
        y: conversation.y + 1,
        width,
        height: 3,
    };
    let room = usize::from(width - 2).saturating_sub(1);
    // The end of a long query, where the cursor is.
    let query = search.query();
    let mut shown = query;
    while str_width(shown) > room {
        let mut chars = shown.chars();
        chars.next();
        shown = chars.as_str();
    }
    let block = Block::bordered()
        .border_style(Style::default().fg(theme::border_accent()))
        .title(Span::styled(" Find transcript ", theme::bold()))
        .title(
            Line::from(Span::styled(
                format!(" {} ", search.status()),
                theme::bold(),
            ))
            .right_aligned(),
        )
        .title_bottom(Span::styled(
            " enter next · shift+enter prev · esc ",
            theme::dim(),
        ));
    f.render_widget(Clear, area);
    f.render_widget(
        Paragraph::new(Line::from(shown.to_string())).block(block),
        area,
    );
    f.set_cursor_position((area.x + 1 + str_width(shown) as u16, area.y + 1));
}
