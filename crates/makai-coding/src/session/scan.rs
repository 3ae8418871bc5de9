//! Reading the lines of a session file: bytes in, a [`Scan`] out (no I/O).
//!
//! A line ends at a newline. The last line may have none: when it does not
//! parse, it is a *torn tail* (an append that was cut) and is reported as
//! such, never as damage. Every other line that does not parse, a session
//! header after the first, and entries without a header before them are
//! damage ([`super::damage`]). Blank lines are skipped.

use std::path::Path;

use serde_json::Value;

use super::damage::{DamagedLine, LineProblem};
use super::entry::{SESSION_VERSION, SessionEntry, SessionHeader, UnknownEntry};
use super::error::{LoadWarning, SessionError};

/// What a run of lines holds.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    /// The header, when the run starts the file and has one.
    pub header: Option<SessionHeader>,
    /// The entries in stored order.
    pub entries: Vec<SessionEntry>,
    /// The 1-based line of each entry.
    pub entry_lines: Vec<usize>,
    /// Complete lines that cannot be kept.
    pub damaged: Vec<DamagedLine>,
    /// The line of the first entry when no header came before it.
    pub missing_header: Option<usize>,
    /// Entries kept with a remark (a known type whose fields do not fit).
    pub warnings: Vec<LoadWarning>,
    /// An unterminated last line that does not parse: (byte offset in the run, line, reason).
    pub torn: Option<(usize, usize, String)>,
    /// Complete lines in the run (an unterminated last line not counted).
    pub lines: usize,
    /// The last line is a good one without its newline.
    pub needs_newline: bool,
}

/// Files at least this big are scanned on several threads.
const PARALLEL_SCAN_BYTES: usize = 1 << 20;

/// Scans a whole file, splitting a big one at line boundaries across threads.
pub(crate) fn scan_file(path: &Path, bytes: &[u8]) -> Result<Scan, SessionError> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    if threads < 2 || bytes.len() < PARALLEL_SCAN_BYTES {
        return scan(path, bytes, 0, true);
    }
    let mut bounds = vec![0usize];
    for i in 1..threads {
        let from = (bytes.len() * i / threads).max(bounds[bounds.len() - 1]);
        match find_newline(&bytes[from..]) {
            Some(nl) if from + nl + 1 < bytes.len() => bounds.push(from + nl + 1),
            _ => break,
        }
    }
    bounds.push(bytes.len());
    let pieces = bounds.len() - 1;
    let results: Vec<Result<Scan, SessionError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..pieces)
            .map(|i| {
                let seg = &bytes[bounds[i]..bounds[i + 1]];
                scope.spawn(move || scan(path, seg, 0, i == 0))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(SessionError::NotASession {
                        path: path.to_path_buf(),
                        reason: "a parser thread panicked".into(),
                    })
                })
            })
            .collect()
    });
    let mut out = Scan::default();
    for (i, result) in results.into_iter().enumerate() {
        let mut part = result?;
        let offset = out.lines;
        if i == 0 {
            out.header = part.header.take();
            out.missing_header = part.missing_header;
            out.entries.reserve(part.entries.len() * pieces);
            out.entry_lines.reserve(part.entries.len() * pieces);
        } else if out.header.is_none() && out.missing_header.is_none() {
            out.missing_header = part.entry_lines.first().map(|l| l + offset);
        }
        out.entries.append(&mut part.entries);
        out.entry_lines
            .extend(part.entry_lines.into_iter().map(|l| l + offset));
        out.damaged.extend(part.damaged.into_iter().map(|mut d| {
            d.line += offset;
            d
        }));
        out.warnings.extend(part.warnings.into_iter().map(|mut w| {
            w.line = w.line.map(|l| l + offset);
            w
        }));
        out.torn = part
            .torn
            .map(|(at, line, reason)| (bounds[i] + at, line + offset, reason));
        out.lines += part.lines;
        out.needs_newline = part.needs_newline;
    }
    Ok(out)
}

fn find_newline(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|b| *b == b'\n')
}

/// Scans `bytes`, whose first line is line `lines_before + 1` of the file.
/// With `expect_header`, the run starts the file: the first line that is a
/// header is the header (damaged lines before it are damage).
///
/// Errors only when the file cannot be used at all (a format version this
/// crate cannot read).
pub(crate) fn scan(
    path: &Path,
    bytes: &[u8],
    lines_before: usize,
    expect_header: bool,
) -> Result<Scan, SessionError> {
    let mut out = Scan {
        entries: Vec::with_capacity(bytes.len() / 512 + 1),
        entry_lines: Vec::with_capacity(bytes.len() / 512 + 1),
        ..Scan::default()
    };
    let mut want_header = expect_header;
    let mut start = 0;
    let mut line_no = lines_before;
    while start < bytes.len() {
        let (end, terminated) = match find_newline(&bytes[start..]) {
            Some(nl) => (start + nl, true),
            None => (bytes.len(), false),
        };
        let line = &bytes[start..end];
        line_no += 1;
        let at = start;
        start = end + 1;
        if line.iter().all(u8::is_ascii_whitespace) {
            out.lines += usize::from(terminated);
            continue;
        }
        let kind = classify(path, line, want_header)?;
        let problem = match kind {
            Line::Header(h) => {
                out.header = Some(h);
                want_header = false;
                None
            }
            Line::Entry(entry, remark) => {
                if want_header {
                    out.missing_header = Some(line_no);
                    want_header = false;
                }
                if let Some(message) = remark {
                    out.warnings.push(LoadWarning {
                        line: Some(line_no),
                        message,
                    });
                }
                out.entries.push(entry);
                out.entry_lines.push(line_no);
                None
            }
            Line::ExtraHeader => Some(("a second session header".to_string(), true)),
            Line::Bad(reason) => Some((reason, false)),
        };
        match (problem, terminated) {
            (None, true) => out.lines += 1,
            (None, false) => out.needs_newline = true,
            (Some((reason, _)), false) => {
                out.torn = Some((at, line_no, reason));
            }
            (Some((reason, extra_header)), true) => {
                out.lines += 1;
                out.damaged.push(DamagedLine {
                    line: line_no,
                    problem: if extra_header {
                        LineProblem::ExtraHeader
                    } else {
                        LineProblem::Unreadable(reason)
                    },
                });
            }
        }
    }
    Ok(out)
}

/// One non-blank line, read.
#[allow(clippy::large_enum_variant)] // short-lived, one per line, never stored
enum Line {
    Header(SessionHeader),
    /// An entry, with a remark when a known type was kept as unknown.
    Entry(SessionEntry, Option<String>),
    /// A session header where none belongs.
    ExtraHeader,
    /// Unreadable, and why.
    Bad(String),
}

fn classify(path: &Path, line: &[u8], want_header: bool) -> Result<Line, SessionError> {
    if want_header && let Ok(header) = serde_json::from_slice::<SessionHeader>(line) {
        check_version(path, &header)?;
        return Ok(Line::Header(header));
    }
    let typed_err = match serde_json::from_slice::<SessionEntry>(line) {
        Ok(SessionEntry::Unknown(u)) if u.kind == "session" => {
            return Ok(header_like(line, want_header));
        }
        Ok(entry) => return Ok(Line::Entry(entry, None)),
        Err(e) => e,
    };
    Ok(match serde_json::from_slice::<Value>(line) {
        Ok(Value::Object(map)) => match UnknownEntry::from_object(map) {
            Some(u) if u.kind == "session" => header_like(line, want_header),
            Some(u) => {
                let remark = format!(
                    "entry {} of type \"{}\" does not match the format ({typed_err}); kept as it \
                     is but left out of the model's context",
                    u.id, u.kind
                );
                Line::Entry(SessionEntry::Unknown(u), Some(remark))
            }
            None => Line::Bad("a JSON object without string \"type\" and \"id\" fields".into()),
        },
        Ok(_) => Line::Bad("not a JSON object".into()),
        Err(e) => Line::Bad(format!("invalid JSON: {e}")),
    })
}

/// A line with `"type": "session"` that is not the header.
fn header_like(line: &[u8], want_header: bool) -> Line {
    if !want_header {
        return Line::ExtraHeader;
    }
    match serde_json::from_slice::<SessionHeader>(line) {
        Ok(_) => Line::ExtraHeader,
        Err(e) => Line::Bad(format!(
            "a session header that does not fit the format: {e}"
        )),
    }
}

fn check_version(path: &Path, header: &SessionHeader) -> Result<(), SessionError> {
    match header.version {
        None | Some(0) | Some(1) => Err(SessionError::UnsupportedVersion {
            path: path.to_path_buf(),
            version: header.version.unwrap_or(1),
        }),
        Some(v) if v > SESSION_VERSION => {
            tracing::warn!(path = %path.display(), version = v, "session file is newer than this makai; unknown entries are kept as they are");
            Ok(())
        }
        Some(_) => Ok(()),
    }
}
