//! The `sandbox` section of the settings: which policy commands run under
//! and what it allows (see `docs/sandbox.md`).
//!
//! ```json
//! {"sandbox": {"policy": "workspace-write", "writableRoots": ["~/.cache/cargo"],
//!              "network": false, "denyRead": ["~/.kube"], "denyEnv": ["GITHUB_*"],
//!              "acceptWeaker": false}}
//! ```
//!
//! The section widens or narrows what commands may do, so a project settings
//! file may only set it when the user trusts the project (like `allowedPaths`).

use std::path::{Path, PathBuf};

use makai_sandbox::{Policy, SandboxConfig};
use serde::{Deserialize, Serialize};

/// The settings' `sandbox` object.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SandboxSettings {
    /// The policy (`workspace-write` when unset).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<Policy>,
    /// Writable folders besides the working directory (absolute after loading).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub writable_roots: Vec<PathBuf>,
    /// Let confined commands use the network (off by default).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub network: bool,
    /// Paths never readable by commands, on top of the built-in list (absolute after loading).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deny_read: Vec<PathBuf>,
    /// Environment variable names or `*` patterns never handed to commands,
    /// on top of the built-in list.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deny_env: Vec<String>,
    /// Run under a weaker sandbox when the kernel cannot enforce the whole
    /// policy (what is missing is reported) instead of refusing.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub accept_weaker: bool,
}

impl SandboxSettings {
    /// The sandbox config for `policy` (the flag's, else the settings', else
    /// `workspace-write`): these settings plus the built-in denied paths under
    /// the user's `home` and makai's home. The built-in denied variables
    /// (`makai_sandbox::DEFAULT_DENY_ENV`) cover every provider's key variable.
    pub fn config(
        &self,
        policy: Option<Policy>,
        home: Option<&Path>,
        makai_home: Option<&Path>,
    ) -> SandboxConfig {
        let policy = policy.or(self.policy).unwrap_or_default();
        SandboxConfig::new(policy)
            .with_writable_roots(self.writable_roots.iter().cloned())
            .with_network(self.network)
            .with_deny_read(SandboxConfig::default_deny_read(home, makai_home))
            .with_deny_read(self.deny_read.iter().cloned())
            .with_deny_env(self.deny_env.iter().cloned())
            .with_accept_weaker(self.accept_weaker)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_provider_key_variable_is_denied() {
        let cfg = SandboxSettings::default().config(None, None, None);
        assert_eq!(cfg.policy, Policy::WorkspaceWrite);
        let filter = makai_sandbox::EnvFilter::new(&cfg.deny_env).unwrap();
        for provider in [
            "anthropic",
            "openai",
            "google",
            "groq",
            "openrouter",
            "deepseek",
            "mistral",
            "xai",
            "cerebras",
            "together",
            "fireworks",
        ] {
            if let Some(var) = makai_ai::credentials::env_var_for_provider(provider) {
                assert!(filter.denies(var), "{var}");
            }
        }
        // The credentials makai-ai and the logins read (cloud providers included).
        for var in [
            "GOOGLE_API_KEY",
            "AZURE_OPENAI_API_KEY",
            "AZURE_OPENAI_AD_TOKEN",
            "AZURE_CLIENT_SECRET",
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "AWS_BEARER_TOKEN_BEDROCK",
            "AWS_CONTAINER_AUTHORIZATION_TOKEN",
            "COPILOT_GITHUB_TOKEN",
            "HF_TOKEN",
            "GOOGLE_CLOUD_API_KEY",
        ] {
            assert!(filter.denies(var), "{var}");
        }
        for kept in ["PATH", "HOME", "MAX_TOKENS", "CARGO_HOME"] {
            assert!(!filter.denies(kept), "{kept}");
        }
    }

    #[test]
    fn flag_wins_over_settings() {
        let s: SandboxSettings =
            serde_json::from_str(r#"{"policy": "read-only", "network": true}"#).unwrap();
        assert_eq!(s.config(None, None, None).policy, Policy::ReadOnly);
        assert!(s.config(None, None, None).network);
        assert_eq!(
            s.config(Some(Policy::FullAccess), None, None).policy,
            Policy::FullAccess
        );
        assert!(serde_json::from_str::<SandboxSettings>(r#"{"policy": "open"}"#).is_err());
    }
}
