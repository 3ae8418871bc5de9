//! Forking a [`Session`]: the path to an entry copied into a new session
//! whose `parentSession` is this one.

use std::path::PathBuf;

use super::super::backend::SessionLog;
use super::super::entry::{LabelEntry, SessionEntry, SessionHeader};
use super::super::error::SessionError;
use super::super::file::SessionFile;
use super::super::tree::SessionTree;
use super::{Session, new_session_id};

impl Session {
    /// Copies the path from the root to `leaf_id` into a new session file at
    /// `path`, with `parentSession` pointing at this session's file. Labels on
    /// copied entries are carried over. The new file is written before this returns.
    pub fn fork(&self, leaf_id: &str, path: impl Into<PathBuf>) -> Result<Session, SessionError> {
        let header = self.fork_header();
        let durability = self
            .log
            .as_ref()
            .map(|l| l.durability())
            .unwrap_or_default();
        let log = Box::new(SessionFile::new(path.into(), durability));
        self.fork_with(header, leaf_id, log)
    }

    /// The header of a fork: a new id, this session's working directory and
    /// location as `parentSession`.
    fn fork_header(&self) -> SessionHeader {
        let mut header = SessionHeader::new(new_session_id(), self.cwd());
        header.parent_session = self.location();
        header
    }

    fn fork_with(
        &self,
        header: SessionHeader,
        leaf_id: &str,
        mut log: Box<dyn SessionLog>,
    ) -> Result<Session, SessionError> {
        let branch = self.tree.path_to(leaf_id);
        if branch.is_empty() {
            return Err(self.tree.not_found(leaf_id));
        }
        let copied: Vec<SessionEntry> = branch
            .into_iter()
            .filter(|e| !matches!(e, SessionEntry::Label(_)))
            .cloned()
            .collect();
        let mut tree = SessionTree::new(header.clone());
        for e in &copied {
            tree.push(e.clone());
        }
        let mut labels: Vec<(String, String, String)> = self
            .tree
            .labels()
            .filter(|(target, _, _)| tree.get(target).is_some())
            .map(|(t, l, ts)| (t.to_string(), l.to_string(), ts.to_string()))
            .collect();
        labels.sort_by(|a, b| a.2.cmp(&b.2));
        let mut label_entries = Vec::new();
        for (target_id, label, timestamp) in labels {
            let id = tree.fresh_id(&label_entries);
            label_entries.push(SessionEntry::Label(LabelEntry {
                id,
                parent_id: tree.leaf_id().map(str::to_string),
                timestamp,
                target_id,
                label: Some(label),
            }));
            if let Some(last) = label_entries.last() {
                tree.push(last.clone());
            }
        }
        let mut all = Some(copied.into_iter().chain(label_entries).collect::<Vec<_>>());
        log.append(&header, &mut |_| Ok(all.take().unwrap_or_default()))?;
        Ok(Session {
            tree,
            log: Some(log),
            warnings: Vec::new(),
        })
    }

    /// Copies the path from the root to `leaf_id` into a new session of
    /// `store` with `header` (its id and working directory; `parentSession`
    /// is this session's location when the header has none), written before
    /// this returns. `makai --fork` uses it to fork into the current
    /// directory.
    pub fn fork_into(
        &self,
        leaf_id: &str,
        mut header: SessionHeader,
        store: &dyn super::super::SessionStore,
    ) -> Result<Session, SessionError> {
        if header.parent_session.is_none() {
            header.parent_session = self.location();
        }
        let mut target = store.create_with(header.clone());
        let log = target
            .log
            .take()
            .ok_or_else(|| SessionError::NotPersisted {
                session: header.id.clone(),
            })?;
        self.fork_with(header, leaf_id, log)
    }

    /// Forks into the same store as this session (for a file: the same
    /// folder, under a new pi-style name).
    pub fn fork_here(&self, leaf_id: &str) -> Result<Session, SessionError> {
        let log = self
            .log
            .as_ref()
            .ok_or_else(|| SessionError::NotPersisted {
                session: self.id().to_string(),
            })?;
        let header = self.fork_header();
        let sibling = log.sibling(&header);
        self.fork_with(header, leaf_id, sibling)
    }
}
