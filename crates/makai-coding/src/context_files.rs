//! Context files: `AGENTS.md` (or `CLAUDE.md`) instructions the user keeps in
//! the project and in the makai home folder.
//!
//! [`discover_context_files`] collects the global file (`<home>/AGENTS.md`)
//! and one file per folder from the repository root (the nearest folder above
//! the working directory that contains `.git`; the filesystem root when there
//! is none) down to the working directory. [`context_section`] turns them into
//! one clearly delimited system-prompt section, outermost first so that the
//! more specific files come last.
//!
//! These files are the one kind of file content that goes into the system
//! prompt: the user put them there for that purpose.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

/// File names looked for in each folder, in order of preference.
pub const CONTEXT_FILE_NAMES: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];

/// Largest part of one context file put into the prompt, in bytes.
pub const MAX_CONTEXT_FILE_BYTES: usize = 64 * 1024;

/// Where a context file was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContextScope {
    /// In the makai home folder.
    Global,
    /// In the working directory or a folder above it.
    Project,
}

/// One context file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContextFile {
    /// Its path.
    pub path: PathBuf,
    /// Its text (cut at [`MAX_CONTEXT_FILE_BYTES`] with a note).
    pub content: String,
    /// Global or project.
    pub scope: ContextScope,
}

/// Finds the context files for `cwd`: the global one first, then root to `cwd`.
/// Unreadable files are skipped with a `tracing` warning.
pub fn discover_context_files(cwd: &Path, home: Option<&Path>) -> Vec<ContextFile> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    if let Some(home) = home
        && let Some(f) = read_first(home, ContextScope::Global)
    {
        seen.insert(canonical(&f.path));
        out.push(f);
    }
    let mut dirs = Vec::new();
    for dir in cwd.ancestors() {
        dirs.push(dir);
        if dir.join(".git").exists() {
            break;
        }
    }
    for dir in dirs.into_iter().rev() {
        if let Some(f) = read_first(dir, ContextScope::Project)
            && seen.insert(canonical(&f.path))
        {
            out.push(f);
        }
    }
    out
}

fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

fn read_first(dir: &Path, scope: ContextScope) -> Option<ContextFile> {
    for name in CONTEXT_FILE_NAMES {
        let path = dir.join(name);
        if !path.is_file() {
            continue;
        }
        match std::fs::read(&path) {
            Ok(bytes) => {
                let cut = bytes.len() > MAX_CONTEXT_FILE_BYTES;
                let mut content =
                    String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_CONTEXT_FILE_BYTES)])
                        .into_owned();
                if cut {
                    content.push_str(&format!(
                        "\n\n[{} is {} bytes; only the first {} are included]",
                        path.display(),
                        bytes.len(),
                        MAX_CONTEXT_FILE_BYTES
                    ));
                }
                return Some(ContextFile {
                    path,
                    content,
                    scope,
                });
            }
            Err(e) => {
                tracing::warn!(path = %path.display(), "context file skipped: cannot read it: {e}");
            }
        }
    }
    None
}

/// The system-prompt section for the files, or `None` when there are none.
pub fn context_section(files: &[ContextFile]) -> Option<String> {
    if files.is_empty() {
        return None;
    }
    let mut s = String::from(
        "# Project context\n\nThe user keeps these instruction files for you. Follow them; when \
         they disagree, a file listed later (closer to the working directory) wins.\n",
    );
    for f in files {
        s.push_str(&format!(
            "\n## {}\n\n{}\n",
            f.path.display(),
            f.content.trim_end()
        ));
    }
    s.push_str("\n# End of project context\n");
    Some(s)
}

/// The context files a session's prompts are built with, shared by what
/// builds prompts (the session, its sub-agents' `task` tool) and replaced as
/// one when they are read again (`/reload`): a prompt built after the
/// replacement has the new files, one built before keeps the old.
#[derive(Clone, Debug, Default)]
pub struct SharedContextFiles(Arc<RwLock<Arc<[ContextFile]>>>);

impl SharedContextFiles {
    /// Shares `files`.
    pub fn new(files: Vec<ContextFile>) -> Self {
        SharedContextFiles(Arc::new(RwLock::new(files.into())))
    }

    /// The files now.
    pub fn get(&self) -> Arc<[ContextFile]> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Puts `files` in place of the ones shared.
    pub fn replace(&self, files: Vec<ContextFile>) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = files.into();
    }
}
