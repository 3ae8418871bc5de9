//! Skills and prompt templates, found where pi users keep them, and the `/`
//! commands they make.
//!
//! [`Resources::discover`] looks in makai's folders, pi's and the Agent Skills
//! ones, user folders first (the first resource of a name wins, as in pi):
//!
//! | | skills | prompt templates |
//! | --- | --- | --- |
//! | user | `<makai home>/skills`, `~/.pi/agent/skills`, `~/.agents/skills` | `<makai home>/prompts`, `~/.pi/agent/prompts` |
//! | project | `.makai/skills`, `.pi/skills`, `.agents/skills` in the working directory and its parents up to the repository root | `.makai/prompts`, `.pi/prompts` |
//!
//! (`~/.pi/agent` is `$PI_CODING_AGENT_DIR` when set.) The project folders are
//! searched only for a trusted project ([`crate::trust`]). Then:
//!
//! - [`Resources::skills_prompt_section`] is the system-prompt list of skills
//!   (name, description, path; not those with `disable-model-invocation`);
//! - [`expand_input`] turns `/skill:name args` and `/template args` into the
//!   text the model receives, in every mode;
//! - [`list_commands`] lists them as pi's `get_commands` does.
//!
//! Skill descriptions are file content that reaches the system prompt, like
//! `AGENTS.md` (see [`crate::prompts`]): the user put the skill where makai or
//! pi looks for them; the text is XML-escaped.

mod entries;
mod frontmatter;
mod skills;
mod templates;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use entries::Entries;
pub use skills::{Skill, SkillInvocation, parse_invocation};
pub use templates::{PromptTemplate, parse_args, substitute_args};

/// Environment variable naming pi's agent folder (default `~/.pi/agent`).
pub const PI_AGENT_DIR_ENV: &str = "PI_CODING_AGENT_DIR";

/// pi's agent folder: `$PI_CODING_AGENT_DIR`, else `~/.pi/agent`.
pub fn pi_agent_dir() -> Option<PathBuf> {
    match std::env::var_os(PI_AGENT_DIR_ENV).filter(|v| !v.is_empty()) {
        Some(v) => Some(PathBuf::from(v)),
        None => dirs::home_dir().map(|h| h.join(".pi").join("agent")),
    }
}

/// Where a resource was found (pi's `sourceInfo`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceInfo {
    /// The file.
    pub path: String,
    /// How it was discovered; always `"local"` (a folder on disk) in makai.
    pub source: String,
    /// `"user"` or `"project"`.
    pub scope: String,
    /// `"top-level"` (makai loads no packages).
    pub origin: String,
}

impl SourceInfo {
    pub(crate) fn local(path: &Path, scope: &str) -> Self {
        SourceInfo {
            path: path.display().to_string(),
            source: "local".into(),
            scope: scope.into(),
            origin: "top-level".into(),
        }
    }
}

/// A resource that was skipped or has a problem worth telling the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceWarning {
    /// The file.
    pub path: PathBuf,
    /// What is wrong.
    pub message: String,
}

impl ResourceWarning {
    pub(crate) fn new(path: &Path, message: impl Into<String>) -> Self {
        ResourceWarning {
            path: path.to_path_buf(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for ResourceWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.message)
    }
}

/// The folders [`Resources::discover_in`] searches.
#[derive(Clone, Debug, Default)]
pub struct ResourceDirs {
    /// The working directory.
    pub cwd: PathBuf,
    /// makai's home folder (`~/.makai`).
    pub makai_home: Option<PathBuf>,
    /// pi's agent folder (`~/.pi/agent`).
    pub pi_agent_dir: Option<PathBuf>,
    /// The user's home folder (for `~/.agents/skills`).
    pub user_home: Option<PathBuf>,
    /// Search the working directory's folders too (`.makai`, `.pi` and
    /// `.agents/skills` up to the repository root): only for a trusted
    /// project (see [`crate::trust`]).
    pub project: bool,
}

impl ResourceDirs {
    /// The folders for `cwd` from the environment: `makai_home`, [`pi_agent_dir`]
    /// and the user's home folder; the project's own when `project` (a
    /// trusted project).
    pub fn from_env(cwd: &Path, makai_home: Option<&Path>, project: bool) -> Self {
        ResourceDirs {
            cwd: cwd.to_path_buf(),
            makai_home: makai_home.map(Path::to_path_buf),
            pi_agent_dir: pi_agent_dir(),
            user_home: dirs::home_dir(),
            project,
        }
    }
}

/// True when `a` and `b` are the same file.
fn same_file(a: &Path, b: &Path) -> bool {
    canonical(a) == canonical(b)
}

/// The skills and prompt templates of a working directory.
#[derive(Clone, Debug, Default)]
pub struct Resources {
    /// Skills, in discovery order.
    pub skills: Vec<Skill>,
    /// Prompt templates, in discovery order.
    pub templates: Vec<PromptTemplate>,
    /// Files skipped or with problems, and name collisions.
    pub warnings: Vec<ResourceWarning>,
}

impl Resources {
    /// No skills, no templates.
    pub fn empty() -> Self {
        Resources::default()
    }

    /// Discovers the resources for `cwd` (see the module docs); the
    /// project's own only when `project` (a trusted project).
    pub fn discover(cwd: &Path, makai_home: Option<&Path>, project: bool) -> Self {
        Resources::discover_in(&ResourceDirs::from_env(cwd, makai_home, project))
    }

    /// Discovers the resources in the given folders.
    pub fn discover_in(dirs: &ResourceDirs) -> Self {
        let mut skill_dirs: Vec<(PathBuf, &str)> = Vec::new();
        let mut prompt_dirs: Vec<(PathBuf, &str)> = Vec::new();
        if let Some(h) = &dirs.makai_home {
            skill_dirs.push((h.join("skills"), "user"));
            prompt_dirs.push((h.join("prompts"), "user"));
        }
        if let Some(p) = &dirs.pi_agent_dir {
            skill_dirs.push((p.join("skills"), "user"));
            prompt_dirs.push((p.join("prompts"), "user"));
        }
        if let Some(h) = &dirs.user_home {
            skill_dirs.push((h.join(".agents").join("skills"), "user"));
        }
        if dirs.project {
            for folder in [".makai", ".pi"] {
                skill_dirs.push((dirs.cwd.join(folder).join("skills"), "project"));
                prompt_dirs.push((dirs.cwd.join(folder).join("prompts"), "project"));
            }
            for dir in dirs.cwd.ancestors() {
                skill_dirs.push((dir.join(".agents").join("skills"), "project"));
                if dir.join(".git").exists() {
                    break;
                }
            }
        }

        let mut out = Resources::empty();
        for (dir, scope) in skill_dirs {
            let mut warnings = Vec::new();
            let skills = skills::load_dir(&dir, scope, &mut warnings);
            out.add(Resources {
                skills,
                templates: Vec::new(),
                warnings,
            });
        }
        for (dir, scope) in prompt_dirs {
            let mut warnings = Vec::new();
            let templates = templates::load_dir(&dir, scope, &mut warnings);
            out.add(Resources {
                skills: Vec::new(),
                templates,
                warnings,
            });
        }
        for w in &out.warnings {
            tracing::warn!("{w}");
        }
        out
    }

    /// The skills and templates of explicit files or folders (`--skill`,
    /// `--prompt-template`): a skill folder (with `SKILL.md`) or a folder of
    /// skills, a skill file; a template file or a folder of templates. What
    /// cannot be read or used becomes a warning.
    pub fn load_paths(skill_paths: &[PathBuf], template_paths: &[PathBuf]) -> Self {
        let mut out = Resources::empty();
        for path in skill_paths {
            let found = if path.is_dir() {
                skills::load_dir(path, "user", &mut out.warnings)
            } else {
                skills::load_path(path, "user", &mut out.warnings)
                    .into_iter()
                    .collect()
            };
            if found.is_empty() {
                out.warnings.push(ResourceWarning::new(
                    path,
                    "no skill found here".to_string(),
                ));
            }
            out.add(Resources {
                skills: found,
                ..Resources::default()
            });
        }
        for path in template_paths {
            let found = if path.is_dir() {
                templates::load_dir(path, "user", &mut out.warnings)
            } else {
                templates::load_path(path, "user", &mut out.warnings)
                    .into_iter()
                    .collect()
            };
            if found.is_empty() {
                out.warnings.push(ResourceWarning::new(
                    path,
                    "no prompt template found here".to_string(),
                ));
            }
            out.add(Resources {
                templates: found,
                ..Resources::default()
            });
        }
        out
    }

    /// Adds `other`'s skills, templates and warnings; a name already taken
    /// keeps the one present (a warning says which was ignored), and a file
    /// already loaded is not loaded twice.
    pub fn add(&mut self, other: Resources) {
        self.warnings.extend(other.warnings);
        for skill in other.skills {
            if self
                .skills
                .iter()
                .any(|s| same_file(&s.file_path, &skill.file_path))
            {
                continue;
            }
            if let Some(winner) = self.skills.iter().find(|s| s.name == skill.name) {
                let text = format!(
                    "skill name \"{}\" is already taken by {}; this one is ignored",
                    skill.name,
                    winner.file_path.display()
                );
                self.warnings
                    .push(ResourceWarning::new(&skill.file_path, text));
                continue;
            }
            self.skills.push(skill);
        }
        for t in other.templates {
            if self
                .templates
                .iter()
                .any(|w| same_file(&w.file_path, &t.file_path))
            {
                continue;
            }
            if let Some(winner) = self.templates.iter().find(|w| w.name == t.name) {
                let text = format!(
                    "prompt template /{} is already defined by {}; this one is ignored",
                    t.name,
                    winner.file_path.display()
                );
                self.warnings.push(ResourceWarning::new(&t.file_path, text));
                continue;
            }
            self.templates.push(t);
        }
    }

    /// The system-prompt section listing the skills the model may load, or
    /// `None` when there are none.
    pub fn skills_prompt_section(&self) -> Option<String> {
        skills::prompt_section(&self.skills)
    }

    /// The skill named `name`.
    pub fn skill(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    /// The template named `name`.
    pub fn template(&self, name: &str) -> Option<&PromptTemplate> {
        self.templates.iter().find(|t| t.name == name)
    }
}

fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

/// What kind of resource a command comes from (pi's `source`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum CommandSource {
    /// A prompt template.
    Prompt,
    /// A skill (the name is `skill:<name>`).
    Skill,
}

/// One command of pi's `get_commands`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandInfo {
    /// The name to type after `/`.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Template or skill.
    pub source: CommandSource,
    /// Where it was found.
    pub source_info: SourceInfo,
    /// The template's `argument-hint`, for completion (not part of pi's record).
    #[serde(skip)]
    pub argument_hint: Option<String>,
}

/// The commands the resources make: templates, then skills (as pi lists them).
pub fn list_commands(resources: &Resources) -> Vec<CommandInfo> {
    let templates = resources.templates.iter().map(|t| CommandInfo {
        name: t.name.clone(),
        description: t.description.clone(),
        source: CommandSource::Prompt,
        source_info: t.source_info.clone(),
        argument_hint: t.argument_hint.clone(),
    });
    let skills = resources.skills.iter().map(|s| CommandInfo {
        name: format!("skill:{}", s.name),
        description: s.description.clone(),
        source: CommandSource::Skill,
        source_info: s.source_info.clone(),
        argument_hint: None,
    });
    templates.chain(skills).collect()
}

/// What [`expand_input`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExpansionKind {
    /// Nothing: not a command of a known skill or template.
    Plain,
    /// `/skill:name` loaded the skill.
    Skill(String),
    /// `/name` expanded the template.
    Template(String),
}

/// The text to send after expansion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expanded {
    /// The text for the model.
    pub text: String,
    /// What was expanded.
    pub kind: ExpansionKind,
    /// Why a known skill could not be loaded (the text is then unchanged).
    pub warning: Option<String>,
}

/// Expands `/skill:name args` and `/template args` as pi does; any other text
/// (including `/unknown`) is returned unchanged.
pub fn expand_input(text: &str, resources: &Resources) -> Expanded {
    let plain = |warning| Expanded {
        text: text.to_string(),
        kind: ExpansionKind::Plain,
        warning,
    };
    let Some(command) = text.strip_prefix('/') else {
        return plain(None);
    };
    let (name, args) = match command.find(char::is_whitespace) {
        Some(i) => (&command[..i], &command[i + 1..]),
        None => (command, ""),
    };
    if let Some(skill_name) = name.strip_prefix("skill:") {
        let Some(skill) = resources.skill(skill_name) else {
            return plain(None);
        };
        return match skills::expand(skill, args) {
            Ok(text) => Expanded {
                text,
                kind: ExpansionKind::Skill(skill.name.clone()),
                warning: None,
            },
            Err(e) => plain(Some(e)),
        };
    }
    match resources.template(name) {
        Some(t) => Expanded {
            text: substitute_args(&t.content, &parse_args(args)),
            kind: ExpansionKind::Template(t.name.clone()),
            warning: None,
        },
        None => plain(None),
    }
}
