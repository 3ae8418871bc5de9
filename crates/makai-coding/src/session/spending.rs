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
    spending(session, 0)
}

/// [`session_spending`] of the session file at `path` (zero when it cannot
/// be read: a sub-agent that never wrote its first entry has none).
pub fn file_spending(path: &Path) -> Usage {
    match Session::open(path) {
        Ok(s) => spending(&s, 0),
        Err(e) => {
            tracing::debug!(path = %path.display(), error = %e, "no spending read from a session file");
            Usage::default()
        }
    }
}

/// What the sub-agent at `location` spent, read through `parent`'s store
/// (zero when it cannot be read: a sub-agent that never wrote its first
/// entry has none).
fn linked_spending(parent: &Session, location: &str, depth: u32) -> Usage {
    match parent.open_related(location) {
        Ok(s) => spending(&s, depth),
        Err(e) => {
            tracing::debug!(%location, error = %e, "no spending read from a sub-agent's session");
            Usage::default()
        }
    }
}

fn spending(session: &Session, depth: u32) -> Usage {
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
                total.add(&linked_spending(session, &link.session_file, depth + 1));
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
