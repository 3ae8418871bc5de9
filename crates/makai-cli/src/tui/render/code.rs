//! Source code in tool rows, highlighted in the theme's `syntax*` colours
//! (pi's read and write views): a `read` result's numbered lines, and the
//! content of a `write` call, in the language of the file's name.

use makai_highlight::Language;
use ratatui::style::Style;
use ratatui::text::Line;

use super::items::Shown;
use crate::tui::theme;

/// A `read` result in `language`: the code after each line's number and tab
/// highlighted (the lines as one text, so a comment or a string that spans
/// lines is seen whole), the numbers dim, and other lines (a note about the
/// lines left out) in the tool output's colour.
pub(super) fn numbered(
    text: &str,
    language: &Language,
    shown: &Shown,
    w: usize,
) -> Vec<Line<'static>> {
    let lines: Vec<&str> = text.lines().collect();
    let limit = shown.limit().min(lines.len());
    let split: Vec<Option<(&str, &str)>> =
        lines[..limit].iter().map(|l| numbered_line(l)).collect();
    let code: Vec<&str> = split.iter().flatten().map(|(_, code)| *code).collect();
    let joined = code.join("\n");
    let mut highlighted = makai_highlight::pieces(language, &joined).into_iter();
    let base = theme::tool_output();
    let styled: Vec<Vec<(&str, Style)>> = lines[..limit]
        .iter()
        .zip(&split)
        .map(|(line, split)| match split {
            Some((number, _)) => {
                let mut pieces = vec![(*number, theme::dim())];
                if let Some(code) = highlighted.next() {
                    pieces.extend(
                        code.into_iter()
                            .map(|(t, role)| (t, theme::syntax(role, base))),
                    );
                }
                pieces
            }
            None => vec![(*line, base)],
        })
        .collect();
    shown.pieces(&styled, lines.len(), w)
}

/// `text` (a file's content) highlighted in `language`.
pub(super) fn source(
    text: &str,
    language: &Language,
    shown: &Shown,
    w: usize,
) -> Vec<Line<'static>> {
    let text = text.strip_suffix('\n').unwrap_or(text);
    let base = theme::tool_output();
    let styled: Vec<Vec<(&str, Style)>> = makai_highlight::pieces(language, text)
        .into_iter()
        .take(shown.limit())
        .map(|line| {
            line.into_iter()
                .map(|(t, role)| (t, theme::syntax(role, base)))
                .collect()
        })
        .collect();
    shown.pieces(&styled, text.split('\n').count(), w)
}

/// A `read` line's number (with its tab) and code: `"  12\tfn x()"`.
fn numbered_line(line: &str) -> Option<(&str, &str)> {
    let (number, code) = line.split_once('\t')?;
    let digits = number.trim_start();
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| (&line[..number.len() + 1], code))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_lines_split_into_their_number_and_code() {
        assert_eq!(numbered_line("  12\tfn x()"), Some(("  12\t", "fn x()")));
        assert_eq!(numbered_line("3\t"), Some(("3\t", "")));
        assert_eq!(numbered_line("[more lines: use offset=3]"), None);
        assert_eq!(numbered_line("x\ty"), None);
        assert_eq!(numbered_line("\ty"), None);
    }
}
