//! Syntax highlighting for a terminal UI, in the colours of a pi theme.
//!
//! [`highlight`] splits a source text into lines and each line into runs,
//! each tagged with the [`Role`] of pi's nine `syntax*` theme colours that
//! fits it (or none: the text's own colour). The grammars are the TextMate
//! grammars of bat's syntax set (through `two-face` and `syntect`), so a
//! fence's language (`rust`, `ts`, `sh`) or a file's name
//! (`main.dart`, `flake.nix`, `build.gradle`, `Dockerfile`) finds its
//! [`Language`]; a grammar's scopes map to roles in [`roles`].
//!
//! A text that grows at its end (a code block while the answer streams) is
//! highlighted from where the last call stopped: the parser's state after
//! the last complete line is kept ([`incremental`]). Very long lines and very
//! long texts are left plain ([`MAX_LINE_BYTES`], [`MAX_TEXT_BYTES`]): a
//! grammar's regular expressions can be slow on them, and the UI waits.
//!
//! Start reading at [`highlight`].

mod incremental;
mod language;
pub mod roles;

use std::ops::Range;

pub use language::Language;
pub use makai_theme::Role;

/// A line longer than this (minified code, data) is left plain, with every
/// line after it.
pub const MAX_LINE_BYTES: usize = 4096;

/// Text past this many bytes is left plain.
pub const MAX_TEXT_BYTES: usize = 512 * 1024;

/// A run of one line: the bytes `range` of the line, in `role`'s colour
/// (`None`: the colour the text has without highlighting).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Run {
    /// Bytes of the line (without its `\n`, or a `\r` before it).
    pub range: Range<usize>,
    /// The theme colour of the run.
    pub role: Option<Role>,
}

/// The runs of each line of `text` in `language`: one entry per line of
/// `text.split('\n')` (so a text ending in `\n` ends with an empty line),
/// each line's runs covering it from start to end without gaps. An empty
/// line has no runs.
///
/// Cheap when `text` is the text of the last call on this thread with more
/// appended, in the same language: only the new lines are parsed.
pub fn highlight(language: &Language, text: &str) -> Vec<Vec<Run>> {
    incremental::highlight(language, text)
}

/// The lines of `text` as `(text, role)` pieces, for callers that draw
/// them: [`highlight`]'s runs applied to the lines.
pub fn pieces<'t>(language: &Language, text: &'t str) -> Vec<Vec<(&'t str, Option<Role>)>> {
    let runs = highlight(language, text);
    text.split('\n')
        .zip(runs)
        .map(|(line, runs)| {
            runs.into_iter()
                .filter_map(|r| line.get(r.range).map(|s| (s, r.role)))
                .collect()
        })
        .collect()
}
