//! Damage in a stored session, found without touching storage.
//!
//! Two kinds, each a pure function over what was read:
//!
//! - **Lines** that cannot be kept as they are: a complete line (one that ends
//!   in a newline, so it was written whole) that is not a JSON object with
//!   string `type` and `id`, a session header after the first one, a file with
//!   entries but no header, an entry whose id an earlier entry already has.
//!   The line scan (`scan.rs`) finds the first three; [`check_entries`] the last.
//! - **Links**: an entry whose `parentId` names no earlier entry (a missing id,
//!   its own id, or a later entry, which is how a cycle starts) cuts it and
//!   every entry below it off from the start of the session. Entries of an
//!   append-only session always name an earlier parent, so this is exact.
//!
//! [`check_entries`] works on entries in stored order with their positions
//! (line numbers for a file), so any store can run it. A torn last line (no
//! newline: an append that was cut) is not damage: loading skips it with a
//! warning, and the next append sets it aside.

use std::collections::HashMap;
use std::fmt;

use makai_ai::quote::bounded;

use super::entry::SessionEntry;

/// What is wrong with a session's stored lines and links. Empty when nothing is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Damage {
    /// Lines that cannot be kept as they are, in stored order.
    pub lines: Vec<DamagedLine>,
    /// Entries whose parent link is broken, in stored order.
    pub links: Vec<BrokenLink>,
    /// The line of the first entry when no session header comes before it.
    pub missing_header: Option<usize>,
}

/// One line that cannot be kept as it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DamagedLine {
    /// 1-based line number (the position in the store for other stores).
    pub line: usize,
    /// What is wrong with it.
    pub problem: LineProblem,
}

/// Why a line cannot be kept.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LineProblem {
    /// Not a JSON object with string `type` and `id` (the parser's complaint).
    Unreadable(String),
    /// A session header after the first line.
    ExtraHeader,
    /// An entry id used by an earlier entry.
    RepeatedId {
        /// The id.
        id: String,
        /// The line of the entry that has it first (`None`: an entry read
        /// before, whose line is not known here).
        first_line: Option<usize>,
        /// True when the entry is the same as that earlier one (a duplicated line).
        identical: bool,
    },
}

/// An entry whose parent link is broken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrokenLink {
    /// The entry's line.
    pub line: usize,
    /// The entry's id.
    pub id: String,
    /// The `parentId` it names.
    pub parent: String,
    /// Why that parent does not do.
    pub problem: LinkProblem,
    /// How many entries are cut off through this link (the entry and those below it).
    pub cut_off: usize,
    /// Where a repair attaches the entry: the entry stored just before it, or
    /// `None` (it becomes a root) when it is the first entry.
    pub new_parent: Option<String>,
    /// The line of `new_parent`, when known.
    pub new_parent_line: Option<usize>,
}

/// Why a `parentId` does not name a usable parent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkProblem {
    /// No entry has that id.
    Missing,
    /// It is the entry's own id.
    Itself,
    /// It names an entry stored later (at this line): a link forward, the start of a cycle.
    Later(usize),
}

impl Damage {
    /// True when nothing is wrong.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty() && self.links.is_empty() && self.missing_header.is_none()
    }

    /// The first line where something is wrong (`None` when nothing is).
    pub fn first_line(&self) -> Option<usize> {
        let lines = self.lines.iter().map(|d| d.line);
        let links = self.links.iter().map(|l| l.line);
        lines.chain(links).chain(self.missing_header).min()
    }

    /// Every problem as one sentence each, in line order.
    pub fn problems(&self) -> Vec<(usize, String)> {
        let mut out: Vec<(usize, String)> = Vec::new();
        if let Some(line) = self.missing_header {
            out.push((
                line,
                format!("the file has no session header line before its first entry (line {line})"),
            ));
        }
        for d in &self.lines {
            out.push((d.line, d.to_string()));
        }
        for l in &self.links {
            out.push((l.line, l.to_string()));
        }
        out.sort_by_key(|(line, _)| *line);
        out
    }
}

/// How many problems a [`Damage`] message lists before "and N more".
const LISTED: usize = 5;

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let problems = self.problems();
        for (i, (_, text)) in problems.iter().take(LISTED).enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            f.write_str(text)?;
        }
        if problems.len() > LISTED {
            write!(f, "; and {} more problems", problems.len() - LISTED)?;
        }
        Ok(())
    }
}

impl fmt::Display for DamagedLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let line = self.line;
        match &self.problem {
            LineProblem::Unreadable(reason) => write!(f, "line {line} is unreadable ({reason})"),
            LineProblem::ExtraHeader => {
                write!(f, "line {line} is a second session header")
            }
            LineProblem::RepeatedId {
                id,
                first_line,
                identical,
            } => {
                let earlier = match first_line {
                    Some(l) => format!("line {l}"),
                    None => "an earlier line".to_string(),
                };
                if *identical {
                    write!(
                        f,
                        "line {line} is a copy of {earlier} (entry {})",
                        bounded(id)
                    )
                } else {
                    write!(
                        f,
                        "line {line} reuses the id {} of the entry on {earlier}",
                        bounded(id)
                    )
                }
            }
        }
    }
}

impl fmt::Display for BrokenLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let why = match self.problem {
            LinkProblem::Missing => "no entry has that id".to_string(),
            LinkProblem::Itself => "that is its own id".to_string(),
            LinkProblem::Later(line) => format!("that entry comes later, on line {line}"),
        };
        let cut = match self.cut_off {
            1 => "it is cut off from the start of the session".to_string(),
            n => format!(
                "it and {} entries below it are cut off from the start of the session",
                n - 1
            ),
        };
        let repair = match (&self.new_parent, self.new_parent_line) {
            (Some(id), Some(line)) => {
                format!("repair attaches it to entry {} (line {line})", bounded(id))
            }
            (Some(id), None) => format!("repair attaches it to entry {}", bounded(id)),
            (None, _) => "repair makes it the first entry".to_string(),
        };
        write!(
            f,
            "entry {} on line {} names parent {}, but {why}: {cut}; {repair}",
            bounded(&self.id),
            self.line,
            bounded(&self.parent)
        )
    }
}

/// What [`check_entries`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EntryCheck {
    /// Entries whose id an earlier entry has (the later ones; the earlier stays).
    pub repeated: Vec<DamagedLine>,
    /// Entries whose parent link is broken.
    pub broken: Vec<BrokenLink>,
}

/// Checks the ids and parent links of `entries`, in stored order;
/// `positions[i]` is where entry `i` is stored (its line in a file).
///
/// An entry with the id of an earlier one is a repeat (left out of the link
/// check: the earlier one keeps the id). A `parentId` must name an earlier
/// entry; each one that does not is a [`BrokenLink`] whose repair target is
/// the entry stored just before it (after earlier repairs every earlier
/// entry is reachable, so the re-joined run continues where it was written).
pub fn check_entries(entries: &[SessionEntry], positions: &[usize]) -> EntryCheck {
    check_appended(&|_| None, None, entries, positions)
}

/// [`check_entries`] for entries stored after others that were checked
/// already (what another process appended to a session this one has open):
/// `earlier` finds an entry among those by id, and `last_earlier` is the id
/// of the last of them.
pub fn check_appended<'a>(
    earlier: &dyn Fn(&str) -> Option<&'a SessionEntry>,
    last_earlier: Option<&str>,
    entries: &[SessionEntry],
    positions: &[usize],
) -> EntryCheck {
    let pos = |i: usize| positions.get(i).copied().unwrap_or(i + 1);
    let mut first: HashMap<&str, usize> = HashMap::with_capacity(entries.len());
    let mut out = EntryCheck::default();
    let mut kept: Vec<usize> = Vec::with_capacity(entries.len());
    for (i, e) in entries.iter().enumerate() {
        let repeat = match first.get(e.id()) {
            Some(&j) => Some((Some(pos(j)), entries[j] == *e)),
            None => earlier(e.id()).map(|old| (None, old == e)),
        };
        match repeat {
            Some((first_line, identical)) => out.repeated.push(DamagedLine {
                line: pos(i),
                problem: LineProblem::RepeatedId {
                    id: e.id().to_string(),
                    first_line,
                    identical,
                },
            }),
            None => {
                first.insert(e.id(), i);
                kept.push(i);
            }
        }
    }
    // `run[i]`: the broken link (index into out.broken) entry i hangs below.
    let mut run: Vec<Option<usize>> = vec![None; entries.len()];
    let mut previous: Option<usize> = None;
    for &i in &kept {
        let e = &entries[i];
        if let Some(parent) = e.parent_id() {
            let problem = match first.get(parent) {
                Some(&j) if j < i => {
                    run[i] = run[j];
                    None
                }
                Some(&j) if j == i => Some(LinkProblem::Itself),
                Some(&j) => Some(LinkProblem::Later(pos(j))),
                None if earlier(parent).is_some() => None,
                None => Some(LinkProblem::Missing),
            };
            if let Some(problem) = problem {
                run[i] = Some(out.broken.len());
                let (new_parent, new_parent_line) = match previous {
                    Some(p) => (Some(entries[p].id().to_string()), Some(pos(p))),
                    None => (last_earlier.map(str::to_string), None),
                };
                out.broken.push(BrokenLink {
                    line: pos(i),
                    id: e.id().to_string(),
                    parent: parent.to_string(),
                    problem,
                    cut_off: 0,
                    new_parent,
                    new_parent_line,
                });
            }
        }
        previous = Some(i);
    }
    for r in run.into_iter().flatten() {
        out.broken[r].cut_off += 1;
    }
    out
}
