//! The environment of a server's child process.
//!
//! A child gets only what its config's `env` gives plus a minimal safe set
//! taken from makai's own environment ([`SAFE_VARS`]: `PATH`, `HOME` and a few
//! locale and temp-folder variables that carry no secrets), never makai's
//! whole environment: provider API keys and other credentials stay with makai.

use std::collections::BTreeMap;

use crate::load::expand_vars;

/// Variables passed through from makai's environment when set.
#[cfg(unix)]
pub const SAFE_VARS: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TMPDIR",
    "TZ",
];

/// Variables passed through from makai's environment when set.
#[cfg(not(unix))]
pub const SAFE_VARS: &[&str] = &[
    "PATH",
    "PATHEXT",
    "HOME",
    "USERPROFILE",
    "USERNAME",
    "APPDATA",
    "LOCALAPPDATA",
    "PROGRAMDATA",
    "PROGRAMFILES",
    "SYSTEMROOT",
    "SYSTEMDRIVE",
    "COMSPEC",
    "TEMP",
    "TMP",
    "WINDIR",
];

/// The complete environment for a child: the safe set from `parent`, then the
/// config's `env` (which wins), with `${VAR}` references in its values
/// expanded from `parent`. The second element names variables referenced but
/// unset.
pub fn child_env(
    config_env: &BTreeMap<String, String>,
    parent: &dyn Fn(&str) -> Option<String>,
) -> (BTreeMap<String, String>, Vec<String>) {
    let mut env = BTreeMap::new();
    for key in SAFE_VARS {
        if let Some(v) = parent(key) {
            env.insert((*key).to_string(), v);
        }
    }
    let mut missing = Vec::new();
    for (k, v) in config_env {
        let (value, m) = expand_vars(v, parent);
        missing.extend(m);
        env.insert(k.clone(), value);
    }
    (env, missing)
}

/// A leading `~/` of `text` (a `command`, an argument or a `cwd`) replaced by
/// the home folder (`HOME` from `parent`), as pi 1.5.2 reads `mcp.json`.
pub fn expand_home(text: &str, parent: &dyn Fn(&str) -> Option<String>) -> String {
    match (
        text.strip_prefix("~/"),
        parent("HOME").filter(|h| !h.is_empty()),
    ) {
        (Some(rest), Some(home)) => format!("{}/{rest}", home.trim_end_matches('/')),
        _ => text.to_string(),
    }
}

/// The longest a `!command` value may take.
const VALUE_COMMAND_LIMIT: std::time::Duration = std::time::Duration::from_secs(30);

/// The value of an `env` or `headers` entry written `!command` (the command
/// makes up the whole value, as in pi 1.5.2's `mcp.json`): the command's
/// standard output, trimmed, from `sh -c` in makai's environment. `None` for
/// a value without the leading `!`. The error names the command's exit status
/// and the start of its standard error, never its output.
pub async fn command_value(raw: &str) -> Option<Result<String, String>> {
    let command = raw.strip_prefix('!')?;
    Some(
        makai_ai::shell_command::run_shell_command(command, Some(VALUE_COMMAND_LIMIT))
            .await
            .map(|out| String::from_utf8_lossy(&out).trim().to_string())
            .map_err(|e| format!("its command {e}")),
    )
}

/// Looks a variable up in makai's own environment.
pub fn process_env(key: &str) -> Option<String> {
    std::env::var(key).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_safe_set_and_config_env() {
        let parent = |k: &str| match k {
            "PATH" => Some("/bin".to_string()),
            "HOME" => Some("/home/u".to_string()),
            "OPENAI_API_KEY" => Some("sk-secret".to_string()),
            "GH" => Some("gh-token".to_string()),
            _ => None,
        };
        let mut cfg = BTreeMap::new();
        cfg.insert("TOKEN".to_string(), "${GH}".to_string());
        cfg.insert("PATH".to_string(), "/custom:${PATH}".to_string());
        let (env, missing) = child_env(&cfg, &parent);
        assert!(missing.is_empty());
        assert_eq!(env.get("TOKEN").map(String::as_str), Some("gh-token"));
        assert_eq!(env.get("PATH").map(String::as_str), Some("/custom:/bin"));
        assert_eq!(env.get("HOME").map(String::as_str), Some("/home/u"));
        assert!(!env.contains_key("OPENAI_API_KEY"));
        assert!(!env.values().any(|v| v.contains("sk-secret")));
    }
}
