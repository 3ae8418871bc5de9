//! [`AgentLoopConfig`]: everything a run needs besides its context, with a builder.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use makai_ai::{
    ApiKey, CacheRetention, Model, StreamOptions, ThinkingBudgets, ThinkingLevel, ToolChoice,
};

use crate::compaction::{CompactionStrategy, DefaultCompaction};
use crate::hooks::{AgentHooks, NoHooks};
use makai_ai::ProtocolClient;

/// How the tool calls of one assistant message are run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ToolExecution {
    /// One after another, in call order (the default).
    #[default]
    Sequential,
    /// All at once, through a read/write gate: read-only calls run together, a
    /// mutating call waits for the running calls and runs alone. Calls start in order.
    Parallel,
    /// Groups of at most `n` calls in order; each group runs like `Parallel` and the
    /// next group starts when the previous one has finished.
    Batched(usize),
}

/// When queued steering messages interrupt tool execution. JSON names:
/// `interrupt-tools`, `after-tool-batch`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SteeringBehavior {
    /// Checked after each tool completes: calls not yet started are skipped with
    /// the result `Skipped due to queued user message.` (the default).
    #[default]
    InterruptTools,
    /// Checked only after the whole tool batch finished; nothing is skipped
    /// (pi 0.58.4 and later).
    AfterToolBatch,
}

/// Limits that end a run with a clear [`crate::EndReason`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExecutionLimits {
    /// Most model calls per run (at least 1).
    pub max_turns: Option<u32>,
    /// Most tokens (sum of every model call's total) per run. Checked before each
    /// model call.
    pub max_total_tokens: Option<u64>,
    /// Longest a run may take. Enforced strictly: in-flight streams and tools are
    /// cancelled when it passes.
    pub max_wall_time: Option<Duration>,
}

/// What loop detection does when it fires.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LoopAction {
    /// The repeated call is not executed and the run ends after the turn.
    #[default]
    Stop,
    /// The call runs and its result tells the model that it is repeating itself.
    Warn,
}

/// Detection of the same tool call (same name, same arguments) made again and again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoopDetection {
    /// How many identical calls in a row trigger it (at least 2).
    pub threshold: u32,
    /// What happens then.
    pub action: LoopAction,
}

impl Default for LoopDetection {
    fn default() -> Self {
        LoopDetection {
            threshold: 3,
            action: LoopAction::Stop,
        }
    }
}

/// Context-size management: when the estimate passes the budget, the compaction
/// strategy runs before the model call.
#[derive(Clone, Debug, PartialEq)]
pub struct ContextConfig {
    /// Whether runs compact on their own: before a model call when the
    /// strategy asks for it, and after a context-overflow error (default
    /// true). With false these settings serve [`crate::Agent::compact`] only.
    pub automatic: bool,
    /// The budget in tokens; `None` uses `budget_ratio` of the model's context window.
    pub budget_tokens: Option<u64>,
    /// Fraction of the context window used when `budget_tokens` is unset (0.8).
    pub budget_ratio: f64,
    /// Messages at the start that are always kept (1: the first prompt).
    pub keep_first: usize,
    /// Messages at the end that are always kept (8), unless
    /// `keep_recent_tokens` is set.
    pub keep_recent: usize,
    /// Keep the most recent messages up to about this many tokens instead of
    /// `keep_recent` messages (pi's `keepRecentTokens`); the kept part starts at
    /// a user message where one allows it, so whole turns stay. `None` (the
    /// default) counts messages.
    pub keep_recent_tokens: Option<u64>,
    /// Older tool outputs longer than this many characters are truncated first (2000).
    pub tool_output_max_chars: usize,
    /// Whether the default strategy may summarize older turns with a model call.
    pub summarize: bool,
    /// Output token limit of the summary call (1024).
    pub summary_max_tokens: u64,
    /// Whether a provider error saying the context overflowed triggers compaction
    /// and one retry of the call.
    pub overflow_retry: bool,
}

impl Default for ContextConfig {
    fn default() -> Self {
        ContextConfig {
            automatic: true,
            budget_tokens: None,
            budget_ratio: 0.8,
            keep_first: 1,
            keep_recent: 8,
            keep_recent_tokens: None,
            tool_output_max_chars: 2000,
            summarize: true,
            summary_max_tokens: 1024,
            overflow_retry: true,
        }
    }
}

impl ContextConfig {
    /// The budget for `model`.
    pub fn budget_for(&self, model: &Model) -> u64 {
        self.budget_tokens
            .unwrap_or((model.context_window as f64 * self.budget_ratio) as u64)
            .max(1)
    }
}

/// Everything a run needs besides its context.
///
/// Fields are public; [`AgentLoopConfig::builder`] offers the same with defaults.
#[derive(Clone)]
pub struct AgentLoopConfig {
    /// The model.
    pub model: Model,
    /// The client that streams model responses.
    pub client: Arc<dyn ProtocolClient>,
    /// Callbacks.
    pub hooks: Arc<dyn AgentHooks>,
    /// Request options: temperature, max tokens, thinking level and budgets, API
    /// key, session id, cache retention, headers, retries, timeouts. The loop sets
    /// `cancel` and `tool_choice` for each call. Without an API key here, the
    /// client resolves one per request (see [`makai_ai::InProcessClient::with_keys`]).
    pub options: StreamOptions,
    /// Tool choice for the model call(s); see `tool_choice_first_turn_only`.
    pub tool_choice: Option<ToolChoice>,
    /// Apply `tool_choice` to the first model call of a run only (default true), so a
    /// forced tool call cannot repeat forever.
    pub tool_choice_first_turn_only: bool,
    /// How tool calls run.
    pub tool_execution: ToolExecution,
    /// When steering interrupts tools.
    pub steering: SteeringBehavior,
    /// Dry run: a tool that is not read-only is not run; its
    /// [`crate::Tool::dry_run`] says what it would have done (seed 003).
    pub dry_run: bool,
    /// Run limits.
    pub limits: ExecutionLimits,
    /// Loop detection (`None` disables it).
    pub loop_detection: Option<LoopDetection>,
    /// Context-size management (`None` disables compaction and overflow retry).
    pub context: Option<ContextConfig>,
    /// The compaction strategy.
    pub compaction: Arc<dyn CompactionStrategy>,
    /// Pause between model calls (not before the first).
    pub turn_delay: Option<Duration>,
    /// Working directory handed to tools.
    pub cwd: PathBuf,
    /// Attach the partial assistant message to each `message_update` (default
    /// false). A snapshot is a copy of the whole message so far, made for every
    /// delta: turn it on only for consumers that need it on each event (pi's JSON
    /// form of `message_update`); [`crate::Agent::state`] always has the partial
    /// message, and a [`makai_ai::MessageAccumulator`] rebuilds it from the deltas.
    pub partial_snapshots: bool,
    /// After cancellation, how long running tools get to stop before they are
    /// abandoned with an error result (default 2 s).
    pub tool_abort_grace: Duration,
    pub(crate) skip_initial_steering_poll: bool,
}

impl std::fmt::Debug for AgentLoopConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentLoopConfig")
            .field("model", &self.model.id)
            .field("options", &self.options)
            .field("tool_choice", &self.tool_choice)
            .field("tool_execution", &self.tool_execution)
            .field("steering", &self.steering)
            .field("limits", &self.limits)
            .field("loop_detection", &self.loop_detection)
            .field("context", &self.context)
            .field("turn_delay", &self.turn_delay)
            .field("cwd", &self.cwd)
            .finish_non_exhaustive()
    }
}

impl AgentLoopConfig {
    /// A configuration with every default.
    pub fn new(model: Model, client: Arc<dyn ProtocolClient>) -> Self {
        AgentLoopConfig {
            model,
            client,
            hooks: Arc::new(NoHooks),
            options: StreamOptions::default(),
            tool_choice: None,
            tool_choice_first_turn_only: true,
            tool_execution: ToolExecution::Sequential,
            steering: SteeringBehavior::InterruptTools,
            dry_run: false,
            limits: ExecutionLimits::default(),
            loop_detection: None,
            context: Some(ContextConfig::default()),
            compaction: Arc::new(DefaultCompaction),
            turn_delay: None,
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            partial_snapshots: false,
            tool_abort_grace: Duration::from_secs(2),
            skip_initial_steering_poll: false,
        }
    }

    /// A builder starting from [`AgentLoopConfig::new`].
    pub fn builder(model: Model, client: Arc<dyn ProtocolClient>) -> AgentLoopConfigBuilder {
        AgentLoopConfigBuilder(AgentLoopConfig::new(model, client))
    }
}

/// Builds an [`AgentLoopConfig`].
#[derive(Debug)]
pub struct AgentLoopConfigBuilder(AgentLoopConfig);

impl AgentLoopConfigBuilder {
    /// Sets the hooks.
    pub fn hooks(mut self, hooks: Arc<dyn AgentHooks>) -> Self {
        self.0.hooks = hooks;
        self
    }
    /// Replaces all request options.
    pub fn options(mut self, options: StreamOptions) -> Self {
        self.0.options = options;
        self
    }
    /// Sets the temperature.
    pub fn temperature(mut self, t: f32) -> Self {
        self.0.options.temperature = Some(t);
        self
    }
    /// Sets the output token limit.
    pub fn max_tokens(mut self, n: u64) -> Self {
        self.0.options.max_tokens = Some(n);
        self
    }
    /// Sets the thinking level.
    pub fn thinking(mut self, level: ThinkingLevel) -> Self {
        self.0.options.thinking = level;
        self
    }
    /// Sets the thinking budgets.
    pub fn thinking_budgets(mut self, budgets: ThinkingBudgets) -> Self {
        self.0.options.thinking_budgets = budgets;
        self
    }
    /// Sets a fixed API key for every call (otherwise the client resolves one per
    /// request).
    pub fn api_key(mut self, key: impl Into<ApiKey>) -> Self {
        self.0.options.api_key = Some(key.into());
        self
    }
    /// Sets the session id (prompt caching, routing; handed to tools).
    pub fn session_id(mut self, id: impl Into<String>) -> Self {
        self.0.options.session_id = Some(id.into());
        self
    }
    /// Sets the prompt cache retention.
    pub fn cache_retention(mut self, retention: CacheRetention) -> Self {
        self.0.options.cache_retention = retention;
        self
    }
    /// Sets the tool choice.
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.0.tool_choice = Some(choice);
        self
    }
    /// Applies the tool choice to every model call instead of the first only.
    pub fn tool_choice_every_turn(mut self) -> Self {
        self.0.tool_choice_first_turn_only = false;
        self
    }
    /// Sets the tool execution strategy.
    pub fn tool_execution(mut self, strategy: ToolExecution) -> Self {
        self.0.tool_execution = strategy;
        self
    }
    /// Sets when steering interrupts tools.
    pub fn steering(mut self, behavior: SteeringBehavior) -> Self {
        self.0.steering = behavior;
        self
    }
    /// Turns dry run on or off (see [`AgentLoopConfig::dry_run`]).
    pub fn dry_run(mut self, on: bool) -> Self {
        self.0.dry_run = on;
        self
    }
    /// Sets the turn limit.
    pub fn max_turns(mut self, n: u32) -> Self {
        self.0.limits.max_turns = Some(n);
        self
    }
    /// Sets the token limit.
    pub fn max_total_tokens(mut self, n: u64) -> Self {
        self.0.limits.max_total_tokens = Some(n);
        self
    }
    /// Sets the wall-time limit.
    pub fn max_wall_time(mut self, d: Duration) -> Self {
        self.0.limits.max_wall_time = Some(d);
        self
    }
    /// Enables loop detection.
    pub fn loop_detection(mut self, threshold: u32, action: LoopAction) -> Self {
        self.0.loop_detection = Some(LoopDetection { threshold, action });
        self
    }
    /// Sets (or, with `None`, disables) context management.
    pub fn context(mut self, context: Option<ContextConfig>) -> Self {
        self.0.context = context;
        self
    }
    /// Sets the compaction strategy.
    pub fn compaction(mut self, strategy: Arc<dyn CompactionStrategy>) -> Self {
        self.0.compaction = strategy;
        self
    }
    /// Sets the pause between model calls.
    pub fn turn_delay(mut self, d: Duration) -> Self {
        self.0.turn_delay = Some(d);
        self
    }
    /// Sets the working directory handed to tools.
    pub fn cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.0.cwd = cwd.into();
        self
    }
    /// Turns partial-message snapshots in `message_update` on or off.
    pub fn partial_snapshots(mut self, on: bool) -> Self {
        self.0.partial_snapshots = on;
        self
    }
    /// Sets how long cancelled tools get to stop.
    pub fn tool_abort_grace(mut self, d: Duration) -> Self {
        self.0.tool_abort_grace = d;
        self
    }
    /// The configuration. Out-of-range values are clamped: `max_turns` and
    /// `Batched(n)` to at least 1, the loop threshold to at least 2.
    pub fn build(self) -> AgentLoopConfig {
        self.0.normalized()
    }
}

impl AgentLoopConfig {
    pub(crate) fn normalized(mut self) -> Self {
        if let Some(n) = self.limits.max_turns.as_mut() {
            *n = (*n).max(1);
        }
        if let ToolExecution::Batched(n) = &mut self.tool_execution {
            *n = (*n).max(1);
        }
        if let Some(l) = self.loop_detection.as_mut() {
            l.threshold = l.threshold.max(2);
        }
        self
    }
}
