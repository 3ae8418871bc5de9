//! `makai sessions check|repair FILE`: find and repair damage in a session
//! file (the logic lives in [`makai_coding::session::damage`] and
//! [`makai_coding::session::repair`]).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand};
use makai_coding::session::{inspect_session_file, repair_session_file};

use crate::cli::{Invocation, clap_message};
use crate::error::{CliError, EXIT_FAILED, EXIT_OK};

/// `makai sessions ...`.
#[derive(Clone, Debug, Parser)]
#[command(
    name = "makai sessions",
    about = "Check a session file for damage, or repair it",
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
adds a header when there is none, and keeps every other byte as it was.";

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
}

/// Parses `makai sessions ...` (`rest` are the words after `sessions`).
pub fn parse(rest: &[OsString]) -> Result<Invocation, CliError> {
    let argv = std::iter::once(OsString::from("makai sessions")).chain(rest.iter().cloned());
    match SessionsArgs::try_parse_from(argv) {
        Ok(a) => {
            let (SessionsCommand::Check { file } | SessionsCommand::Repair { file }) = &a.command;
            if file.as_os_str().is_empty() {
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
    }
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
