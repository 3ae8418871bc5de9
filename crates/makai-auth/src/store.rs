//! `<makai home>/auth.json`: stored credentials per provider, in pi's format.
//!
//! ```json
//! { "anthropic": { "type": "oauth", "refresh": "...", "access": "...", "expires": 1733234567890 },
//!   "openai":    { "type": "api_key", "key": "sk-..." } }
//! ```
//!
//! The file is created with mode 0600 (its folder 0700) and replaced atomically.
//! Secrets never appear in `Debug` output or error messages.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::AuthError;

/// One stored credential.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Credential {
    /// A plain API key.
    ApiKey {
        /// The key.
        key: String,
    },
    /// OAuth tokens (Claude Pro/Max, ChatGPT via Codex, GitHub Copilot).
    #[serde(rename = "oauth")]
    OAuth {
        /// The refresh token (for GitHub Copilot: the GitHub OAuth token that
        /// the Copilot token is exchanged with).
        refresh: String,
        /// The access token (sent as the API key).
        access: String,
        /// When the access token expires (Unix ms).
        expires: i64,
        /// The ChatGPT account of a Codex login (pi's `accountId`).
        #[serde(rename = "accountId", default, skip_serializing_if = "Option::is_none")]
        account_id: Option<String>,
    },
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credential::ApiKey { .. } => f.write_str("ApiKey(<redacted>)"),
            Credential::OAuth { expires, .. } => f
                .debug_struct("OAuth")
                .field("expires", expires)
                .finish_non_exhaustive(),
        }
    }
}

impl Credential {
    /// A short description without secrets, for `makai auth status`.
    pub fn describe(&self, now_ms: i64) -> String {
        match self {
            Credential::ApiKey { .. } => "API key".to_string(),
            Credential::OAuth { expires, .. } if *expires > now_ms => {
                let mins = (expires - now_ms) / 60_000;
                format!("OAuth login (access token valid for {mins} more minutes)")
            }
            Credential::OAuth { .. } => {
                "OAuth login (access token expired; it is refreshed on the next request)".into()
            }
        }
    }
}

/// The credentials file.
#[derive(Clone, Debug, Default)]
pub struct AuthStore {
    path: PathBuf,
    entries: BTreeMap<String, Credential>,
}

impl AuthStore {
    /// The file under a makai home folder.
    pub fn file_in(home: &Path) -> PathBuf {
        home.join("auth.json")
    }

    /// Loads the file; a missing file is an empty store.
    pub fn load(path: impl Into<PathBuf>) -> Result<Self, AuthError> {
        let path = path.into();
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(AuthStore {
                    path,
                    entries: BTreeMap::new(),
                });
            }
            Err(e) => {
                return Err(AuthError::config(format!(
                    "cannot read credentials file {}: {e}",
                    path.display()
                )));
            }
        };
        let entries = if text.trim().is_empty() {
            BTreeMap::new()
        } else {
            // serde_json's message names line and column only, never the values.
            serde_json::from_str(&text).map_err(|e| {
                AuthError::config(format!(
                    "credentials file {} is not valid ({e}); fix it or delete it and run `makai auth login` again",
                    path.display()
                ))
            })?
        };
        Ok(AuthStore { path, entries })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The credential of a provider.
    pub fn get(&self, provider: &str) -> Option<&Credential> {
        self.entries.get(provider)
    }

    /// Every stored provider and credential.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Credential)> {
        self.entries.iter()
    }

    /// Sets a provider's credential (call [`AuthStore::save`] to write it).
    pub fn set(&mut self, provider: &str, credential: Credential) {
        self.entries.insert(provider.to_string(), credential);
    }

    /// Removes a provider's credential; true when there was one.
    pub fn remove(&mut self, provider: &str) -> bool {
        self.entries.remove(provider).is_some()
    }

    /// Removes every credential.
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Writes the file (mode 0600, folder 0700) atomically.
    pub fn save(&self) -> Result<(), AuthError> {
        let fail = |what: &str, e: std::io::Error| {
            AuthError::config(format!(
                "cannot {what} credentials file {}: {e}",
                self.path.display()
            ))
        };
        if let Some(dir) = self.path.parent() {
            create_private_dir(dir).map_err(|e| fail("create the folder of the", e))?;
        }
        let text = serde_json::to_string_pretty(&self.entries)
            .map_err(|e| fail("encode", std::io::Error::other(e)))?;
        let tmp = self
            .path
            .with_extension(format!("json.tmp{}", std::process::id()));
        {
            let mut f = open_private(&tmp).map_err(|e| fail("write", e))?;
            f.write_all(text.as_bytes())
                .and_then(|_| f.write_all(b"\n"))
                .and_then(|_| f.sync_all())
                .map_err(|e| fail("write", e))?;
        }
        std::fs::rename(&tmp, &self.path).map_err(|e| {
            // Cleaning up after a failed write; the error above is what matters.
            let _ = std::fs::remove_file(&tmp);
            fail("replace", e)
        })
    }
}

#[cfg(unix)]
fn open_private(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
}

#[cfg(not(unix))]
fn open_private(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::File::create(path)
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_in_pi_format_with_private_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = AuthStore::file_in(dir.path());
        let mut s = AuthStore::load(&path).unwrap();
        s.set(
            "anthropic",
            Credential::OAuth {
                refresh: "r".into(),
                access: "a".into(),
                expires: 5,
                account_id: None,
            },
        );
        s.set("openai", Credential::ApiKey { key: "k".into() });
        s.save().unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(v["anthropic"]["type"], "oauth");
        assert_eq!(
            v["openai"],
            serde_json::json!({"type": "api_key", "key": "k"})
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        let back = AuthStore::load(&path).unwrap();
        assert_eq!(back.get("openai"), s.get("openai"));
        assert!(!format!("{:?}", back).contains("\"k\""));
    }

    #[test]
    fn damaged_file_is_a_clear_error_without_secrets() {
        let dir = tempfile::tempdir().unwrap();
        let path = AuthStore::file_in(dir.path());
        std::fs::write(
            &path,
            "{\"openai\": {\"type\": \"api_key\", \"key\": \"sk-secret\"",
        )
        .unwrap();
        let e = AuthStore::load(&path).unwrap_err().to_string();
        assert!(e.contains("auth.json") && !e.contains("sk-secret"), "{e}");
    }
}
