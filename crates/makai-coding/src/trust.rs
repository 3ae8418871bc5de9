//! Project trust, as pi 1.5.2 has it: whether makai loads what a working
//! directory supplies (its settings, skills, prompt templates, agent specs,
//! MCP servers and system-prompt files) before the user has said so.
//!
//! A folder that comes with a repository can steer the model (a skill, a
//! `SYSTEM.md`) or start programs (an MCP server). [`protected_resources`]
//! lists what a folder holds of these. When it holds nothing there is nothing
//! to decide and the folder counts as trusted, unless a decision was saved
//! for it. Otherwise the decision is, in order ([`resolve`]):
//!
//! 1. `--approve` / `--no-approve` (`-a` / `-na`), for this process only;
//! 2. the decision saved for the folder or its closest parent in
//!    `<makai home>/trust.json` ([`TrustStore`], written by `/trust` and by
//!    the start-up question's "always" and "never" answers);
//! 3. the user setting `defaultProjectTrust`: `"always"`, `"never"`, or
//!    `"ask"` (the default), which asks in the interactive mode and declines
//!    in the print, JSON and RPC modes, where nobody can answer.
//!
//! Context files (`AGENTS.md`, `CLAUDE.md`) load whatever the decision, as in
//! pi. Trust does not widen the sandbox: the keys of
//! [`crate::settings::PROJECT_RESTRICTED_KEYS`] in a trusted project's
//! settings still need `"trustProjectSettings": true` in the user settings.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The user setting `defaultProjectTrust`: what applies when neither a flag
/// nor a saved decision does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DefaultProjectTrust {
    /// Ask in the interactive mode; decline where nobody can answer.
    #[default]
    Ask,
    /// Trust every project.
    Always,
    /// Trust no project.
    Never,
}

/// Where a trust decision came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TrustSource {
    /// `--approve` or `--no-approve`.
    Flag,
    /// A decision saved for this folder, or the parent named.
    Saved(PathBuf),
    /// The `defaultProjectTrust` setting.
    Setting(DefaultProjectTrust),
    /// The folder holds nothing that needs trust.
    NothingToProtect,
    /// The user answered the start-up question.
    Answer,
}

/// A project trust decision and its source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProjectTrust {
    /// Whether the project's resources load.
    pub trusted: bool,
    /// Why.
    pub source: TrustSource,
}

impl ProjectTrust {
    /// Trust decided by the caller (a test, an embedding program).
    pub fn trusted() -> Self {
        ProjectTrust {
            trusted: true,
            source: TrustSource::Flag,
        }
    }

    /// One line for the user: the decision and where it came from.
    pub fn describe(&self) -> String {
        let decision = if self.trusted {
            "trusted"
        } else {
            "not trusted"
        };
        let source = match &self.source {
            TrustSource::Flag => "by --approve/--no-approve".to_string(),
            TrustSource::Saved(dir) => format!("saved for {}", dir.display()),
            TrustSource::Setting(d) => format!(
                "by the defaultProjectTrust setting ({})",
                match d {
                    DefaultProjectTrust::Ask => "ask, with nobody to ask",
                    DefaultProjectTrust::Always => "always",
                    DefaultProjectTrust::Never => "never",
                }
            ),
            TrustSource::NothingToProtect => "it holds nothing that needs trust".to_string(),
            TrustSource::Answer => "by your answer".to_string(),
        };
        format!("project {decision} ({source})")
    }
}

/// What [`resolve`] could decide.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resolution {
    /// Decided.
    Decided(ProjectTrust),
    /// `defaultProjectTrust` is `"ask"` and a user can answer: ask about these
    /// resources.
    Ask(Vec<PathBuf>),
}

/// The entries of the project folders that makai loads and that need trust:
/// `.makai` holds settings (with their MCP servers) and agent specs besides
/// what it shares with pi's `.pi` (`settings.json`, `mcp.json`, skills,
/// prompt templates and the system-prompt files).
const PROTECTED_ENTRIES: [(&str, &[&str]); 2] = [
    (
        ".makai",
        &[
            "settings.json",
            "mcp.json",
            "skills",
            "prompts",
            "themes",
            "agents",
            "SYSTEM.md",
            "APPEND_SYSTEM.md",
        ],
    ),
    (
        ".pi",
        &[
            "settings.json",
            "mcp.json",
            "skills",
            "prompts",
            "themes",
            "SYSTEM.md",
            "APPEND_SYSTEM.md",
        ],
    ),
];

/// What `cwd` supplies that makai would load and that needs trust:
/// `.makai/settings.json` (with its MCP servers) and `.makai/agents`; the
/// `mcp.json`, skills, prompt templates, themes, `SYSTEM.md` and `APPEND_SYSTEM.md`
/// of `.makai` and `.pi`; `.pi/settings.json`; and `.agents/skills` in `cwd` or a parent up to the repository
/// root (where skill discovery stops). A bare `.makai` or `.pi` folder needs
/// none. Paths inside `user_dirs` (the makai home folder, pi's agent folder)
/// are the user's own and never count, even when `cwd` is the home folder.
pub fn protected_resources(cwd: &Path, user_dirs: &[&Path]) -> Vec<PathBuf> {
    let users: Vec<PathBuf> = user_dirs.iter().map(|d| canonical(d)).collect();
    let is_users = |p: &Path| {
        let c = canonical(p);
        users.iter().any(|u| c.starts_with(u))
    };
    let mut out = Vec::new();
    for (folder, entries) in PROTECTED_ENTRIES {
        let dir = cwd.join(folder);
        for entry in entries {
            let path = dir.join(entry);
            if path.exists() && !is_users(&path) {
                out.push(path);
            }
        }
    }
    for dir in cwd.ancestors() {
        let skills = dir.join(".agents").join("skills");
        if skills.exists() && !is_users(&skills) {
            out.push(skills);
        }
        if dir.join(".git").exists() {
            break;
        }
    }
    out
}

/// Decides whether to trust `cwd` (see the module docs). `flag` is
/// `--approve` (`Some(true)`) or `--no-approve` (`Some(false)`);
/// `can_ask` says whether a user can answer a question now.
pub fn resolve(
    cwd: &Path,
    flag: Option<bool>,
    store: &TrustStore,
    default: DefaultProjectTrust,
    protected: &[PathBuf],
    can_ask: bool,
) -> Resolution {
    if let Some(trusted) = flag {
        return Resolution::Decided(ProjectTrust {
            trusted,
            source: TrustSource::Flag,
        });
    }
    if let Some((dir, trusted)) = store.decision_for(cwd) {
        return Resolution::Decided(ProjectTrust {
            trusted,
            source: TrustSource::Saved(dir),
        });
    }
    if protected.is_empty() {
        return Resolution::Decided(ProjectTrust {
            trusted: true,
            source: TrustSource::NothingToProtect,
        });
    }
    let trusted = match default {
        DefaultProjectTrust::Always => true,
        DefaultProjectTrust::Never => false,
        DefaultProjectTrust::Ask if can_ask => return Resolution::Ask(protected.to_vec()),
        DefaultProjectTrust::Ask => false,
    };
    Resolution::Decided(ProjectTrust {
        trusted,
        source: TrustSource::Setting(default),
    })
}

/// A trust store that cannot be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrustStoreError {
    /// The file exists but cannot be read.
    #[error("cannot read the project trust decisions in {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not what makai writes.
    #[error(
        "the project trust decisions in {path} are invalid: {reason}. Fix or remove the file (it is a JSON object of folder paths to \"trusted\" or \"untrusted\")"
    )]
    Invalid {
        /// The file.
        path: PathBuf,
        /// serde's description.
        reason: String,
    },
    /// The file cannot be written.
    #[error("cannot save the project trust decision in {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// A saved decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Saved {
    Trusted,
    Untrusted,
}

/// The saved decisions: `<makai home>/trust.json`, a JSON object from
/// canonical folder paths to `"trusted"` or `"untrusted"`. A decision covers
/// the folder and everything below it; the closest one applies.
#[derive(Clone, Debug, Default)]
pub struct TrustStore {
    path: Option<PathBuf>,
    decisions: BTreeMap<PathBuf, Saved>,
}

impl TrustStore {
    /// The file under a makai home folder.
    pub fn file(home: &Path) -> PathBuf {
        home.join("trust.json")
    }

    /// A store with no decisions and no file (no home folder).
    pub fn empty() -> Self {
        TrustStore::default()
    }

    /// Reads `<home>/trust.json`; a missing file holds no decisions.
    pub fn load(home: &Path) -> Result<Self, TrustStoreError> {
        let path = TrustStore::file(home);
        let decisions = match std::fs::read_to_string(&path) {
            Ok(text) if text.trim().is_empty() => BTreeMap::new(),
            Ok(text) => serde_json::from_str(&text).map_err(|e| TrustStoreError::Invalid {
                path: path.clone(),
                reason: e.to_string(),
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(source) => return Err(TrustStoreError::Read { path, source }),
        };
        Ok(TrustStore {
            path: Some(path),
            decisions,
        })
    }

    /// The closest saved decision for `cwd` or a parent: the folder it was
    /// saved for, and whether it trusts.
    pub fn decision_for(&self, cwd: &Path) -> Option<(PathBuf, bool)> {
        let cwd = canonical(cwd);
        cwd.ancestors().find_map(|dir| {
            self.decisions
                .get(dir)
                .map(|d| (dir.to_path_buf(), *d == Saved::Trusted))
        })
    }

    /// Saves a decision for `dir` (`None` forgets it) and writes the file.
    pub fn save(&mut self, dir: &Path, trusted: Option<bool>) -> Result<(), TrustStoreError> {
        let key = canonical(dir);
        match trusted {
            Some(true) => self.decisions.insert(key, Saved::Trusted),
            Some(false) => self.decisions.insert(key, Saved::Untrusted),
            None => self.decisions.remove(&key),
        };
        let Some(path) = &self.path else {
            return Ok(());
        };
        let write = |path: &Path| -> std::io::Result<()> {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            let text =
                serde_json::to_string_pretty(&self.decisions).map_err(std::io::Error::other)?;
            // Written whole, then renamed, so a reader never sees half a file.
            let tmp = path.with_extension("json.tmp");
            std::fs::write(&tmp, text + "\n")?;
            std::fs::rename(&tmp, path)
        };
        write(path).map_err(|source| TrustStoreError::Write {
            path: path.clone(),
            source,
        })
    }
}

fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}
