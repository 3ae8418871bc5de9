//! The working-directory overview in the system prompt of a run whose model
//! gets no tools (or whenever the `workspaceOverview` setting asks for it):
//! decided per run from the model in force, so a model switched to
//! mid-session that cannot look around itself gets the overview too, and a
//! model that has tools again does not. Computed once per model window.

use std::path::Path;

use makai_coding::overview;

use super::{AppSession, lock};

/// The section last computed, and what it was sized for.
#[derive(Debug, Default)]
pub(crate) struct OverviewCache {
    /// `(context window, max tokens, tools offered, system prompt length)`.
    key: Option<(u64, u64, bool, usize)>,
    section: Option<String>,
}

impl AppSession {
    /// `base` (the run's system prompt) with the overview section appended
    /// when the run calls for it: by default when it offers no tools.
    pub(crate) async fn with_overview(&self, mut base: String, tools_offered: bool) -> String {
        if !self.settings().workspace_overview.unwrap_or(!tools_offered) {
            return base;
        }
        let model = self.model();
        let key = (
            model.context_window,
            model.max_tokens,
            tools_offered,
            base.len(),
        );
        let cached = {
            let cache = lock(&self.inner.overview);
            (cache.key == Some(key)).then(|| cache.section.clone())
        };
        let section = match cached {
            Some(section) => section,
            None => {
                let section =
                    workspace_overview_section(&self.inner.cwd, &model, &base, tools_offered).await;
                *lock(&self.inner.overview) = OverviewCache {
                    key: Some(key),
                    section: section.clone(),
                };
                section
            }
        };
        if let Some(section) = section {
            base.push_str("\n\n");
            base.push_str(&section);
        }
        base
    }
}

/// The working-directory overview for a model that cannot look around
/// itself, sized to what its window leaves after `system_prompt` and an answer.
async fn workspace_overview_section(
    cwd: &Path,
    model: &makai_ai::Model,
    system_prompt: &str,
    tools: bool,
) -> Option<String> {
    let prompt_tokens = system_prompt.len() as u64 / overview::BYTES_PER_TOKEN;
    let answer = model.max_tokens.min(model.context_window / 4);
    let budget_tokens = overview::overview_budget(model.context_window, prompt_tokens, answer);
    overview::workspace_overview(
        cwd,
        overview::OverviewOptions {
            budget_tokens,
            tools,
        },
    )
    .await
}
