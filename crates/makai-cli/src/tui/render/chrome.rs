//! The parts around the conversation: status line, queued messages, editor
//! and footer.

use std::time::Instant;

use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders};

use crate::tui::app_state::UiState;
use crate::tui::screen::Frame;
use crate::tui::theme;
use crate::tui::transcript::Level;
use crate::tui::wrap::{str_width, truncate};

/// Spinner frames.
const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
/// Editor rows shown at most (more scroll inside it).
const EDITOR_MAX_ROWS: usize = 10;
/// Queued messages listed at most.
const QUEUE_MAX_ROWS: usize = 4;

/// Rows the editor takes, borders included.
pub fn editor_height(st: &UiState, width: u16) -> u16 {
    let (rows, _) = st.editor.layout(editor_text_width(st, width) as usize);
    rows.len().clamp(1, EDITOR_MAX_ROWS) as u16 + 2
}

/// Columns of text the editor has in `width`: a column on each side, and
/// pi's `editorPaddingX` more.
fn editor_text_width(st: &UiState, width: u16) -> u16 {
    width.saturating_sub(2 + 2 * st.editor_padding)
}

/// The status line: spinner while busy, else a transient message.
pub fn draw_status(f: &mut Frame<'_>, st: &UiState, area: Rect) {
    let spin = SPINNER[st.spinner % SPINNER.len()];
    let line = if st.compacting {
        Line::from(vec![
            Span::styled(format!("{spin} "), theme::info()),
            Span::styled(
                format!(
                    "{}… (esc to cancel)",
                    st.summarizing.unwrap_or("Compacting the context")
                ),
                theme::muted(),
            ),
        ])
    } else if st.busy() {
        let what = if st.aborting {
            "Aborting…"
        } else if st.starting {
            "Sending…"
        } else {
            "Working…"
        };
        Line::from(vec![
            Span::styled(format!("{spin} "), theme::info()),
            Span::styled(what.to_string(), theme::muted()),
            Span::styled(" (esc to interrupt)", theme::dim()),
        ])
    } else if let Some(s) = st.status.as_ref().filter(|s| s.until > Instant::now()) {
        let style = match s.level {
            Level::Info => theme::info(),
            Level::Warning => theme::warning(),
            Level::Error => theme::error(),
        };
        Line::from(Span::styled(s.text.clone(), style))
    } else {
        Line::default()
    };
    f.draw_lines(area, [&line]);
}

/// One line per queued message (cut to fit), most recent last.
pub fn queue_lines(st: &UiState) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let all: Vec<(&str, &String)> = st
        .steering
        .iter()
        .map(|m| ("Steering", m))
        .chain(st.follow_up.iter().map(|m| ("Follow-up", m)))
        .collect();
    let hidden = all.len().saturating_sub(QUEUE_MAX_ROWS);
    for (label, text) in all.iter().skip(hidden) {
        let one_line = text.replace('\n', " ");
        out.push(Line::from(vec![
            Span::styled(format!("{label}: "), theme::warning()),
            Span::styled(one_line, theme::muted()),
        ]));
    }
    if !all.is_empty() {
        let more = if hidden > 0 {
            format!("+{hidden} more queued · ")
        } else {
            String::new()
        };
        out.push(Line::from(Span::styled(
            format!("{more}queued until the agent is ready · alt+up to edit"),
            theme::dim(),
        )));
    }
    out
}

/// Queued messages above the editor.
pub fn draw_queue(f: &mut Frame<'_>, st: &UiState, area: Rect) {
    if area.height > 0 {
        let w = area.width as usize;
        let lines: Vec<Line<'static>> = queue_lines(st)
            .into_iter()
            .map(|l| {
                let text = truncate(&l.to_string(), w);
                if text == l.to_string() {
                    l
                } else {
                    Line::from(Span::styled(text, theme::muted()))
                }
            })
            .collect();
        f.draw_lines(area, lines.iter());
    }
}

/// The editor in a box whose colour tells the thinking level (or that a
/// `!` command is being typed: pi's `bashMode` colour); places the cursor.
pub fn draw_editor(f: &mut Frame<'_>, st: &UiState, area: Rect) {
    let bash = st
        .editor
        .lines()
        .first()
        .is_some_and(|l| l.starts_with('!'));
    let border = Style::default().fg(if bash {
        theme::bash_mode()
    } else {
        theme::thinking_color(st.footer.thinking)
    });
    let block = Block::default()
        .borders(Borders::TOP | Borders::BOTTOM)
        .border_style(border);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let text_area = Rect {
        x: inner.x + 1 + st.editor_padding,
        width: editor_text_width(st, inner.width),
        ..inner
    };
    if st.editor.is_empty() {
        let hint = if st.busy() {
            "Type to steer (enter) or queue a follow-up (alt+enter)…"
        } else {
            "Ask anything · / for commands · @ to attach a file path"
        };
        let hint = Line::from(Span::styled(hint, theme::dim()));
        f.draw_lines(text_area, [&hint]);
        if st.selector.is_none() {
            f.set_cursor_position((text_area.x, text_area.y));
        }
        return;
    }
    if text_area.height == 0 || text_area.width == 0 {
        return;
    }
    let (rows, (crow, ccol)) = st.editor.layout(text_area.width as usize);
    let height = text_area.height as usize;
    let first = (crow + 1).saturating_sub(height);
    let lines: Vec<Line<'static>> = rows
        .into_iter()
        .skip(first)
        .take(height)
        .map(Line::from)
        .collect();
    f.draw_lines(text_area, lines.iter());
    if st.selector.is_none() {
        f.set_cursor_position((
            text_area.x + ccol as u16,
            text_area.y + (crow - first) as u16,
        ));
    }
}

/// `1234` as `1.2k`, `1234567` as `1.2M`.
pub fn short_count(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..10_000 => format!("{:.1}k", n as f64 / 1e3),
        10_000..1_000_000 => format!("{}k", n / 1_000),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

/// The footer: working directory and session name; usage, cost and context
/// use on the left and the model with its thinking level on the right.
pub fn draw_footer(f: &mut Frame<'_>, st: &UiState, area: Rect) {
    let info = &st.footer;
    let w = area.width as usize;
    let mut top = info.cwd.clone();
    if let Some(name) = &info.session_name {
        top.push_str(&format!(" • {name}"));
    }
    let u = &info.usage;
    let mut stats = vec![
        format!("↑{}", short_count(u.input)),
        format!("↓{}", short_count(u.output)),
    ];
    if u.cache_read > 0 {
        stats.push(format!("R{}", short_count(u.cache_read)));
    }
    if u.cache_write > 0 {
        stats.push(format!("W{}", short_count(u.cache_write)));
    }
    stats.push(format!("${:.3}", u.cost.total));
    stats.extend(budget_stats(&info.budget));
    let ctx_style = match &info.context {
        Some(c) => {
            let pct = c
                .percent
                .map_or_else(|| "?".to_string(), |p| format!("{p:.1}%"));
            stats.push(format!("{pct}/{}", short_count(c.context_window)));
            match c.percent {
                Some(p) if p > 90.0 => theme::error(),
                Some(p) if p > 70.0 => theme::warning(),
                _ => theme::dim(),
            }
        }
        None => theme::dim(),
    };
    let left = stats.join(" ");
    let right = format!("{} • thinking {}", info.model, info.thinking.as_str());
    let gap = w.saturating_sub(str_width(&left) + str_width(&right));
    let bottom = if gap >= 2 {
        Line::from(vec![
            Span::styled(left, ctx_style),
            Span::raw(" ".repeat(gap)),
            Span::styled(right, theme::muted()),
        ])
    } else {
        Line::from(Span::styled(
            truncate(&format!("{left}  {right}"), w),
            theme::dim(),
        ))
    };
    let lines = [
        Line::from(Span::styled(truncate(&top, w), theme::dim())),
        bottom,
    ];
    f.draw_lines(area, lines.iter());
}

/// The caps in force with what the session tree spent against them
/// (`cap $0.42/$0.50`, `cap 120k/200k tok`); nothing without caps.
pub fn budget_stats(b: &makai_agent::LedgerReport) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(cap) = b.max_cost {
        out.push(format!(
            "cap {}/{}",
            makai_agent::budget::dollars(b.spent_cost),
            makai_agent::budget::dollars(cap)
        ));
    }
    if let Some(cap) = b.max_tokens {
        out.push(format!(
            "cap {}/{} tok",
            short_count(b.spent_tokens),
            short_count(cap)
        ));
    }
    if b.refused > 0 {
        out.push("budget exhausted".into());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{budget_stats, short_count};

    #[test]
    fn the_footer_shows_the_caps_and_what_was_spent() {
        assert!(budget_stats(&makai_agent::LedgerReport::default()).is_empty());
        let b = makai_agent::LedgerReport {
            max_cost: Some(0.5),
            spent_cost: 0.42,
            max_tokens: Some(200_000),
            spent_tokens: 120_000,
            refused: 1,
            ..Default::default()
        };
        assert_eq!(
            budget_stats(&b),
            ["cap $0.42/$0.50", "cap 120k/200k tok", "budget exhausted"]
        );
    }

    #[test]
    fn counts_are_short() {
        assert_eq!(short_count(999), "999");
        assert_eq!(short_count(1234), "1.2k");
        assert_eq!(short_count(200_000), "200k");
        assert_eq!(short_count(1_500_000), "1.5M");
    }
}
