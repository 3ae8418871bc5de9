//! [`Agent::compact`]: manual compaction of an idle agent's transcript, with the
//! same strategy, client and events as the loop's automatic compaction.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use tokio_util::sync::CancellationToken;

use super::Agent;
use super::state::{ActiveRun, AgentSink, AgentStatus};
use makai_ai::{Model, StreamOptions};

use crate::compaction::{
    CompactionContext, CompactionError, CompactionStrategy, estimate_tokens, estimate_tokens_from,
};
use crate::config::ContextConfig;
use crate::error::AgentError;
use crate::event::{AgentEvent, CompactionInfo, CompactionReason, EventSink};
use crate::hooks::panic_text;
use crate::message::AgentMessage;
use makai_ai::ProtocolClient;

/// A compaction in progress. However it ends (finished, failed, aborted, or its
/// future dropped), dropping this reports `compaction_end` and makes the agent
/// idle again.
struct Compacting {
    sink: AgentSink,
    /// The `compaction_end` to report; `None` reports an abort.
    end: Option<AgentEvent>,
}

impl Drop for Compacting {
    fn drop(&mut self) {
        let end = self.end.take().unwrap_or(AgentEvent::CompactionEnd {
            reason: CompactionReason::Manual,
            result: None,
            aborted: true,
            will_retry: false,
            error_message: None,
            messages: None,
        });
        // Applied to the state (a successful end carries the new transcript)
        // before any subscriber sees it, as for a run's events.
        self.sink.emit(end);
        self.sink.inner.finish_run(None);
    }
}

/// What a compaction works with, taken from the idle agent.
struct Start {
    cancel: CancellationToken,
    messages: Vec<AgentMessage>,
    model: Model,
    options: StreamOptions,
    context: ContextConfig,
    strategy: Arc<dyn CompactionStrategy>,
    client: Arc<dyn ProtocolClient>,
}

impl Agent {
    /// Marks the idle agent as compacting (abortable, refusing other work) and
    /// takes what the compaction needs.
    fn start_compaction(&self) -> Result<Start, AgentError> {
        let mut core = self.idle_core()?;
        if core.state.messages.is_empty() {
            return Err(CompactionError::Failed(
                "the transcript is empty, so there is nothing to compact".into(),
            )
            .into());
        }
        let cancel = CancellationToken::new();
        core.run = Some(ActiveRun {
            cancel: cancel.clone(),
        });
        let mut options = core.config.options.clone();
        options.thinking = core.state.thinking_level;
        let start = Start {
            cancel,
            messages: core.state.messages.clone(),
            model: core.state.model.clone(),
            options,
            context: core.config.context.clone().unwrap_or_default(),
            strategy: core.config.compaction.clone(),
            client: core.config.client.clone(),
        };
        self.inner.apply_status(&mut core, AgentStatus::Compacting);
        Ok(start)
    }

    /// Compacts the transcript now, with the configured
    /// [`crate::CompactionStrategy`] (the one runs use; [`crate::DefaultCompaction`]
    /// unless changed) and the configured [`crate::ContextConfig`] (its defaults
    /// when context management is off), calling the model through the configured
    /// client. `custom_instructions` tell the summary what to focus on.
    ///
    /// Only while idle: fails with [`AgentError::AlreadyRunning`] during a run or
    /// another compaction, and [`Agent::prompt`] (like every call that needs an
    /// idle agent) fails the same way while this runs. The status is
    /// [`AgentStatus::Compacting`] meanwhile; subscribers get `compaction_start`
    /// and `compaction_end` with reason `manual`. On success the transcript is
    /// replaced by the compacted one and the returned info is `compaction_end`'s
    /// `result`. On failure, or when [`Agent::abort`] cancels it, the transcript
    /// is unchanged and the error is [`AgentError::Compaction`]. The default
    /// strategy always summarizes the older messages here (the first and recent
    /// ones stay) and never drops messages unsummarized because the summary call
    /// failed.
    pub async fn compact(
        &self,
        custom_instructions: Option<String>,
    ) -> Result<CompactionInfo, AgentError> {
        let Start {
            cancel,
            messages,
            model,
            mut options,
            context,
            strategy,
            client,
        } = self.start_compaction()?;
        let mut compacting = Compacting {
            sink: AgentSink {
                inner: self.inner.clone(),
            },
            end: None,
        };
        compacting.sink.emit(AgentEvent::CompactionStart {
            reason: CompactionReason::Manual,
        });
        let tokens_before = estimate_tokens(&messages);
        // The system messages, for the checkpoint of the tools they declare.
        let systems: Vec<AgentMessage> = messages
            .iter()
            .filter(|m| matches!(m, AgentMessage::System(_)))
            .cloned()
            .collect();
        let work = async {
            // A child token: the summary stream cancels its token when dropped.
            options.cancel = cancel.child_token();
            let cx = CompactionContext {
                reason: CompactionReason::Manual,
                target_tokens: context.budget_for(&model),
                tokens_before,
                config: &context,
                model: &model,
                client: &client,
                options,
                cancel: &cancel,
                custom_instructions: custom_instructions.as_deref(),
            };
            match AssertUnwindSafe(strategy.compact(messages, &cx))
                .catch_unwind()
                .await
            {
                Ok(result) => result,
                Err(p) => Err(CompactionError::Failed(format!(
                    "the compaction strategy panicked: {}",
                    panic_text(&*p)
                ))),
            }
        };
        let result = tokio::select! {
            biased;
            _ = cancel.cancelled() => Err(CompactionError::Aborted),
            r = work => r,
        };
        match result {
            Ok(mut out) => {
                out.messages = crate::compaction::keep_declared_tools(&systems, out.messages);
                let info = CompactionInfo {
                    summary: out.summary.unwrap_or_default(),
                    tokens_before,
                    // Usage reported before the compaction no longer applies.
                    estimated_tokens_after: estimate_tokens_from(&out.messages, out.messages.len()),
                    usage: out.usage,
                    details: out.details,
                    first_kept_entry_id: None,
                };
                compacting.end = Some(AgentEvent::CompactionEnd {
                    reason: CompactionReason::Manual,
                    result: Some(Box::new(info.clone())),
                    aborted: false,
                    will_retry: false,
                    error_message: None,
                    messages: Some(Arc::new(out.messages)),
                });
                drop(compacting);
                Ok(info)
            }
            Err(e) => {
                let aborted = matches!(e, CompactionError::Aborted);
                compacting.end = Some(AgentEvent::CompactionEnd {
                    reason: CompactionReason::Manual,
                    result: None,
                    aborted,
                    will_retry: false,
                    error_message: (!aborted).then(|| e.to_string()),
                    messages: None,
                });
                drop(compacting);
                Err(e.into())
            }
        }
    }
}

impl Agent {
    /// Summarizes a branch of the conversation being left (`messages`,
    /// oldest first; `carried`: the file lists of branch summaries among
    /// them) with the agent's model, thinking level and client, the way
    /// [`Agent::compact`] calls the model, without touching the
    /// transcript. `custom_instructions` tell the summary what to focus on;
    /// `cancel` stops the call ([`CompactionError::Aborted`]).
    ///
    /// Only while idle ([`AgentError::AlreadyRunning`] otherwise).
    pub async fn summarize_branch(
        &self,
        messages: &[AgentMessage],
        carried: &[(Vec<String>, Vec<String>)],
        custom_instructions: Option<&str>,
        cancel: CancellationToken,
    ) -> Result<crate::compaction::BranchSummary, AgentError> {
        if messages.is_empty() {
            return Err(CompactionError::Failed("the branch left has no messages".into()).into());
        }
        let call = self.summary_call_parts(&cancel)?;
        let work = crate::compaction::branch::summarize_branch(
            messages,
            carried,
            custom_instructions,
            &call.model,
            &call.client,
            call.options,
            call.max_tokens,
        );
        Ok(guarded_summary(work, &cancel, "the branch summary").await?)
    }

    /// Has the agent's model write what `prompt` asks of `messages` (oldest
    /// first, rendered as the plain transcript compaction reads: text,
    /// calls and results, no thinking, failed turns as the prompt says; at
    /// most about half the model's window), with the agent's model, thinking level and client, without
    /// touching the transcript: the text and the call's usage.
    /// `custom_instructions` are added to the request; `cancel` stops the
    /// call ([`CompactionError::Aborted`]).
    ///
    /// Only while idle ([`AgentError::AlreadyRunning`] otherwise).
    pub async fn summarize(
        &self,
        messages: &[AgentMessage],
        prompt: SummaryPrompt<'_>,
        custom_instructions: Option<&str>,
        cancel: CancellationToken,
    ) -> Result<(String, makai_ai::Usage), AgentError> {
        let call = self.summary_call_parts(&cancel)?;
        let work = crate::compaction::default::summary_call(
            crate::compaction::default::SummaryRequest {
                system: prompt.system,
                request: prompt.request,
                custom_instructions,
                model: &call.model,
                client: &call.client,
                options: call.options,
                max_tokens: call.max_tokens,
                failures: prompt.failures,
            },
            messages,
        );
        Ok(guarded_summary(work, &cancel, "the summary").await?)
    }

    /// What a summary call of an idle agent uses: its model, its options
    /// with its thinking level and a child of `cancel`, its client.
    fn summary_call_parts(&self, cancel: &CancellationToken) -> Result<SummaryCall, AgentError> {
        let core = self.idle_core()?;
        let mut options = core.config.options.clone();
        options.thinking = core.state.thinking_level;
        options.cancel = cancel.child_token();
        Ok(SummaryCall {
            model: core.state.model.clone(),
            options,
            max_tokens: core
                .config
                .context
                .clone()
                .unwrap_or_default()
                .summary_max_tokens,
            client: core.config.client.clone(),
        })
    }
}

/// What a summary call asks: its system prompt and its request (the
/// transcript follows the request).
#[derive(Clone, Copy, Debug)]
pub struct SummaryPrompt<'a> {
    /// The system prompt.
    pub system: &'a str,
    /// What to write; the transcript follows it.
    pub request: &'a str,
    /// Whether the transcript shows the turns that failed, with why
    /// (summaries of work leave them out, as requests do).
    pub failures: bool,
}

struct SummaryCall {
    model: Model,
    options: StreamOptions,
    max_tokens: u64,
    client: Arc<dyn ProtocolClient>,
}

/// Runs a summary call until it ends or `cancel` fires; a panic in it is a
/// failure named after `what`.
async fn guarded_summary<T>(
    work: impl std::future::Future<Output = Result<T, CompactionError>>,
    cancel: &CancellationToken,
    what: &str,
) -> Result<T, CompactionError> {
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(CompactionError::Aborted),
        r = AssertUnwindSafe(work).catch_unwind() => r.unwrap_or_else(|p| Err(CompactionError::Failed(
            format!("{what} panicked: {}", panic_text(&*p)),
        ))),
    }
}
