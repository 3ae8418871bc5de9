//! The two interfaces a session storage backend implements.
//!
//! - [`SessionLog`]: one session's durable, atomic, ordered appends. A
//!   [`super::Session`] keeps its tree in memory and writes through its log;
//!   the log hands back what other writers appended meanwhile ([`Foreign`]), so
//!   ids stay unique and parents always exist, whatever the backend.
//! - [`SessionStore`]: finding, listing, opening, creating, deleting, exporting
//!   and importing sessions.
//!
//! makai has two backends: the JSONL files of pi's format
//! ([`super::JsonlStore`], [`super::SessionFile`]; the default) and PostgreSQL
//! (crate `makai-store-pg`). Both store exactly the entries of the session
//! format, so a session moves between them losslessly
//! ([`StoredSession`]: the header and entry lines as stored).

use std::path::Path;

use super::entry::{SessionEntry, SessionHeader};
use super::error::SessionError;
use super::file::{Durability, Foreign, loaded_from_bytes};
use super::handle::Session;
use super::store::SessionInfo;

/// What an append builds once it knows what others appended: the entries to
/// write, or an error (nothing is written then).
pub type BuildEntries<'a> =
    dyn FnMut(&Foreign) -> Result<Vec<SessionEntry>, SessionError> + Send + 'a;

/// One session's appends in a store.
///
/// Contract of [`SessionLog::append`]: under the store's per-session lock,
/// read what other writers appended since this log last read or wrote
/// ([`Foreign`], in stored order), call `build` once with it, and store the
/// entries it returns (the header first, when the session is not stored yet)
/// all or nothing, in order, after everything already stored. When `build`
/// fails, or the store refuses, nothing is stored.
pub trait SessionLog: Send + std::fmt::Debug {
    /// Where the session is stored, for people: a file path, or the store's
    /// address and the session id (never a password).
    fn location(&self) -> String;

    /// The session file, for a session stored in one.
    fn path(&self) -> Option<&Path> {
        None
    }

    /// How hard appends work to survive a crash.
    fn durability(&self) -> Durability;

    /// Changes the durability of later appends.
    fn set_durability(&mut self, durability: Durability);

    /// Appends entries (see the trait's contract). Returns what other writers
    /// had appended and the entries written.
    fn append(
        &mut self,
        header: &SessionHeader,
        build: &mut BuildEntries<'_>,
    ) -> Result<(Foreign, Vec<SessionEntry>), SessionError>;

    /// A log for a new session with `header` in the same store (and, for
    /// files, the same folder): where a fork goes.
    fn sibling(&self, header: &SessionHeader) -> Box<dyn SessionLog>;

    /// A number that grows with every append stored through any writer, as
    /// far as this log has seen (its position in the store).
    fn revision(&self) -> u64;

    /// Opens the session at `location`, another session's
    /// [`SessionLog::location`] in this log's store: how a parent session
    /// reads a sub-agent it started. Errors: `location` names no session of
    /// this store, or the session is missing or damaged.
    fn open_related(&self, location: &str) -> Result<Session, SessionError>;
}

/// A session as stored: its header and entry lines, exactly (the JSON text of
/// each, without the newline), and the same values parsed. What `makai
/// sessions export` / `import` move between stores.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredSession {
    /// The header.
    pub header: SessionHeader,
    /// The header's JSON text as stored.
    pub header_line: String,
    /// The entries in stored order.
    pub entries: Vec<SessionEntry>,
    /// Each entry's JSON text as stored.
    pub lines: Vec<String>,
}

impl StoredSession {
    /// Reads a session file's bytes: a header line, then one entry per line,
    /// as [`super::read_session_file`] reads them (blank lines skipped, a torn
    /// last line left out). Damage is refused ([`SessionError::Damaged`],
    /// naming `path` and every line), as is a file without a header.
    pub fn from_jsonl(path: &Path, bytes: &[u8]) -> Result<StoredSession, SessionError> {
        let mut loaded = loaded_from_bytes(path, bytes)?;
        if !loaded.damage.is_empty() {
            return Err(SessionError::Damaged {
                path: path.to_path_buf(),
                damage: Box::new(std::mem::take(&mut loaded.damage)),
            });
        }
        let Some(header) = loaded.header else {
            return Err(SessionError::NotASession {
                path: path.to_path_buf(),
                reason: "it has no session header line".into(),
            });
        };
        let good = &bytes[..(loaded.good_len as usize).min(bytes.len())];
        let mut raw = good
            .split(|b| *b == b'\n')
            .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
            .filter(|l| !l.iter().all(u8::is_ascii_whitespace));
        let text = |l: &[u8]| {
            std::str::from_utf8(l)
                .map(str::to_string)
                .map_err(|e| SessionError::NotASession {
                    path: path.to_path_buf(),
                    reason: format!("a line is not UTF-8 text: {e}"),
                })
        };
        let header_line = text(raw.next().unwrap_or_default())?;
        let lines = raw.map(text).collect::<Result<Vec<String>, _>>()?;
        if lines.len() != loaded.entries.len() {
            return Err(SessionError::NotASession {
                path: path.to_path_buf(),
                reason: format!(
                    "{} entry lines but {} entries were read; this is a makai bug, please report it",
                    lines.len(),
                    loaded.entries.len()
                ),
            });
        }
        Ok(StoredSession {
            header,
            header_line,
            entries: loaded.entries,
            lines,
        })
    }

    /// The JSONL text: the header line, then each entry line, each ending in a newline.
    pub fn to_jsonl(&self) -> String {
        let size = self.header_line.len() + self.lines.iter().map(|l| l.len() + 1).sum::<usize>();
        let mut out = String::with_capacity(size + 1);
        out.push_str(&self.header_line);
        out.push('\n');
        for line in &self.lines {
            out.push_str(line);
            out.push('\n');
        }
        out
    }
}

/// Where sessions are kept: finds, lists, opens, creates, deletes, exports and
/// imports them. Implemented by [`super::JsonlStore`] (pi's JSONL files, the
/// default) and by `makai_store_pg::PgStore` (PostgreSQL).
///
/// `query` arguments are a session id or a unique prefix of one (the JSONL
/// store also takes a file path).
pub trait SessionStore: Send + Sync + std::fmt::Debug {
    /// What the store is, for people: "the session folder /x" or "PostgreSQL
    /// at postgres://user@host/db" (never a password).
    fn describe(&self) -> String;

    /// A new session for `cwd`; it is stored with its first append.
    fn create(&self, cwd: &str) -> Session;

    /// A new session with this header (a fork's `parentSession`, say); it is
    /// stored with its first append.
    fn create_with(&self, header: SessionHeader) -> Session;

    /// The sessions of `cwd`, most recently written first.
    fn list(&self, cwd: &str) -> Result<Vec<SessionInfo>, SessionError>;

    /// Every session in the store, most recently written first.
    fn list_all(&self) -> Result<Vec<SessionInfo>, SessionError>;

    /// Opens a session by id or id prefix: first among the sessions of `cwd`,
    /// then among all. Errors: none matches ([`SessionError::NotFound`]),
    /// several do ([`SessionError::Ambiguous`]), the session is damaged.
    fn open(&self, cwd: &str, query: &str) -> Result<Session, SessionError>;

    /// Opens the most recently written session of `cwd`, if any.
    fn resume_latest(&self, cwd: &str) -> Result<Option<Session>, SessionError>;

    /// Opens the most recently written session of `cwd`, or creates one.
    fn continue_or_create(&self, cwd: &str) -> Result<Session, SessionError> {
        Ok(match self.resume_latest(cwd)? {
            Some(s) => s,
            None => self.create(cwd),
        })
    }

    /// Deletes a session and its entries.
    fn delete(&self, cwd: &str, query: &str) -> Result<(), SessionError>;

    /// The session's lines as stored (for `makai sessions export`).
    fn export(&self, cwd: &str, query: &str) -> Result<StoredSession, SessionError>;

    /// Stores a session read elsewhere, lines as they are. Refuses a session
    /// whose id the store already has ([`SessionError::AlreadyExists`]).
    fn import(&self, session: &StoredSession) -> Result<(), SessionError>;
}
