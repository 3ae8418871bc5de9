//! The loop algorithm: an inner loop for tool calls and steering, an outer loop
//! for follow-ups (see the crate docs for the event order it produces).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use makai_ai::{AssistantMessage, StopReason, Usage};

use super::RunOutcome;
use super::orphans::{LoopTracker, tail_orphan_results};
use super::tools::{BatchOutcome, execute_batch, fail_truncated_calls};
use crate::compaction::{
    CompactionCheck, CompactionContext, CompactionError, answer_overflowed, estimate_tokens_from,
};
use crate::config::AgentLoopConfig;
use crate::event::{AgentEvent, CompactionInfo, CompactionReason, EndReason, EventSink, RunPhase};
use crate::hooks::{InputDecision, MessageQueues, RunHooks, TurnDecision, TurnInfo, TurnSummary};
use crate::message::AgentMessage;
use crate::types::AgentContext;

/// State of one run.
pub(super) struct Run {
    pub(super) cfg: Arc<AgentLoopConfig>,
    /// Every hook call of the run goes through this one layer.
    pub(super) hooks: Arc<RunHooks>,
    pub(super) sink: Arc<dyn EventSink>,
    /// The context; its messages are in `transcript` while the run lasts.
    pub(super) ctx: AgentContext,
    /// The transcript, shared: a tool batch's snapshot and a compaction's
    /// event hold it without a copy; the run copies it only when it adds a
    /// message while one of those is still held (`Arc::make_mut`).
    pub(super) transcript: Arc<Vec<AgentMessage>>,
    /// The run's messages are the transcript's tail from `new_from`, after those
    /// that a compaction replaced (`replaced_new`): one copy, not two.
    new_from: usize,
    replaced_new: Vec<AgentMessage>,
    pub(super) cancel: CancellationToken,
    pub(super) loop_tracker: LoopTracker,
    wall_expired: Arc<AtomicBool>,
    started: Instant,
    pub(super) turns: u32,
    pub(super) model_calls: u32,
    pub(super) usage: Usage,
    /// Usage reported by assistant messages before this index is stale (compaction).
    usage_floor: usize,
    /// Queued messages taken for the next turn and not delivered yet. When the
    /// run ends early they are handed back in the outcome, never dropped.
    pending: Pending,
}

/// Queued messages waiting for the next turn, and the queue they came from.
#[derive(Default)]
struct Pending {
    messages: Vec<AgentMessage>,
    follow_up: bool,
}

impl Run {
    pub(super) fn emit(&self, event: AgentEvent) {
        self.sink.emit(event);
    }

    /// Announces a message and appends it to the transcript.
    pub(super) fn add_message(&mut self, message: AgentMessage) {
        let shared = Arc::new(message);
        self.emit(AgentEvent::MessageStart {
            message: shared.clone(),
        });
        self.emit(AgentEvent::MessageEnd {
            message: shared.clone(),
        });
        let message = Arc::try_unwrap(shared).unwrap_or_else(|a| (*a).clone());
        Arc::make_mut(&mut self.transcript).push(message);
    }

    /// Appends a message (already announced) to the transcript.
    pub(super) fn push_message(&mut self, message: AgentMessage) {
        Arc::make_mut(&mut self.transcript).push(message);
    }

    /// Takes back the run's last message.
    fn pop_message(&mut self) -> Option<AgentMessage> {
        if self.transcript.len() > self.new_from {
            Arc::make_mut(&mut self.transcript).pop()
        } else {
            None
        }
    }

    /// The messages this run added, in order.
    fn new_messages(&self) -> Vec<AgentMessage> {
        let tail = self.transcript.get(self.new_from..).unwrap_or_default();
        let mut out = Vec::with_capacity(self.replaced_new.len() + tail.len());
        out.extend_from_slice(&self.replaced_new);
        out.extend_from_slice(tail);
        out
    }

    /// Why the run stops after its token was cancelled.
    pub(super) fn cancel_reason(&self) -> EndReason {
        if self.wall_expired.load(Ordering::SeqCst) {
            EndReason::MaxWallTime {
                limit_ms: self
                    .cfg
                    .limits
                    .max_wall_time
                    .map(|d| d.as_millis() as u64)
                    .unwrap_or_default(),
            }
        } else {
            EndReason::Aborted
        }
    }

    pub(super) fn wall_expired(&self) -> bool {
        self.wall_expired.load(Ordering::SeqCst)
    }

    fn check_limits(&self) -> Option<EndReason> {
        let limits = &self.cfg.limits;
        if let Some(limit) = limits.max_turns
            && self.turns >= limit
        {
            return Some(EndReason::MaxTurns { limit });
        }
        if let Some(limit) = limits.max_total_tokens
            && self.usage.total_tokens >= limit
        {
            return Some(EndReason::MaxTotalTokens {
                limit,
                used: self.usage.total_tokens,
            });
        }
        if let Some(limit) = limits.max_wall_time
            && (self.started.elapsed() >= limit || self.wall_expired())
        {
            return Some(EndReason::MaxWallTime {
                limit_ms: limit.as_millis() as u64,
            });
        }
        None
    }

    /// Applies the input filter; `Err` carries the rejection reason.
    async fn filter(&self, message: AgentMessage) -> Result<AgentMessage, String> {
        match self.hooks.filter_input(&message).await {
            InputDecision::Accept => Ok(message),
            InputDecision::Replace(m) => Ok(*m),
            InputDecision::Reject(reason) => Err(reason),
        }
    }

    async fn filter_all(&self, messages: Vec<AgentMessage>) -> Vec<AgentMessage> {
        let mut out = Vec::with_capacity(messages.len());
        for m in messages {
            match self.filter(m).await {
                Ok(m) => out.push(m),
                Err(reason) => {
                    tracing::info!(%reason, "the input filter rejected a queued message; it is dropped")
                }
            }
        }
        out
    }

    pub(super) async fn poll_steering(&self) -> Vec<AgentMessage> {
        let msgs = self.hooks.steering_messages().await;
        if msgs.is_empty() {
            return msgs;
        }
        self.filter_all(msgs).await
    }

    async fn poll_follow_ups(&self) -> Vec<AgentMessage> {
        let msgs = self.hooks.follow_up_messages().await;
        if msgs.is_empty() {
            return msgs;
        }
        self.filter_all(msgs).await
    }

    /// Runs compaction. Returns true when it succeeded.
    async fn compact(&mut self, reason: CompactionReason, target: u64, before: u64) -> bool {
        let Some(cc) = self.cfg.context.clone().filter(|c| c.automatic) else {
            return false;
        };
        self.sink.phase(RunPhase::Compacting);
        self.emit(AgentEvent::CompactionStart { reason });
        let mut options = self.cfg.options.clone();
        // A child token: dropping a stream cancels its token, which must not end the run.
        options.cancel = self.cancel.child_token();
        let cfg = self.cfg.clone();
        let cx = CompactionContext {
            reason,
            target_tokens: target,
            tokens_before: before,
            config: &cc,
            model: &cfg.model,
            client: &cfg.client,
            options,
            cancel: &self.cancel,
            custom_instructions: None,
        };
        let result = cfg
            .compaction
            .compact((*self.transcript).clone(), &cx)
            .await;
        let will_retry = reason == CompactionReason::Overflow;
        match result {
            Ok(out) => {
                if let Some(u) = &out.usage {
                    self.usage.add(u);
                }
                let messages =
                    crate::compaction::keep_declared_tools(&self.transcript, out.messages);
                let replaced = std::mem::replace(&mut self.transcript, Arc::new(messages));
                self.replaced_new.extend(
                    Arc::unwrap_or_clone(replaced)
                        .into_iter()
                        .skip(self.new_from),
                );
                self.new_from = self.transcript.len();
                self.usage_floor = self.transcript.len();
                let after = estimate_tokens_from(&self.transcript, self.usage_floor);
                self.emit(AgentEvent::CompactionEnd {
                    reason,
                    result: Some(Box::new(CompactionInfo {
                        summary: out.summary.unwrap_or_default(),
                        tokens_before: before,
                        estimated_tokens_after: after,
                        usage: out.usage,
                        details: out.details,
                        first_kept_entry_id: None,
                    })),
                    aborted: false,
                    will_retry,
                    error_message: None,
                    messages: Some(self.transcript.clone()),
                });
                true
            }
            Err(e) => {
                let aborted = matches!(e, CompactionError::Aborted);
                self.emit(AgentEvent::CompactionEnd {
                    reason,
                    result: None,
                    aborted,
                    will_retry: false,
                    error_message: (!aborted).then(|| e.to_string()),
                    messages: None,
                });
                false
            }
        }
    }

    /// One model call, with compaction before it and one retry after an overflow;
    /// the message, and the shared copy its events carried.
    async fn model_turn(&mut self) -> (AssistantMessage, Arc<AgentMessage>) {
        let mut retried = false;
        loop {
            let cc = self.cfg.context.clone().filter(|c| c.automatic);
            if let Some(cc) = &cc {
                // The strategy is consulted before every model call; the
                // default one compacts when the estimate passes the budget.
                let estimate = estimate_tokens_from(&self.transcript, self.usage_floor);
                let budget = cc.budget_for(&self.cfg.model);
                let check = CompactionCheck {
                    tokens: estimate,
                    budget_tokens: budget,
                    config: cc,
                    model: &self.cfg.model,
                };
                if self.cfg.compaction.should_compact(&self.transcript, &check) {
                    self.compact(CompactionReason::Threshold, budget, estimate)
                        .await;
                }
            }
            let first_call = self.model_calls == 0;
            let (message, shared) = super::stream::stream_response(self, first_call).await;
            self.model_calls += 1;
            self.usage.add(&message.usage);
            let overflow = answer_overflowed(&message, self.cfg.model.context_window);
            match &cc {
                Some(cc)
                    if overflow && cc.overflow_retry && !retried && !self.cancel.is_cancelled() =>
                {
                    retried = true;
                    // The failed call is not part of the transcript.
                    let failed = self.pop_message();
                    let estimate = estimate_tokens_from(&self.transcript, self.usage_floor);
                    let target = cc
                        .budget_for(&self.cfg.model)
                        .min(estimate.saturating_mul(3) / 4)
                        .max(1);
                    if self
                        .compact(CompactionReason::Overflow, target, estimate)
                        .await
                    {
                        continue;
                    }
                    if let Some(f) = failed {
                        self.push_message(f);
                    }
                    return (message, shared);
                }
                _ => return (message, shared),
            }
        }
    }

    /// The run itself; returns why it ended (the caller emits `agent_end`).
    async fn execute(&mut self, prompts: Option<Vec<AgentMessage>>) -> EndReason {
        self.emit(AgentEvent::AgentStart);
        let mut prelude: Vec<AgentMessage> = Vec::new();
        if let Some(prompts) = prompts {
            let mut accepted = Vec::with_capacity(prompts.len());
            for p in prompts {
                match self.filter(p).await {
                    Ok(m) => accepted.push(m),
                    Err(reason) => return EndReason::InputRejected { reason },
                }
            }
            prelude = tail_orphan_results(&self.transcript);
            prelude.extend(accepted);
        }
        if !self.cfg.skip_initial_steering_poll {
            self.pending.messages = self.poll_steering().await;
        }
        let mut first = true;
        loop {
            let mut has_more_tool_calls = true;
            while has_more_tool_calls || !self.pending.messages.is_empty() {
                if !first {
                    if self.cancel.is_cancelled() {
                        return self.cancel_reason();
                    }
                    if let Some(reason) = self.check_limits() {
                        return reason;
                    }
                    if let Some(delay) = self.cfg.turn_delay {
                        tokio::select! {
                            _ = self.cancel.cancelled() => return self.cancel_reason(),
                            _ = tokio::time::sleep(delay) => {}
                        }
                    }
                }
                let mut inject = std::mem::take(&mut prelude);
                inject.extend(self.pending.messages.iter().cloned());
                let decision = self
                    .hooks
                    .before_turn(&TurnInfo {
                        turn: self.turns,
                        messages: &self.transcript,
                        pending: &inject,
                        usage: &self.usage,
                    })
                    .await;
                if let TurnDecision::Stop(reason) = decision {
                    return EndReason::StoppedByHook { reason };
                }
                // From here the queued messages are delivered.
                self.pending.messages.clear();
                self.emit(AgentEvent::TurnStart);
                first = false;
                for m in inject {
                    self.add_message(m);
                }

                let (message, shared) = self.model_turn().await;
                if matches!(message.stop_reason, StopReason::Error | StopReason::Aborted) {
                    self.turns += 1;
                    self.emit(AgentEvent::TurnEnd {
                        message: shared,
                        tool_results: Arc::new(Vec::new()),
                    });
                    if message.stop_reason == StopReason::Error {
                        self.hooks.on_error(&message).await;
                    }
                    self.after_turn(&message, &[]).await;
                    return if message.stop_reason == StopReason::Aborted
                        || self.cancel.is_cancelled()
                    {
                        self.cancel_reason()
                    } else {
                        let text = message.error_message.clone().unwrap_or_default();
                        if crate::budget::is_budget_refusal(&text) {
                            EndReason::BudgetExhausted { message: text }
                        } else {
                            EndReason::Error { message: text }
                        }
                    };
                }

                let mut batch = BatchOutcome::default();
                if message.tool_calls().next().is_some() {
                    self.sink.phase(RunPhase::ExecutingTools);
                    batch = if message.stop_reason == StopReason::Length {
                        fail_truncated_calls(self, &message)
                    } else {
                        execute_batch(self, &message).await
                    };
                }
                has_more_tool_calls = !batch.results.is_empty();
                self.declare(std::mem::take(&mut batch.declared));
                self.turns += 1;
                let tool_results = Arc::new(std::mem::take(&mut batch.results));
                self.emit(AgentEvent::TurnEnd {
                    message: shared,
                    tool_results: tool_results.clone(),
                });
                // Steering the batch took from the queue is pending from
                // here: an early return below hands it back, never drops it.
                if let Some(steering) = batch.steering.take().filter(|s| !s.is_empty()) {
                    self.pending = Pending {
                        messages: steering,
                        follow_up: false,
                    };
                }
                self.after_turn(&message, &tool_results).await;
                if let Some(reason) = batch.stop {
                    return reason;
                }
                if self.cancel.is_cancelled() {
                    return self.cancel_reason();
                }
                if self.pending.messages.is_empty() {
                    self.pending = Pending {
                        messages: self.poll_steering().await,
                        follow_up: false,
                    };
                }
            }
            let follow_ups = self.poll_follow_ups().await;
            if follow_ups.is_empty() {
                return EndReason::Completed;
            }
            self.pending = Pending {
                messages: follow_ups,
                follow_up: true,
            };
        }
    }

    /// Adds the tools a batch declared and not declared yet to the run's
    /// tools (from the next model call on), recorded in the transcript as a
    /// system message with `toolsAdded`.
    fn declare(&mut self, tools: Vec<Arc<dyn crate::Tool>>) {
        let mut added: Vec<Arc<dyn crate::Tool>> = Vec::new();
        for tool in tools {
            if self.ctx.tools.get(tool.name()).is_none()
                && !added.iter().any(|t| t.name() == tool.name())
            {
                added.push(tool);
            }
        }
        if added.is_empty() {
            return;
        }
        self.ctx.tools = crate::ToolSet::new(self.ctx.tools.iter().cloned().chain(added.clone()));
        let definitions = added
            .iter()
            .filter_map(|t| {
                self.ctx
                    .tools
                    .definitions()
                    .iter()
                    .find(|d| d.name == t.name())
                    .cloned()
            })
            .collect();
        self.add_message(crate::SystemMessage::tools_added(definitions).into());
    }

    async fn after_turn(
        &self,
        message: &AssistantMessage,
        results: &[makai_ai::ToolResultMessage],
    ) {
        self.hooks
            .after_turn(&TurnSummary {
                turn: self.turns.saturating_sub(1),
                message,
                tool_results: results,
                messages: &self.transcript,
                usage: &self.usage,
            })
            .await;
    }
}

/// Runs the loop to its end, emitting every event to `sink` (`agent_end` last).
/// Usage reported by messages before index `usage_floor` of `ctx` is stale (they
/// were compacted since) and is not trusted for the context estimate.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn run_loop(
    prompts: Option<Vec<AgentMessage>>,
    mut ctx: AgentContext,
    usage_floor: usize,
    cfg: Arc<AgentLoopConfig>,
    queues: Option<Arc<dyn MessageQueues>>,
    cancel: CancellationToken,
    sink: Arc<dyn EventSink>,
) -> RunOutcome {
    // Every hook call of the run is panic-safe (see `AgentHooks`).
    let hooks = Arc::new(RunHooks::new(cfg.hooks.clone(), queues, &cancel));
    let wall_expired = Arc::new(AtomicBool::new(false));
    let timer = cfg.limits.max_wall_time.map(|limit| {
        let flag = wall_expired.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(limit).await;
            flag.store(true, Ordering::SeqCst);
            cancel.cancel();
        })
    });
    let ctx_len = ctx.messages.len();
    let transcript = Arc::new(std::mem::take(&mut ctx.messages));
    let mut run = Run {
        cfg,
        hooks: hooks.clone(),
        sink,
        ctx,
        transcript,
        new_from: ctx_len,
        replaced_new: Vec::new(),
        cancel,
        loop_tracker: LoopTracker::default(),
        wall_expired,
        started: Instant::now(),
        turns: 0,
        model_calls: 0,
        usage: Usage::default(),
        usage_floor: usage_floor.min(ctx_len),
        pending: Pending::default(),
    };
    let end_reason = run.execute(prompts).await;
    let end_reason = hooks.fault().unwrap_or(end_reason);
    if let Some(t) = timer {
        t.abort();
    }
    // Nothing queued is lost: messages taken for a turn that never came go
    // back to the agent's queues before `agent_end` (or to the caller).
    let pending = std::mem::take(&mut run.pending);
    let (steering, follow_up) = if pending.follow_up {
        (Vec::new(), pending.messages)
    } else {
        (pending.messages, Vec::new())
    };
    let (undelivered_steering, undelivered_follow_up) = hooks.restore(steering, follow_up);
    let new_messages = run.new_messages();
    run.emit(AgentEvent::AgentEnd {
        messages: Arc::new(new_messages.clone()),
        end_reason: end_reason.clone(),
    });
    let mut context = run.ctx;
    context.messages = Arc::unwrap_or_clone(run.transcript);
    RunOutcome {
        messages: new_messages,
        context,
        end_reason,
        usage: run.usage,
        turns: run.turns,
        undelivered_steering,
        undelivered_follow_up,
    }
}
