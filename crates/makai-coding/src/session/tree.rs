//! The in-memory session tree: entries by id, parent links, the current leaf
//! and labels. The context the model sees at a leaf is built in
//! [`super::context`].

use std::collections::{HashMap, HashSet};

use makai_ai::Usage;

use super::entry::{SessionEntry, SessionHeader};
use super::error::{LoadWarning, SessionError};

/// One node of [`TreeView`].
#[derive(Clone, Debug)]
pub struct TreeNode<'a> {
    /// The entry.
    pub entry: &'a SessionEntry,
    /// Its current label.
    pub label: Option<&'a str>,
    /// When the label was set (the label entry's ISO timestamp).
    pub label_timestamp: Option<&'a str>,
    /// Index of the parent node (`None` for roots and orphans).
    pub parent: Option<usize>,
    /// Indexes of the children, oldest first.
    pub children: Vec<usize>,
    /// Distance from its root.
    pub depth: usize,
    /// True when it lies on the path from the root to the current leaf.
    pub on_current_path: bool,
}

/// The whole tree, flat: `nodes[i]` is entry `i` in file order.
#[derive(Clone, Debug, Default)]
pub struct TreeView<'a> {
    /// All nodes in file order.
    pub nodes: Vec<TreeNode<'a>>,
    /// Root nodes (a well-formed session has one; orphans count as roots).
    pub roots: Vec<usize>,
}

/// A session's entries as a tree.
#[derive(Clone, Debug)]
pub struct SessionTree {
    header: SessionHeader,
    entries: Vec<SessionEntry>,
    index: HashMap<String, usize>,
    leaf: Option<String>,
    labels: HashMap<String, (String, String)>,
}

impl SessionTree {
    /// An empty tree.
    pub fn new(header: SessionHeader) -> Self {
        SessionTree {
            header,
            entries: Vec::new(),
            index: HashMap::new(),
            leaf: None,
            labels: HashMap::new(),
        }
    }

    /// A tree of loaded entries; the leaf is the last entry, as in pi.
    ///
    /// Returns warnings for duplicate ids (the later entry wins).
    pub fn from_entries(
        header: SessionHeader,
        entries: Vec<SessionEntry>,
    ) -> (Self, Vec<LoadWarning>) {
        let mut tree = SessionTree::new(header);
        tree.entries.reserve(entries.len());
        tree.index.reserve(entries.len());
        let mut warnings = Vec::new();
        for entry in entries {
            if tree.index.contains_key(entry.id()) {
                warnings.push(LoadWarning {
                    line: None,
                    message: format!(
                        "entry id {} appears more than once; the later entry wins",
                        entry.id()
                    ),
                });
            }
            tree.insert(entry);
        }
        tree.leaf = tree.entries.last().map(|e| e.id().to_string());
        (tree, warnings)
    }

    /// The header.
    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    pub(crate) fn set_header(&mut self, header: SessionHeader) {
        self.header = header;
    }

    /// The session id.
    pub fn session_id(&self) -> &str {
        &self.header.id
    }

    /// All entries in file order (header excluded).
    pub fn entries(&self) -> &[SessionEntry] {
        &self.entries
    }

    /// The entry with this id.
    pub fn get(&self, id: &str) -> Option<&SessionEntry> {
        self.index.get(id).map(|&i| &self.entries[i])
    }

    /// The current leaf id; `None` before the first entry.
    pub fn leaf_id(&self) -> Option<&str> {
        self.leaf.as_deref()
    }

    /// The current leaf entry.
    pub fn leaf(&self) -> Option<&SessionEntry> {
        self.leaf.as_deref().and_then(|id| self.get(id))
    }

    /// Moves the leaf: the next append becomes a child of `id` (`None`: a new root).
    pub fn set_leaf(&mut self, id: Option<&str>) -> Result<(), SessionError> {
        if let Some(id) = id
            && !self.index.contains_key(id)
        {
            return Err(self.not_found(id));
        }
        self.leaf = id.map(str::to_string);
        Ok(())
    }

    pub(crate) fn not_found(&self, id: &str) -> SessionError {
        SessionError::EntryNotFound {
            id: id.to_string(),
            session: self.header.id.clone(),
        }
    }

    /// The direct children of an entry, in file order.
    pub fn children(&self, id: &str) -> Vec<&SessionEntry> {
        self.entries
            .iter()
            .filter(|e| e.parent_id() == Some(id))
            .collect()
    }

    /// Entries without children: the tips of all branches, in file order.
    pub fn leaves(&self) -> Vec<&SessionEntry> {
        let parents: HashSet<&str> = self.entries.iter().filter_map(|e| e.parent_id()).collect();
        self.entries
            .iter()
            .filter(|e| !parents.contains(e.id()))
            .collect()
    }

    /// The label of an entry.
    pub fn label(&self, id: &str) -> Option<&str> {
        self.labels.get(id).map(|(l, _)| l.as_str())
    }

    /// The display name from the latest `session_info` entry (an empty name clears it).
    pub fn name(&self) -> Option<&str> {
        self.entries.iter().rev().find_map(|e| match e {
            SessionEntry::SessionInfo(i) => {
                Some(i.name.as_deref().map(str::trim).filter(|n| !n.is_empty()))
            }
            _ => None,
        })?
    }

    /// Usage recorded outside assistant messages, over the whole file: `usage`
    /// entries and the summarising calls of compactions and branch summaries.
    /// pi counts it in the session's token and cost totals.
    pub fn side_usage(&self) -> Usage {
        let mut total = Usage::default();
        for e in &self.entries {
            let usage = match e {
                SessionEntry::Usage(u) => Some(&u.usage),
                SessionEntry::Compaction(c) => c.usage.as_ref(),
                SessionEntry::BranchSummary(b) => b.usage.as_ref(),
                _ => None,
            };
            if let Some(u) = usage {
                total.add(u);
            }
        }
        total
    }

    /// The entries from the root to `id` (inclusive); empty when `id` is unknown.
    pub fn path_to(&self, id: &str) -> Vec<&SessionEntry> {
        let mut path = Vec::new();
        let mut current = self.index.get(id).copied();
        // Bounded walk: a parent cycle in a damaged file cannot loop forever.
        while let Some(i) = current {
            if path.len() > self.entries.len() {
                break;
            }
            let entry = &self.entries[i];
            path.push(entry);
            current = entry.parent_id().and_then(|p| self.index.get(p).copied());
        }
        path.reverse();
        path
    }

    /// The entries from the current leaf back to the root, nearest first,
    /// walked as far as the caller reads.
    pub fn branch_back(&self) -> impl Iterator<Item = &SessionEntry> {
        let start = self
            .leaf
            .as_deref()
            .and_then(|id| self.index.get(id).copied());
        // Bounded walk: a parent cycle in a damaged file cannot loop forever.
        std::iter::successors(start, |&i| {
            let parent = self.entries[i].parent_id()?;
            self.index.get(parent).copied()
        })
        .take(self.entries.len())
        .map(|i| &self.entries[i])
    }

    /// The entries from the root to the current leaf.
    pub fn current_path(&self) -> Vec<&SessionEntry> {
        match &self.leaf {
            Some(id) => self.path_to(id),
            None => Vec::new(),
        }
    }

    /// The tree for UIs; children sorted oldest first.
    pub fn view(&self) -> TreeView<'_> {
        let on_path: HashSet<&str> = self.current_path().iter().map(|e| e.id()).collect();
        let mut nodes: Vec<TreeNode<'_>> = self
            .entries
            .iter()
            .map(|e| TreeNode {
                entry: e,
                label: self.label(e.id()),
                label_timestamp: self.labels.get(e.id()).map(|(_, t)| t.as_str()),
                parent: None,
                children: Vec::new(),
                depth: 0,
                on_current_path: on_path.contains(e.id()),
            })
            .collect();
        let mut roots = Vec::new();
        for (i, e) in self.entries.iter().enumerate() {
            // With duplicate ids only the indexed (later) entry is a parent.
            let parent = e
                .parent_id()
                .filter(|p| *p != e.id())
                .and_then(|p| self.index.get(p).copied());
            match parent {
                Some(p) if p != i => {
                    nodes[i].parent = Some(p);
                    nodes[p].children.push(i);
                }
                _ => roots.push(i),
            }
        }
        let mut stack: Vec<(usize, usize)> = roots.iter().map(|&r| (r, 0)).collect();
        let mut seen = vec![false; nodes.len()];
        while let Some((i, depth)) = stack.pop() {
            if std::mem::replace(&mut seen[i], true) {
                continue;
            }
            nodes[i].depth = depth;
            let mut children = std::mem::take(&mut nodes[i].children);
            children.sort_by(|a, b| {
                self.entries[*a]
                    .timestamp()
                    .cmp(self.entries[*b].timestamp())
            });
            stack.extend(children.iter().map(|&c| (c, depth + 1)));
            nodes[i].children = children;
        }
        TreeView { nodes, roots }
    }

    /// Adds an entry without moving the leaf.
    pub(crate) fn insert(&mut self, entry: SessionEntry) {
        if let SessionEntry::Label(l) = &entry {
            match &l.label {
                Some(label) if !label.is_empty() => {
                    self.labels
                        .insert(l.target_id.clone(), (label.clone(), l.timestamp.clone()));
                }
                _ => {
                    self.labels.remove(&l.target_id);
                }
            }
        }
        self.index
            .insert(entry.id().to_string(), self.entries.len());
        self.entries.push(entry);
    }

    /// Adds an entry and makes it the leaf.
    pub(crate) fn push(&mut self, entry: SessionEntry) {
        self.leaf = Some(entry.id().to_string());
        self.insert(entry);
    }

    /// The labels as (target, label, timestamp).
    pub(crate) fn labels(&self) -> impl Iterator<Item = (&str, &str, &str)> {
        self.labels
            .iter()
            .map(|(t, (l, ts))| (t.as_str(), l.as_str(), ts.as_str()))
    }

    /// A new 8-hex-character id not used in this tree nor in `taken`.
    pub(crate) fn fresh_id(&self, taken: &[SessionEntry]) -> String {
        for _ in 0..100 {
            let id = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
            if !self.index.contains_key(&id) && !taken.iter().any(|e| e.id() == id) {
                return id;
            }
        }
        uuid::Uuid::new_v4().to_string()
    }
}
