//! Skills and prompt templates of a session: expanding `/skill:name` and
//! `/template` input, listing them as commands, the skills section of the
//! system prompt, and `/reload`.

use std::sync::Arc;

use makai_coding::resources::Entries;
use makai_coding::{CommandInfo, Resources, expand_input, list_commands};

use super::{AppSession, lock};

/// Which resources a session loads (`--no-skills`, `--no-prompt-templates`)
/// and whether the skills are listed in the system prompt (not without tools:
/// the model could not read them).
#[derive(Clone, Debug)]
pub struct ResourceOptions {
    /// Load skills.
    pub skills: bool,
    /// Load prompt templates.
    pub templates: bool,
    /// List the skills in the system prompt.
    pub skills_in_prompt: bool,
    /// Skill files or folders loaded besides the discovered ones (`--skill`),
    /// whether discovery is on or not.
    pub skill_paths: Vec<std::path::PathBuf>,
    /// Prompt template files or folders loaded besides the discovered ones
    /// (`--prompt-template`).
    pub template_paths: Vec<std::path::PathBuf>,
    /// pi's `skills` setting: paths to load, and `!pattern`, `-path`,
    /// `+path` over what is found ([`makai_coding::resources::Entries`]).
    pub skill_entries: Vec<String>,
    /// pi's `prompts` setting, the same for prompt templates.
    pub template_entries: Vec<String>,
    /// Search the project's folders too (a trusted project).
    pub project: bool,
}

impl ResourceOptions {
    /// Discovers the resources for `cwd` as these options allow.
    pub fn discover(&self, cwd: &std::path::Path) -> Resources {
        let mut r = Resources::discover(cwd, makai_coding::makai_home().as_deref(), self.project);
        // The settings' lists: what they name is loaded beside what was
        // found, and their exclusions apply to both.
        let (skills, mut warnings) = Entries::parse(&self.skill_entries);
        let (templates, more) = Entries::parse(&self.template_entries);
        warnings.extend(more);
        r.add(Resources::load_paths(skills.to_load(), templates.to_load()));
        r.skills
            .retain(|s| skills.keeps(&s.file_path, Some(&s.base_dir)));
        r.templates.retain(|t| templates.keeps(&t.file_path, None));
        r.warnings.extend(warnings);
        if !self.skills {
            r.skills.clear();
        }
        if !self.templates {
            r.templates.clear();
        }
        let mut explicit = Resources::load_paths(&self.skill_paths, &self.template_paths);
        explicit.add(r);
        explicit
    }
}

impl AppSession {
    /// The skills and prompt templates of this session.
    pub fn resources(&self) -> Arc<Resources> {
        lock(&self.inner.resources).clone()
    }

    /// The `/` commands of the skills and templates (pi's `get_commands`).
    pub fn commands(&self) -> Vec<CommandInfo> {
        list_commands(&self.resources())
    }

    /// Finds the skills and templates again (`/reload`); the next run's
    /// system prompt lists the new skills. Returns the new resources.
    pub fn reload_resources(&self) -> Arc<Resources> {
        let options = lock(&self.inner.resource_options).clone();
        let fresh = Arc::new(options.discover(&self.inner.cwd));
        *lock(&self.inner.resources) = fresh.clone();
        fresh
    }

    /// The system prompt of the next run, which is offered tools or not: with
    /// tools, the skills section follows (a run without tools could not read
    /// a skill's file).
    pub(crate) fn system_prompt_for(&self, tools_offered: bool) -> String {
        let prompts = self.system_prompts();
        if !tools_offered {
            return prompts.without_tools;
        }
        let mut prompt = prompts.with_tools;
        if lock(&self.inner.resource_options).skills_in_prompt
            && let Some(section) = self.resources().skills_prompt_section()
        {
            prompt.push_str("\n\n");
            prompt.push_str(&section);
        }
        prompt
    }

    /// Expands `/skill:name args` and `/template args`; a skill that cannot be
    /// read is logged and the text sent as typed.
    pub(crate) fn expand(&self, text: String) -> String {
        let expanded = expand_input(&text, &self.resources());
        if let Some(w) = &expanded.warning {
            tracing::warn!("{w}");
        }
        expanded.text
    }
}
