//! `makai sessions check|repair FILE`: find and repair damage in a session
//! file (the logic lives in [`makai_coding::session::damage`] and
//! [`makai_coding::session::repair`]); `makai sessions list|export|import`:
//! sessions of a store, and moving them between the JSONL files and
//! PostgreSQL, line for line.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand};
use makai_coding::session::{StoredSession, inspect_session_file, repair_session_file};

use crate::cli::{Invocation, clap_message};
use crate::error::{CliError, EXIT_FAILED, EXIT_OK};

/// `makai sessions ...`.
#[derive(Clone, Debug, Parser)]
#[command(
    name = "makai sessions",
    about = "List sessions, move them between stores, check a session file for damage or repair it",
    disable_version_flag = true,
    arg_required_else_help = true,
    after_help = SESSIONS_AFTER_HELP
)]
pub struct SessionsArgs {
    /// The command.
    #[command(subcommand)]
    pub command: SessionsCommand,
}

const SESSIONS_AFTER_HELP: &str = "\
Damage is a complete line that is not a session line, a second or missing
header, an entry id used twice, or a parentId that names no earlier entry (the
entries below it are cut off from the conversation). makai refuses to open a
damaged session and never changes it on its own. A last line without its
newline is an interrupted append, not damage: it is moved to FILE.damaged by
the next append.

repair keeps a copy of the file as it was (FILE.bak, or FILE.bak.2, ...), moves
the damaged lines (and an interrupted last line) to FILE.damaged, re-attaches
each cut-off entry to the entry stored just before it by changing its parentId,
adds a header when there is none, and keeps every other byte as it was.

export writes a session's lines exactly as stored (a JSONL session file); import
stores session files in a store as they are, so a session moves between the
JSONL files and PostgreSQL and back byte for byte. --store names the store
(`jsonl`, or a postgres:// URL); without it, the `store` setting's, else the
session files.";

/// The `makai sessions` commands.
#[derive(Clone, Debug, Subcommand)]
pub enum SessionsCommand {
    /// Say whether a session file is damaged and where (exit 1 when it is).
    Check {
        /// The session file (a `.jsonl` path).
        file: PathBuf,
    },
    /// Repair a damaged session file (see below); an undamaged file is left alone.
    Repair {
        /// The session file (a `.jsonl` path).
        file: PathBuf,
    },
    /// List the sessions of this directory (or all, with --all).
    List {
        /// The store (`jsonl` or a postgres:// URL).
        #[arg(long, value_name = "jsonl|URL")]
        store: Option<String>,
        /// Every session of the store, whatever its directory.
        #[arg(long)]
        all: bool,
    },
    /// Write a session's lines as stored (a JSONL session file).
    Export {
        /// The session id (or a unique prefix).
        session: String,
        /// The store it is in (`jsonl` or a postgres:// URL).
        #[arg(long, value_name = "jsonl|URL")]
        store: Option<String>,
        /// Where to write it (default: standard output).
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Store session files (JSONL) in a store, as they are.
    Import {
        /// The session files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// The store to put them in (`jsonl` or a postgres:// URL).
        #[arg(long, value_name = "jsonl|URL")]
        store: Option<String>,
    },
}

/// Parses `makai sessions ...` (`rest` are the words after `sessions`).
pub fn parse(rest: &[OsString]) -> Result<Invocation, CliError> {
    let argv = std::iter::once(OsString::from("makai sessions")).chain(rest.iter().cloned());
    match SessionsArgs::try_parse_from(argv) {
        Ok(a) => {
            if let SessionsCommand::Check { file } | SessionsCommand::Repair { file } = &a.command
                && file.as_os_str().is_empty()
            {
                return Err(CliError::Usage(
                    "makai sessions: the session file path is empty; give the path of a .jsonl file"
                        .into(),
                ));
            }
            Ok(Invocation::Sessions(a.command))
        }
        Err(e) => match e.kind() {
            clap::error::ErrorKind::DisplayHelp
            | clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                Ok(Invocation::Help(e.render().to_string()))
            }
            _ => Err(CliError::Usage(
                clap_message(&e).replace("`makai --help`", "`makai sessions --help`"),
            )),
        },
    }
}

/// Runs a `makai sessions` command; returns the exit code.
pub fn run(command: SessionsCommand) -> Result<i32, CliError> {
    match command {
        SessionsCommand::Check { file } => check(&file),
        SessionsCommand::Repair { file } => {
            let cwd = std::env::current_dir()
                .map(|d| d.display().to_string())
                .unwrap_or_default();
            let report =
                repair_session_file(&file, &cwd).map_err(|e| CliError::failed(e.to_string()))?;
            println!("{report}");
            Ok(EXIT_OK)
        }
        SessionsCommand::List { store, all } => list(store.as_deref(), all),
        SessionsCommand::Export {
            session,
            store,
            output,
        } => export(store.as_deref(), &session, output.as_deref()),
        SessionsCommand::Import { files, store } => import(store.as_deref(), &files),
    }
}

/// The store `flag` names, else the settings' (`store`, `sessionDir`), else
/// the session files under makai's home.
fn store_for(
    flag: Option<&str>,
) -> Result<(std::sync::Arc<dyn makai_coding::SessionStore>, String), CliError> {
    let cwd = std::env::current_dir()
        .map_err(|e| CliError::config(format!("cannot read the current directory: {e}")))?;
    let home = makai_coding::makai_home();
    // An untrusted project's settings (its `sessionDir`, say) are not read.
    let trust = crate::app::trust::decide_for_command(&cwd, home.as_deref())?;
    let settings = crate::app::trust::settings_for(&cwd, home.as_deref(), trust.trusted)?.settings;
    let cwd = std::fs::canonicalize(&cwd).unwrap_or(cwd);
    let args = crate::cli::Args {
        store: flag.map(str::to_string),
        ..Default::default()
    };
    let store = crate::app::open_session::choose_store(&args, &settings, home.as_deref())?;
    Ok((store, cwd.display().to_string()))
}

fn list(flag: Option<&str>, all: bool) -> Result<i32, CliError> {
    let (store, cwd) = store_for(flag)?;
    let fail = |e: makai_coding::session::SessionError| CliError::failed(e.to_string());
    let sessions = if all {
        store.list_all().map_err(fail)?
    } else {
        store.list(&cwd).map_err(fail)?
    };
    if sessions.is_empty() {
        println!("No sessions in {}.", store.describe());
    }
    for s in sessions {
        println!(
            "{}  {}  {} messages  {}{}",
            s.id,
            s.created,
            s.message_count,
            s.title,
            if all {
                format!("  ({})", s.cwd)
            } else {
                String::new()
            }
        );
    }
    Ok(EXIT_OK)
}

fn export(flag: Option<&str>, session: &str, output: Option<&Path>) -> Result<i32, CliError> {
    let (store, cwd) = store_for(flag)?;
    let stored = store
        .export(&cwd, session)
        .map_err(|e| CliError::failed(e.to_string()))?;
    let text = stored.to_jsonl();
    match output.filter(|p| p.as_os_str() != "-") {
        Some(path) => {
            std::fs::write(path, text.as_bytes())
                .map_err(|e| CliError::failed(format!("cannot write {}: {e}", path.display())))?;
            eprintln!(
                "makai: exported session {} ({} entries) to {}",
                stored.header.id,
                stored.lines.len(),
                path.display()
            );
        }
        None => {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())
                .and_then(|()| out.flush())
                .map_err(|e| CliError::failed(format!("cannot write to standard output: {e}")))?;
        }
    }
    Ok(EXIT_OK)
}

fn import(flag: Option<&str>, files: &[PathBuf]) -> Result<i32, CliError> {
    let (store, _) = store_for(flag)?;
    let mut failed = 0;
    for file in files {
        let read = std::fs::read(file)
            .map_err(|e| format!("cannot read {}: {e}", file.display()))
            .and_then(|bytes| StoredSession::from_jsonl(file, &bytes).map_err(|e| e.to_string()))
            .and_then(|stored| {
                store.import(&stored).map_err(|e| e.to_string())?;
                Ok(stored)
            });
        match read {
            Ok(stored) => eprintln!(
                "makai: imported session {} ({} entries) from {} into {}",
                stored.header.id,
                stored.lines.len(),
                file.display(),
                store.describe()
            ),
            Err(e) => {
                failed += 1;
                eprintln!("makai: {e}");
            }
        }
    }
    Ok(if failed == 0 { EXIT_OK } else { EXIT_FAILED })
}

fn check(file: &Path) -> Result<i32, CliError> {
    let loaded = inspect_session_file(file).map_err(|e| CliError::failed(e.to_string()))?;
    for w in &loaded.warnings {
        println!("{}: {w}", file.display());
    }
    let problems = loaded.damage.problems();
    if problems.is_empty() {
        println!(
            "{} is not damaged ({} entries).",
            file.display(),
            loaded.entries.len()
        );
        return Ok(EXIT_OK);
    }
    println!("{} is damaged:", file.display());
    for (_, p) in &problems {
        println!("  {p}");
    }
    println!(
        "Nothing was changed. `makai sessions repair {}` repairs it (see `makai sessions --help`).",
        file.display()
    );
    Ok(EXIT_FAILED)
}
