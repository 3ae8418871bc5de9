//! `SYSTEM.md` and `APPEND_SYSTEM.md`, as pi 1.5.2 reads them: the first
//! replaces the default agent's system prompt, the second adds to it.
//!
//! Each is looked for in a trusted project's `.makai` and `.pi` folders, then
//! in the makai home folder and pi's agent folder; the first found wins, so a
//! trusted project's file takes precedence and files of the same name are
//! never combined. `--system-prompt` and `--append-system-prompt` apply on top.

use std::path::{Path, PathBuf};

/// The file that replaces the default system prompt.
pub const SYSTEM_FILE: &str = "SYSTEM.md";

/// The file whose text is appended to the system prompt.
pub const APPEND_SYSTEM_FILE: &str = "APPEND_SYSTEM.md";

/// One system-prompt file that was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SystemFile {
    /// Its path.
    pub path: PathBuf,
    /// Its text.
    pub text: String,
}

/// The system-prompt files of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SystemFiles {
    /// `SYSTEM.md`: the system prompt instead of the default agent's.
    pub system: Option<SystemFile>,
    /// `APPEND_SYSTEM.md`: added to the system prompt.
    pub append: Option<SystemFile>,
    /// Files that exist but cannot be read.
    pub warnings: Vec<String>,
}

impl SystemFiles {
    /// Finds the files for `cwd` (its `.makai` and `.pi` folders only when
    /// `project_trusted`), then in `user_dirs` in order (the makai home
    /// folder, pi's agent folder).
    pub fn discover(cwd: &Path, project_trusted: bool, user_dirs: &[&Path]) -> Self {
        let mut dirs: Vec<PathBuf> = Vec::new();
        if project_trusted {
            dirs.push(cwd.join(".makai"));
            dirs.push(cwd.join(".pi"));
        }
        dirs.extend(user_dirs.iter().map(|d| d.to_path_buf()));
        let mut out = SystemFiles::default();
        out.system = first(&dirs, SYSTEM_FILE, &mut out.warnings);
        out.append = first(&dirs, APPEND_SYSTEM_FILE, &mut out.warnings);
        out
    }
}

fn first(dirs: &[PathBuf], name: &str, warnings: &mut Vec<String>) -> Option<SystemFile> {
    for dir in dirs {
        let path = dir.join(name);
        if !path.is_file() {
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(text) => return Some(SystemFile { path, text }),
            Err(e) => warnings.push(format!("cannot read {}: {e}", path.display())),
        }
    }
    None
}
