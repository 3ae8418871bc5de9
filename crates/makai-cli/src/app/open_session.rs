//! Opening the session a run names (`--session`, `--continue`, `--fork`,
//! `--session-id`, a new one) in the store the flags and settings choose
//! (`--store`, a database; else JSONL files).

use std::path::Path;
use std::sync::Arc;

use makai_ai::quote::bounded;
use makai_coding::session::{SessionError, repair_session_file};
use makai_coding::{JsonlStore, Session, SessionStore, Settings};

use crate::cli::Args;
use crate::error::CliError;

/// Why a session could not be opened: a usage error, or the session layer's error.
enum OpenFailure {
    Cli(CliError),
    Session(SessionError),
}

impl From<CliError> for OpenFailure {
    fn from(e: CliError) -> Self {
        OpenFailure::Cli(e)
    }
}

impl From<SessionError> for OpenFailure {
    fn from(e: SessionError) -> Self {
        OpenFailure::Session(e)
    }
}

/// Opens or creates the session the flags ask for. A damaged session file is
/// refused (exit 1, the message names the lines and the repair), or repaired
/// first with `--repair`.
pub(super) fn open_session(
    args: &Args,
    store: &dyn SessionStore,
    cwd: &str,
) -> Result<Session, CliError> {
    let fail = |e: SessionError| CliError::config(e.to_string());
    match try_open_session(args, store, cwd) {
        Ok(s) => Ok(s),
        Err(OpenFailure::Cli(e)) => Err(e),
        Err(OpenFailure::Session(SessionError::Damaged { path, .. })) if args.repair => {
            let report = repair_session_file(&path, cwd).map_err(fail)?;
            eprintln!("makai: {report}");
            Session::open(&path).map_err(fail)
        }
        Err(OpenFailure::Session(e)) => Err(fail(e)),
    }
}

fn try_open_session(
    args: &Args,
    store: &dyn SessionStore,
    cwd: &str,
) -> Result<Session, OpenFailure> {
    if args.no_session {
        return Ok(Session::in_memory(cwd));
    }
    if let Some(query) = &args.session {
        let looks_like_path = query.contains('/') || query.ends_with(".jsonl");
        if looks_like_path {
            // A new path or an empty file starts a session there; a directory
            // or a device is refused (`Session::open_or_create`).
            return Session::open_or_create(query, cwd).map_err(|e| match e {
                SessionError::NotASession { .. } => OpenFailure::Cli(CliError::Usage(format!(
                    "--session {}: {e}",
                    bounded(query)
                ))),
                other => OpenFailure::Session(other),
            });
        }
        return store.open(cwd, query).map_err(|e| match e {
            SessionError::NotFound { .. } | SessionError::Ambiguous { .. } => OpenFailure::Cli(
                CliError::Usage(format!("--session {}: {e}", bounded(query))),
            ),
            other => OpenFailure::Session(other),
        });
    }
    if let Some(query) = &args.fork {
        return fork_session(args, store, cwd, query);
    }
    if let Some(id) = &args.session_id {
        return session_by_id(store, cwd, id);
    }
    if args.continue_ {
        return Ok(store.continue_or_create(cwd)?);
    }
    if args.resume {
        // `lib::run` turns `--resume` into the session chosen before the
        // session is built, so that one of another directory runs there.
        return Err(OpenFailure::Cli(CliError::failed(
            "--resume reached the session's opening unchosen (crate::resume::choose runs first); this is a makai bug, please report it",
        )));
    }
    Ok(store.create(cwd))
}

/// `--fork PATH|ID`: the session's current branch copied into a new session
/// of `cwd` (its id from `--session-id` when given), `parentSession` naming
/// the source.
fn fork_session(
    args: &Args,
    store: &dyn SessionStore,
    cwd: &str,
    query: &str,
) -> Result<Session, OpenFailure> {
    let usage = |e: SessionError| {
        OpenFailure::Cli(CliError::Usage(format!("--fork {}: {e}", bounded(query))))
    };
    let source = if std::path::Path::new(query).is_file() {
        Session::open(query)?
    } else {
        store.open(cwd, query).map_err(|e| match e {
            SessionError::NotFound { .. } | SessionError::Ambiguous { .. } => usage(e),
            other => OpenFailure::Session(other),
        })?
    };
    let Some(leaf) = source.leaf_id().map(str::to_string) else {
        return Err(OpenFailure::Cli(CliError::Usage(format!(
            "--fork {}: session {} has no entries to fork",
            bounded(query),
            source.id()
        ))));
    };
    let id = args
        .session_id
        .clone()
        .unwrap_or_else(makai_coding::session::new_session_id);
    if store.list_all()?.iter().any(|s| s.id == id) {
        return Err(OpenFailure::Cli(CliError::Usage(format!(
            "--session-id {id}: a session with this id exists already; fork without --session-id, \
             or choose another id"
        ))));
    }
    let header = makai_coding::session::SessionHeader::new(id, cwd);
    Ok(source.fork_into(&leaf, header, store)?)
}

/// `--session-id ID`: the session of `cwd` with exactly this id, or a new one
/// with it. An id another directory's session has is refused.
fn session_by_id(store: &dyn SessionStore, cwd: &str, id: &str) -> Result<Session, OpenFailure> {
    let all = store.list_all()?;
    match all.iter().find(|s| s.id == id) {
        Some(found) if found.cwd == cwd => Ok(store.open(cwd, id)?),
        Some(found) => Err(OpenFailure::Cli(CliError::Usage(format!(
            "--session-id {id}: the session with this id belongs to {}; open it with --session {id}, \
             or fork it here with --fork {id}",
            found.cwd
        )))),
        None => Ok(store.create_with(makai_coding::session::SessionHeader::new(id, cwd))),
    }
}

/// The session store the flags and settings name: `--store` (or the `store`
/// setting) when it is a database URL, else the JSONL files (`--session-dir`,
/// `MAKAI_SESSION_DIR`, the `sessionDir` setting, `~/.makai/sessions`).
pub fn choose_store(
    args: &Args,
    settings: &Settings,
    home: Option<&Path>,
) -> Result<Arc<dyn SessionStore>, CliError> {
    if let Some(store) = crate::store::open(args.store.as_deref(), settings.store.as_deref())? {
        return Ok(store);
    }
    let files = JsonlStore::resolve(
        args.session_dir.as_deref(),
        makai_coding::session::session_dir_from_env(),
        settings.session_dir.as_deref(),
        home,
    )
    .map_err(|e| CliError::config(e.to_string()))?;
    Ok(Arc::new(files))
}
