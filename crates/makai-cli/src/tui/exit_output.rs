//! What the terminal keeps when the UI ends (pi's `fullscreenExitOutput`).
//!
//! The UI draws on the alternate screen, which the terminal throws away when
//! the UI leaves it. With `"transcript"` (the default) the conversation, as
//! the UI drew it, with its colours, is written to the normal screen after
//! that, so it stays in the terminal's scrollback; with `"resume-hint"` the
//! screen is left as it was before makai started. Either way a line follows
//! that says how to resume the session, when it was saved.

use std::borrow::Borrow;
use std::io::{self, Write};

use ratatui::backend::IntoCrossterm;
use ratatui::crossterm::queue;
use ratatui::crossterm::style::{
    Attribute, Color as CrosstermColor, SetAttribute, SetBackgroundColor, SetForegroundColor,
};
use ratatui::style::Modifier;
use ratatui::text::Line;

use makai_coding::settings::Settings;

/// pi's `fullscreenExitOutput`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ExitOutput {
    /// The conversation is written to the normal screen.
    #[default]
    Transcript,
    /// Only the line saying how to resume.
    ResumeHint,
}

impl ExitOutput {
    /// The setting's value (pi's rule: anything but `"resume-hint"` is
    /// `"transcript"`).
    pub fn of(settings: &Settings) -> ExitOutput {
        match settings.extra.get("fullscreenExitOutput") {
            Some(serde_json::Value::String(s)) if s == "resume-hint" => ExitOutput::ResumeHint,
            _ => ExitOutput::Transcript,
        }
    }
}

/// The line that says how to open the session `id` again.
pub fn resume_hint(id: &str) -> String {
    format!("To resume this session: makai --session {id}")
}

/// Writes `lines` with their colours and attributes, one a line (the
/// terminal wraps what is wider than it), then `hint` dimmed.
pub fn write<L: Borrow<Line<'static>>>(
    out: &mut impl Write,
    lines: impl IntoIterator<Item = L>,
    hint: Option<&str>,
) -> io::Result<()> {
    for line in lines {
        let line = line.borrow();
        for span in &line.spans {
            let style = line.style.patch(span.style);
            let text: String = span.content.chars().filter(|c| !c.is_control()).collect();
            if text.is_empty() {
                continue;
            }
            let plain = style.fg.is_none() && style.bg.is_none() && style.add_modifier.is_empty();
            if !plain {
                if let Some(fg) = style.fg {
                    queue!(out, SetForegroundColor(fg.into_crossterm()))?;
                }
                if let Some(bg) = style.bg {
                    queue!(out, SetBackgroundColor(bg.into_crossterm()))?;
                }
                super::backend::modifier_change(out, Modifier::empty(), style.add_modifier)?;
            }
            let link = style.underline_color.and_then(super::links::url_of);
            if let Some(url) = &link {
                super::links::write_open(out, url)?;
            }
            out.write_all(text.as_bytes())?;
            if link.is_some() {
                super::links::write_close(out)?;
            }
            if !plain {
                queue!(
                    out,
                    SetForegroundColor(CrosstermColor::Reset),
                    SetBackgroundColor(CrosstermColor::Reset),
                    SetAttribute(Attribute::Reset)
                )?;
            }
        }
        out.write_all(b"\n")?;
    }
    if let Some(hint) = hint {
        queue!(out, SetAttribute(Attribute::Dim))?;
        out.write_all(hint.as_bytes())?;
        queue!(out, SetAttribute(Attribute::Reset))?;
        out.write_all(b"\n")?;
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use ratatui::style::{Color, Style};
    use ratatui::text::Span;

    use super::*;

    #[test]
    fn the_setting_is_pi_s_and_anything_else_is_the_transcript() {
        let mut settings = Settings::default();
        assert_eq!(ExitOutput::of(&settings), ExitOutput::Transcript);
        for (value, want) in [
            (serde_json::json!("resume-hint"), ExitOutput::ResumeHint),
            (serde_json::json!("transcript"), ExitOutput::Transcript),
            (serde_json::json!("nothing"), ExitOutput::Transcript),
            (serde_json::json!(true), ExitOutput::Transcript),
        ] {
            settings
                .extra
                .insert("fullscreenExitOutput".into(), value.clone());
            assert_eq!(ExitOutput::of(&settings), want, "{value}");
        }
    }

    #[test]
    fn lines_keep_their_text_and_styles_and_end_reset() {
        let lines = [
            Line::from(vec![
                Span::raw("plain "),
                Span::styled(
                    "bold red",
                    Style::default().fg(Color::Red).add_modifier(Modifier::BOLD),
                ),
                Span::raw(" tab\there"),
            ]),
            Line::default(),
        ];
        let mut out = Vec::new();
        write(
            &mut out,
            &lines,
            Some("To resume this session: makai --session abc"),
        )
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with(
                "plain \u{1b}[38;5;1m\u{1b}[1mbold red\u{1b}[39m\u{1b}[49m\u{1b}[0m tabhere\n\n"
            ),
            "{text:?}"
        );
        assert!(
            text.ends_with("\u{1b}[2mTo resume this session: makai --session abc\u{1b}[0m\n"),
            "{text:?}"
        );
    }

    #[test]
    fn a_link_stays_a_link_in_the_transcript() {
        crate::tui::links::set_for_this_thread(true, std::path::Path::new("/"));
        let link = crate::tui::links::style_for("https://example.com/kept");
        let lines = [Line::from(vec![
            Span::raw("see "),
            Span::styled("the docs", link),
        ])];
        let mut out = Vec::new();
        write(&mut out, &lines, None).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "see \u{1b}]8;;https://example.com/kept\u{1b}\\the docs\u{1b}]8;;\u{1b}\\\n"
        );
    }
}
