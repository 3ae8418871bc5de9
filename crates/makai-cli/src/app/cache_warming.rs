//! pi's cache warming for the session ([`makai_coding::cache_warming`]): the
//! agent's hooks hand every request of a run to the session's
//! [`CacheWarmer`], and the session is the warmer's host (the mode from the
//! user settings, the agent's model and transcript, the branch's last prompt
//! size, and a `cache_warm` usage entry for each refresh, announced to
//! clients as `entry_appended`).

use std::sync::Arc;

use async_trait::async_trait;
use makai_agent::{AgentHooks, ToolCallDecision, ToolCallInfo, TranscriptMark};
use makai_ai::{AssistantMessage, Context, Model, StreamOptions};
use makai_coding::cache_warming::{CacheWarmer, CacheWarmingMode, WarmingHost};
use makai_coding::session::SessionEntry;

use super::Shared;
use super::approvals::ApprovalHooks;

/// The usage kind of a refresh (pi's).
pub const CACHE_WARM_KIND: &str = "cache_warm";

/// The session's agent hooks: the approval rules before each tool call, and
/// each model request handed to the cache warmer.
pub struct SessionHooks {
    /// The approval rules.
    pub approvals: ApprovalHooks,
    /// Keeps the last request's prompt cache entry warm.
    pub warmer: Arc<CacheWarmer>,
}

#[async_trait]
impl AgentHooks for SessionHooks {
    fn on_model_request(&self, model: &Model, context: &Context, options: &StreamOptions) {
        self.warmer.start(model, context, options);
    }

    async fn before_tool_call(&self, call: &ToolCallInfo<'_>) -> ToolCallDecision {
        self.approvals.before_tool_call(call).await
    }
}

impl WarmingHost for Shared {
    fn mode(&self) -> CacheWarmingMode {
        self.settings().cache_warming
    }

    fn transcript_mark(&self) -> TranscriptMark {
        self.agent.transcript_mark()
    }

    fn is_current(&self, model: &Model, mark: TranscriptMark) -> bool {
        let now = self.agent.model();
        now.provider == model.provider
            && now.id == model.id
            && self.agent.transcript_continues(mark)
    }

    fn last_prompt_tokens(&self) -> u64 {
        let session = self.session.lock();
        session
            .tree()
            .branch_back()
            .find_map(|e| match e {
                SessionEntry::Message(m) => m
                    .message
                    .as_assistant()
                    .map(|a| a.usage.input + a.usage.cache_read + a.usage.cache_write),
                _ => None,
            })
            .unwrap_or(0)
    }

    fn warmed(&self, message: &AssistantMessage) {
        self.record_entry(|s| {
            s.append_usage(
                CACHE_WARM_KIND,
                message.provider.clone(),
                message.model.clone(),
                *message.usage,
            )
        });
    }
}
