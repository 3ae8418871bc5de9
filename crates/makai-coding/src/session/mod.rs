//! Sessions: durable, branching conversation trees in pi's JSONL session format.
//!
//! A session file is one header line followed by one entry per line
//! ([`SessionEntry`]); entries link to their parent by id, so the file is an
//! append-only tree. [`Session`] keeps a [`SessionTree`] in sync with its log
//! in a store ([`SessionLog`]; [`SessionFile`] does the durable, locked appends
//! of a file), a [`SessionStore`] finds sessions ([`JsonlStore`]: under
//! `~/.makai/sessions/<encoded cwd>/`; PostgreSQL in crate `makai-store-pg`),
//! and [`title`] names a session in the background after its first exchange.
//!
//! Damage ([`damage`]) is refused, never skipped: a complete line that does not
//! parse, a missing or second header, a repeated id or a broken parent link
//! makes [`Session::open`] return [`SessionError::Damaged`] without changing the
//! file. Only an interrupted append (a last line without its newline) is set
//! aside automatically. [`repair`] fixes damage when asked.
//!
//! ```no_run
//! # fn demo() -> Result<(), makai_coding::session::SessionError> {
//! use makai_ai::UserMessage;
//! use makai_coding::session::JsonlStore;
//!
//! let store = JsonlStore::from_env(None)?;
//! let mut session = store.create("/home/me/project");
//! session.append_message(UserMessage::text("Fix the failing test"))?;
//! let messages = session.path_to_leaf(); // what the model sees
//! # let _ = messages; Ok(()) }
//! ```

mod backend;
mod context;
mod context_edit;
pub mod damage;
mod entry;
mod error;
mod file;
mod handle;
pub mod repair;
mod scan;
mod spending;

mod new_entry;
mod store;
pub mod title;
mod tree;

pub use backend::{BuildEntries, SessionLog, SessionStore, StoredSession};
pub use context::{BranchLeft, ModelRef, SessionContext};
pub use context_edit::{ContentReplacement, ContextEditEntry, ReplacementBlock};
pub use damage::{
    BrokenLink, Damage, DamagedLine, EntryCheck, LineProblem, LinkProblem, check_appended,
    check_entries,
};
pub use entry::{
    BranchSummaryEntry, CompactionEntry, CustomEntry, CustomMessageEntry, HeaderTag,
    KNOWN_ENTRY_TYPES, LabelEntry, MessageEntry, ModelChangeEntry, SESSION_VERSION, SessionEntry,
    SessionHeader, SessionInfoEntry, ThinkingLevelChangeEntry, UnknownEntry, UsageEntry, now_iso,
};
pub use error::{LoadWarning, SessionError};
pub use file::{
    Durability, Foreign, LoadedFile, SessionFile, inspect_session_file, read_session_file,
    side_file,
};
pub use handle::{Session, SharedSession, new_session_id, session_file_name};
pub use repair::{RepairPlan, RepairReport, plan_repair, repair_session_file};

pub use new_entry::{CompactionRecord, NewEntry};
pub use spending::{
    SUBAGENT_LINK, Spending, SubagentLink, UncountedSubagent, file_spending, session_spending,
    session_spending_report, subagent_links,
};
pub use store::{
    JsonlStore, PI_SESSION_DIR_ENV, SESSION_DIR_ENV, SessionInfo, encode_cwd, session_dir_from_env,
    session_title,
};
pub use tree::{SessionTree, TreeNode, TreeView};
