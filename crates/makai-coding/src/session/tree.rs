//! The in-memory session tree: entries by id, parent links, the current leaf,
//! labels, and the context the model sees at the leaf.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use makai_ai::{Message, ThinkingLevel, Timestamp};

use super::entry::{CompactionEntry, SessionEntry, SessionHeader};
use super::error::{LoadWarning, SessionError};
use makai_agent::{AgentMessage, BranchSummaryMessage, CompactionSummaryMessage, CustomMessage};

/// A model named by provider and id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelRef {
    /// Provider name.
    pub provider: String,
    /// Model id.
    pub model_id: String,
}

/// What the model sees at a leaf, plus the settings in force there.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionContext {
    /// The messages, root to leaf, with compaction applied.
    pub messages: Vec<AgentMessage>,
    /// For each message, the id of the entry it came from (a compaction entry for
    /// its summary and retained messages). Use these ids as `firstKeptEntryId`.
    pub entry_ids: Vec<String>,
    /// The thinking level in force (`off` when never set).
    pub thinking_level: String,
    /// The model in force: the last model change or assistant message on the path.
    pub model: Option<ModelRef>,
}

impl SessionContext {
    /// The messages as the model receives them (see [`AgentMessage::to_llm`]).
    pub fn llm_messages(&self) -> Vec<Message> {
        self.messages
            .iter()
            .filter_map(AgentMessage::to_llm)
            .collect()
    }

    /// The thinking level parsed, or `None` when the stored name is unknown.
    pub fn thinking(&self) -> Option<ThinkingLevel> {
        self.thinking_level.parse().ok()
    }
}

/// One node of [`TreeView`].
#[derive(Clone, Debug)]
pub struct TreeNode<'a> {
    /// The entry.
    pub entry: &'a SessionEntry,
    /// Its current label.
    pub label: Option<&'a str>,
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

    /// The entries from the root to the current leaf.
    pub fn current_path(&self) -> Vec<&SessionEntry> {
        match &self.leaf {
            Some(id) => self.path_to(id),
            None => Vec::new(),
        }
    }

    /// The messages the agent sees at the current leaf, as LLM messages.
    pub fn path_to_leaf(&self) -> Vec<Message> {
        match &self.leaf {
            Some(id) => self
                .context_parts(id)
                .items
                .iter()
                .filter_map(|(m, _)| m.to_llm())
                .collect(),
            None => Vec::new(),
        }
    }

    /// The context at the current leaf.
    pub fn context(&self) -> SessionContext {
        match &self.leaf {
            Some(id) => self.context_at(id),
            None => SessionContext {
                thinking_level: "off".into(),
                ..Default::default()
            },
        }
    }

    /// The context at any entry, applying the last compaction on its path.
    pub fn context_at(&self, leaf_id: &str) -> SessionContext {
        let parts = self.context_parts(leaf_id);
        let mut ctx = SessionContext {
            messages: Vec::with_capacity(parts.items.len()),
            entry_ids: Vec::with_capacity(parts.items.len()),
            thinking_level: parts.thinking_level,
            model: parts.model,
        };
        for (m, id) in parts.items {
            ctx.messages.push(m.into_owned());
            ctx.entry_ids.push(id.to_string());
        }
        ctx
    }

    /// The context as borrowed messages (synthesised ones owned).
    fn context_parts(&self, leaf_id: &str) -> ContextParts<'_> {
        let path = self.path_to(leaf_id);
        let mut parts = ContextParts {
            items: Vec::with_capacity(path.len()),
            thinking_level: "off".into(),
            model: None,
        };
        let mut compaction: Option<(usize, &CompactionEntry)> = None;
        for (i, entry) in path.iter().enumerate() {
            match entry {
                SessionEntry::ThinkingLevelChange(t) => {
                    parts.thinking_level = t.thinking_level.clone()
                }
                SessionEntry::ModelChange(m) => {
                    parts.model = Some(ModelRef {
                        provider: m.provider.clone(),
                        model_id: m.model_id.clone(),
                    })
                }
                SessionEntry::Message(m) => {
                    if let Some(a) = m.message.as_assistant() {
                        parts.model = Some(ModelRef {
                            provider: a.provider.clone(),
                            model_id: a.model.clone(),
                        });
                    }
                }
                SessionEntry::Compaction(c) => compaction = Some((i, c)),
                _ => {}
            }
        }
        let Some((at, c)) = compaction else {
            for entry in &path {
                push_context_message(&mut parts.items, entry);
            }
            return parts;
        };
        if let Some(head) = &c.retained_head {
            for m in head {
                parts.items.push((Cow::Borrowed(m), &c.id));
            }
        }
        parts.items.push((
            Cow::Owned(AgentMessage::CompactionSummary(CompactionSummaryMessage {
                summary: c.summary.clone(),
                tokens_before: c.tokens_before,
                timestamp: iso_to_ms(&c.timestamp),
            })),
            &c.id,
        ));
        if let Some(tail) = &c.retained_tail {
            for m in tail {
                parts.items.push((Cow::Borrowed(m), &c.id));
            }
        } else if let Some(first_kept) = &c.first_kept_entry_id {
            let start = path[..at].iter().position(|e| e.id() == first_kept);
            if let Some(start) = start {
                for entry in &path[start..at] {
                    push_context_message(&mut parts.items, entry);
                }
            }
        }
        for entry in &path[at + 1..] {
            push_context_message(&mut parts.items, entry);
        }
        parts
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

struct ContextParts<'a> {
    items: Vec<(Cow<'a, AgentMessage>, &'a str)>,
    thinking_level: String,
    model: Option<ModelRef>,
}

fn push_context_message<'a>(
    items: &mut Vec<(Cow<'a, AgentMessage>, &'a str)>,
    entry: &'a SessionEntry,
) {
    let message = match entry {
        SessionEntry::Message(m) => Cow::Borrowed(&m.message),
        SessionEntry::CustomMessage(c) => Cow::Owned(AgentMessage::Custom(CustomMessage {
            custom_type: c.custom_type.clone(),
            content: c.content.clone(),
            display: c.display,
            details: c.details.clone(),
            timestamp: iso_to_ms(&c.timestamp),
        })),
        SessionEntry::BranchSummary(b) if !b.summary.is_empty() => {
            Cow::Owned(AgentMessage::BranchSummary(BranchSummaryMessage {
                summary: b.summary.clone(),
                from_id: Some(b.from_id.clone()),
                timestamp: iso_to_ms(&b.timestamp),
            }))
        }
        _ => return,
    };
    items.push((message, entry.id()));
}

/// Parses an ISO 8601 timestamp to Unix ms (0 when unreadable).
pub(crate) fn iso_to_ms(iso: &str) -> Timestamp {
    chrono::DateTime::parse_from_rfc3339(iso)
        .map(|t| t.timestamp_millis())
        .unwrap_or(0)
}
