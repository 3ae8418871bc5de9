//! Manual compaction (`compact`, `/compact`): the agent's own compaction
//! ([`makai_agent::Agent::compact`], the strategy automatic compactions use)
//! summarises older messages with the current model; the event pump records
//! the result as a `compaction` entry, exactly as for an automatic one.
//! Subscribers see the agent's `compaction_start` / `compaction_end` with
//! reason `manual`.

use makai_agent::{AgentEvent, CompactionInfo, CompactionReason, estimate_tokens};
use makai_coding::session::SessionEntry;

use super::AppSession;
use super::events::OutEvent;
use crate::error::CliError;

impl AppSession {
    /// Compacts the session now (aborting a running turn first). Returns pi's
    /// `CompactionResult` once the compaction is recorded and its
    /// `compaction_end` has reached every subscriber.
    pub async fn compact(
        &self,
        custom_instructions: Option<&str>,
    ) -> Result<CompactionInfo, CliError> {
        if self.is_streaming() {
            self.abort().await;
        }
        if matches!(
            self.session().lock().leaf(),
            Some(SessionEntry::Compaction(_))
        ) {
            return Err(CliError::failed("Already compacted"));
        }
        if self.agent().message_count() < 2 {
            return Err(CliError::failed("Nothing to compact (session too small)"));
        }
        // Subscribed before the compaction starts, so its end cannot be missed.
        let mut events = self.subscribe();
        let custom = custom_instructions
            .filter(|s| !s.trim().is_empty())
            .map(str::to_string);
        let outcome = self.agent().compact(custom).await;
        // The pump records the compaction, then forwards `compaction_end`:
        // once it arrives here the entry is written and every subscriber has it.
        let mut first_kept_entry_id = None;
        while let Some(event) = events.recv().await {
            if let OutEvent::Agent(AgentEvent::CompactionEnd {
                reason: CompactionReason::Manual,
                result,
                ..
            }) = &event
            {
                first_kept_entry_id = result.as_ref().and_then(|r| r.first_kept_entry_id.clone());
                break;
            }
        }
        let mut info = outcome.map_err(|e| summary_error(e, "Compaction cancelled"))?;
        let first_kept_entry_id = first_kept_entry_id.ok_or_else(|| {
            CliError::failed("the compaction could not be recorded in the session file")
        })?;
        info.first_kept_entry_id = Some(first_kept_entry_id);
        info.estimated_tokens_after = self.with_messages(estimate_tokens);
        Ok(info)
    }
}

/// A failed summary call (a compaction's, a summary's) as the CLI says it:
/// `cancelled` when it was cancelled, else why it failed.
fn summary_error(e: makai_agent::AgentError, cancelled: &str) -> CliError {
    match e {
        makai_agent::AgentError::Compaction(makai_agent::CompactionError::Aborted) => {
            CliError::failed(cancelled)
        }
        makai_agent::AgentError::Compaction(makai_agent::CompactionError::Failed(why)) => {
            CliError::failed(why)
        }
        other => CliError::failed(other.to_string()),
    }
}

/// The `usage` entry kind of [`AppSession::summarize_messages`]' calls.
pub const SUMMARY_USAGE_KIND: &str = "summary";

impl AppSession {
    /// Has the current model write what `prompt` asks of the conversation
    /// (the agent's transcript, which it leaves as it is); `focus` is added
    /// to the request. Its usage counts in the session's totals (a `usage`
    /// entry of kind `summary`). Esc (`abort`) cancels it. Only while no
    /// answer streams.
    pub async fn summarize_messages(
        &self,
        prompt: makai_agent::SummaryPrompt<'_>,
        focus: Option<&str>,
    ) -> Result<String, CliError> {
        if self.is_streaming() {
            return Err(CliError::failed(
                "an answer is streaming; try again when it ends",
            ));
        }
        let messages = self.messages();
        if messages.is_empty() {
            return Err(CliError::failed("the conversation is empty"));
        }
        let cancel = makai_agent::CancellationToken::new();
        super::lock(&self.inner.state).compaction_cancel = Some(cancel.clone());
        let written = self
            .agent()
            .summarize(&messages, prompt, focus, cancel)
            .await;
        super::lock(&self.inner.state).compaction_cancel = None;
        let (text, usage) = written.map_err(|e| summary_error(e, "cancelled"))?;
        let model = self.model();
        // The summary stands whether or not its cost could be recorded.
        self.shared()
            .record_entry(|s| s.append_usage(SUMMARY_USAGE_KIND, model.provider, model.id, usage));
        Ok(text)
    }
}
