//! LaTeX math in markdown as terminal Unicode, as pi renders it: inline math
//! (`$x^2$`) as text in its line, display math (`$$…$$`) laid out in rows
//! (stacked fractions, sums and integrals with limits, matrices, cases).
//!
//! `rust-latex-parser` reads the source and never fails: a command it does
//! not know stays in its tree as text (`\foo`), a missing argument is an
//! empty one. [`parse`] rejects such trees, and sources whose braces,
//! `\left`/`\right` or environments do not pair up, so that math that cannot
//! be rendered shows as its source rather than garbled. `term-maths` lays the
//! tree out. Display math wider than the rows shows as its source too (pi's
//! #11483), and wraps as text.

use std::ops::Range;

use pulldown_cmark::{CowStr, Event};
use ratatui::text::{Line, Span};
use rust_latex_parser::EqNode;

use super::{Renderer, fit_prefix};
use crate::tui::wrap::str_width;

impl Renderer {
    /// Inline math: its one-row rendering, or its source as written.
    pub(super) fn inline_math(&mut self, source: &str) {
        let text = inline(source).unwrap_or_else(|| format!("${source}$"));
        self.push_text(&text);
    }

    /// Display math: its rows under the containers' prefixes; in a table
    /// cell, or when it cannot be rendered or is too wide, as inline math
    /// or its source.
    pub(super) fn display_math(&mut self, source: &str) {
        let as_written = format!("$${source}$$");
        if self.table.is_some() {
            self.push_text(&inline(source).unwrap_or(as_written));
            return;
        }
        let Some(rows) = display(source, self.width.saturating_sub(self.prefix_width())) else {
            self.push_text(&as_written);
            return;
        };
        self.flush();
        self.blank_if_needed();
        let (first, rest) = self.prefixes();
        let style = self.style();
        for (i, row) in rows.into_iter().enumerate() {
            let mut spans = if i == 0 { first.clone() } else { rest.clone() };
            spans.push(Span::styled(row, style));
            self.out.push(Line::from(spans));
        }
    }

    /// The columns the containers' prefixes take on a row.
    fn prefix_width(&self) -> usize {
        let indents: Vec<Span<'static>> = self
            .containers
            .iter()
            .flat_map(|c| c.indent.iter().cloned())
            .collect();
        fit_prefix(indents, self.prefix_cap())
            .iter()
            .map(Span::width)
            .sum()
    }
}

/// The events of a parse of `text` under the rule of pandoc's math that
/// pulldown-cmark lacks: a closing `$` followed by a digit closes nothing,
/// so that prices (`$5-$10`, `US$5 and US$6`) stay text.
pub(super) fn dollar_rule<'a>(
    text: &'a str,
    events: impl Iterator<Item = (Event<'a>, Range<usize>)>,
) -> impl Iterator<Item = (Event<'a>, Range<usize>)> {
    events.map(move |(event, range)| match event {
        Event::InlineMath(source)
            if text
                .get(range.end..)
                .is_some_and(|after| after.starts_with(|c: char| c.is_ascii_digit())) =>
        {
            (Event::Text(CowStr::from(format!("${source}$"))), range)
        }
        event => (event, range),
    })
}

/// The math in `source` as one row of text; `None` when it has something
/// that cannot be rendered.
pub(super) fn inline(source: &str) -> Option<String> {
    let node = parse(source)?;
    match rows_of(&node)?.as_slice() {
        [row] => Some(row.clone()),
        _ => linear(&node).map(|text| collapse_spaces(&text)),
    }
}

/// The math in `source` laid out as rows at most `width` columns wide;
/// `None` when it has something that cannot be rendered, or is wider.
pub(super) fn display(source: &str, width: usize) -> Option<Vec<String>> {
    let node = parse(source)?;
    let rows = rows_of(&node)?;
    rows.iter()
        .all(|row| str_width(row) <= width)
        .then_some(rows)
}

/// The tree of `source` when every part of it can be rendered.
fn parse(source: &str) -> Option<EqNode> {
    // Line breaks and tabs are spaces in TeX.
    let source = plain_equivalents(&source.replace(['\n', '\r', '\t'], " "));
    let source = source.trim();
    if source.is_empty() || !pairs_up(source) {
        return None;
    }
    let node = crate::panic_guard::catch(|| rust_latex_parser::parse_equation(source))?;
    renderable(&node).then_some(node)
}

/// Delimiter sizes, which rows of text cannot show.
const DELIMITER_SIZES: &[&str] = &[
    "big", "Big", "bigg", "Bigg", "bigl", "Bigl", "biggl", "Biggl", "bigr", "Bigr", "biggr",
    "Biggr", "bigm", "Bigm", "biggm", "Biggm",
];

/// Environments that only align their rows, drawn as a matrix's.
const ALIGNMENTS: &[&str] = &[
    "aligned", "align", "align*", "alignat", "gathered", "gather", "gather*", "split",
];

/// `source` with the commands the parser lacks but that have a plain
/// equivalent replaced: delimiter sizes dropped, `\bm` and `\boldsymbol` as
/// `\mathbf`, the alignment environments as `matrix`.
fn plain_equivalents(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut rest = source;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let name_len = after
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(after.len());
        let name = &after[..name_len];
        rest = &after[name_len..];
        match name {
            _ if DELIMITER_SIZES.contains(&name) => {}
            "bm" | "boldsymbol" => out.push_str("\\mathbf"),
            "begin" | "end" => {
                out.push('\\');
                out.push_str(name);
                let environment = rest
                    .strip_prefix('{')
                    .and_then(|r| r.split_once('}'))
                    .filter(|(env, _)| ALIGNMENTS.contains(env));
                if let Some((_, after_env)) = environment {
                    out.push_str("{matrix}");
                    rest = after_env;
                }
            }
            _ => {
                out.push('\\');
                out.push_str(name);
                // A control symbol (`\\`, `\{`) keeps its character.
                if name.is_empty()
                    && let Some(c) = rest.chars().next()
                {
                    out.push(c);
                    rest = &rest[c.len_utf8()..];
                }
            }
        }
    }
    out.push_str(rest);
    out
}

/// Whether the braces, `\left` and `\right`, and `\begin` and `\end` of
/// `source` pair up (the parser takes a missing closer as given).
fn pairs_up(source: &str) -> bool {
    let (mut braces, mut delimiters, mut environments) = (0i32, 0i32, 0i32);
    let mut chars = source.chars().peekable();
    while let Some(c) = chars.next() {
        let depth = match c {
            '{' => {
                braces += 1;
                continue;
            }
            '}' => &mut braces,
            '\\' => {
                let mut name = String::new();
                while let Some(&next) = chars.peek().filter(|c| c.is_ascii_alphabetic()) {
                    name.push(next);
                    chars.next();
                }
                if name.is_empty() {
                    // A control symbol (`\{`, `\\`, `\,`): its character is not a brace.
                    chars.next();
                }
                match name.as_str() {
                    "left" => {
                        delimiters += 1;
                        continue;
                    }
                    "begin" => {
                        environments += 1;
                        continue;
                    }
                    "right" => &mut delimiters,
                    "end" => &mut environments,
                    _ => continue,
                }
            }
            _ => continue,
        };
        *depth -= 1;
        if *depth < 0 {
            return false;
        }
    }
    braces == 0 && delimiters == 0 && environments == 0
}

/// Whether the parser understood every part of `node`: no command left as
/// text, no missing argument, no `\sqrt[n]` (the parser has no root index).
fn renderable(node: &EqNode) -> bool {
    let all = |nodes: &[EqNode]| nodes.iter().all(renderable);
    // Checked first, so that laying the part out is safe; a part laid out
    // in no rows (empty, a space, an empty matrix) is missing: term-maths's
    // fractions, binomials and scripts need a row.
    let filled = |node: &EqNode| !is_empty(node) && renderable(node) && has_rows(node);
    let optional = |node: &Option<Box<EqNode>>| node.as_deref().is_none_or(renderable);
    match node {
        // `\\` alone is `\backslash`; any other backslash is a command or a
        // row break the parser did not take.
        EqNode::Text(text) => !text.starts_with('\\') || text == "\\",
        EqNode::Space(_) | EqNode::TextBlock(_) => true,
        EqNode::Seq(nodes) => all(nodes),
        EqNode::Sup(base, script) | EqNode::Sub(base, script) => renderable(base) && filled(script),
        EqNode::SupSub(base, sup, sub) => renderable(base) && filled(sup) && filled(sub),
        EqNode::Frac(top, bottom) | EqNode::Binom(top, bottom) => filled(top) && filled(bottom),
        EqNode::Sqrt(body) => !matches!(body.as_ref(), EqNode::Text(t) if t == "[") && filled(body),
        EqNode::BigOp { lower, upper, .. } => optional(lower) && optional(upper),
        EqNode::Accent(body, _) => filled(body),
        EqNode::Limit { lower, .. } => optional(lower),
        // Empty contents lay out as blocks of no rows, which term-maths's
        // fractions, binomials and scripts do not take.
        EqNode::MathFont { content, .. } | EqNode::Delimited { content, .. } => filled(content),
        EqNode::Matrix { rows, .. } => rows.iter().all(|row| all(row)),
        EqNode::Cases { rows } => rows
            .iter()
            .all(|(value, condition)| renderable(value) && condition.iter().all(renderable)),
        EqNode::Brace { content, label, .. } => renderable(content) && optional(label),
        EqNode::StackRel {
            base, annotation, ..
        } => renderable(base) && renderable(annotation),
    }
}

/// Whether `node` (renderable) is laid out in at least one row.
fn has_rows(node: &EqNode) -> bool {
    crate::panic_guard::catch(|| term_maths::layout::layout(node).height() > 0).unwrap_or(false)
}

/// Whether `node` has nothing in it (a missing argument).
fn is_empty(node: &EqNode) -> bool {
    match node {
        EqNode::Text(text) => text.trim().is_empty(),
        // A space alone (`\!`, `\,`) has no rows either.
        EqNode::Space(_) => true,
        EqNode::Seq(nodes) => nodes.iter().all(is_empty),
        _ => false,
    }
}

/// The rows `term-maths` lays `node` out in, without the blank columns and
/// rows around them.
fn rows_of(node: &EqNode) -> Option<Vec<String>> {
    // The checks above keep term-maths from the inputs found to make it
    // panic; one not found yet shows the source instead.
    let text = crate::panic_guard::catch(|| term_maths::layout::layout(node).to_string())?;
    let mut rows: Vec<&str> = text.split('\n').map(str::trim_end).collect();
    while rows.last().is_some_and(|row| row.is_empty()) {
        rows.pop();
    }
    let top = rows.iter().take_while(|row| row.is_empty()).count();
    let rows = &rows[top..];
    let indent = rows
        .iter()
        .filter(|row| !row.is_empty())
        .map(|row| row.len() - row.trim_start_matches(' ').len())
        .min()
        .unwrap_or(0);
    Some(
        rows.iter()
            .map(|row| row.get(indent..).unwrap_or("").to_string())
            .collect(),
    )
}

/// `node` on one row when its layout takes more: fractions as `a/b`, roots as
/// `√x`, scripts with no Unicode form as `x^(…)`; `None` when a part of it
/// still takes more than one row (a matrix, a limit under an operator).
fn linear(node: &EqNode) -> Option<String> {
    match rows_of(node)?.as_slice() {
        // A space: kept, runs of them made one later.
        [] => return Some(" ".to_string()),
        [row] => return Some(row.clone()),
        _ => {}
    }
    match node {
        EqNode::Seq(nodes) => nodes.iter().map(linear).collect(),
        EqNode::Frac(top, bottom) => Some(format!("{}/{}", grouped(top)?, grouped(bottom)?)),
        EqNode::Sqrt(body) => Some(format!("√{}", grouped(body)?)),
        EqNode::Sup(base, sup) => Some(format!("{}^{}", grouped(base)?, grouped(sup)?)),
        EqNode::Sub(base, sub) => Some(format!("{}_{}", grouped(base)?, grouped(sub)?)),
        EqNode::SupSub(base, sup, sub) => Some(format!(
            "{}_{}^{}",
            grouped(base)?,
            grouped(sub)?,
            grouped(sup)?
        )),
        EqNode::BigOp {
            symbol,
            lower,
            upper,
        } => Some(format!(
            "{symbol}{}{} ",
            script("_", lower)?,
            script("^", upper)?
        )),
        EqNode::Limit { name, lower } => Some(format!("{name}{} ", script("_", lower)?)),
        _ => None,
    }
}

/// `mark` and the [`grouped`] text of `node` when there is one; `None` when
/// it cannot be on one row.
fn script(mark: &str, node: &Option<Box<EqNode>>) -> Option<String> {
    match node {
        Some(node) => Some(format!("{mark}{}", grouped(node)?)),
        None => Some(String::new()),
    }
}

/// [`linear`] of `node`, in parentheses unless it is a single symbol or a
/// number.
fn grouped(node: &EqNode) -> Option<String> {
    let text = collapse_spaces(&linear(node)?);
    if text.chars().count() <= 1 || text.chars().all(|c| c.is_ascii_digit()) {
        Some(text)
    } else {
        Some(format!("({text})"))
    }
}

/// `text` with each run of spaces made one, and none at the ends.
fn collapse_spaces(text: &str) -> String {
    text.split(' ')
        .filter(|word| !word.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
#[path = "math_tests.rs"]
mod tests;
