//! makai-agent: the agent layer of makai.
//!
//! - Low level: [`agent_loop`] and [`agent_loop_continue`] run one conversation
//!   run (model call → tool calls → model call → ... ) and return an [`AgentRun`]:
//!   a stream of [`AgentEvent`]s plus the [`RunOutcome`].
//! - High level: [`Agent`] owns the transcript and state, queues steering and
//!   follow-up messages, and delivers events to subscribers without ever
//!   stalling the run.
//!
//! The agent reaches models only through a [`ProtocolClient`];
//! [`InProcessClient`] calls makai-ai in-process.
//!
//! # The loop
//!
//! An inner loop handles tool calls and steering, an outer loop follow-ups:
//! while the last response asked for tools or steering messages are pending, a
//! turn injects the pending messages, calls the model, runs the tool calls and
//! polls steering; when the inner loop ends, follow-up messages (if any) start it
//! again. Steering is also polled each time a tool call completes (by default):
//! calls not yet started are then skipped, each with a `tool_execution_start`, a
//! `tool_execution_end` and the error result `Skipped due to queued user message.`
//! With [`SteeringBehavior::AfterToolBatch`] steering waits for the whole batch.
//!
//! # Event ordering contract
//!
//! For every run, in this order:
//!
//! 1. `agent_start` first; `agent_end {messages, endReason}` last, exactly once.
//! 2. Turns: `turn_start` ... `turn_end {message, toolResults}`, never nested.
//!    Every turn that reached the model ends with `turn_end`. A run may end
//!    between turns (limits, `before_turn` stop, abort), never inside a turn
//!    without its `turn_end`.
//! 3. Inside a turn: first the injected messages (in the first turn, synthetic
//!    error results for tool calls the transcript left unanswered, then the
//!    prompts; then steering or follow-up messages), each as `message_start`
//!    immediately followed by `message_end`; then, when compaction runs, `compaction_start`
//!    ... `compaction_end`; then the assistant message: `message_start`, zero or
//!    more `message_update`, `message_end`. An `auto_retry_start` may appear among
//!    the updates (discard the partial message), and `auto_retry_end` comes right
//!    before that message's `message_end`.
//! 4. After the assistant message, for each tool call: `tool_execution_start`,
//!    zero or more `tool_execution_update`, `tool_execution_end`. Calls start in
//!    call order; with a parallel strategy their executions interleave and end in
//!    completion order. Each call's result message (`message_start`/`message_end`
//!    with role `toolResult`) follows its `tool_execution_end` and results appear
//!    in call order, so sequentially each result directly follows its call.
//!    Every call gets exactly one result (skipped, blocked, unknown, invalid,
//!    failed, panicked, timed out or aborted calls get an error result).
//! 5. `turn_end` follows the last tool result of the turn; its `toolResults` are
//!    those results in call order.
//! 6. After a context-overflow error the failed assistant message is followed by
//!    `compaction_start`/`compaction_end {willRetry: true}` and a new assistant
//!    `message_start` in the same turn; the failed message is not in the transcript.
//!
//! `queue_update` (from an [`Agent`]) may appear anywhere.
//!
//! # Differences from pi
//!
//! `message_update.message` (the partial message) is rebuilt by the loop, because
//! makai-ai's stream events carry no `partial`; it is off by default (a snapshot
//! copies the whole message for every delta) and turned on with
//! [`AgentLoopConfig::partial_snapshots`].
//! `agent_end` carries an extra `endReason`.

mod agent;
mod agent_loop;
pub mod budget;
mod compaction;
mod config;
mod error;
mod event;
mod hooks;
mod message;
mod subscribers;
mod system_message;
pub mod testing;
mod tool;
mod types;

pub use agent::{
    Agent, AgentState, AgentStatus, PromptInput, RunHandle, SummaryPrompt, TranscriptMark,
};
pub use agent_loop::{
    AgentRun, INTERRUPTED_TOOL_TEXT, RunOutcome, SKIPPED_TOOL_TEXT, agent_loop, agent_loop_continue,
};
pub use budget::{Budget, BudgetedClient, Ledger, LedgerReport};
pub use compaction::{
    BranchSummary, CompactionCheck, CompactionContext, CompactionError, CompactionOutput,
    CompactionStrategy, DefaultCompaction, answer_overflowed, branch_files,
    estimate_message_tokens, estimate_tokens, is_context_overflow,
};
pub use config::{
    AgentLoopConfig, AgentLoopConfigBuilder, ContextConfig, ExecutionLimits, LoopAction,
    LoopDetection, SteeringBehavior, ToolExecution,
};
pub use error::AgentError;
pub use event::{AgentEvent, CompactionInfo, CompactionReason, EndReason};
pub use hooks::{
    AgentHooks, InputDecision, NoHooks, ToolCallDecision, ToolCallInfo, ToolResultOverride,
    TurnDecision, TurnInfo, TurnSummary,
};
pub use makai_ai::{InProcessClient, ProtocolClient};
pub use message::{
    AgentMessage, BRANCH_SUMMARY_PREFIX, BashExecutionMessage, BranchSummaryMessage,
    COMPACTION_SUMMARY_PREFIX, CompactionSummaryMessage, CustomMessage, MessageContent,
    SUMMARY_SUFFIX, default_convert_to_llm, parts_text,
};
pub use subscribers::{COALESCE_AFTER, EventStream, InlineSubscription, Subscription};
pub use system_message::{SystemMessage, ToolReference, declared_tool_changes};
pub use tool::{
    AgentSnapshot, NestedCall, Tool, ToolContext, ToolError, ToolOutput, ToolSet, ToolSpec,
    TypedTool, schema_for,
};
pub use types::{AgentContext, QueueMode};

pub use makai_ai;
pub use tokio_util::sync::CancellationToken;
