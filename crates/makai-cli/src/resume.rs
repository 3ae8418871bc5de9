//! `--resume` (`-r`): which session to open, asked on the terminal before
//! the session is built. The choice becomes `--session PATH` (or the id of
//! a session in a database), so one another directory started runs there,
//! as [`crate::session_cwd::adopt`] runs any `--session` of another
//! directory (a session whose directory is gone asks there what to do).
//!
//! The list is this directory's sessions, newest first; `a` lists every
//! directory's, with each one's directory (pi's Tab in its session
//! selector), and they are listed at once when this directory has none.
//! Enter alone cancels.
//!
//! In the full-screen UI nothing is asked here: the UI opens with its
//! `/resume` picker ([`Start::PickInUi`]), which has pi's keys (Tab, rename,
//! delete, named only, paths, order).

use std::io::{IsTerminal, Write};
use std::path::Path;

use makai_coding::session::SessionInfo;

use crate::cli::Args;
use crate::error::CliError;
use crate::session_cwd::Start;

/// How many sessions a list shows.
const SHOWN: usize = 30;

/// Turns `--resume` into the session chosen (`args.session`), or into a new
/// session when there is none to choose. The lists and the prompt go to
/// stdout when it is a terminal (where the UI will draw, as the other
/// start-up questions), else to stderr (a print run's output stays clean);
/// the answer is a line of stdin.
///
/// Errors: the sessions cannot be listed; stdin is not a terminal while
/// there are sessions to choose from (nobody can answer); an answer that is
/// not a number of the list.
pub fn choose(args: &mut Args, home: Option<&Path>, in_ui: bool) -> Result<Start, CliError> {
    if !args.resume {
        return Ok(Start::Run(None));
    }
    let cwd = crate::app::setup::working_dir(args)?;
    let settings = crate::app::trust::settings_for(&cwd, home, false)?.settings;
    let store = crate::app::open_session::choose_store(args, &settings, home)?;
    let cwd = cwd.display().to_string();
    let listing = |e: makai_coding::session::SessionError| {
        CliError::config(format!("the sessions cannot be listed: {e}"))
    };
    let here = store.list(&cwd).map_err(listing)?;
    let terminal = std::io::stdin().is_terminal();
    let mut everywhere = here.is_empty() && terminal;
    let mut list = if everywhere {
        store.list_all().map_err(listing)?
    } else {
        here
    };
    if list.is_empty() {
        eprintln!("No sessions for {cwd} yet; starting a new one.");
        args.resume = false;
        return Ok(Start::Run(None));
    }
    if in_ui && terminal {
        args.resume = false;
        return Ok(Start::PickInUi);
    }
    if !terminal {
        return Err(CliError::Usage(
            "--resume asks which session to open and needs a terminal; use --session ID or -c (the latest) instead".into(),
        ));
    }
    let mut out: Box<dyn Write> = if std::io::stdout().is_terminal() {
        Box::new(std::io::stdout())
    } else {
        Box::new(std::io::stderr())
    };
    let chosen = loop {
        show(&mut out, &list, everywhere, &cwd);
        let more = if everywhere {
            ""
        } else {
            ", a = every directory"
        };
        let answer = crate::session_cwd::read_answer_on(
            &mut out,
            &format!(
                "Resume which session? [1-{}{more}, Enter = cancel]: ",
                list.len().min(SHOWN)
            ),
        )?;
        let answer = answer.trim();
        if answer.is_empty() {
            return Ok(Start::Cancel);
        }
        if !everywhere && answer.eq_ignore_ascii_case("a") {
            everywhere = true;
            list = store.list_all().map_err(listing)?;
            continue;
        }
        let n: usize = answer.parse().map_err(|_| {
            CliError::Usage(format!(
                "--resume: '{}' is not a number from the list",
                answer.chars().take(40).collect::<String>()
            ))
        })?;
        match list.iter().take(SHOWN).nth(n.wrapping_sub(1)) {
            Some(info) => break info,
            None => return Err(CliError::Usage(format!("--resume: {n} is not in the list"))),
        }
    };
    args.session = Some(match &chosen.path {
        Some(path) => path.display().to_string(),
        None => chosen.id.clone(),
    });
    args.resume = false;
    Ok(Start::Run(None))
}

/// Writes the list: title, size, date (and directory when `everywhere`,
/// or this directory's heading).
fn show(err: &mut dyn Write, list: &[SessionInfo], everywhere: bool, cwd: &str) {
    let _ = if everywhere {
        writeln!(err, "Sessions of every directory:")
    } else {
        writeln!(err, "Sessions of {cwd}:")
    };
    for (i, s) in list.iter().enumerate().take(SHOWN) {
        let damaged = s
            .damaged_at
            .map(|l| format!(", damaged at line {l}"))
            .unwrap_or_default();
        let dir = if everywhere {
            format!("  in {}", s.cwd)
        } else {
            String::new()
        };
        let _ = writeln!(
            err,
            "{:>3}. {}  ({} messages, {}{damaged}){dir}",
            i + 1,
            s.title,
            s.message_count,
            s.created
        );
    }
}
