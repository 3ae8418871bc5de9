//! Blocks of the conversation shown collapsed, as pi shows them: a skill's
//! instructions invoked with `/skill:name` (`[skill] name`), a compaction
//! summary (`[compaction] Compacted from N tokens`) and a branch summary
//! (`[branch] Branch summary`), on the theme's `customMessage*` colours.
//! Ctrl+O (`app.tools.expand`) expands them with the tool output; a click
//! expands or collapses one ([`Summary::expanded`]).

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::{markdown, theme};

/// What a collapsed block holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SummaryKind {
    /// A skill's instructions, invoked by name.
    Skill {
        /// The skill's name.
        name: String,
    },
    /// The summary that replaced earlier messages.
    Compaction {
        /// The context's tokens before compaction.
        tokens_before: u64,
    },
    /// The summary of a branch left.
    Branch,
    /// A message of another program's kind (pi's custom messages, such as
    /// an extension's), always shown whole under its kind.
    Custom {
        /// Its `customType`.
        custom_type: String,
    },
}

/// A collapsed block and its text (markdown).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Summary {
    /// What it is.
    pub kind: SummaryKind,
    /// Its text: the skill's instructions, or the summary.
    pub body: String,
    /// Expanded (`Some(true)`) or collapsed by a click; `None`: as Ctrl+O
    /// has the tool output.
    pub expanded: Option<bool>,
}

impl Summary {
    /// A block that follows Ctrl+O.
    pub fn new(kind: SummaryKind, body: impl Into<String>) -> Summary {
        Summary {
            kind,
            body: body.into(),
            expanded: None,
        }
    }

    /// Whether it shows its text, when the tool output is expanded or not.
    pub fn is_expanded(&self, expand_all: bool) -> bool {
        matches!(self.kind, SummaryKind::Custom { .. }) || self.expanded.unwrap_or(expand_all)
    }

    /// Whether a click or Ctrl+O changes it (a custom message is always
    /// shown whole).
    pub fn toggles(&self) -> bool {
        !matches!(self.kind, SummaryKind::Custom { .. })
    }
}

/// The rows of `summary` at `width` columns: its label, then collapsed one
/// line saying how to expand it, or expanded its text under a bold title;
/// a column of padding each side and a row above and below, on the
/// theme's `customMessageBg`.
pub fn lines(summary: &Summary, expand_all: bool, width: usize) -> Vec<Line<'static>> {
    let bg = Style::default().bg(theme::custom_message_bg());
    let text = bg.fg(theme::custom_message_text());
    let label = bg
        .fg(theme::custom_message_label())
        .add_modifier(Modifier::BOLD);
    let hint = bg.patch(theme::dim());
    let inner = width.saturating_sub(2).max(8);
    let expanded = summary.is_expanded(expand_all);
    let mut body: Vec<Line<'static>> = Vec::new();
    let (tag, collapsed, title) = match &summary.kind {
        SummaryKind::Skill { name } => ("[skill]", name.clone(), name.clone()),
        SummaryKind::Compaction { tokens_before } => {
            let tokens = thousands(*tokens_before);
            (
                "[compaction]",
                format!("Compacted from {tokens} tokens"),
                format!("Compacted from {tokens} tokens"),
            )
        }
        SummaryKind::Branch => (
            "[branch]",
            "Branch summary".to_string(),
            "Branch Summary".to_string(),
        ),
        SummaryKind::Custom { custom_type } => {
            return framed(custom_lines(custom_type, &summary.body, inner), width);
        }
    };
    let is_skill = matches!(summary.kind, SummaryKind::Skill { .. });
    if is_skill && !expanded {
        // One line: the label, the name and the hint.
        body.push(Line::from(vec![
            Span::styled(format!("{tag} "), label),
            Span::styled(collapsed, text),
            Span::styled(" (ctrl+o to expand)", hint),
        ]));
    } else {
        body.push(Line::from(Span::styled(tag, label)));
        if !is_skill {
            body.push(Line::default());
        }
        if expanded {
            let markdown_text = format!("**{title}**\n\n{}", summary.body);
            for mut line in markdown::render(&markdown_text, inner) {
                for span in &mut line.spans {
                    span.style = text.patch(span.style);
                }
                body.push(line);
            }
        } else {
            body.push(Line::from(vec![
                Span::styled(format!("{collapsed} ("), text),
                Span::styled("ctrl+o", hint),
                Span::styled(" to expand)", text),
            ]));
        }
    }
    framed(body, width)
}

/// A custom message's rows: `[type]`, a blank row, its text (markdown).
fn custom_lines(custom_type: &str, body: &str, inner: usize) -> Vec<Line<'static>> {
    let bg = Style::default().bg(theme::custom_message_bg());
    let text = bg.fg(theme::custom_message_text());
    let label = bg
        .fg(theme::custom_message_label())
        .add_modifier(Modifier::BOLD);
    let mut out = vec![
        Line::from(Span::styled(format!("[{custom_type}]"), label)),
        Line::default(),
    ];
    for mut line in markdown::render(body, inner) {
        for span in &mut line.spans {
            span.style = text.patch(span.style);
        }
        out.push(line);
    }
    out
}

/// `body` on the blocks' background: a column of padding each side, a row
/// above and below, every row `width` wide.
fn framed(body: Vec<Line<'static>>, width: usize) -> Vec<Line<'static>> {
    let bg = Style::default().bg(theme::custom_message_bg());
    let mut out = Vec::with_capacity(body.len() + 2);
    out.push(Line::from(Span::styled(" ".repeat(width), bg)));
    for line in body {
        let used = line.width();
        let mut spans = vec![Span::styled(" ", bg)];
        spans.extend(line.spans.into_iter().map(|s| {
            let style = bg.patch(s.style);
            Span::styled(s.content, style)
        }));
        spans.push(Span::styled(" ".repeat(width.saturating_sub(used + 1)), bg));
        out.push(Line::from(spans));
    }
    out.push(Line::from(Span::styled(" ".repeat(width), bg)));
    out
}

/// `n` with commas between thousands, as pi's `toLocaleString` writes it.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.to_string().trim().to_string())
            .collect()
    }

    #[test]
    fn blocks_are_one_line_collapsed_and_their_text_expanded() {
        let skill = Summary::new(
            SummaryKind::Skill {
                name: "review".into(),
            },
            "Check **everything**.",
        );
        let collapsed = text(&lines(&skill, false, 60));
        assert_eq!(collapsed, ["", "[skill] review (ctrl+o to expand)", ""]);
        let expanded = text(&lines(&skill, true, 60));
        assert_eq!(
            expanded,
            ["", "[skill]", "review", "", "Check everything.", ""]
        );
        let compaction = Summary::new(
            SummaryKind::Compaction {
                tokens_before: 123_456,
            },
            "We fixed the build.",
        );
        assert_eq!(
            text(&lines(&compaction, false, 60)),
            [
                "",
                "[compaction]",
                "",
                "Compacted from 123,456 tokens (ctrl+o to expand)",
                ""
            ]
        );
        // A click's choice wins over Ctrl+O's.
        let clicked = Summary {
            expanded: Some(true),
            ..compaction
        };
        assert_eq!(
            text(&lines(&clicked, false, 60)),
            [
                "",
                "[compaction]",
                "",
                "Compacted from 123,456 tokens",
                "",
                "We fixed the build.",
                ""
            ]
        );
        let branch = Summary {
            expanded: Some(false),
            ..Summary::new(SummaryKind::Branch, "Tried X.")
        };
        assert_eq!(
            text(&lines(&branch, true, 60)),
            ["", "[branch]", "", "Branch summary (ctrl+o to expand)", ""]
        );
        // Every row fills the width on the block's background.
        for line in lines(&branch, true, 60) {
            assert_eq!(line.width(), 60);
            assert!(
                line.spans
                    .iter()
                    .all(|s| s.style.bg == Some(theme::custom_message_bg()))
            );
        }
    }

    #[test]
    fn a_custom_message_is_shown_whole_under_its_type_and_never_collapses() {
        let custom = Summary::new(
            SummaryKind::Custom {
                custom_type: "deploy-status".into(),
            },
            "Deployed **v2**.",
        );
        assert!(!custom.toggles());
        let expected = ["", "[deploy-status]", "", "Deployed v2.", ""];
        assert_eq!(text(&lines(&custom, false, 40)), expected);
        let clicked = Summary {
            expanded: Some(false),
            ..custom
        };
        assert_eq!(text(&lines(&clicked, false, 40)), expected);
    }

    #[test]
    fn thousands_are_separated_as_pi_writes_them() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
