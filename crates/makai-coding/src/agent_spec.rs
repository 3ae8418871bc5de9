//! Agent specs: a system prompt plus the tools an agent may use, in TOML.
//!
//! ```toml
//! name = "reviewer"                       # defaults to the file name
//! description = "Reviews diffs, never edits."
//! system_prompt = "You review code..."    # or: system_prompt_file = "reviewer.md"
//! tools = ["read", "grep", "find", "ls"]  # absent: all seven built-in tools
//! model = "anthropic/claude-sonnet-4-5"   # optional default model
//! thinking = "medium"                     # optional default thinking level
//!
//! [limits]                                # optional, see `crate::limits`
//! max_turns = 20                          # per run
//! max_time = "10m"                        # per run
//! max_cost = 0.50                         # dollars; as a sub-agent: its own cap
//! max_tokens = 400000
//!
//! [subagents]                             # optional: the `task` tool's limits
//! max_depth = 2                           # levels of sub-agents below the main agent
//! max_parallel = 4                        # children of one agent at once
//! ```
//!
//! As a sub-agent (the `task` tool), a spec gets only the tools it lists that
//! its parent has; it may start sub-agents of its own only when it lists
//! `task` and the depth allows (default depth 1: children cannot spawn).
//!
//! Specs are `*.toml` files in `.makai/agents/` of the working directory
//! (project) and `<makai home>/agents/` (user). A project spec wins over a
//! user spec of the same name, which wins over a built-in one. The default
//! coding agent, `coder`, is built in (`src/prompts/coder.toml` and
//! `coder.md`).
//!
//! `system_prompt_file` is relative to the spec file. A project spec's prompt
//! file must lie inside the project's `.makai` folder, so a cloned repository
//! cannot make makai send an arbitrary file of yours to a model.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use makai_ai::ThinkingLevel;
use serde::Deserialize;

use crate::context_files::{ContextFile, context_section};
use crate::limits::Limits;
use crate::prompts::{
    CODER_NO_TOOLS_SYSTEM_PROMPT, CODER_SPEC_TOML, CODER_SYSTEM_PROMPT, WORKER_SPEC_TOML,
    WORKER_SYSTEM_PROMPT,
};

/// The tools a spec gets when it does not list any.
pub const DEFAULT_TOOLS: [&str; 7] = ["read", "write", "edit", "bash", "grep", "find", "ls"];

/// The name of the built-in default agent.
pub const DEFAULT_AGENT: &str = "coder";

/// The name of the built-in spec the `task` tool uses for an inline instruction.
pub const WORKER_AGENT: &str = "worker";

/// The `task` tool's limits a spec may set (`[subagents]`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SubagentPolicy {
    /// Levels of sub-agents below the main agent (1: children cannot spawn).
    #[serde(default, alias = "max_depth", skip_serializing_if = "Option::is_none")]
    pub max_depth: Option<u32>,
    /// Children one agent runs at once (read-only ones; mutating ones run alone).
    #[serde(
        default,
        alias = "max_parallel",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_parallel: Option<usize>,
}

/// Where a spec came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SpecSource {
    /// Built into makai.
    Builtin,
    /// `<makai home>/agents/`.
    User,
    /// `.makai/agents/` in the working directory.
    Project,
}

/// A loaded agent spec.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentSpec {
    /// Its name.
    pub name: String,
    /// What it is for.
    pub description: String,
    /// The system prompt (without context files or environment info).
    pub system_prompt: String,
    /// The tools it may use, by name.
    pub tools: Vec<String>,
    /// Default model (`provider/id` or an id).
    pub model: Option<String>,
    /// Default thinking level.
    pub thinking: Option<ThinkingLevel>,
    /// Limits of its runs and its budget (as a sub-agent: a cap of its own).
    pub limits: Limits,
    /// The `task` tool's limits.
    pub subagents: SubagentPolicy,
    /// Where it came from.
    pub source: SpecSource,
    /// Its file (`None` for built-in specs).
    pub path: Option<PathBuf>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SpecFile {
    name: Option<String>,
    description: Option<String>,
    system_prompt: Option<String>,
    system_prompt_file: Option<String>,
    tools: Option<Vec<String>>,
    model: Option<String>,
    thinking: Option<ThinkingLevel>,
    limits: Option<Limits>,
    subagents: Option<SubagentPolicy>,
}

/// A spec that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentSpecError {
    /// The spec file (or its prompt file) cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The spec is not valid.
    #[error("agent spec {origin} is invalid: {reason}")]
    Invalid {
        /// The spec's file, or `built-in <name>`.
        origin: String,
        /// What is wrong and how to fix it.
        reason: String,
    },
    /// No spec has that name.
    #[error("no agent spec named '{name}'; available: {}", .available.join(", "))]
    NotFound {
        /// The name asked for.
        name: String,
        /// The names there are.
        available: Vec<String>,
    },
}

/// Parses a spec. `path` is the spec's file (for relative prompt files and
/// messages); `prompt_root` limits where a prompt file may be (`None`: anywhere).
pub fn parse_spec(
    text: &str,
    path: &Path,
    source: SpecSource,
    prompt_root: Option<&Path>,
) -> Result<AgentSpec, AgentSpecError> {
    let origin = path.display().to_string();
    let invalid = |reason: String| AgentSpecError::Invalid {
        origin: origin.clone(),
        reason,
    };
    let mut file: SpecFile = toml::from_str(text).map_err(|e| invalid(e.to_string()))?;
    let system_prompt = match (file.system_prompt.take(), file.system_prompt_file.take()) {
        (Some(p), None) => p,
        (None, Some(rel)) => read_prompt_file(path, &rel, prompt_root)?,
        (Some(_), Some(_)) => {
            return Err(invalid(
                "it sets both system_prompt and system_prompt_file; keep one".into(),
            ));
        }
        (None, None) => {
            return Err(invalid(
                "it has no system prompt; add system_prompt = \"...\" or system_prompt_file = \"prompt.md\"".into(),
            ));
        }
    };
    let name = file_name_default(path, file.name.clone());
    finish(file, name, system_prompt, source, Some(path.to_path_buf())).map_err(invalid)
}

fn finish(
    file: SpecFile,
    name: Option<String>,
    system_prompt: String,
    source: SpecSource,
    path: Option<PathBuf>,
) -> Result<AgentSpec, String> {
    let SpecFile {
        description,
        tools,
        model,
        thinking,
        limits,
        subagents,
        ..
    } = file;
    let limits = limits.unwrap_or_default();
    limits.check()?;
    let subagents = subagents.unwrap_or_default();
    if subagents.max_parallel == Some(0) {
        return Err("[subagents] max_parallel must be at least 1".into());
    }
    let name = name.unwrap_or_default();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(format!(
            "name '{name}' must be non-empty and use only letters, digits, '-' and '_'"
        ));
    }
    if system_prompt.trim().is_empty() {
        return Err("the system prompt is empty".into());
    }
    let tools = tools.unwrap_or_else(|| DEFAULT_TOOLS.iter().map(|t| t.to_string()).collect());
    for (i, t) in tools.iter().enumerate() {
        if t.trim().is_empty() {
            return Err("tools contains an empty name".into());
        }
        if tools[..i].contains(t) {
            return Err(format!("tools lists '{t}' twice"));
        }
    }
    Ok(AgentSpec {
        name,
        description: description.unwrap_or_default(),
        system_prompt,
        tools,
        model,
        thinking,
        limits,
        subagents,
        source,
        path,
    })
}

fn file_name_default(path: &Path, name: Option<String>) -> Option<String> {
    name.or_else(|| {
        path.file_stem()
            .and_then(|s| s.to_str())
            .map(str::to_string)
    })
}

fn read_prompt_file(
    spec_path: &Path,
    rel: &str,
    prompt_root: Option<&Path>,
) -> Result<String, AgentSpecError> {
    let base = spec_path.parent().unwrap_or(Path::new("."));
    let prompt = base.join(rel);
    let read_err = |source| AgentSpecError::Read {
        path: prompt.clone(),
        source,
    };
    if let Some(root) = prompt_root {
        let real = prompt.canonicalize().map_err(read_err)?;
        let root = root.canonicalize().map_err(|source| AgentSpecError::Read {
            path: root.to_path_buf(),
            source,
        })?;
        if !real.starts_with(&root) {
            return Err(AgentSpecError::Invalid {
                origin: spec_path.display().to_string(),
                reason: format!(
                    "system_prompt_file '{rel}' resolves to {}, outside {}; a project spec's prompt file must be inside the project's .makai folder",
                    real.display(),
                    root.display()
                ),
            });
        }
    }
    std::fs::read_to_string(&prompt).map_err(read_err)
}

/// The built-in specs: the default coding agent, `coder`, and `worker`, the
/// spec of the `task` tool's inline instructions.
pub fn builtin_specs() -> Vec<AgentSpec> {
    let mut out = Vec::new();
    for text in [CODER_SPEC_TOML, WORKER_SPEC_TOML] {
        match parse_builtin(text) {
            Ok(s) => out.push(s),
            // Checked by a unit test; never expected at run time.
            Err(e) => tracing::error!("built-in agent spec is invalid: {e}"),
        }
    }
    out
}

/// The default coding agent.
pub fn default_spec() -> Result<AgentSpec, AgentSpecError> {
    parse_builtin(CODER_SPEC_TOML)
}

fn parse_builtin(text: &str) -> Result<AgentSpec, AgentSpecError> {
    let invalid = |reason: String| AgentSpecError::Invalid {
        origin: "built-in".into(),
        reason,
    };
    let file: SpecFile = toml::from_str(text).map_err(|e| invalid(e.to_string()))?;
    let prompt = match (
        file.system_prompt.clone(),
        file.system_prompt_file.as_deref(),
    ) {
        (Some(p), None) => p,
        (None, Some("coder.md")) => CODER_SYSTEM_PROMPT.to_string(),
        (None, Some("worker.md")) => WORKER_SYSTEM_PROMPT.to_string(),
        _ => return Err(invalid("unknown embedded prompt".into())),
    };
    let name = file.name.clone();
    finish(file, name, prompt, SpecSource::Builtin, None).map_err(invalid)
}

/// All specs visible from a working directory, by name.
#[derive(Clone, Debug, Default)]
pub struct AgentCatalog {
    specs: BTreeMap<String, AgentSpec>,
    /// Spec files that could not be used (the others still load).
    pub problems: Vec<String>,
}

impl AgentCatalog {
    /// The project folder of specs.
    pub fn project_dir(cwd: &Path) -> PathBuf {
        cwd.join(".makai").join("agents")
    }

    /// The user folder of specs.
    pub fn user_dir(home: &Path) -> PathBuf {
        home.join("agents")
    }

    /// Built-in specs, then `<home>/agents/*.toml`, then `<cwd>/.makai/agents/*.toml`;
    /// a later one replaces an earlier one of the same name.
    pub fn load(cwd: &Path, home: Option<&Path>) -> AgentCatalog {
        AgentCatalog::load_trusted(cwd, home, true)
    }

    /// [`AgentCatalog::load`], with the project's specs only when `project`
    /// (a trusted project, see [`crate::trust`]).
    pub fn load_trusted(cwd: &Path, home: Option<&Path>, project: bool) -> AgentCatalog {
        let mut cat = AgentCatalog::default();
        for s in builtin_specs() {
            cat.specs.insert(s.name.clone(), s);
        }
        if let Some(home) = home {
            cat.load_dir(&AgentCatalog::user_dir(home), SpecSource::User, None);
        }
        if !project {
            return cat;
        }
        let makai_dir = cwd.join(".makai");
        cat.load_dir(
            &AgentCatalog::project_dir(cwd),
            SpecSource::Project,
            Some(&makai_dir),
        );
        cat
    }

    fn load_dir(&mut self, dir: &Path, source: SpecSource, prompt_root: Option<&Path>) {
        let first_new = self.problems.len();
        let read = match std::fs::read_dir(dir) {
            Ok(r) => r,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(e) => {
                self.problems
                    .push(format!("cannot list agent specs in {}: {e}", dir.display()));
                return;
            }
        };
        let mut files: Vec<PathBuf> = read
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("toml"))
            .collect();
        files.sort();
        let mut names_here: BTreeMap<String, PathBuf> = BTreeMap::new();
        for path in files {
            let result = std::fs::read_to_string(&path)
                .map_err(|source| AgentSpecError::Read {
                    path: path.clone(),
                    source,
                })
                .and_then(|text| parse_spec(&text, &path, source, prompt_root));
            match result {
                Ok(spec) => {
                    if let Some(first) = names_here.get(&spec.name) {
                        self.problems.push(format!(
                            "agent spec {} is ignored: {} already defines '{}'",
                            path.display(),
                            first.display(),
                            spec.name
                        ));
                        continue;
                    }
                    names_here.insert(spec.name.clone(), path.clone());
                    self.specs.insert(spec.name.clone(), spec);
                }
                Err(e) => self.problems.push(e.to_string()),
            }
        }
        for p in &self.problems[first_new..] {
            tracing::warn!("{p}");
        }
    }

    /// The spec of that name.
    pub fn get(&self, name: &str) -> Option<&AgentSpec> {
        self.specs.get(name)
    }

    /// The spec of that name, or an error listing the names there are.
    pub fn require(&self, name: &str) -> Result<&AgentSpec, AgentSpecError> {
        self.specs
            .get(name)
            .ok_or_else(|| AgentSpecError::NotFound {
                name: name.to_string(),
                available: self.specs.keys().cloned().collect(),
            })
    }

    /// All specs, by name.
    pub fn specs(&self) -> impl Iterator<Item = &AgentSpec> {
        self.specs.values()
    }
}

/// Builds the full system prompt: the spec's prompt, the context-file section,
/// then the date and working directory. Nothing else (no tool output, no file
/// content) is ever added here.
pub fn build_system_prompt(
    spec: &AgentSpec,
    context_files: &[ContextFile],
    cwd: &Path,
    date: chrono::NaiveDate,
) -> String {
    let mut s = spec.system_prompt.trim_end().to_string();
    if let Some(section) = context_section(context_files) {
        s.push_str("\n\n");
        s.push_str(section.trim_end());
    }
    s.push_str(&format!(
        "\n\n# Environment\n\nCurrent date: {}\nWorking directory: {}\n",
        date.format("%Y-%m-%d"),
        cwd.display()
    ));
    s
}

impl AgentSpec {
    /// The spec for a run without tools: the built-in coder's prompt, which
    /// describes seven tools, becomes [`CODER_NO_TOOLS_SYSTEM_PROMPT`]; any
    /// other prompt (a spec of the user's, `--system-prompt`) stays as it is.
    pub fn without_tools(mut self) -> AgentSpec {
        if self.system_prompt == CODER_SYSTEM_PROMPT {
            self.system_prompt = CODER_NO_TOOLS_SYSTEM_PROMPT.to_string();
        }
        self
    }
}

/// Today's date in the local time zone, for [`build_system_prompt`].
pub fn today() -> chrono::NaiveDate {
    chrono::Local::now().date_naive()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_tools_the_builtin_prompt_describes_none_and_other_prompts_stay() {
        let s = default_spec().unwrap().without_tools();
        assert_eq!(s.system_prompt, CODER_NO_TOOLS_SYSTEM_PROMPT);
        for t in DEFAULT_TOOLS {
            assert!(!s.system_prompt.contains(&format!("## {t}\n")), "{t}");
        }
        let mut own = default_spec().unwrap();
        own.system_prompt = "Mine.".into();
        assert_eq!(own.without_tools().system_prompt, "Mine.");
    }

    #[test]
    fn builtin_coder_is_valid_and_lists_the_tools() {
        let s = default_spec().unwrap();
        assert_eq!(s.name, DEFAULT_AGENT);
        assert_eq!(s.tools[..7], DEFAULT_TOOLS);
        assert_eq!(s.tools[7], "task");
        for t in &s.tools {
            assert!(
                s.system_prompt.contains(&format!("## {t}\n")),
                "prompt lacks {t}"
            );
        }
    }

    #[test]
    fn builtin_worker_is_valid_and_limits_and_subagents_parse() {
        let cat = AgentCatalog::load(Path::new("/nonexistent"), None);
        let w = cat.require(WORKER_AGENT).unwrap();
        assert_eq!(w.tools, DEFAULT_TOOLS);
        let s = parse_spec(
            "system_prompt = \"a\"\n[limits]\nmax_turns = 3\nmax_cost = 0.5\n[subagents]\nmax_depth = 2",
            Path::new("/x/a.toml"),
            SpecSource::User,
            None,
        )
        .unwrap();
        assert_eq!(s.limits.max_turns, Some(3));
        assert_eq!(s.limits.max_cost, Some(0.5));
        assert_eq!(s.subagents.max_depth, Some(2));
        let e = parse_spec(
            "system_prompt = \"a\"\n[limits]\nmax_turns = 0",
            Path::new("/x/a.toml"),
            SpecSource::User,
            None,
        )
        .unwrap_err();
        assert!(e.to_string().contains("maxTurns"), "{e}");
    }

    #[test]
    fn both_prompt_kinds_is_an_error() {
        let e = parse_spec(
            "system_prompt = \"a\"\nsystem_prompt_file = \"b\"",
            Path::new("/x/a.toml"),
            SpecSource::User,
            None,
        )
        .unwrap_err();
        assert!(e.to_string().contains("both"), "{e}");
    }

    #[test]
    fn unknown_keys_are_errors() {
        let e = parse_spec(
            "system_prompt = \"a\"\ntols = []",
            Path::new("/x/a.toml"),
            SpecSource::User,
            None,
        )
        .unwrap_err();
        assert!(e.to_string().contains("tols"), "{e}");
    }
}
