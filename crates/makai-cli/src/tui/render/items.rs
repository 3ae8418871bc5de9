//! Each conversation item as styled, wrapped lines.

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;

use crate::tui::markdown;
use crate::tui::theme;
use crate::tui::transcript::{ItemKind, Level, ToolCallView, ToolState};
use crate::tui::wrap::{
    hard_wrap, hard_wrap_pieces, indent_rows, str_width, truncate, truncate_pieces, wrap_text,
};

/// Result lines shown while tool output is collapsed.
const COLLAPSED_RESULT_LINES: usize = 6;
/// Result lines shown at most when expanded.
const EXPANDED_RESULT_LINES: usize = 2000;
/// The lines of a diff shown while tool output is collapsed.
const COLLAPSED_DIFF_LINES: usize = 12;

/// How items are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct View {
    /// Columns available.
    pub width: usize,
    /// Thinking shown in full.
    pub show_thinking: bool,
    /// Tool results shown in full.
    pub expand_tools: bool,
    /// The theme's generation ([`theme::generation`]): rows drawn with
    /// another theme's colours are drawn again.
    pub theme: u32,
    /// Items' images drawn below them (the terminal shows them; never in
    /// the transcript left at exit).
    pub images: bool,
    /// Blank columns on each side of an item's rows (pi's `outputPad`, 0 or
    /// 1); a user message's background covers them.
    pub margin: usize,
}

/// The columns an item's text is laid out in: the width less the margins.
pub fn text_width(view: View) -> usize {
    view.width.saturating_sub(2 * view.margin).max(10)
}

/// How shown thinking is drawn.
pub fn thinking_style() -> Style {
    theme::thinking_text().add_modifier(Modifier::ITALIC)
}

/// The lines of one item, after the view's margin.
pub fn item_lines(kind: &ItemKind, view: View) -> Vec<Line<'static>> {
    let w = text_width(view);
    let mut lines = match kind {
        ItemKind::User(text) => return user_lines(text, w, view.margin),
        ItemKind::Text(text) => markdown::render(text, w),
        ItemKind::Thinking(text) => {
            let style = thinking_style();
            if !view.show_thinking || text.trim().is_empty() {
                vec![Line::from(Span::styled(
                    "Thinking… (ctrl+t to show or hide)",
                    style,
                ))]
            } else {
                wrap_text(text.trim(), w, style, "")
            }
        }
        ItemKind::Tool(t) => tool_lines(t, view, w),
        ItemKind::Summary(s) => crate::tui::summary::lines(s, view.expand_tools, w),
        ItemKind::Notice(level, text) => {
            let style = match level {
                Level::Info => theme::muted(),
                Level::Warning => theme::warning(),
                Level::Error => theme::error(),
            };
            wrap_text(text, w, style, "")
        }
    };
    indent_rows(&mut lines, view.margin);
    lines
}

/// A user message `w` columns wide in its background, which also covers
/// `margin` columns on each side. Its text starts a column in either way.
fn user_lines(text: &str, w: usize, margin: usize) -> Vec<Line<'static>> {
    let style = Style::default().bg(theme::user_bg()).fg(theme::user_text());
    let indent = if margin == 0 { " " } else { "" };
    let mut out = Vec::new();
    for mut line in wrap_text(
        text.trim_end(),
        w.saturating_sub(indent.len()),
        style,
        indent,
    ) {
        let pad = (w + margin).saturating_sub(line.width());
        line.spans.push(Span::styled(" ".repeat(pad), style));
        if margin > 0 {
            line.spans
                .insert(0, Span::styled(crate::tui::wrap::blanks(margin), style));
        }
        out.push(line);
    }
    out
}

fn str_arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

/// One-line summary of a call's arguments for the built-in tools; `None` for
/// other tools (their arguments are shown as JSON).
fn summary(t: &ToolCallView) -> Option<String> {
    let a = &t.args;
    let path = str_arg(a, "path").or_else(|| str_arg(a, "file_path"));
    Some(match t.name.as_str() {
        "bash" => format!("$ {}", str_arg(a, "command")?),
        "read" => {
            let mut s = path?.to_string();
            let offset = a.get("offset").and_then(Value::as_u64);
            let limit = a.get("limit").and_then(Value::as_u64);
            if offset.is_some() || limit.is_some() {
                let from = offset.unwrap_or(1);
                match limit {
                    Some(l) => s.push_str(&format!(":{from}-{}", from + l.saturating_sub(1))),
                    None => s.push_str(&format!(":{from}")),
                }
            }
            s
        }
        "write" => {
            let lines = str_arg(a, "content").map_or(0, |c| c.lines().count());
            format!("{} ({lines} lines)", path?)
        }
        "edit" => path?.to_string(),
        // A script: its lines (the first in the call's line, the others
        // when tool output is expanded).
        "codemode" => str_arg(a, "code")?.trim_start_matches('\n').to_string(),
        "ls" => path.unwrap_or(".").to_string(),
        "find" | "grep" => {
            let pattern = str_arg(a, "pattern")?;
            format!("{pattern} in {}", path.unwrap_or("."))
        }
        // A sub-agent call: the spec and the task's first line (its children
        // then show one status line each: spec, turns, cost).
        "task" => match a.get("tasks").and_then(Value::as_array) {
            Some(tasks) => {
                let names: Vec<&str> = tasks
                    .iter()
                    .map(|t| str_arg(t, "agent").unwrap_or("worker"))
                    .collect();
                format!("{} tasks: {}", tasks.len(), names.join(", "))
            }
            None => format!(
                "{}: {}",
                str_arg(a, "agent").unwrap_or("worker"),
                str_arg(a, "task")?.lines().next().unwrap_or("")
            ),
        },
        _ => return None,
    })
}

/// Where the path of a built-in file tool is in its [`summary`], and the
/// style that makes it a link to the file; `None` when links are not drawn
/// or the tool names no file.
fn linked_path(t: &ToolCallView) -> Option<(std::ops::Range<usize>, Style)> {
    let a = &t.args;
    let path = str_arg(a, "path").or_else(|| str_arg(a, "file_path"));
    let (start, path) = match t.name.as_str() {
        "read" | "write" | "edit" => (0, path?),
        "ls" => (0, path.unwrap_or(".")),
        "find" | "grep" => {
            let pattern = str_arg(a, "pattern")?;
            (pattern.len() + " in ".len(), path.unwrap_or("."))
        }
        _ => return None,
    };
    let style = super::super::links::style_for_path(path);
    (style != Style::default()).then(|| (start..start + path.len(), style))
}

fn tool_lines(t: &ToolCallView, view: View, w: usize) -> Vec<Line<'static>> {
    let (bullet_style, name_style) = match (t.state, t.is_error) {
        (ToolState::Done, true) => (theme::error(), theme::bold().patch(theme::error())),
        (ToolState::Done, false) => (theme::success(), theme::bold()),
        _ => (theme::warning(), theme::bold()),
    };
    let mut out = Vec::new();
    let head = vec![
        Span::styled("● ", bullet_style),
        Span::styled(t.name.clone(), name_style),
        Span::raw(" "),
    ];
    let head_w: usize = head.iter().map(Span::width).sum();
    let known = summary(t);
    // The language of the file a `read` or `write` names, for its code.
    let language = matches!(t.name.as_str(), "read" | "write")
        .then(|| str_arg(&t.args, "path").or_else(|| str_arg(&t.args, "file_path")))
        .flatten()
        .and_then(makai_highlight::Language::from_path);
    let args_text = match &known {
        Some(s) => s.clone(),
        None if t.args.is_null() => t.partial_args.replace('\n', " "),
        None => t.args.to_string(),
    };
    let first_line = args_text.lines().next().unwrap_or("").to_string();
    let mut header = head;
    let shown_args = truncate(&first_line, w.saturating_sub(head_w));
    // The path a file tool works on opens on a click (pi's file links), as
    // much of it as is shown.
    let visible = if shown_args.len() == first_line.len() {
        shown_args.len()
    } else {
        shown_args.len().saturating_sub('…'.len_utf8())
    };
    let link = known
        .as_ref()
        .and_then(|_| linked_path(t))
        .and_then(|(range, style)| {
            let range = range.start..range.end.min(visible);
            let parts = (
                shown_args.get(..range.start)?,
                shown_args.get(range.clone())?,
                shown_args.get(range.end..)?,
            );
            (!range.is_empty()).then_some((parts, style))
        });
    match link {
        Some(((before, path, after), style)) => {
            for (text, style) in [
                (before, theme::muted()),
                (path, theme::muted().patch(style)),
                (after, theme::muted()),
            ] {
                if !text.is_empty() {
                    header.push(Span::styled(text.to_string(), style));
                }
            }
        }
        None => header.push(Span::styled(shown_args, theme::muted())),
    }
    out.push(Line::from(header));
    let multi_line = args_text.lines().count() > 1;
    if view.expand_tools {
        if multi_line && known.is_some() {
            for l in args_text.lines().skip(1) {
                out.extend(hard_wrap(l, w, theme::muted(), "  "));
            }
        }
        let content = str_arg(&t.args, "content").filter(|_| t.name == "write");
        if let Some(content) = content {
            // The file as it will read, highlighted when its name says how.
            let shown = Shown {
                expand: true,
                collapsed: 0,
                what: "lines",
            };
            match &language {
                Some(language) => out.extend(super::code::source(content, language, &shown, w)),
                None => {
                    let lines: Vec<&str> = content.lines().collect();
                    out.extend(shown.lines(&lines, w, |_| theme::tool_output()));
                }
            }
        } else if known.is_none() || t.name == "write" || t.name == "edit" {
            let pretty = serde_json::to_string_pretty(&t.args).unwrap_or_default();
            if !t.args.is_null() && (known.is_some() || str_width(&args_text) + head_w > w) {
                out.extend(hard_wrap(&pretty, w, theme::dim(), "  "));
            }
        }
    } else if multi_line {
        out.push(Line::from(Span::styled(
            format!(
                "  … {} more lines of arguments",
                args_text.lines().count() - 1
            ),
            theme::dim(),
        )));
    }
    if let Some(result) = &t.result {
        // `edit` ends its text with the diff it also gives in its details:
        // the diff is drawn once, in colour, below the rest.
        let text = t
            .diff
            .as_deref()
            .and_then(|d| result.trim_end().strip_suffix(d.trim_end()))
            .map_or(result.as_str(), str::trim_end);
        match &language {
            Some(language) if t.name == "read" && !t.is_error && !text.trim().is_empty() => {
                let shown = Shown {
                    expand: view.expand_tools,
                    collapsed: COLLAPSED_RESULT_LINES,
                    what: "lines",
                };
                out.extend(super::code::numbered(text, language, &shown, w));
            }
            _ => out.extend(result_lines(text, t.is_error, view.expand_tools, w)),
        }
    }
    if let Some(diff) = &t.diff {
        out.extend(diff_lines(diff, view.expand_tools, w));
    }
    out
}

/// A tool's unified diff: added, removed and context lines in the theme's
/// diff colours, hunk headers dim, the file header left out (the call's
/// line names the file). Collapsed, the first lines and a count of the rest.
fn diff_lines(diff: &str, expand: bool, w: usize) -> Vec<Line<'static>> {
    let lines: Vec<&str> = diff
        .lines()
        .filter(|l| !l.starts_with("--- ") && !l.starts_with("+++ "))
        .collect();
    let style = |l: &str| {
        if l.starts_with("@@") {
            theme::dim()
        } else if l.starts_with('+') {
            theme::diff_added()
        } else if l.starts_with('-') {
            theme::diff_removed()
        } else {
            theme::diff_context()
        }
    };
    let shown = Shown {
        expand,
        collapsed: COLLAPSED_DIFF_LINES,
        what: "diff lines",
    };
    shown.lines(&lines, w, style)
}

/// How many lines of a tool's output are drawn, and how.
pub(super) struct Shown {
    /// Tool output is expanded (Ctrl+O): up to [`EXPANDED_RESULT_LINES`],
    /// wrapped; else `collapsed` lines, each cut to the width.
    pub expand: bool,
    pub collapsed: usize,
    /// What the count of the lines left out counts ("lines").
    pub what: &'static str,
}

impl Shown {
    /// How many lines are drawn.
    pub fn limit(&self) -> usize {
        if self.expand {
            EXPANDED_RESULT_LINES
        } else {
            self.collapsed
        }
    }

    /// `lines` indented by two columns in `style`'s style for each, then the
    /// count of those left out.
    fn lines(&self, lines: &[&str], w: usize, style: impl Fn(&str) -> Style) -> Vec<Line<'static>> {
        let styled: Vec<Vec<(&str, Style)>> = lines
            .iter()
            .take(self.limit())
            .map(|l| vec![(*l, style(l))])
            .collect();
        self.pieces(&styled, lines.len(), w)
    }

    /// The first [`limit`](Self::limit) lines of `total`, each made of
    /// styled pieces, indented by two columns, then the count of those left
    /// out.
    pub fn pieces(
        &self,
        lines: &[Vec<(&str, Style)>],
        total: usize,
        w: usize,
    ) -> Vec<Line<'static>> {
        let limit = self.limit();
        let mut out = Vec::new();
        for line in lines.iter().take(limit) {
            if self.expand {
                out.extend(hard_wrap_pieces(line, w, "  ", Style::default()));
            } else {
                let mut spans = vec![Span::raw("  ")];
                spans.extend(truncate_pieces(line, w.saturating_sub(2)));
                out.push(Line::from(spans));
            }
        }
        if total > limit {
            let hint = if self.expand {
                ""
            } else {
                " (ctrl+o to expand)"
            };
            out.push(Line::from(Span::styled(
                format!("  … {} more {}{hint}", total - limit, self.what),
                theme::dim(),
            )));
        }
        out
    }
}

fn result_lines(result: &str, is_error: bool, expand: bool, w: usize) -> Vec<Line<'static>> {
    let style = if is_error {
        theme::error()
    } else {
        theme::tool_output()
    };
    let text = result.trim_end_matches('\n');
    if text.trim().is_empty() {
        return vec![Line::from(Span::styled("  (no output)", theme::dim()))];
    }
    let lines: Vec<&str> = text.lines().collect();
    let shown = Shown {
        expand,
        collapsed: COLLAPSED_RESULT_LINES,
        what: "lines",
    };
    shown.lines(&lines, w, |_| style)
}

#[cfg(test)]
#[path = "items_tests.rs"]
mod tests;
