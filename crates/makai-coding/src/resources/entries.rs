//! pi's resource arrays in the settings (`skills`, `prompts`): a path loads
//! a file or a folder; `!pattern` leaves out what a glob matches, `-path`
//! one exact path, and `+path` loads one exact path whatever leaves it
//! out. The settings loader has made every path and pattern absolute
//! (from the folder of the settings file that lists it, `~` expanded).

use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};

use super::ResourceWarning;

/// One resource array, read.
#[derive(Clone, Debug, Default)]
pub struct Entries {
    load: Vec<PathBuf>,
    included: Vec<PathBuf>,
    excluded: Vec<PathBuf>,
    patterns: Option<GlobSet>,
}

impl Entries {
    /// Reads `list`; a pattern that is no glob is a warning and left out.
    pub fn parse(list: &[String]) -> (Entries, Vec<ResourceWarning>) {
        let mut entries = Entries::default();
        let mut warnings = Vec::new();
        let mut globs = GlobSetBuilder::new();
        let mut any_glob = false;
        for entry in list.iter().map(|e| e.trim()).filter(|e| !e.is_empty()) {
            if let Some(pattern) = entry.strip_prefix('!') {
                match Glob::new(pattern) {
                    Ok(glob) => {
                        globs.add(glob);
                        any_glob = true;
                    }
                    Err(e) => warnings.push(ResourceWarning::new(
                        Path::new(pattern),
                        format!("not a glob pattern, left out: {e}"),
                    )),
                }
            } else if let Some(path) = entry.strip_prefix('+') {
                entries.included.push(PathBuf::from(path));
                entries.load.push(PathBuf::from(path));
            } else if let Some(path) = entry.strip_prefix('-') {
                entries.excluded.push(PathBuf::from(path));
            } else {
                entries.load.push(PathBuf::from(entry));
            }
        }
        if any_glob {
            match globs.build() {
                Ok(set) => entries.patterns = Some(set),
                Err(e) => warnings.push(ResourceWarning::new(
                    Path::new("settings"),
                    format!("the resource patterns could not be used: {e}"),
                )),
            }
        }
        (entries, warnings)
    }

    /// The files and folders to load.
    pub fn to_load(&self) -> &[PathBuf] {
        &self.load
    }

    /// Whether a resource whose file is `file` (in the folder `dir`, for a
    /// skill) is kept: an exact `+` entry for either keeps it; else a `-`
    /// entry or a `!` pattern for either leaves it out.
    pub fn keeps(&self, file: &Path, dir: Option<&Path>) -> bool {
        let paths = std::iter::once(file).chain(dir);
        let named = |list: &[PathBuf], p: &Path| list.iter().any(|e| e == p);
        if paths.clone().any(|p| named(&self.included, p)) {
            return true;
        }
        !paths.clone().any(|p| {
            named(&self.excluded, p) || self.patterns.as_ref().is_some_and(|g| g.is_match(p))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn paths_load_patterns_and_minus_leave_out_plus_brings_back() {
        let (e, warnings) = Entries::parse(&list(&[
            "/team/skills",
            "!/team/skills/draft-*/**",
            "-/team/skills/old/SKILL.md",
            "+/team/skills/draft-ok",
            "![",
        ]));
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert_eq!(
            e.to_load(),
            [
                PathBuf::from("/team/skills"),
                PathBuf::from("/team/skills/draft-ok")
            ]
        );
        let skill = |dir: &str| {
            let dir = PathBuf::from(dir);
            e.keeps(&dir.join("SKILL.md"), Some(&dir))
        };
        assert!(skill("/team/skills/review"));
        assert!(!skill("/team/skills/draft-x"));
        assert!(!skill("/team/skills/old"));
        assert!(skill("/team/skills/draft-ok"));
        assert!(e.keeps(Path::new("/elsewhere/fix.md"), None));
    }
}
