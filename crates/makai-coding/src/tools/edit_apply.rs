//! The text engine behind `edit`: exact matching with counts and line numbers,
//! overlap checks, line-ending and BOM handling, unified diffs.

use similar::{DiffTag, TextDiff};

use makai_ai::quote::bounded;

use super::ToolError;

/// One replacement, with line endings already normalized to LF.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replacement {
    /// The exact text to find.
    pub old_text: String,
    /// What replaces it.
    pub new_text: String,
    /// Replace every occurrence instead of requiring exactly one.
    pub replace_all: bool,
}

/// A file's text split into its invisible framing and an LF-only body, with
/// what it takes to write an edited body back changing nothing but the
/// edited text: each untouched line keeps its own line ending, in a file
/// that mixes CRLF, LF and lone CR as in one that does not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Framed {
    /// True when the file starts with a UTF-8 byte order mark.
    pub bom: bool,
    /// True when the file's first line ends with CRLF.
    pub crlf: bool,
    /// The text without BOM, CRLF turned into LF.
    pub body: String,
    /// The text after the BOM as the file has it.
    raw: String,
    /// The body offsets of the line breaks that are CRLF in the file,
    /// ascending.
    crlf_breaks: Vec<usize>,
}

/// One replacement in the body: the range it replaces, and its text (LF
/// line breaks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Splice<'a> {
    /// Where the replaced text starts in the body.
    pub start: usize,
    /// Where it ends (exclusive).
    pub end: usize,
    /// What replaces it.
    pub text: &'a str,
}

impl Framed {
    /// Splits `raw` into BOM, line-ending style and LF body.
    pub fn parse(raw: &str) -> Framed {
        let (bom, rest) = match raw.strip_prefix('\u{FEFF}') {
            Some(r) => (true, r),
            None => (false, raw),
        };
        let crlf = rest
            .find('\n')
            .is_some_and(|i| i > 0 && rest.as_bytes()[i - 1] == b'\r');
        let mut body = String::with_capacity(rest.len());
        let mut crlf_breaks = Vec::new();
        let mut from = 0;
        for (at, _) in rest.match_indices("\r\n") {
            body.push_str(&rest[from..at]);
            crlf_breaks.push(body.len());
            body.push('\n');
            from = at + 2;
        }
        body.push_str(&rest[from..]);
        Framed {
            bom,
            crlf,
            body,
            raw: rest.to_string(),
            crlf_breaks,
        }
    }

    /// The file's text with `splices` (in body order, not overlapping)
    /// made: the BOM kept, every byte outside them as the file had it, and
    /// each splice's line breaks written as the text it replaces wrote
    /// them (CRLF if it had any), or for text replacing part of one line,
    /// as that line ends.
    pub fn render(&self, splices: &[Splice<'_>]) -> String {
        let mut out = String::with_capacity(self.raw.len() + 3);
        if self.bom {
            out.push('\u{FEFF}');
        }
        let mut pos = 0;
        for s in splices {
            let (start, end) = (self.raw_offset(s.start), self.raw_offset(s.end));
            out.push_str(&self.raw[pos..start]);
            if self.crlf_within(start, end) {
                out.push_str(&s.text.replace('\n', "\r\n"));
            } else {
                out.push_str(s.text);
            }
            pos = end;
        }
        out.push_str(&self.raw[pos..]);
        out
    }

    /// Where body offset `at` is in the file's text.
    fn raw_offset(&self, at: usize) -> usize {
        at + self.crlf_breaks.partition_point(|&b| b < at)
    }

    /// Whether text replacing the file's `start..end` breaks lines with
    /// CRLF: that text has a CRLF, or has no line break and its line ends
    /// with one (the file's first line's ending for a last line without
    /// one).
    fn crlf_within(&self, start: usize, end: usize) -> bool {
        let replaced = &self.raw[start..end];
        if replaced.contains('\n') {
            return replaced.contains("\r\n");
        }
        match self.raw[end..].find('\n') {
            Some(i) => self.raw[..end + i].ends_with('\r'),
            None => self.crlf,
        }
    }
}

fn line_of(text: &str, byte: usize) -> usize {
    text.as_bytes()[..byte]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

fn label(index: usize, total: usize) -> String {
    if total == 1 {
        String::new()
    } else {
        format!("edits[{index}]: ")
    }
}

/// The most lines of the file a "0 matches" hint shows.
const HINT_LINES: usize = 12;

/// A short hint pointing at where the model probably meant, for "0 matches".
fn closest_hint(body: &str, old: &str) -> String {
    let Some(first) = old.lines().map(str::trim).find(|l| !l.is_empty()) else {
        return String::new();
    };
    let lines: Vec<&str> = body.lines().collect();
    let found = lines.iter().position(|l| l.trim() == first).or_else(|| {
        let squeeze = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        let want = squeeze(first);
        lines.iter().position(|l| squeeze(l) == want)
    });
    let Some(at) = found else {
        return String::new();
    };
    let from = at.saturating_sub(1);
    let to = (at + old.lines().count() + 1)
        .min(lines.len())
        .min(from + HINT_LINES);
    let snippet: Vec<String> = lines[from..to]
        .iter()
        .enumerate()
        .map(|(i, l)| format!("  {}: {}", from + i + 1, bounded(l)))
        .collect();
    format!(
        "\nThe first line of oldText appears (ignoring whitespace) at line {}; compare carefully:\n{}",
        at + 1,
        snippet.join("\n")
    )
}

/// `edits` applied to an LF body: the new body, and the replacements made
/// (in body order) for [`Framed::render`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Applied<'a> {
    /// The body after the edits.
    pub body: String,
    /// Each replacement made.
    pub splices: Vec<Splice<'a>>,
}

/// Applies `edits` to the LF body. Every edit is matched against the original
/// body (not after earlier edits); each must match exactly once unless
/// `replace_all`, and no two may overlap.
pub fn apply<'a>(
    body: &str,
    edits: &'a [Replacement],
    path: &str,
) -> Result<Applied<'a>, ToolError> {
    if edits.is_empty() {
        return Err(ToolError::invalid(
            "edit",
            "edits must contain at least one replacement ({oldText, newText})",
        ));
    }
    let path = bounded(path);
    let total = edits.len();
    let mut spans: Vec<(usize, usize, usize)> = Vec::new();
    for (i, e) in edits.iter().enumerate() {
        let tag = label(i, total);
        if e.old_text.is_empty() {
            return Err(ToolError::Failed(format!(
                "{tag}oldText is empty in the edit of {path}. Give the exact text to replace (use write to create a file)."
            )));
        }
        let found: Vec<usize> = body
            .match_indices(e.old_text.as_str())
            .map(|(at, _)| at)
            .collect();
        match found.len() {
            0 => {
                return Err(ToolError::Failed(format!(
                    "{tag}Could not find the text to replace in {path} (0 matches; the text must match exactly, including whitespace and line breaks).{}",
                    closest_hint(body, &e.old_text)
                )));
            }
            n if n > 1 && !e.replace_all => {
                let lines: Vec<String> = found
                    .iter()
                    .take(20)
                    .map(|&at| line_of(body, at).to_string())
                    .collect();
                let more = if n > 20 { ", ..." } else { "" };
                return Err(ToolError::Failed(format!(
                    "{tag}Found {n} matches of the text to replace in {path} (at lines {}{more}); oldText must match exactly once. \
                     Include more surrounding lines to make it unique, or set replaceAll: true to replace every occurrence.",
                    lines.join(", ")
                )));
            }
            _ => {
                for at in found {
                    spans.push((at, at + e.old_text.len(), i));
                }
            }
        }
    }
    spans.sort_unstable();
    for w in spans.windows(2) {
        let (a, b) = (w[0], w[1]);
        if a.1 > b.0 {
            return Err(ToolError::Failed(format!(
                "edits[{}] and edits[{}] overlap in {path} (around line {}). Merge them into one edit or target separate regions.",
                a.2.min(b.2),
                a.2.max(b.2),
                line_of(body, b.0)
            )));
        }
    }
    let splices: Vec<Splice<'a>> = spans
        .into_iter()
        .map(|(start, end, i)| Splice {
            start,
            end,
            text: edits[i].new_text.as_str(),
        })
        .collect();
    let mut out = String::with_capacity(body.len());
    let mut pos = 0;
    for s in &splices {
        out.push_str(&body[pos..s.start]);
        out.push_str(s.text);
        pos = s.end;
    }
    out.push_str(&body[pos..]);
    if out == body {
        return Err(ToolError::Failed(format!(
            "No changes made to {path}: the replacement produced identical content (newText equals oldText)."
        )));
    }
    Ok(Applied { body: out, splices })
}

/// A unified diff of `old` → `new` labelled with `path`, and the first changed
/// line (1-based, in the new text).
pub fn unified_diff(path: &str, old: &str, new: &str) -> (String, Option<usize>) {
    let diff = TextDiff::from_lines(old, new);
    let first = diff
        .ops()
        .iter()
        .find(|op| op.tag() != DiffTag::Equal)
        .map(|op| op.new_range().start + 1);
    let text = diff
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string();
    (text, first)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(old: &str, new: &str) -> Replacement {
        Replacement {
            old_text: old.into(),
            new_text: new.into(),
            replace_all: false,
        }
    }

    #[test]
    fn framing_round_trips() {
        let raw = "\u{FEFF}a\r\nb\r\n";
        let f = Framed::parse(raw);
        assert!(f.bom && f.crlf);
        assert_eq!(f.body, "a\nb\n");
        assert_eq!(f.render(&[]), raw);
        let plain = Framed::parse("x\ny");
        assert!(!plain.bom && !plain.crlf);
        assert_eq!(plain.render(&[]), "x\ny");
    }

    /// The file `raw` after `edits`.
    fn edited(raw: &str, edits: &[Replacement]) -> String {
        let f = Framed::parse(raw);
        let applied = apply(&f.body, edits, "f").unwrap();
        f.render(&applied.splices)
    }

    #[test]
    fn untouched_lines_keep_their_own_line_endings() {
        // Mixed CRLF and LF, a lone CR: only the edited text changes.
        let raw = "crlf one\r\nlf two\nlone\rcr\r\nlast lf\n";
        assert_eq!(
            edited(raw, &[r("lf two", "LF TWO")]),
            "crlf one\r\nLF TWO\nlone\rcr\r\nlast lf\n"
        );
        assert_eq!(
            edited(raw, &[r("crlf one", "first")]),
            "first\r\nlf two\nlone\rcr\r\nlast lf\n"
        );
        // New lines take the ending of the line they are written into.
        assert_eq!(
            edited(raw, &[r("crlf one", "a\nb"), r("last lf", "c\nd")]),
            "a\r\nb\r\nlf two\nlone\rcr\r\nc\nd\n"
        );
        // Text spanning line breaks is written with the breaks it replaces.
        assert_eq!(
            edited(raw, &[r("crlf one\nlf", "x\ny\nz")]),
            "x\r\ny\r\nz two\nlone\rcr\r\nlast lf\n"
        );
        assert_eq!(
            edited(raw, &[r("two\nlone", "2\n\nalone")]),
            "crlf one\r\nlf 2\n\nalone\rcr\r\nlast lf\n"
        );
        // A last line without a break: the first line's ending.
        assert_eq!(edited("a\r\nb", &[r("b", "b\nc")]), "a\r\nb\r\nc");
        assert_eq!(edited("a\nb", &[r("b", "b\nc")]), "a\nb\nc");
        // replaceAll keeps each occurrence's own ending.
        let all = Replacement {
            replace_all: true,
            ..r("x\n", "y\ny\n")
        };
        assert_eq!(
            edited("x\r\nx\nx\r\n", &[all]),
            "y\r\ny\r\ny\ny\ny\r\ny\r\n"
        );
    }

    #[test]
    fn matches_against_original_and_checks_overlap() {
        let body = "one\ntwo\nthree\n";
        let edits = [r("one", "1"), r("three", "3")];
        let out = apply(body, &edits, "f").unwrap();
        assert_eq!(out.body, "1\ntwo\n3\n");
        let err = apply(body, &[r("one\ntwo", "x"), r("two", "y")], "f").unwrap_err();
        assert!(err.to_string().contains("overlap"), "{err}");
        let err = apply("a\na\n", &[r("a", "b")], "f")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("Found 2 matches") && err.contains("lines 1, 2"),
            "{err}"
        );
        let edits = [Replacement {
            replace_all: true,
            ..r("a", "b")
        }];
        let all = apply("a\na\n", &edits, "f").unwrap();
        assert_eq!(all.body, "b\nb\n");
    }

    #[test]
    fn hint_points_at_near_miss() {
        let err = apply(
            "fn main() {\n    let x = 1;\n}\n",
            &[r("fn main() {\n  let x = 1;", "")],
            "m.rs",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("0 matches") && err.contains("line 1"), "{err}");
    }

    #[test]
    fn diff_has_header_and_first_line() {
        let (d, first) = unified_diff("f.txt", "a\nb\nc\n", "a\nB\nc\n");
        assert!(
            d.contains("--- a/f.txt") && d.contains("+B") && d.contains("-b"),
            "{d}"
        );
        assert_eq!(first, Some(2));
    }
}
