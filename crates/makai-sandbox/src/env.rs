//! The environment handed to confined commands: makai's own, less the
//! variables whose names match the deny patterns (provider keys and the
//! like).

use std::ffi::OsString;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// A compiled list of variable-name patterns (`*` matches any run of characters).
#[derive(Clone, Debug)]
pub struct EnvFilter {
    set: GlobSet,
}

impl EnvFilter {
    /// Compiles `patterns`; a pattern that is not a valid glob is an error naming it.
    pub fn new(patterns: &[String]) -> Result<Self, String> {
        let mut b = GlobSetBuilder::new();
        for p in patterns {
            let glob = GlobBuilder::new(p)
                .literal_separator(false)
                .case_insensitive(false)
                .build()
                .map_err(|e| format!("environment pattern '{p}' is invalid: {e}"))?;
            b.add(glob);
        }
        let set = b
            .build()
            .map_err(|e| format!("environment patterns are invalid: {e}"))?;
        Ok(EnvFilter { set })
    }

    /// A filter that denies nothing.
    pub fn none() -> Self {
        EnvFilter {
            set: GlobSet::empty(),
        }
    }

    /// True when a variable of this name must not reach commands.
    pub fn denies(&self, name: &str) -> bool {
        self.set.is_match(name)
    }

    /// `vars` without the denied ones (names that are not UTF-8 are kept:
    /// no pattern can name them).
    pub fn filter(
        &self,
        vars: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> Vec<(OsString, OsString)> {
        vars.into_iter()
            .filter(|(k, _)| k.to_str().is_none_or(|k| !self.denies(k)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_matching_names_only() {
        let f = EnvFilter::new(&["*_API_KEY".to_string(), "SECRET_*".to_string()]).unwrap();
        let kept = f.filter([
            ("OPENAI_API_KEY".into(), "sk".into()),
            ("SECRET_X".into(), "s".into()),
            ("PATH".into(), "/bin".into()),
            ("API_KEY_NOTE".into(), "x".into()),
        ]);
        let names: Vec<_> = kept
            .iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["PATH", "API_KEY_NOTE"]);
        assert!(
            EnvFilter::new(&["[".to_string()])
                .unwrap_err()
                .contains("'['")
        );
    }
}
