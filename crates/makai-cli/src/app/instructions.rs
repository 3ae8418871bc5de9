//! The instructions in the system prompt: the agent's prompt (or
//! `SYSTEM.md`, or `--system-prompt`), the context files (`AGENTS.md`,
//! `CLAUDE.md`), `APPEND_SYSTEM.md` and `--append-system-prompt`, and the
//! sections the session's tools add. Composed when the session is built,
//! and again by `/reload` (pi's `/reload` reads instructions again), each
//! run taking the prompts in force when it starts.

use std::path::{Path, PathBuf};

use makai_coding::agent_spec::today;
use makai_coding::context_files::{ContextFile, SharedContextFiles};
use makai_coding::system_files::SystemFiles;
use makai_coding::{AgentSpec, build_system_prompt, discover_context_files};

use super::{AppSession, lock};
use crate::error::CliError;

/// The system prompts of a session's runs.
#[derive(Clone, Debug, Default)]
pub struct SystemPrompts {
    /// The system prompt of a run offered tools.
    pub with_tools: String,
    /// The system prompt of a run offered none: the built-in coder's prompt
    /// becomes the tool-less one (`AgentSpec::without_tools`), any other
    /// stays as it is.
    pub without_tools: String,
}

/// What the system prompts are composed of, kept to compose them again.
#[derive(Clone, Debug)]
pub struct InstructionSources {
    /// The agent's spec as chosen (its prompt before `SYSTEM.md`).
    pub spec: AgentSpec,
    /// `--system-prompt`'s text: it wins over `SYSTEM.md`.
    pub system_prompt_flag: Option<FlagText>,
    /// `--append-system-prompt`'s texts, after `APPEND_SYSTEM.md`'s.
    pub appended: Vec<FlagText>,
    /// Sections only a run offered tools gets (codemode's guideline).
    pub tool_sections: Vec<String>,
    /// The section on the MCP servers reached indirectly (a run offered
    /// tools only); replaced when `/reload` reads the servers again.
    pub mcp_section: Option<String>,
    /// The working directory.
    pub cwd: PathBuf,
    /// makai's home folder (user context files and system files).
    pub home: Option<PathBuf>,
    /// Context files are read (not `--no-context-files`).
    pub context_files: bool,
    /// `SYSTEM.md` and `APPEND_SYSTEM.md` apply (the default agent only: an
    /// agent chosen by name keeps its own prompt).
    pub system_files: bool,
    /// The project is trusted: its `.makai` and `.pi` system files count.
    pub trusted: bool,
    /// The context files the prompts were last composed with, shared with
    /// the sub-agents' `task` tool.
    pub files: SharedContextFiles,
}

/// A `--system-prompt` or `--append-system-prompt` value: its text, or the
/// file it names, read again whenever the prompts are composed (`/reload`
/// reads it again, as pi's does).
#[derive(Clone, Debug)]
pub struct FlagText {
    /// The flag (for what the user is told).
    pub flag: &'static str,
    /// The text given, or the file's as read when the session was built.
    pub text: String,
    /// The file the value named.
    pub file: Option<PathBuf>,
}

impl FlagText {
    /// `value` taken as a file in `cwd` when one of that name exists (a short
    /// one-line value), else as the text itself.
    pub fn resolve(value: &str, cwd: &Path, flag: &'static str) -> Result<Self, CliError> {
        let p = cwd.join(value);
        if value.len() < 4096 && !value.contains('\n') && p.is_file() {
            let text = std::fs::read_to_string(&p).map_err(|e| {
                CliError::Usage(format!("{flag} {}: cannot read it: {e}", p.display()))
            })?;
            return Ok(FlagText {
                flag,
                text,
                file: Some(p),
            });
        }
        Ok(FlagText {
            flag,
            text: value.to_string(),
            file: None,
        })
    }

    /// The text now: the file read again (when it cannot be, the text read
    /// when the session was built, and `warnings` says why).
    fn read(&self, warnings: &mut Vec<String>) -> String {
        let Some(file) = &self.file else {
            return self.text.clone();
        };
        match std::fs::read_to_string(file) {
            Ok(text) => text,
            Err(e) => {
                warnings.push(format!(
                    "{} {}: cannot read it ({e}); the text read at start stays",
                    self.flag,
                    file.display()
                ));
                self.text.clone()
            }
        }
    }
}

/// Instructions composed: the prompts, the context files read, and what
/// the user should hear (system files that exist but cannot be read).
#[derive(Debug)]
pub struct Composed {
    /// The prompts.
    pub prompts: SystemPrompts,
    /// The context files in them.
    pub files: Vec<ContextFile>,
    /// Files that could not be read.
    pub warnings: Vec<String>,
}

impl InstructionSources {
    /// The context files, read now.
    pub fn context_files(&self) -> Vec<ContextFile> {
        if self.context_files {
            discover_context_files(&self.cwd, self.home.as_deref())
        } else {
            Vec::new()
        }
    }

    /// The prompts with the files read now.
    pub fn compose(&self) -> Composed {
        self.compose_with(self.context_files())
    }

    /// The prompts with the context files `files` (read already), which
    /// the sub-agents get from now on.
    pub fn compose_with(&self, files: Vec<ContextFile>) -> Composed {
        self.files.replace(files.clone());
        let system_files = if self.system_files {
            let users = [self.home.clone(), makai_coding::resources::pi_agent_dir()];
            let users: Vec<&Path> = users.iter().flatten().map(PathBuf::as_path).collect();
            SystemFiles::discover(&self.cwd, self.trusted, &users)
        } else {
            SystemFiles::default()
        };
        let mut spec = self.spec.clone();
        if let Some(file) = &system_files.system {
            spec.system_prompt = file.text.clone();
        }
        let mut warnings = system_files.warnings.clone();
        if let Some(flag) = &self.system_prompt_flag {
            spec.system_prompt = flag.read(&mut warnings);
        }
        let spec_without_tools = spec.clone().without_tools();
        let date = today();
        let mut with_tools = build_system_prompt(&spec, &files, &self.cwd, date);
        for section in self.tool_sections.iter().chain(&self.mcp_section) {
            with_tools.push_str("\n\n");
            with_tools.push_str(section);
        }
        let mut without_tools = build_system_prompt(&spec_without_tools, &files, &self.cwd, date);
        let flags: Vec<String> = self
            .appended
            .iter()
            .map(|f| f.read(&mut warnings))
            .collect();
        let appended = system_files.append.iter().map(|f| &f.text);
        for extra in appended.chain(&flags) {
            for prompt in [&mut with_tools, &mut without_tools] {
                prompt.push_str("\n\n");
                prompt.push_str(extra);
            }
        }
        Composed {
            prompts: SystemPrompts {
                with_tools,
                without_tools,
            },
            files,
            warnings,
        }
    }
}

/// What `/reload` found of the instructions.
#[derive(Debug)]
pub struct InstructionsReloaded {
    /// The context files now in the system prompt.
    pub context_files: Vec<PathBuf>,
    /// Files that could not be read.
    pub warnings: Vec<String>,
}

impl AppSession {
    /// Reads the instructions again (context files, `SYSTEM.md`,
    /// `APPEND_SYSTEM.md`): the next run's system prompt has them. A run
    /// going keeps the prompt it started with.
    pub fn reload_instructions(&self) -> InstructionsReloaded {
        let composed = lock(&self.inner.instruction_sources).compose();
        *lock(&self.inner.system_prompts) = composed.prompts;
        InstructionsReloaded {
            context_files: composed.files.into_iter().map(|f| f.path).collect(),
            warnings: composed.warnings,
        }
    }

    /// The system prompts of the next runs.
    pub(crate) fn system_prompts(&self) -> SystemPrompts {
        lock(&self.inner.system_prompts).clone()
    }
}
