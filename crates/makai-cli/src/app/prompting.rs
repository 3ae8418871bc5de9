//! Starting a run on a prompt: the checks (no run going, a key for the
//! model), the system prompt of the run, the first turn's tool choice.

use makai_agent::{PromptInput, RunHandle};
use makai_ai::ImageContent;
use makai_auth::KeySource;

use super::AppSession;
use crate::error::CliError;

/// The first line of the system prompt Anthropic requires with Claude Pro/Max tokens.
const CLAUDE_CODE_IDENTITY: &str = "You are Claude Code, Anthropic's official CLI for Claude.";

impl AppSession {
    /// Starts a run with a prompt. Fails when a run is going (queue with
    /// [`AppSession::steer`] / [`AppSession::follow_up`]) or when the model's
    /// provider has no key.
    pub async fn prompt(
        &self,
        text: String,
        images: Vec<ImageContent>,
    ) -> Result<RunHandle, CliError> {
        self.prepare_prompt().await?;
        self.start_prompt(text, images)
    }

    /// The checks of [`AppSession::prompt`] without starting the run: not
    /// running, a key for the model. Also sets the run's system prompt.
    pub async fn prepare_prompt(&self) -> Result<(), CliError> {
        if self.inner.agent.is_running() {
            return Err(CliError::failed(
                "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.",
            ));
        }
        self.prepare_run().await
    }

    /// Starts a run with a prompt after [`AppSession::prepare_prompt`].
    /// `/skill:name` and `/template` commands are expanded first.
    pub fn start_prompt(
        &self,
        text: String,
        images: Vec<ImageContent>,
    ) -> Result<RunHandle, CliError> {
        let images = self.fit_images(images)?;
        let text = self.expand(text);
        self.apply_first_turn_policy(&text);
        let input = if images.is_empty() {
            PromptInput::Text(text)
        } else {
            PromptInput::TextWithImages(text, images)
        };
        // Counted before it starts: its end may be settled before
        // `start_prompt` returns.
        let runs = &self.inner.runs_started;
        runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.agent.start_prompt(input).map_err(|e| {
            runs.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            CliError::failed(e.to_string())
        })
    }

    /// With [`AppParts::first_turn_policy`]: the run on `text` starts by
    /// calling the tool its prompt calls for (`read` a named file, else `ls`).
    fn apply_first_turn_policy(&self, text: &str) {
        if !self.inner.first_turn_policy {
            return;
        }
        let base = super::lock(&self.inner.base_tools).clone();
        let defs = base.definitions();
        let names: Vec<&str> = defs.iter().map(|d| d.name.as_str()).collect();
        let choice = makai_coding::first_turn::first_turn_tool(text, &self.inner.cwd, &names)
            .map(|tool| makai_ai::ToolChoice::Tool(tool.into()));
        self.inner.agent.update_config(|c| {
            c.tool_choice = choice;
            c.tool_choice_first_turn_only = true;
        });
    }

    /// Checks the key and sets the system prompt (and the tools) for the next run.
    async fn prepare_run(&self) -> Result<(), CliError> {
        self.wait_direct_servers().await;
        let tools_offered = self.refresh_tools();
        let model = self.model();
        let source = self.inner.keys.source(&model.provider).await?;
        if source.is_none() && makai_ai::credentials::requires_api_key(&model) {
            return Err(CliError::NoKey(crate::models::missing_key_message(&model)));
        }
        let oauth =
            source == Some(KeySource::OAuth) && model.api == makai_ai::Api::AnthropicMessages;
        let base = self
            .with_overview(self.system_prompt_for(tools_offered), tools_offered)
            .await;
        let prompt = if oauth {
            format!("{CLAUDE_CODE_IDENTITY}\n\n{base}")
        } else {
            base
        };
        self.inner.agent.set_system_prompt(prompt);
        Ok(())
    }
}
