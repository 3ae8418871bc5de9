//! What a session spent, rebuilt from its entries: the figure a budget
//! ledger starts from when a session is resumed.
//!
//! Everything in the file counts, abandoned branches included (their
//! requests were paid for): assistant messages, the usage a tool reported on
//! its result (a sub-agent's whole run), `usage` entries (titles), and the
//! summarising calls of compactions and branch summaries. A sub-agent whose
//! result never arrived (the process ended while it ran) is counted from its
//! own session, named by the link entry written when it started and opened
//! in the parent's store (a file, or a PostgreSQL session).

use std::collections::HashSet;
use std::path::Path;

use makai_ai::Usage;
use serde::{Deserialize, Serialize};

use super::entry::SessionEntry;
use super::error::SessionError;
use super::handle::Session;
use super::tree::SessionTree;

/// `customType` of the entry a parent session gets when a sub-agent starts.
pub const SUBAGENT_LINK: &str = "makai.subagent";

/// Sub-agents below sub-agents are followed this deep at most.
const MAX_LINK_DEPTH: u32 = 8;

/// The data of a [`SUBAGENT_LINK`] entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubagentLink {
    /// The sub-agent's session file.
    pub session_file: String,
    /// The `task` call that started it.
    pub tool_call_id: String,
    /// The agent spec it runs.
    pub agent: String,
}

/// Everything the session spent (see the module docs).
pub fn session_spending(session: &Session) -> Usage {
    session_spending_report(session).usage
}

/// What a session spent, and the sub-agent sessions that could not be
/// counted.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Spending {
    /// Everything counted (see the module docs).
    pub usage: Usage,
    /// Sub-agents whose result never arrived and whose own session exists
    /// but could not be read (damaged, unreadable, or in a store this one
    /// cannot open): their spending is unknown and not in `usage`. A
    /// sub-agent that never wrote its first entry spent nothing and is not
    /// listed.
    pub uncounted: Vec<UncountedSubagent>,
}

/// A sub-agent session [`session_spending_report`] could not read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UncountedSubagent {
    /// Where its link says its session is.
    pub location: String,
    /// Why it could not be read.
    pub error: String,
}

/// [`session_spending`], with the sub-agent sessions it could not count.
pub fn session_spending_report(session: &Session) -> Spending {
    let mut uncounted = Vec::new();
    let usage = spending(session, 0, &mut uncounted);
    Spending { usage, uncounted }
}

/// [`session_spending`] of the session file at `path` (zero when it cannot
/// be read: a sub-agent that never wrote its first entry has none).
pub fn file_spending(path: &Path) -> Usage {
    match Session::open(path) {
        Ok(s) => spending(&s, 0, &mut Vec::new()),
        Err(e) => {
            tracing::debug!(path = %path.display(), error = %e, "no spending read from a session file");
            Usage::default()
        }
    }
}

/// Whether `e` says the session is not there at all (a sub-agent that never
/// wrote its first entry), as opposed to there and unreadable.
fn never_written(e: &SessionError) -> bool {
    match e {
        SessionError::NotFound { .. } => true,
        SessionError::Io { source, .. } => source.kind() == std::io::ErrorKind::NotFound,
        _ => false,
    }
}

/// What the sub-agent at `location` spent, read through `parent`'s store;
/// zero when it never wrote its first entry, and zero noted in `uncounted`
/// when its session is there but cannot be read.
fn linked_spending(
    parent: &Session,
    location: &str,
    depth: u32,
    uncounted: &mut Vec<UncountedSubagent>,
) -> Usage {
    match parent.open_related(location) {
        Ok(s) => spending(&s, depth, uncounted),
        Err(e) if never_written(&e) => {
            tracing::debug!(%location, "a sub-agent's session was never written: nothing spent");
            Usage::default()
        }
        Err(e) => {
            uncounted.push(UncountedSubagent {
                location: location.to_string(),
                error: e.to_string(),
            });
            Usage::default()
        }
    }
}

fn spending(session: &Session, depth: u32, uncounted: &mut Vec<UncountedSubagent>) -> Usage {
    let tree: &SessionTree = session;
    let mut total = tree.side_usage();
    let mut answered: HashSet<&str> = HashSet::new();
    for e in tree.entries() {
        let SessionEntry::Message(m) = e else {
            continue;
        };
        if let Some(a) = m.message.as_assistant() {
            total.add(&a.usage);
        } else if let Some(r) = m.message.as_tool_result() {
            if let Some(u) = &r.usage {
                total.add(u);
            }
            answered.insert(r.tool_call_id.as_str());
        }
    }
    if depth < MAX_LINK_DEPTH {
        for link in subagent_links(tree) {
            if !answered.contains(link.tool_call_id.as_str()) {
                total.add(&linked_spending(
                    session,
                    &link.session_file,
                    depth + 1,
                    uncounted,
                ));
            }
        }
    }
    total
}

/// The sub-agents the session started, in order.
pub fn subagent_links(tree: &SessionTree) -> Vec<SubagentLink> {
    tree.entries()
        .iter()
        .filter_map(|e| match e {
            SessionEntry::Custom(c) if c.custom_type == SUBAGENT_LINK => {
                serde_json::from_value(c.data.clone()?).ok()
            }
            _ => None,
        })
        .collect()
}
