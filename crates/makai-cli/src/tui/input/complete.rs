//! Completion popups: `@` file paths (a directory listing plus a bounded
//! search of the working tree) and `/` slash commands.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How many candidates a popup shows at most.
const MAX_ITEMS: usize = 40;
/// How many paths the working-tree index holds at most.
const INDEX_LIMIT: usize = 20_000;
/// How long an index is reused.
const INDEX_TTL: Duration = Duration::from_secs(30);
/// Folders the index never enters.
const SKIP_DIRS: [&str; 8] = [
    ".git",
    "node_modules",
    "target",
    ".venv",
    "venv",
    "__pycache__",
    ".cache",
    ".idea",
];

/// What a popup completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompletionKind {
    /// An `@path` token.
    Path,
    /// A `/command` at the start of the editor.
    Command,
}

/// One candidate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompletionItem {
    /// The text that replaces the token.
    pub insert: String,
    /// What the popup shows.
    pub label: String,
    /// A dimmed description.
    pub detail: String,
    /// True for folders (the popup stays open after inserting one).
    pub is_dir: bool,
}

/// An open completion popup.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completion {
    /// What it completes.
    pub kind: CompletionKind,
    /// Character column of the token start on the cursor's line.
    pub start: usize,
    /// The candidates.
    pub items: Vec<CompletionItem>,
    /// The highlighted candidate.
    pub selected: usize,
}

impl Completion {
    /// Moves the highlight by `delta`, wrapping around.
    pub fn move_by(&mut self, delta: isize) {
        let n = self.items.len() as isize;
        if n > 0 {
            self.selected = (self.selected as isize + delta).rem_euclid(n) as usize;
        }
    }

    /// The highlighted candidate.
    pub fn current(&self) -> Option<&CompletionItem> {
        self.items.get(self.selected)
    }
}

/// The `@` token that ends at the cursor: its start column and the path typed after `@`.
pub fn path_token(before_cursor: &str) -> Option<(usize, String)> {
    let chars: Vec<char> = before_cursor.chars().collect();
    let start = chars
        .iter()
        .rposition(|c| c.is_whitespace())
        .map_or(0, |i| i + 1);
    if chars.get(start) != Some(&'@') {
        return None;
    }
    Some((start, chars[start + 1..].iter().collect()))
}

/// Files under a folder, found once and reused for a while.
#[derive(Debug, Default)]
pub struct FileIndex {
    root: PathBuf,
    paths: Vec<(String, bool)>,
    built: Option<Instant>,
}

impl FileIndex {
    /// Relative paths (with `is_dir`) under `root`, skipping hidden and build folders.
    fn paths(&mut self, root: &Path) -> &[(String, bool)] {
        let fresh = self.built.is_some_and(|t| t.elapsed() < INDEX_TTL) && self.root == root;
        if !fresh {
            self.root = root.to_path_buf();
            self.paths = walk(root);
            self.built = Some(Instant::now());
        }
        &self.paths
    }
}

fn walk(root: &Path) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut stack = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, rel)) = stack.pop() {
        let Ok(read) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut entries: Vec<_> = read.filter_map(Result::ok).collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || SKIP_DIRS.contains(&name.as_str()) {
                continue;
            }
            let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
            let path = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            if is_dir {
                stack.push((e.path(), path.clone()));
            }
            out.push((path, is_dir));
            if out.len() >= INDEX_LIMIT {
                return out;
            }
        }
    }
    out
}

fn item(path: &str, is_dir: bool) -> CompletionItem {
    let shown = if is_dir {
        format!("{path}/")
    } else {
        path.to_string()
    };
    CompletionItem {
        insert: format!("@{shown}"),
        label: shown,
        detail: if is_dir {
            "folder".into()
        } else {
            String::new()
        },
        is_dir,
    }
}

/// Candidates for `@query`: entries of the folder named so far whose name
/// starts with the rest; without a `/` (and with two characters or more),
/// also files and folders anywhere below `cwd` whose name contains the query.
pub fn path_candidates(cwd: &Path, query: &str, index: &mut FileIndex) -> Vec<CompletionItem> {
    let (dir_part, prefix) = match query.rfind('/') {
        Some(i) => (&query[..=i], &query[i + 1..]),
        None => ("", query),
    };
    let lower = prefix.to_lowercase();
    let mut out = Vec::new();
    let dir = if Path::new(dir_part).is_absolute() {
        PathBuf::from(dir_part)
    } else {
        cwd.join(dir_part)
    };
    if let Ok(read) = std::fs::read_dir(&dir) {
        let mut entries: Vec<(String, bool)> = read
            .filter_map(Result::ok)
            .map(|e| {
                let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
                (e.file_name().to_string_lossy().into_owned(), is_dir)
            })
            .filter(|(n, _)| n.to_lowercase().starts_with(&lower))
            .filter(|(n, _)| !n.starts_with('.') || prefix.starts_with('.'))
            .collect();
        entries.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        out.extend(
            entries
                .iter()
                .map(|(n, d)| item(&format!("{dir_part}{n}"), *d)),
        );
    }
    if dir_part.is_empty() && lower.chars().count() >= 2 {
        let mut hits: Vec<(usize, &(String, bool))> = index
            .paths(cwd)
            .iter()
            .filter(|(p, _)| p.contains('/'))
            .filter_map(|e| {
                let l = e.0.to_lowercase();
                let name = l.rsplit('/').next().unwrap_or(&l);
                if name.starts_with(&lower) {
                    Some((0, e))
                } else if name.contains(&lower) {
                    Some((1, e))
                } else {
                    None
                }
            })
            .collect();
        hits.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.0.len().cmp(&b.1.0.len())));
        for (_, (p, d)) in hits.into_iter().take(MAX_ITEMS) {
            out.push(item(p, *d));
        }
    }
    out.truncate(MAX_ITEMS);
    out
}

/// Candidates for a `/command` being typed (`typed` without the slash).
pub fn command_candidates<N: AsRef<str>, D: AsRef<str>>(
    typed: &str,
    commands: &[(N, D)],
) -> Vec<CompletionItem> {
    commands
        .iter()
        .map(|(n, d)| (n.as_ref(), d.as_ref()))
        .filter(|(name, _)| {
            name.starts_with(typed)
                || name
                    .strip_prefix("skill:")
                    .is_some_and(|s| s.starts_with(typed))
        })
        .map(|(name, help)| CompletionItem {
            insert: format!("/{name}"),
            label: format!("/{name}"),
            detail: help.to_string(),
            is_dir: false,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_at_token_before_the_cursor() {
        assert_eq!(path_token("read @src/ma"), Some((5, "src/ma".into())));
        assert_eq!(path_token("@"), Some((0, String::new())));
        assert_eq!(path_token("mail a@b"), None);
        assert_eq!(path_token("@x done "), None);
    }

    #[test]
    fn lists_folders_first_and_searches_below() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/deep")).unwrap();
        std::fs::create_dir_all(dir.path().join("target")).unwrap();
        std::fs::write(dir.path().join("src/deep/main.rs"), "").unwrap();
        std::fs::write(dir.path().join("src/lib.rs"), "").unwrap();
        std::fs::write(dir.path().join("target/main.rs"), "").unwrap();
        std::fs::write(dir.path().join("sample.txt"), "").unwrap();
        let mut index = FileIndex::default();
        let labels = |q: &str, index: &mut FileIndex| -> Vec<String> {
            path_candidates(dir.path(), q, index)
                .into_iter()
                .map(|c| c.label)
                .collect()
        };
        assert_eq!(labels("s", &mut index), ["src/", "sample.txt"]);
        assert_eq!(labels("src/", &mut index), ["src/deep/", "src/lib.rs"]);
        assert_eq!(labels("main", &mut index), ["src/deep/main.rs"]);
        let c = path_candidates(dir.path(), "src/d", &mut index);
        assert_eq!(c[0].insert, "@src/deep/");
        assert!(c[0].is_dir);
    }

    #[test]
    fn commands_filter_by_prefix() {
        let cmds = [("model", "choose"), ("new", "start"), ("name", "rename")];
        let c = command_candidates("n", &cmds);
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].insert, "/new");
        let mut comp = Completion {
            kind: CompletionKind::Command,
            start: 0,
            items: c,
            selected: 0,
        };
        comp.move_by(-1);
        assert_eq!(comp.current().unwrap().label, "/name");
    }
}
