//! Errors and warnings of the session layer.

use std::fmt;
use std::io;
use std::path::PathBuf;

use super::damage::Damage;

/// What went wrong with a session or the session store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// A file-system operation failed.
    #[error("cannot {action} {path}: {source}")]
    Io {
        /// What was being done (e.g. "append to session file").
        action: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The session file is damaged (see [`crate::session::damage`]); nothing was changed.
    #[error(
        "session file {path} is damaged: {damage}. Nothing was changed. To repair it, run \
         `makai sessions repair {path}` (or add --repair): it keeps a backup copy, moves the \
         damaged lines to {path}.damaged and re-attaches cut-off entries, keeping every other \
         byte. Or fix the lines named here in a text editor (keep a copy)"
    )]
    Damaged {
        /// The session file.
        path: PathBuf,
        /// What is wrong, line by line.
        damage: Box<Damage>,
    },
    /// The session file was replaced or removed while this process had it open.
    #[error(
        "session file {path} was replaced or removed by another program (a repair?) while it \
         was open; nothing was written. Open the session again"
    )]
    FileReplaced {
        /// The file.
        path: PathBuf,
    },
    /// The file does not start with a session header.
    #[error("{path} is not a session file: {reason}")]
    NotASession {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The file uses a format version this crate cannot read.
    #[error(
        "session file {path} uses format version {version}, which makai cannot read (it reads \
         versions 2 and 3); open it once with a current pi to migrate it"
    )]
    UnsupportedVersion {
        /// The file.
        path: PathBuf,
        /// Its version.
        version: u32,
    },
    /// The file got shorter while this process had it open.
    #[error(
        "session file {path} shrank from {expected} to {actual} bytes while it was open; another \
         program rewrote it. Open the session again before appending"
    )]
    FileShrunk {
        /// The file.
        path: PathBuf,
        /// The length this process had read.
        expected: u64,
        /// The length found.
        actual: u64,
    },
    /// An entry id that is not in the session.
    #[error("entry '{id}' is not in session {session}; list the entries to pick an existing id")]
    EntryNotFound {
        /// The missing id.
        id: String,
        /// The session id.
        session: String,
    },
    /// A context edit aimed at an entry that adds no message to the context.
    #[error(
        "entry '{id}' is a {kind} entry; a context edit can only target a message or \
         custom_message entry"
    )]
    NotEditable {
        /// The target id.
        id: String,
        /// Its entry type.
        kind: String,
    },
    /// No session matched an id or path.
    #[error("no session matches '{query}' (searched {})", display_paths(.searched))]
    NotFound {
        /// The id prefix or path asked for.
        query: String,
        /// Folders searched.
        searched: Vec<PathBuf>,
    },
    /// Several sessions matched an id prefix.
    #[error("'{query}' matches several sessions ({}); give more characters of the id", display_paths(.matches))]
    Ambiguous {
        /// The prefix.
        query: String,
        /// The matching files.
        matches: Vec<PathBuf>,
    },
    /// The session is in memory only and has no file.
    #[error("session {session} is in memory only; this operation needs a session file")]
    NotPersisted {
        /// The session id.
        session: String,
    },
    /// Refused to delete something that is not a session file.
    #[error("refusing to delete {path}: {reason}")]
    RefusedDelete {
        /// The path.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// An entry could not be serialized (should not happen for well-formed values).
    #[error("cannot serialize a session entry: {0}")]
    Serialize(#[from] serde_json::Error),
    /// The store already has a session with this id (an import).
    #[error(
        "the store already has session {id} ({location}); delete it first or import into another store"
    )]
    AlreadyExists {
        /// The session id.
        id: String,
        /// Where the existing one is.
        location: String,
    },
    /// A store other than the JSONL files (a database) failed or refused;
    /// its error says what happened and what to do.
    #[error(transparent)]
    Store(Box<dyn std::error::Error + Send + Sync + 'static>),
    /// No home folder to put `~/.makai` in.
    #[error("cannot find the home folder; set MAKAI_HOME to the folder makai should use")]
    NoHome,
}

fn display_paths(paths: &[PathBuf]) -> String {
    let v: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    v.join(", ")
}

impl SessionError {
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        SessionError::Io {
            action,
            path: path.into(),
            source,
        }
    }
}

/// Something odd found while loading that did not stop the load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadWarning {
    /// 1-based line number, when the warning is about one line.
    pub line: Option<usize>,
    /// What happened and what was done about it.
    pub message: String,
}

impl fmt::Display for LoadWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "line {l}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}
