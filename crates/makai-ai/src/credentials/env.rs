//! [`Env`]: environment lookups with per-request overrides.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// Reads provider settings and credentials: a value in the overrides
/// ([`crate::StreamOptions::env`]) wins over the process environment. Empty
/// values count as unset.
#[derive(Clone, Copy, Debug)]
pub struct Env<'a> {
    overrides: Option<&'a BTreeMap<String, String>>,
}

impl<'a> Env<'a> {
    /// The process environment alone.
    pub fn process() -> Env<'static> {
        Env { overrides: None }
    }

    /// `overrides` first, then the process environment.
    pub fn with(overrides: &'a BTreeMap<String, String>) -> Self {
        Env {
            overrides: Some(overrides),
        }
    }

    /// The value of `name`, trimmed; `None` when unset or blank.
    pub fn get(&self, name: &str) -> Option<String> {
        let value = match self.overrides.and_then(|o| o.get(name)) {
            Some(v) => Some(v.clone()),
            None => std::env::var(name).ok(),
        }?;
        let value = value.trim();
        (!value.is_empty()).then(|| value.to_string())
    }

    /// The first of `names` that is set.
    pub fn first(&self, names: &[&str]) -> Option<String> {
        names.iter().find_map(|n| self.get(n))
    }

    /// The user's home folder (`HOME`, else `USERPROFILE`).
    pub fn home(&self) -> Option<PathBuf> {
        self.first(&["HOME", "USERPROFILE"]).map(PathBuf::from)
    }

    /// A path from `var`, else `default` under the home folder.
    pub fn path_or_home(&self, var: &str, default: &str) -> Option<PathBuf> {
        match self.get(var) {
            Some(p) => Some(expand_home(&p, self)),
            None => self.home().map(|h| h.join(default)),
        }
    }
}

/// `~/x` with the home folder spelled out.
pub(crate) fn expand_home(path: &str, env: &Env) -> PathBuf {
    match (path.strip_prefix("~/"), env.home()) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => PathBuf::from(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_win_and_blank_is_unset() {
        let mut o = BTreeMap::new();
        o.insert("MAKAI_TEST_ENV_A".to_string(), " a ".to_string());
        o.insert("MAKAI_TEST_ENV_B".to_string(), "  ".to_string());
        let env = Env::with(&o);
        assert_eq!(env.get("MAKAI_TEST_ENV_A").as_deref(), Some("a"));
        assert_eq!(env.get("MAKAI_TEST_ENV_B"), None);
        assert_eq!(
            env.first(&["MAKAI_TEST_ENV_B", "MAKAI_TEST_ENV_A"])
                .as_deref(),
            Some("a")
        );
    }
}
