//! [`Session`]: a [`SessionTree`] kept in sync with its file.

use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use makai_ai::{ThinkingLevel, Usage};
use serde_json::Value;

use super::backend::SessionLog;
use super::context_edit::ContentReplacement;
use super::damage::{Damage, check_appended};
use super::entry::{SessionEntry, SessionHeader, now_iso};
use super::error::{LoadWarning, SessionError};
use super::file::{Durability, SessionFile, read_session_file};
use super::new_entry::{CompactionRecord, NewEntry};
use super::tree::SessionTree;
use makai_agent::{AgentMessage, MessageContent};

mod fork;

/// A session: the tree in memory plus, unless in memory only, its log in a
/// store (a file, or a database: [`SessionLog`]).
///
/// Every append is written (and by default synced) before the method returns;
/// the tree changes only when the write succeeded. Read access goes through
/// [`Deref`] to [`SessionTree`] (`session.context()`, `session.entries()`, ...).
#[derive(Debug)]
pub struct Session {
    tree: SessionTree,
    log: Option<Box<dyn SessionLog>>,
    warnings: Vec<LoadWarning>,
}

impl Deref for Session {
    type Target = SessionTree;
    fn deref(&self) -> &SessionTree {
        &self.tree
    }
}

/// A new session id (UUID v7, time-ordered, as pi).
pub fn new_session_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// The file name pi uses: `<ISO timestamp with : and . as ->_<id>.jsonl`.
pub fn session_file_name(header: &SessionHeader) -> String {
    format!(
        "{}_{}.jsonl",
        header.timestamp.replace([':', '.'], "-"),
        header.id
    )
}

impl Session {
    /// A new session stored in `dir`, named `<timestamp>_<id>.jsonl`.
    ///
    /// The file is created by the first append (header and entry in one write),
    /// so a session nobody wrote to leaves no file behind.
    pub fn create(dir: &Path, cwd: impl Into<String>) -> Session {
        let header = SessionHeader::new(new_session_id(), cwd);
        let path = dir.join(session_file_name(&header));
        Session::with_header(header, Some(path))
    }

    /// A new session at an explicit path (created by the first append).
    pub fn create_at(path: impl Into<PathBuf>, cwd: impl Into<String>) -> Session {
        let header = SessionHeader::new(new_session_id(), cwd);
        Session::with_header(header, Some(path.into()))
    }

    /// A new session for a sub-agent of this one: in this session's store
    /// (its folder, for a file; in memory when this one is), its header's
    /// `parentSession` naming this session's file (or where a database holds
    /// it), as pi writes it for forks.
    pub fn create_child(&self) -> Session {
        let mut header = SessionHeader::new(new_session_id(), self.cwd());
        header.parent_session = self.location();
        match &self.log {
            Some(log) => {
                let sibling = log.sibling(&header);
                Session::from_store(header, Vec::new(), sibling, Vec::new())
            }
            None => Session::with_header(header, None),
        }
    }

    /// A new session with this header, stored in the file at `path` (created
    /// by the first append).
    pub fn create_with_header(header: SessionHeader, path: impl Into<PathBuf>) -> Session {
        Session::with_header(header, Some(path.into()))
    }

    /// A session that is never written to disk.
    pub fn in_memory(cwd: impl Into<String>) -> Session {
        Session::with_header(SessionHeader::new(new_session_id(), cwd), None)
    }

    fn with_header(header: SessionHeader, path: Option<PathBuf>) -> Session {
        Session {
            tree: SessionTree::new(header),
            log: path.map(|p| {
                Box::new(SessionFile::new(p, Durability::default())) as Box<dyn SessionLog>
            }),
            warnings: Vec::new(),
        }
    }

    /// A session whose entries were read from a store, appending through
    /// `log`. The leaf is the last entry, as in pi. For stores other than the
    /// JSONL files (which [`Session::open`] reads).
    pub fn from_store(
        header: SessionHeader,
        entries: Vec<SessionEntry>,
        log: Box<dyn SessionLog>,
        mut warnings: Vec<LoadWarning>,
    ) -> Session {
        let (tree, more) = SessionTree::from_entries(header, entries);
        warnings.extend(more);
        Session {
            tree,
            log: Some(log),
            warnings,
        }
    }

    /// Opens an existing session file. The leaf is its last entry.
    ///
    /// A torn last line is skipped (see [`Session::warnings`]); a damaged line
    /// elsewhere is an error naming it.
    ///
    /// An empty file (or one whose only line is a torn header) is a new
    /// session: it keeps the id in its file name, takes the current directory
    /// as its working directory, and gets its header with the first append.
    pub fn open(path: impl AsRef<Path>) -> Result<Session, SessionError> {
        Session::open_with_cwd(path.as_ref(), None)
    }

    fn open_with_cwd(path: &Path, cwd: Option<String>) -> Result<Session, SessionError> {
        let loaded = read_session_file(path)?;
        let file = SessionFile::after_load(path, &loaded, Durability::default());
        let mut warnings = loaded.warnings;
        let header = match loaded.header {
            Some(h) => h,
            None => {
                // Empty file or torn first write: start it afresh under the same id.
                let id = id_from_file_name(path).unwrap_or_else(new_session_id);
                let cwd = cwd.unwrap_or_else(|| {
                    std::env::current_dir()
                        .map(|d| d.display().to_string())
                        .unwrap_or_default()
                });
                SessionHeader::new(id, cwd)
            }
        };
        let (tree, more) = SessionTree::from_entries(header, loaded.entries);
        warnings.extend(more);
        Ok(Session {
            tree,
            log: Some(Box::new(file)),
            warnings,
        })
    }

    /// Opens the session file at `path`, or starts a new session there (for
    /// `cwd`) when it does not exist yet, as pi's `--session PATH` does.
    ///
    /// An existing empty (0-byte) file is used as a new session for `cwd`: its
    /// header is written with the first entry. A directory, a device, a pipe or
    /// a socket is refused with [`SessionError::NotASession`].
    pub fn open_or_create(
        path: impl AsRef<Path>,
        cwd: impl Into<String>,
    ) -> Result<Session, SessionError> {
        let path = path.as_ref();
        match std::fs::metadata(path) {
            Ok(_) => Session::open_with_cwd(path, Some(cwd.into())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Session::create_at(path, cwd)),
            Err(e) => Err(SessionError::io("read session file", path, e)),
        }
    }

    /// The in-memory tree.
    pub fn tree(&self) -> &SessionTree {
        &self.tree
    }

    /// The session id.
    pub fn id(&self) -> &str {
        self.tree.session_id()
    }

    /// The working directory in the header.
    pub fn cwd(&self) -> &str {
        &self.tree.header().cwd
    }

    /// The session file (`None` when in memory only or in a database).
    pub fn path(&self) -> Option<&Path> {
        self.log.as_ref().and_then(|l| l.path())
    }

    /// Where the session is stored, for people: its file, or the database and
    /// its id (`None` when in memory only).
    pub fn location(&self) -> Option<String> {
        self.log.as_ref().map(|l| l.location())
    }

    /// Opens the session at `location` (another session's [`Session::location`])
    /// in this session's store; a session in memory only opens it as a file.
    /// How a parent reads what a sub-agent it started spent.
    pub fn open_related(&self, location: &str) -> Result<Session, SessionError> {
        match &self.log {
            Some(log) => log.open_related(location),
            None => Session::open(location),
        }
    }

    /// The store's revision of this session as far as this handle has seen:
    /// it grows with every append by any writer (`0` in memory). A store can
    /// compare it with its own to tell whether others appended meanwhile.
    pub fn revision(&self) -> u64 {
        self.log.as_ref().map_or(0, |l| l.revision())
    }

    /// The log appends go through (`None` in memory only).
    pub fn log_mut(&mut self) -> Option<&mut (dyn SessionLog + 'static)> {
        self.log.as_deref_mut()
    }

    /// What loading and later appends skipped or repaired.
    pub fn warnings(&self) -> &[LoadWarning] {
        &self.warnings
    }

    /// Sets how appends reach the disk (default [`Durability::Fsync`]).
    pub fn set_durability(&mut self, durability: Durability) {
        if let Some(l) = &mut self.log {
            l.set_durability(durability);
        }
    }

    /// Appends one entry below the current leaf and makes it the leaf. Returns its id.
    pub fn append(&mut self, entry: NewEntry) -> Result<String, SessionError> {
        let mut ids = self.append_all(vec![entry])?;
        ids.pop().ok_or_else(|| self.tree.not_found("(new entry)"))
    }

    /// Appends entries as a chain below the current leaf in one write. Returns their ids.
    pub fn append_all(&mut self, entries: Vec<NewEntry>) -> Result<Vec<String>, SessionError> {
        self.append_below(self.tree.leaf_id().map(str::to_string), entries)
    }

    fn append_below(
        &mut self,
        parent: Option<String>,
        news: Vec<NewEntry>,
    ) -> Result<Vec<String>, SessionError> {
        let tree = &mut self.tree;
        let build = |tree: &mut SessionTree| {
            let mut parent = parent;
            let mut out: Vec<SessionEntry> = Vec::with_capacity(news.len());
            let timestamp = now_iso();
            for new in news {
                let id = tree.fresh_id(&out);
                out.push(new.into_entry(id.clone(), parent, timestamp.clone()));
                parent = Some(id);
            }
            out
        };
        let built = match &mut self.log {
            None => build(tree),
            Some(log) => {
                let header = tree.header().clone();
                let location = log.location();
                let mut build = Some(build);
                let mut news_build = |foreign: &super::file::Foreign| {
                    if let Some(h) = &foreign.header
                        && h.id != header.id
                    {
                        tracing::warn!(ours = %header.id, theirs = %h.id, "session was created by another process; adopting its header");
                        tree.set_header(h.clone());
                    }
                    let check = check_appended(
                        &|id| tree.get(id),
                        tree.entries().last().map(SessionEntry::id),
                        &foreign.entries,
                        &foreign.entry_lines,
                    );
                    if !check.repeated.is_empty() || !check.broken.is_empty() {
                        return Err(SessionError::Damaged {
                            path: PathBuf::from(&location),
                            damage: Box::new(Damage {
                                lines: check.repeated,
                                links: check.broken,
                                missing_header: None,
                            }),
                        });
                    }
                    for e in &foreign.entries {
                        tree.insert(e.clone());
                    }
                    let build = build.take().ok_or_else(|| {
                        SessionError::io(
                            "build the entries to append to",
                            PathBuf::from(&location),
                            std::io::Error::other("the store asked for them twice"),
                        )
                    })?;
                    Ok(build(tree))
                };
                let (foreign, built) = log.append(&header, &mut news_build)?;
                self.warnings.extend(foreign.warnings);
                built
            }
        };
        let ids = built.iter().map(|e| e.id().to_string()).collect();
        for e in built {
            self.tree.push(e);
        }
        Ok(ids)
    }

    /// Appends a message.
    pub fn append_message(
        &mut self,
        message: impl Into<AgentMessage>,
    ) -> Result<String, SessionError> {
        self.append(NewEntry::Message(message.into()))
    }

    /// Records a model switch.
    pub fn append_model_change(
        &mut self,
        provider: impl Into<String>,
        model_id: impl Into<String>,
    ) -> Result<String, SessionError> {
        self.append(NewEntry::ModelChange {
            provider: provider.into(),
            model_id: model_id.into(),
        })
    }

    /// Records a thinking-level change.
    pub fn append_thinking_level(&mut self, level: ThinkingLevel) -> Result<String, SessionError> {
        self.append(NewEntry::ThinkingLevelChange(level.as_str().to_string()))
    }

    /// Records a compaction. `first_kept_entry_id` must be on the current path;
    /// `None` records a retain-none compaction.
    pub fn append_compaction(&mut self, record: CompactionRecord) -> Result<String, SessionError> {
        if let Some(first) = &record.first_kept_entry_id
            && !self.tree.current_path().iter().any(|e| e.id() == first)
        {
            return Err(self.tree.not_found(first));
        }
        self.append(NewEntry::Compaction(record))
    }

    /// Records model usage that is not an assistant message (`kind` such as
    /// `cache_warm`); it counts in the session's totals only.
    pub fn append_usage(
        &mut self,
        kind: impl Into<String>,
        provider: impl Into<String>,
        model: impl Into<String>,
        usage: Usage,
    ) -> Result<String, SessionError> {
        self.append(NewEntry::Usage {
            kind: kind.into(),
            provider: provider.into(),
            model: model.into(),
            usage,
        })
    }

    /// Omits (`replacement: None`) or replaces the content of an earlier
    /// message in future model context, without changing the entry itself.
    ///
    /// Errors: the target is not on the current path, or is not a message or
    /// custom-message entry.
    pub fn append_context_edit(
        &mut self,
        target_id: &str,
        replacement: Option<ContentReplacement>,
    ) -> Result<String, SessionError> {
        let path = self.tree.current_path();
        let Some(target) = path.iter().find(|e| e.id() == target_id) else {
            return Err(self.tree.not_found(target_id));
        };
        if !matches!(
            target,
            SessionEntry::Message(_) | SessionEntry::CustomMessage(_)
        ) {
            return Err(SessionError::NotEditable {
                id: target_id.to_string(),
                kind: target.kind().to_string(),
            });
        }
        self.append(NewEntry::ContextEdit {
            target_id: target_id.to_string(),
            replacement,
        })
    }

    /// Stores extension state (not part of the model's context).
    pub fn append_custom(
        &mut self,
        custom_type: impl Into<String>,
        data: Option<Value>,
    ) -> Result<String, SessionError> {
        self.append(NewEntry::Custom {
            custom_type: custom_type.into(),
            data,
        })
    }

    /// Adds an extension message to the model's context.
    pub fn append_custom_message(
        &mut self,
        custom_type: impl Into<String>,
        content: impl Into<MessageContent>,
        display: bool,
        details: Option<Value>,
    ) -> Result<String, SessionError> {
        self.append(NewEntry::CustomMessage {
            custom_type: custom_type.into(),
            content: content.into(),
            display,
            details,
        })
    }

    /// The label of an entry, if it has one.
    pub fn label(&self, id: &str) -> Option<&str> {
        self.tree.label(id)
    }

    /// Sets (`Some`) or clears (`None`) the label of an entry.
    pub fn set_label(
        &mut self,
        target_id: &str,
        label: Option<&str>,
    ) -> Result<String, SessionError> {
        if self.tree.get(target_id).is_none() {
            return Err(self.tree.not_found(target_id));
        }
        self.append(NewEntry::Label {
            target_id: target_id.to_string(),
            label: label.map(str::to_string),
        })
    }

    /// Sets the session's display name (an empty name clears it).
    pub fn set_name(&mut self, name: &str) -> Result<String, SessionError> {
        self.append(NewEntry::SessionInfo {
            name: name.to_string(),
        })
    }

    /// Continues from an earlier entry: the next append becomes its child,
    /// starting a new branch. Also switches between existing branches (pass a
    /// branch's leaf). Not written to the file: on reopen the leaf is the last
    /// entry appended, as in pi.
    pub fn branch_from(&mut self, entry_id: &str) -> Result<(), SessionError> {
        self.tree.set_leaf(Some(entry_id))
    }

    /// Moves the leaf before the first entry: the next append starts a new root.
    pub fn reset_leaf(&mut self) {
        // Moving to "before the first entry" cannot fail.
        let _ = self.tree.set_leaf(None);
    }

    /// Branches from `from` (`None`: before the first entry) and records a
    /// summary of the branch being left (with the `usage` of the call that
    /// wrote it); the summary becomes the new leaf.
    pub fn branch_with_summary(
        &mut self,
        from: Option<&str>,
        summary: impl Into<String>,
        details: Option<Value>,
        usage: Option<Usage>,
    ) -> Result<String, SessionError> {
        if let Some(id) = from
            && self.tree.get(id).is_none()
        {
            return Err(self.tree.not_found(id));
        }
        let left = self.tree.leaf_id().unwrap_or("root").to_string();
        let mut ids = self.append_below(
            from.map(str::to_string),
            vec![NewEntry::BranchSummary {
                from_id: left,
                summary: summary.into(),
                usage,
                details,
            }],
        )?;
        ids.pop().ok_or_else(|| self.tree.not_found("(new entry)"))
    }
}

/// Reads the id out of a `<timestamp>_<id>.jsonl` file name.
pub(crate) fn id_from_file_name(path: &Path) -> Option<String> {
    let stem = path.file_stem()?.to_str()?;
    let (_, id) = stem.rsplit_once('_')?;
    (!id.is_empty()).then(|| id.to_string())
}

/// A session shared between tasks (e.g. the agent run and the background title job).
#[derive(Clone, Debug)]
pub struct SharedSession(Arc<Mutex<Session>>);

impl SharedSession {
    /// Wraps a session.
    pub fn new(session: Session) -> Self {
        SharedSession(Arc::new(Mutex::new(session)))
    }

    /// Locks it. A panic in another holder does not make it unusable: the
    /// session's state is only changed after a successful write.
    pub fn lock(&self) -> MutexGuard<'_, Session> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Locks it unless another holder has it now (a panic's report must
    /// not wait for the lock the panicking code held).
    pub fn try_lock(&self) -> Option<MutexGuard<'_, Session>> {
        match self.0.try_lock() {
            Ok(guard) => Some(guard),
            Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }
}

impl From<Session> for SharedSession {
    fn from(s: Session) -> Self {
        SharedSession::new(s)
    }
}
