//! Path confinement: which paths the built-in tools may touch.
//!
//! Every path argument goes through [`PathPolicy::resolve`]: relative paths
//! resolve against the working directory, symbolic links are followed the way
//! the kernel would (including dangling ones and links in the middle of the
//! path), and the real location must lie inside the working directory or one of
//! the extra roots the user allowed — or anywhere, when the policy allows all.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use makai_ai::quote::bounded;

use super::error::ToolError;

/// The longest path the operating system accepts (Linux's `PATH_MAX`); longer
/// path arguments are refused before any work is done on them.
pub const MAX_PATH_BYTES: usize = 4096;

/// How many symbolic links one resolution may follow before giving up (as Linux does).
const MAX_SYMLINK_HOPS: usize = 40;

/// Where the tools may read and write.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PathPolicy {
    allow_all: bool,
    allowed_roots: Vec<PathBuf>,
}

/// A path argument after resolution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedPath {
    /// The path as the model wrote it (for messages).
    pub display: String,
    /// The real location, symbolic links resolved; use this for file operations.
    pub path: PathBuf,
}

impl PathPolicy {
    /// Only the working directory (the default).
    pub fn confined() -> Self {
        PathPolicy::default()
    }

    /// Any path is allowed, and `~` expands to the home folder.
    pub fn allow_all() -> Self {
        PathPolicy {
            allow_all: true,
            allowed_roots: Vec::new(),
        }
    }

    /// Also allow everything under `root` (a setting such as `allowedPaths`).
    /// A leading `~` in `root` means the home folder.
    pub fn with_allowed_root(mut self, root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        let root = match root.to_str() {
            Some(s) => expand_home(s).unwrap_or(root),
            None => root,
        };
        self.allowed_roots.push(root);
        self
    }

    /// True when every path is allowed.
    pub fn allows_all(&self) -> bool {
        self.allow_all
    }

    /// The extra roots allowed besides the working directory.
    pub fn allowed_roots(&self) -> &[PathBuf] {
        &self.allowed_roots
    }

    /// Resolves `input` (relative to `cwd`) and checks it is allowed.
    ///
    /// A leading `@` (as models sometimes write file references) is dropped.
    /// `~` and `~/…` expand to the home folder; the result must still be
    /// allowed, so with the default policy `~` works only inside the working
    /// directory or an allowed root.
    pub fn resolve(&self, cwd: &Path, input: &str) -> Result<ResolvedPath, ToolError> {
        let trimmed = input.strip_prefix('@').unwrap_or(input);
        if trimmed.is_empty() {
            return Err(ToolError::Failed(
                "The path is empty. Pass a file or folder path, relative to the working directory."
                    .to_string(),
            ));
        }
        if trimmed.len() > MAX_PATH_BYTES {
            return Err(ToolError::Failed(format!(
                "The path {:?} is {} bytes long, and no path can be longer than {MAX_PATH_BYTES} bytes. \
                 Pass the path of a file or folder, relative to the working directory.",
                bounded(input),
                trimmed.len()
            )));
        }
        if trimmed.contains('\0') {
            return Err(ToolError::Failed(format!(
                "The path {:?} contains a NUL byte, which no file name can contain.",
                bounded(input)
            )));
        }
        let expanded = expand_home(trimmed).unwrap_or_else(|| PathBuf::from(trimmed));
        let joined = if expanded.is_absolute() {
            expanded
        } else {
            cwd.join(expanded)
        };
        let lexical = normalize_lexically(&joined);
        let real = real_path(&lexical)?;
        if self.allow_all {
            return Ok(ResolvedPath {
                display: input.to_string(),
                path: real,
            });
        }
        let real_cwd = real_path(&normalize_lexically(cwd))?;
        let inside = |p: &Path| -> Result<bool, ToolError> {
            if p.starts_with(&real_cwd) {
                return Ok(true);
            }
            for root in &self.allowed_roots {
                let root = normalize_lexically(&cwd.join(root));
                if p.starts_with(real_path(&root)?) {
                    return Ok(true);
                }
            }
            Ok(false)
        };
        if inside(&real)? {
            return Ok(ResolvedPath {
                display: input.to_string(),
                path: real,
            });
        }
        let lexically_inside = lexical.starts_with(normalize_lexically(cwd));
        Err(ToolError::PathDenied {
            input: input.to_string(),
            resolved: real,
            cwd: cwd.to_path_buf(),
            via_symlink: if lexically_inside {
                " (through a symbolic link)"
            } else {
                ""
            },
        })
    }
}

/// `~` or `~/rest` to the home folder; `None` for anything else.
fn expand_home(s: &str) -> Option<PathBuf> {
    let rest = if s == "~" { "" } else { s.strip_prefix("~/")? };
    let home = dirs::home_dir()?;
    Some(if rest.is_empty() {
        home
    } else {
        home.join(rest)
    })
}

/// Removes `.` and resolves `..` textually (`/..` stays `/`).
pub(crate) fn normalize_lexically(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The real location of the absolute path `p`, following every symbolic link
/// like the kernel would, including a dangling link as the last component.
/// Components that do not exist are kept as written.
pub(crate) fn real_path(p: &Path) -> Result<PathBuf, ToolError> {
    let mut queue: VecDeque<OsString> = VecDeque::new();
    let mut resolved = PathBuf::from("/");
    for c in p.components() {
        match c {
            Component::Prefix(_) | Component::RootDir => {}
            Component::CurDir => {}
            Component::ParentDir => queue.push_back(OsString::from("..")),
            Component::Normal(n) => queue.push_back(n.to_os_string()),
        }
    }
    let mut hops = 0usize;
    while let Some(name) = queue.pop_front() {
        if name == ".." {
            resolved.pop();
            continue;
        }
        if name == "." {
            continue;
        }
        let candidate = resolved.join(&name);
        match std::fs::symlink_metadata(&candidate) {
            Ok(meta) if meta.file_type().is_symlink() => {
                hops += 1;
                if hops > MAX_SYMLINK_HOPS {
                    return Err(ToolError::Failed(format!(
                        "Too many levels of symbolic links while resolving {}.",
                        p.display()
                    )));
                }
                let target = std::fs::read_link(&candidate).map_err(|e| {
                    ToolError::io("resolve the link", candidate.display().to_string(), e)
                })?;
                if target.is_absolute() {
                    resolved = PathBuf::from("/");
                }
                let mut parts: Vec<OsString> = Vec::new();
                for c in target.components() {
                    match c {
                        Component::Prefix(_) | Component::RootDir | Component::CurDir => {}
                        Component::ParentDir => parts.push(OsString::from("..")),
                        Component::Normal(n) => parts.push(n.to_os_string()),
                    }
                }
                for part in parts.into_iter().rev() {
                    queue.push_front(part);
                }
            }
            _ => resolved = candidate,
        }
    }
    Ok(resolved)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_normalization() {
        assert_eq!(
            normalize_lexically(Path::new("/a/b/../c/./d")),
            PathBuf::from("/a/c/d")
        );
        assert_eq!(normalize_lexically(Path::new("/../x")), PathBuf::from("/x"));
    }

    #[test]
    fn relative_inside_is_allowed_and_parent_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().join("work");
        std::fs::create_dir(&cwd).unwrap();
        let policy = PathPolicy::confined();
        let ok = policy.resolve(&cwd, "src/new.rs").unwrap();
        assert!(ok.path.ends_with("work/src/new.rs"));
        assert!(policy.resolve(&cwd, "../x").is_err());
        assert!(policy.resolve(&cwd, "@src/a").is_ok());
        let allowed = PathPolicy::confined().with_allowed_root(dir.path());
        assert!(allowed.resolve(&cwd, "../x").is_ok());
    }
}
