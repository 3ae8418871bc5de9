//! Highlighting a text from where the last call on the thread stopped.
//!
//! The parser's state after the last complete line of the last text is
//! kept, with the runs of its lines; a text that starts with those lines, in
//! the same language, is parsed from there. Any other text replaces it.

use std::cell::RefCell;

use syntect::parsing::{ParseState, ScopeStack};

use crate::language::{Language, syntaxes};
use crate::roles::role_of;
use crate::{MAX_LINE_BYTES, MAX_TEXT_BYTES, Run};

/// The complete lines highlighted last, and the parser after them.
struct Memo {
    language: Language,
    /// The complete lines parsed, each with its `\n`.
    text: String,
    /// Their runs.
    lines: Vec<Vec<Run>>,
    parser: ParseState,
    stack: ScopeStack,
    /// A line was too long, or the grammar failed: the rest is plain.
    plain: bool,
}

impl Memo {
    fn new(language: Language) -> Memo {
        Memo {
            language,
            text: String::new(),
            lines: Vec::new(),
            parser: ParseState::new(language.syntax),
            stack: ScopeStack::new(),
            plain: false,
        }
    }
}

thread_local! {
    static LAST: RefCell<Option<Memo>> = const { RefCell::new(None) };
}

pub(crate) fn highlight(language: &Language, text: &str) -> Vec<Vec<Run>> {
    let kept = LAST.with(|last| last.borrow_mut().take());
    let mut memo = match kept {
        Some(m) if m.language == *language && text.starts_with(m.text.as_str()) => m,
        _ => Memo::new(*language),
    };
    // The complete lines not parsed yet.
    let mut at = memo.text.len();
    while let Some(end) = text[at..].find('\n').map(|n| at + n + 1) {
        let line = &text[at..end];
        memo.plain |= end > MAX_TEXT_BYTES;
        let runs = if memo.plain {
            plain(line)
        } else {
            let (runs, ok) = parse_line(&mut memo.parser, &mut memo.stack, line);
            memo.plain |= !ok;
            runs
        };
        memo.lines.push(runs);
        memo.text.push_str(line);
        at = end;
    }
    // The line still growing, parsed on a copy of the state.
    let rest = &text[at..];
    let last = if memo.plain || text.len() > MAX_TEXT_BYTES {
        plain(rest)
    } else {
        let mut parser = memo.parser.clone();
        let mut stack = memo.stack.clone();
        let mut with_newline = String::with_capacity(rest.len() + 1);
        with_newline.push_str(rest);
        with_newline.push('\n');
        parse_line(&mut parser, &mut stack, &with_newline).0
    };
    let mut out = memo.lines.clone();
    out.push(last);
    LAST.with(|slot| *slot.borrow_mut() = Some(memo));
    out
}

/// The whole line (without its line ending) as one run without a colour.
fn plain(line: &str) -> Vec<Run> {
    let end = content_end(line);
    if end == 0 {
        return Vec::new();
    }
    vec![Run {
        range: 0..end,
        role: None,
    }]
}

/// Where a line's text ends: before its `\n` and a `\r` before that.
fn content_end(line: &str) -> usize {
    let line = line.strip_suffix('\n').unwrap_or(line);
    line.strip_suffix('\r').unwrap_or(line).len()
}

/// Parses one line (ending in `\n`); its runs, and false when the grammar
/// failed or the line is too long (then the runs are the plain line).
fn parse_line(parser: &mut ParseState, stack: &mut ScopeStack, line: &str) -> (Vec<Run>, bool) {
    let end = content_end(line);
    if end > MAX_LINE_BYTES {
        return (plain(line), false);
    }
    let Ok(ops) = parser.parse_line(line, syntaxes()) else {
        return (plain(line), false);
    };
    let mut runs: Vec<Run> = Vec::new();
    let mut from = 0;
    let mut push = |runs: &mut Vec<Run>, to: usize, stack: &ScopeStack| {
        let to = to.min(end);
        if to <= from {
            return;
        }
        let role = role_of(stack);
        match runs.last_mut() {
            Some(prev) if prev.role == role && prev.range.end == from => prev.range.end = to,
            _ => runs.push(Run {
                range: from..to,
                role,
            }),
        }
        from = to;
    };
    for (pos, op) in ops {
        push(&mut runs, pos, stack);
        if stack.apply(&op).is_err() {
            push(&mut runs, end, &ScopeStack::new());
            return (runs, false);
        }
    }
    push(&mut runs, end, stack);
    (runs, true)
}
