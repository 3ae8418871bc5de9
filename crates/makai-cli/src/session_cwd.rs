//! A session runs in its own working directory, as pi runs it: `--session
//! PATH` naming a session that another directory started opens it there, so
//! that the tools, `@path` attachments, project settings and context files
//! resolve where the conversation happened (pi 1.5.2's sessions.md).
//!
//! When that directory is gone, interactive mode runs the session in the
//! current directory (pi's "Continue"; pi also offers a fork) and says so;
//! the other modes stop with an error, as pi's do. `--cwd` and `--fork`
//! choose the directory themselves and are left alone.

use std::path::{Path, PathBuf};

use makai_coding::session::SessionHeader;

use crate::cli::Args;
use crate::error::CliError;

/// The working directory the header of the session file at `path` records,
/// when the file starts with a readable header naming one.
pub fn recorded_cwd(path: &Path) -> Option<PathBuf> {
    use std::io::BufRead;
    let file = std::fs::File::open(path).ok()?;
    let mut first = String::new();
    std::io::BufReader::new(file).read_line(&mut first).ok()?;
    let header: SessionHeader = serde_json::from_str(first.trim_end()).ok()?;
    Some(PathBuf::from(header.cwd)).filter(|p| !p.as_os_str().is_empty())
}

/// Sets `args.cwd` to the working directory of the session `--session` names
/// by path, when that is another existing directory; returns what to tell the
/// user. `interactive`: a session whose directory is gone runs here instead
/// of failing.
pub fn adopt(args: &mut Args, interactive: bool) -> Result<Option<String>, CliError> {
    if args.cwd.is_some() || args.fork.is_some() {
        return Ok(None);
    }
    let Some(path) = args
        .session
        .as_deref()
        .map(Path::new)
        .filter(|p| p.is_file())
    else {
        return Ok(None);
    };
    let Some(recorded) = recorded_cwd(path) else {
        return Ok(None);
    };
    let here = std::env::current_dir()
        .map_err(|e| CliError::config(format!("cannot read the current directory: {e}")))?;
    let same = |a: &Path, b: &Path| {
        let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        canon(a) == canon(b)
    };
    if same(&recorded, &here) {
        return Ok(None);
    }
    if recorded.is_dir() {
        let note = format!(
            "the session runs in its working directory, {}",
            recorded.display()
        );
        args.cwd = Some(recorded);
        return Ok(Some(note));
    }
    if interactive {
        return Ok(Some(format!(
            "the session's working directory {} no longer exists; it runs in {}",
            recorded.display(),
            here.display()
        )));
    }
    Err(CliError::failed(format!(
        "the session's working directory {} no longer exists; pass --cwd DIR to run it in another directory, or --fork {} to copy it into this one",
        recorded.display(),
        path.display()
    )))
}
