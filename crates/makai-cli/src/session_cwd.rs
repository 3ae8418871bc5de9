//! A session runs in its own working directory, as pi runs it: `--session
//! PATH`, or `--session ID` naming a session another directory started,
//! opens it there, so that the tools, `@path` attachments, project settings
//! and context files resolve where the conversation happened (pi 1.5.2's
//! sessions.md).
//!
//! Interactive mode asks first where pi does, on the terminal before the
//! full-screen UI starts:
//! - an ID that only another directory's session has: open it there, fork
//!   it into this directory (pi offers the fork), or cancel;
//! - a session whose directory is gone: continue it here (not remembered:
//!   asked again next time), fork it into this directory as a new session
//!   (like `--fork`, so the next start no longer asks), or cancel.
//!
//! Without a terminal to ask on, interactive mode opens the session there
//! or continues it here; the other modes open it there, and stop with an
//! error naming `--cwd` and `--fork` when its directory is gone, as pi's do.
//! `--cwd` and `--fork` choose the directory themselves and are left alone.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use makai_coding::session::{JsonlStore, SessionHeader};

use crate::app::AppSession;
use crate::cli::Args;
use crate::error::CliError;

/// The working directory the header of the session file at `path` records,
/// when the file starts with a readable header naming one.
pub fn recorded_cwd(path: &Path) -> Option<PathBuf> {
    let file = std::fs::File::open(path).ok()?;
    let mut first = String::new();
    std::io::BufReader::new(file).read_line(&mut first).ok()?;
    let header: SessionHeader = serde_json::from_str(first.trim_end()).ok()?;
    Some(PathBuf::from(header.cwd)).filter(|p| !p.as_os_str().is_empty())
}

/// Whether `a` and `b` are the same directory (compared as written when
/// one cannot be resolved, a directory that is gone).
pub fn same_dir(a: &Path, b: &Path) -> bool {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    canon(a) == canon(b)
}

/// The working directory the session file at `path` records, when it is
/// not `here`: a session of another directory (one whose directory is gone
/// included), which runs there rather than here.
pub fn recorded_elsewhere(path: &Path, here: &Path) -> Option<PathBuf> {
    path.is_file()
        .then(|| recorded_cwd(path))
        .flatten()
        .filter(|dir| !same_dir(dir, here))
}

/// Builds the session a running makai switches to when it opens a session
/// of another directory (the UI's `/import` and `/resume`, RPC's
/// `switch_session`): the session file at the first path, run in the
/// directory given second, as pi rebuilds its runtime for the session's
/// directory.
pub type Reopen = Box<
    dyn Fn(
            PathBuf,
            PathBuf,
        ) -> std::pin::Pin<
            Box<dyn std::future::Future<Output = Result<AppSession, CliError>> + Send>,
        > + Send
        + Sync,
>;

/// A [`Reopen`] that builds the session as this run was built (`base`, its
/// arguments), with the session file and directory in place of the ones it
/// started with. `ask_trust`: the project trust question is asked on the
/// terminal first (interactive mode, where the UI hands the terminal back).
pub fn reopener(base: Args, ask_trust: bool) -> Reopen {
    Box::new(move |session, cwd| {
        let mut args = base.clone();
        Box::pin(async move {
            args.session = Some(session.display().to_string());
            args.cwd = Some(cwd.clone());
            (args.fork, args.session_id) = (None, None);
            (args.continue_, args.resume) = (false, false);
            if ask_trust {
                crate::app::trust::ask_at_start(
                    &mut args,
                    &cwd,
                    makai_coding::makai_home().as_deref(),
                )?;
            }
            crate::app::setup::build(&args).await
        })
    })
}

/// Why a session whose working directory is gone is not opened where no one
/// can be asked (RPC's `switch_session`, as pi's `MissingSessionCwdError`).
pub fn gone_error(session: &Path, dir: &Path) -> CliError {
    CliError::failed(format!(
        "the session's working directory {} no longer exists (session file {}); the session was not opened",
        dir.display(),
        session.display()
    ))
}

/// How the run starts after [`adopt`].
#[derive(Debug, PartialEq, Eq)]
pub enum Start {
    /// Go on, with something to tell the user.
    Run(Option<String>),
    /// Go on with a new session, the full-screen UI opening its session
    /// picker first (`--resume` there, as pi's): Esc in it ends the run.
    PickInUi,
    /// The user cancelled at the question: end without starting.
    Cancel,
}

/// An answer to a start-up question.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    /// Open the session where it was started.
    OpenThere,
    /// Run it in the current directory (its own is gone).
    ContinueHere,
    /// Copy it into the current directory as a new session.
    Fork,
    /// Do not start.
    Cancel,
}

/// Asks a question (its text, its choices with their labels, the first the
/// default) and gives the answer.
pub type Ask<'a> = dyn FnMut(&str, &[(Choice, &str)]) -> Result<Choice, CliError> + 'a;

/// A session `--session` names that another directory started.
struct Elsewhere {
    /// What names it for the run: its file, or its id in a database store.
    target: String,
    /// The directory its header records.
    recorded: PathBuf,
    /// True when `--session` gave an ID (pi offers a fork for those).
    by_id: bool,
}

/// Sets `args.cwd` (or `args.fork`) for the session `--session` names when
/// another directory started it; asks the user where pi does (see the
/// module documentation) through `ask`, given the question's text and its
/// choices, the first the default. `interactive`: the full-screen UI runs.
pub fn adopt(
    args: &mut Args,
    interactive: bool,
    home: Option<&Path>,
    ask: &mut Ask<'_>,
) -> Result<Start, CliError> {
    if args.cwd.is_some() || args.fork.is_some() {
        return Ok(Start::Run(None));
    }
    let here = std::env::current_dir()
        .map_err(|e| CliError::config(format!("cannot read the current directory: {e}")))?;
    let Some(found) = elsewhere(args, &here, home) else {
        return Ok(Start::Run(None));
    };
    let Elsewhere {
        target: shown_path,
        recorded,
        by_id,
    } = found;
    if recorded.is_dir() {
        let choice = if interactive && by_id {
            ask(
                &format!(
                    "The session {} was started in {}.",
                    args.session.as_deref().unwrap_or_default(),
                    recorded.display()
                ),
                &[
                    (Choice::OpenThere, "open it there"),
                    (Choice::Fork, "fork it into this directory as a new session"),
                    (Choice::Cancel, "cancel"),
                ],
            )?
        } else {
            Choice::OpenThere
        };
        return Ok(match choice {
            Choice::Fork => {
                args.session = None;
                args.fork = Some(shown_path);
                Start::Run(None)
            }
            Choice::Cancel => Start::Cancel,
            Choice::OpenThere | Choice::ContinueHere => {
                let note = format!(
                    "the session runs in its working directory, {}",
                    recorded.display()
                );
                args.session = Some(shown_path);
                args.cwd = Some(recorded);
                Start::Run(Some(note))
            }
        });
    }
    if !interactive {
        return Err(CliError::failed(format!(
            "the session's working directory {} no longer exists; pass --cwd DIR to run it in another directory, or --fork {} to copy it into this one",
            recorded.display(),
            shown_path
        )));
    }
    let choice = ask(
        &format!(
            "The session's working directory {} no longer exists.",
            recorded.display()
        ),
        &[
            (
                Choice::ContinueHere,
                "continue it in this directory (asked again next time)",
            ),
            (
                Choice::Fork,
                "fork it into this directory as a new session (the original stays)",
            ),
            (Choice::Cancel, "cancel"),
        ],
    )?;
    Ok(match choice {
        Choice::Fork => {
            args.session = None;
            args.fork = Some(shown_path);
            Start::Run(None)
        }
        Choice::Cancel => Start::Cancel,
        Choice::ContinueHere | Choice::OpenThere => {
            args.session = Some(shown_path);
            Start::Run(Some(format!(
                "the session's working directory {} no longer exists; it runs in {}",
                recorded.display(),
                here.display()
            )))
        }
    })
}

/// The session `--session` names, when another directory than `here`
/// started it: a file, or an ID found only among another directory's
/// sessions (in the session files, or in the database store).
fn elsewhere(args: &Args, here: &Path, home: Option<&Path>) -> Option<Elsewhere> {
    let query = args.session.as_deref()?;
    let as_path = Path::new(query);
    let looks_like_path = query.contains('/') || query.ends_with(".jsonl");
    let (target, recorded, by_id) = if looks_like_path {
        let path = as_path.is_file().then(|| as_path.to_path_buf())?;
        let recorded = recorded_cwd(&path)?;
        (path.display().to_string(), recorded, false)
    } else {
        match session_by_id(args, here, home, query)? {
            Found::File(path) => {
                let recorded = recorded_cwd(&path)?;
                (path.display().to_string(), recorded, true)
            }
            Found::Stored { cwd } => (query.to_string(), cwd, true),
        }
    };
    (!same_dir(&recorded, here)).then_some(Elsewhere {
        target,
        recorded,
        by_id,
    })
}

/// Where a session given by id is.
enum Found {
    /// In the session files: this file.
    File(PathBuf),
    /// In the database store, started in `cwd`.
    Stored { cwd: PathBuf },
}

/// The session with ID (or unique ID prefix) `id`, looked for as the run
/// will look for it: this directory's sessions first, then every other
/// directory's. `None` when none or several match (the run then says so),
/// or the store cannot be read (the run says that too).
fn session_by_id(args: &Args, here: &Path, home: Option<&Path>, id: &str) -> Option<Found> {
    let settings = crate::app::trust::settings_for(here, home, false)
        .ok()?
        .settings;
    let store = match crate::store::open(args.store.as_deref(), settings.store.as_deref()) {
        Ok(store) => store,
        Err(_) => return None,
    };
    if let Some(store) = store {
        let all = store.list_all().ok()?;
        let matching: Vec<_> = all.iter().filter(|s| s.id.starts_with(id)).collect();
        if matching.iter().any(|s| same_dir(Path::new(&s.cwd), here)) {
            return None;
        }
        return match matching[..] {
            [only] => Some(Found::Stored {
                cwd: PathBuf::from(&only.cwd),
            }),
            _ => None,
        };
    }
    let files = JsonlStore::resolve(
        args.session_dir.as_deref(),
        makai_coding::session::session_dir_from_env(),
        settings.session_dir.as_deref(),
        home,
    )
    .ok()?;
    files
        .find(&here.display().to_string(), id)
        .ok()
        .map(Found::File)
}

/// Asks on the terminal (the question on stdout, where the UI will draw;
/// the answer a line of stdin): the choices numbered from 1, Enter the
/// first. Without a terminal on both, the first choice is taken.
pub fn ask_on_terminal(question: &str, choices: &[(Choice, &str)]) -> Result<Choice, CliError> {
    let Some((default, _)) = choices.first() else {
        return Err(CliError::failed("a question without choices"));
    };
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Ok(*default);
    }
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "makai: {question}");
    for (i, (_, label)) in choices.iter().enumerate() {
        let _ = writeln!(out, "  {}) {label}", i + 1);
    }
    drop(out);
    let line = read_answer(&format!("Choose [1-{}, Enter for 1]: ", choices.len()))?;
    Ok(pick(line.trim(), choices))
}

/// Writes `prompt` on stdout and reads the answer, a line of stdin (the
/// start-up questions, asked before the full-screen UI starts).
pub(crate) fn read_answer(prompt: &str) -> Result<String, CliError> {
    read_answer_on(&mut std::io::stdout().lock(), prompt)
}

/// Writes `prompt` on `out` and reads the answer, a line of stdin.
pub(crate) fn read_answer_on(out: &mut dyn Write, prompt: &str) -> Result<String, CliError> {
    let _ = write!(out, "{prompt}");
    let _ = out.flush();
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| CliError::failed(format!("cannot read the answer: {e}")))?;
    Ok(line)
}

/// The choice an answer names: its number; empty or anything else is the
/// first (except an answer of end of input, taken as the first too).
fn pick(answer: &str, choices: &[(Choice, &str)]) -> Choice {
    answer
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_sub(1))
        .and_then(|i| choices.get(i))
        .or(choices.first())
        .map_or(Choice::Cancel, |(c, _)| *c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_a_number_and_anything_else_the_first_choice() {
        let choices = [
            (Choice::ContinueHere, "a"),
            (Choice::Fork, "b"),
            (Choice::Cancel, "c"),
        ];
        assert_eq!(pick("2", &choices), Choice::Fork);
        assert_eq!(pick("3", &choices), Choice::Cancel);
        assert_eq!(pick("", &choices), Choice::ContinueHere);
        assert_eq!(pick("9", &choices), Choice::ContinueHere);
        assert_eq!(pick("fork", &choices), Choice::ContinueHere);
        assert_eq!(pick("1", &[]), Choice::Cancel);
    }
}
