//! What a confined process may do: the [`Policy`] and the [`SandboxConfig`]
//! built from settings and flags.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// How much a command may touch (the vocabulary of pi's and Codex's users).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// Read the working directory and the system; write only a private
    /// temporary directory; no network.
    ReadOnly,
    /// As read-only, plus writes inside the working directory and the extra
    /// writable roots (the default).
    #[default]
    WorkspaceWrite,
    /// No sandbox at all: every right of the user. Only when asked for.
    FullAccess,
}

impl Policy {
    /// The name used in settings, flags and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::ReadOnly => "read-only",
            Policy::WorkspaceWrite => "workspace-write",
            Policy::FullAccess => "full-access",
        }
    }

    /// Every policy, most confined first.
    pub const ALL: [Policy; 3] = [Policy::ReadOnly, Policy::WorkspaceWrite, Policy::FullAccess];
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Policy {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Policy::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown sandbox policy '{s}'; use read-only, workspace-write or full-access"
                )
            })
    }
}

/// Environment variables dropped from every confined command by default:
/// provider keys and the usual names of credentials.
pub const DEFAULT_DENY_ENV: &[&str] = &[
    "*_API_KEY",
    "*_ACCESS_KEY",
    "*_ACCESS_KEY_ID",
    "*_SECRET",
    "*_SECRET_KEY",
    "*_SECRET_ACCESS_KEY",
    "*_TOKEN",
    "*_TOKEN_*",
    "*_PASSWORD",
];

/// Everything a [`crate::Sandbox`] enforces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SandboxConfig {
    /// The policy.
    pub policy: Policy,
    /// Folders writable under `workspace-write` besides the working directory.
    pub writable_roots: Vec<PathBuf>,
    /// True when confined commands may use the network (off by default).
    pub network: bool,
    /// Paths nobody confined may read (or write), even inside writable roots.
    pub deny_read: Vec<PathBuf>,
    /// Names or `*` patterns of environment variables never handed to commands.
    pub deny_env: Vec<String>,
    /// Accept a weaker sandbox when the kernel cannot enforce all of the
    /// policy (what is missing is reported); refuse otherwise.
    pub accept_weaker: bool,
}

impl SandboxConfig {
    /// A config with `policy`, no network, the default denied environment
    /// variables and no denied paths (see [`SandboxConfig::default_deny_read`]).
    pub fn new(policy: Policy) -> Self {
        SandboxConfig {
            policy,
            writable_roots: Vec::new(),
            network: false,
            deny_read: Vec::new(),
            deny_env: DEFAULT_DENY_ENV.iter().map(|s| s.to_string()).collect(),
            accept_weaker: false,
        }
    }

    /// The secrets a coding task never needs: `~/.ssh`, `~/.aws`, `~/.gnupg`,
    /// `~/.config/gcloud` under `home`, and `auth.json` under makai's home.
    pub fn default_deny_read(home: Option<&Path>, makai_home: Option<&Path>) -> Vec<PathBuf> {
        let mut out = Vec::new();
        if let Some(h) = home {
            for rel in [".ssh", ".aws", ".gnupg", ".config/gcloud"] {
                out.push(h.join(rel));
            }
        }
        if let Some(m) = makai_home {
            out.push(m.join("auth.json"));
        }
        out
    }

    /// Adds writable roots.
    pub fn with_writable_roots(mut self, roots: impl IntoIterator<Item = PathBuf>) -> Self {
        self.writable_roots.extend(roots);
        self
    }

    /// Allows or forbids the network.
    pub fn with_network(mut self, on: bool) -> Self {
        self.network = on;
        self
    }

    /// Adds denied paths.
    pub fn with_deny_read(mut self, paths: impl IntoIterator<Item = PathBuf>) -> Self {
        self.deny_read.extend(paths);
        self
    }

    /// Adds denied environment variable names or patterns.
    pub fn with_deny_env(mut self, patterns: impl IntoIterator<Item = String>) -> Self {
        self.deny_env.extend(patterns);
        self
    }

    /// Accepts (or not) a weaker sandbox on kernels that cannot enforce all of it.
    pub fn with_accept_weaker(mut self, accept: bool) -> Self {
        self.accept_weaker = accept;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for p in Policy::ALL {
            assert_eq!(p.as_str().parse::<Policy>(), Ok(p));
            assert_eq!(
                serde_json::to_string(&p).ok(),
                Some(format!("\"{}\"", p.as_str()))
            );
        }
        assert!(
            "none"
                .parse::<Policy>()
                .unwrap_err()
                .contains("workspace-write")
        );
    }

    #[test]
    fn default_denied_paths() {
        let d = SandboxConfig::default_deny_read(Some(Path::new("/h")), Some(Path::new("/m")));
        assert!(d.contains(&PathBuf::from("/h/.ssh")));
        assert!(d.contains(&PathBuf::from("/h/.config/gcloud")));
        assert!(d.contains(&PathBuf::from("/m/auth.json")));
    }
}
