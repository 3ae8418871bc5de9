//! Which paths get which Landlock rights.
//!
//! Landlock only grants, and a right granted on a directory holds for
//! everything beneath it. To keep a denied path unreadable inside a granted
//! tree, the tree is "carved": every directory on the way from the granted
//! root down to a denied path only gets the right to list its entries, and each
//! of its other entries gets the full grant. Symbolic links are never
//! followed while carving: Landlock checks the real location of whatever a
//! link leads to, and that location has rules of its own.
//!
//! Consequences (documented in `docs/sandbox.md`): the names inside a denied
//! folder can be listed but not read, and new files cannot be created directly
//! in a directory that lies between a granted root and a denied path.

use std::path::{Path, PathBuf};

/// What a rule grants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Grant {
    /// List a directory's entries (nothing beneath it).
    List,
    /// Read and execute.
    Read,
    /// Read, execute and change.
    Write,
}

/// One rule: a path (directory or file) and what it grants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// The path, canonical.
    pub path: PathBuf,
    /// What it grants beneath it.
    pub grant: Grant,
}

/// The rules for `roots` (each a path with its grant) that keep every path of
/// `denied` out of reach. Roots that do not exist are left out; so are denied
/// paths (they are canonicalized first, a link being denied at its target).
pub fn plan(roots: &[(PathBuf, Grant)], denied: &[PathBuf]) -> Vec<Rule> {
    let denied: Vec<PathBuf> = denied
        .iter()
        .filter_map(|d| std::fs::canonicalize(d).ok())
        .collect();
    let mut out = Vec::new();
    for (root, grant) in roots {
        let Ok(root) = std::fs::canonicalize(root) else {
            continue;
        };
        carve(&root, *grant, &denied, &mut out, 0);
    }
    out
}

/// Deepest directory nesting carved (a denied path deeper than this below a
/// root leaves the directory at this depth listable only).
const MAX_DEPTH: usize = 64;

fn carve(path: &Path, grant: Grant, denied: &[PathBuf], out: &mut Vec<Rule>, depth: usize) {
    let holds_denied = denied.iter().any(|d| d != path && d.starts_with(path));
    if !holds_denied {
        out.push(Rule {
            path: path.to_path_buf(),
            grant,
        });
        return;
    }
    out.push(Rule {
        path: path.to_path_buf(),
        grant: Grant::List,
    });
    if depth >= MAX_DEPTH {
        return;
    }
    let Ok(entries) = std::fs::read_dir(path) else {
        return;
    };
    for entry in entries.flatten() {
        let child = path.join(entry.file_name());
        if denied.contains(&child) {
            continue;
        }
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_symlink() {
            continue;
        }
        if kind.is_dir() {
            carve(&child, grant, denied, out, depth + 1);
        } else {
            out.push(Rule { path: child, grant });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant_of(rules: &[Rule], p: &Path) -> Option<Grant> {
        rules.iter().find(|r| r.path == p).map(|r| r.grant)
    }

    #[test]
    fn carves_around_denied_paths() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        std::fs::create_dir_all(root.join("home/.ssh")).unwrap();
        std::fs::create_dir_all(root.join("home/.config/gcloud")).unwrap();
        std::fs::create_dir_all(root.join("home/.config/other")).unwrap();
        std::fs::write(root.join("home/.bashrc"), "x").unwrap();
        std::fs::create_dir_all(root.join("usr")).unwrap();
        std::os::unix::fs::symlink(root.join("home/.ssh"), root.join("home/keys")).unwrap();
        let rules = plan(
            &[(root.clone(), Grant::Read)],
            &[
                root.join("home/.ssh"),
                root.join("home/.config/gcloud"),
                root.join("missing"),
            ],
        );
        assert_eq!(grant_of(&rules, &root), Some(Grant::List));
        assert_eq!(grant_of(&rules, &root.join("home")), Some(Grant::List));
        assert_eq!(
            grant_of(&rules, &root.join("home/.config")),
            Some(Grant::List)
        );
        assert_eq!(grant_of(&rules, &root.join("usr")), Some(Grant::Read));
        assert_eq!(
            grant_of(&rules, &root.join("home/.bashrc")),
            Some(Grant::Read)
        );
        assert_eq!(
            grant_of(&rules, &root.join("home/.config/other")),
            Some(Grant::Read)
        );
        assert_eq!(grant_of(&rules, &root.join("home/.ssh")), None);
        assert_eq!(grant_of(&rules, &root.join("home/keys")), None);
        assert_eq!(grant_of(&rules, &root.join("home/.config/gcloud")), None);
    }

    #[test]
    fn untouched_root_is_one_rule() {
        let t = tempfile::tempdir().unwrap();
        let rules = plan(&[(t.path().to_path_buf(), Grant::Write)], &[]);
        assert_eq!(rules.len(), 1);
        assert_eq!(rules[0].grant, Grant::Write);
        assert!(plan(&[(t.path().join("nope"), Grant::Read)], &[]).is_empty());
    }
}
