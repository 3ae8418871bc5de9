//! pi's cache warming (`cacheWarming`): the provider's prompt cache entry of
//! a session's last request is kept alive by sending that request again with
//! a one-token output cap shortly before the entry expires, while a tool runs
//! long and (mode `idle`) for up to 30 minutes between runs, when a refresh
//! is expected to pay for itself.
//!
//! - The lifetime comes from the model's `promptCache` for the request's
//!   retention tier ([`makai_ai::Model::prompt_cache_lifetime`]); a refresh is
//!   due at 90% of it, keeping at least ten seconds in hand
//!   ([`warming_delay`]), and is dropped when it could not be sent before
//!   half of that margin is gone.
//! - Each refresh is a decision ([`Decision::evaluate`]): the price of a
//!   cache read of the last prompt plus one output token against the extra
//!   price of the next request if the entry is lost, times the chance that
//!   a next request comes (1 while a run goes on, 0.15 when idle). It is
//!   sent when the expected savings are at least $0.05.
//! - Warming stops when the conversation moves on without the request (the
//!   model changed, the transcript was compacted, replaced or left), after an
//!   hour (30 minutes once idle), and when a real request replaces it.
//!
//! [`CacheWarmer`] does the scheduling; the application is its
//! [`WarmingHost`]: it says the mode, whether the request still describes the
//! conversation, the size of the last prompt, and records each refresh (a
//! `cache_warm` usage entry in pi's session format).

use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::time::{Duration, Instant};

use makai_agent::TranscriptMark;
use makai_ai::{
    AssistantMessage, CacheRetention, Context, Model, ProtocolClient, RetryPolicy, StopReason,
    StreamOptions, Usage,
};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

/// How long warming goes on after the real request that started it, while
/// the run goes on.
pub const MAX_WARMING_AGE: Duration = Duration::from_secs(60 * 60);
/// How long warming goes on after the real request that started it once the
/// agent is idle: guesses of a next request get worse with age.
pub const MAX_IDLE_WARMING_AGE: Duration = Duration::from_secs(30 * 60);
/// A refresh is sent only when it is expected to save at least this many dollars.
pub const MINIMUM_EXPECTED_SAVINGS: f64 = 0.05;
/// The chance that a real request comes before the entry expires while the
/// agent is idle (pi's measured constant).
pub const IDLE_CONTINUATION_PROBABILITY: f64 = 0.15;
/// The margin kept before a cache entry expires.
const EXPIRY_MARGIN: Duration = Duration::from_secs(10);

/// pi's `cacheWarming` setting (user settings only).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheWarmingMode {
    /// Never warm.
    Off,
    /// Warm only while a run goes on (during long tool calls).
    Streaming,
    /// Warm during runs and for up to 30 minutes between them (pi's default).
    #[default]
    Idle,
}

/// When to refresh an entry that lives `ttl`: at 90% of it, keeping at least
/// ten seconds in hand; `None` when it lives ten seconds or less.
pub fn warming_delay(ttl: Duration) -> Option<Duration> {
    if ttl <= EXPIRY_MARGIN {
        return None;
    }
    let ninety = ttl.mul_f64(0.9);
    Some(
        ninety
            .min(ttl - EXPIRY_MARGIN)
            .max(Duration::from_millis(1)),
    )
}

/// Whether the run that sent the request still goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// The run goes on (a tool is running, say).
    Streaming,
    /// The agent is idle.
    Idle,
}

/// What a decision comes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Send the refresh.
    Warm,
    /// Stop warming until the next real request.
    Stop,
}

/// The inputs and outcome of one warm-or-stop decision (shown by `/session`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Decision {
    /// The phase it was taken in.
    pub phase: Phase,
    /// The price of a refresh: a cache read of the prompt and one output token.
    pub warm_cost: f64,
    /// The extra price of the next request if the entry is lost.
    pub miss_cost: f64,
    /// The chance that a real request comes before the entry expires.
    pub continuation_probability: f64,
    /// `continuation_probability * miss_cost - warm_cost`.
    pub expected_savings: f64,
    /// False when the prompt's size or the model's prices are unknown.
    pub economics_available: bool,
    /// Warm when the expected savings are at least [`MINIMUM_EXPECTED_SAVINGS`].
    pub action: Action,
}

/// The price of `usage`'s tokens at `model`'s rates (tiers included).
fn price(model: &Model, mut usage: Usage) -> f64 {
    usage.apply_cost(&model.cost);
    usage.cost.total
}

impl Decision {
    /// The decision for a prompt of `prompt_tokens` (as the provider reported
    /// the last real request's) on `model`.
    pub fn evaluate(model: &Model, prompt_tokens: u64, phase: Phase) -> Decision {
        let tokens = |input, output, cache_read, cache_write| Usage {
            input,
            output,
            cache_read,
            cache_write,
            ..Usage::default()
        };
        let hit = price(model, tokens(0, 0, prompt_tokens, 0));
        let miss = if model.cost.cache_write > 0.0 {
            price(model, tokens(0, 0, 0, prompt_tokens))
        } else {
            price(model, tokens(prompt_tokens, 0, 0, 0))
        };
        let warm_cost = price(model, tokens(0, 1, prompt_tokens, 0));
        let miss_cost = (miss - hit).max(0.0);
        let continuation_probability = match phase {
            Phase::Streaming => 1.0,
            Phase::Idle => IDLE_CONTINUATION_PROBABILITY,
        };
        let expected_savings = continuation_probability * miss_cost - warm_cost;
        Decision {
            phase,
            warm_cost,
            miss_cost,
            continuation_probability,
            expected_savings,
            economics_available: prompt_tokens > 0 && (hit > 0.0 || miss > 0.0),
            action: if expected_savings >= MINIMUM_EXPECTED_SAVINGS {
                Action::Warm
            } else {
                Action::Stop
            },
        }
    }

    fn economics(&self) -> String {
        if !self.economics_available {
            return "cache economics unavailable".into();
        }
        let percent = (self.continuation_probability * 100.0).round();
        let while_running = match self.phase {
            Phase::Streaming => " while agent is running",
            Phase::Idle => "",
        };
        let comparison = match self.action {
            Action::Warm => ">=",
            Action::Stop => "<",
        };
        format!(
            "{percent}% continuation probability{while_running}, expected savings {} {comparison} ${MINIMUM_EXPECTED_SAVINGS:.3}",
            dollars(self.expected_savings)
        )
    }
}

fn dollars(value: f64) -> String {
    if value < 0.0 {
        format!("-${:.3}", -value)
    } else {
        format!("${value:.3}")
    }
}

/// Where warming stands.
#[derive(Clone, Debug, PartialEq)]
pub enum WarmingState {
    /// Nothing is scheduled, for the reason given.
    Inactive(String),
    /// A refresh is due at the instant given.
    Scheduled(Instant),
    /// A refresh is being sent.
    Refreshing,
}

/// Where warming stands, and the decision pending or the one that stopped it.
#[derive(Clone, Debug, PartialEq)]
pub struct WarmingStatus {
    /// The state.
    pub state: WarmingState,
    /// The decision the next refresh would take now, or the one that stopped it.
    pub decision: Option<Decision>,
}

impl WarmingStatus {
    /// pi's one line for `/session`: `Decision in 4m 30s (100% continuation
    /// probability while agent is running, expected savings $1.234 >= $0.050
    /// -> warm)`, `Inactive (cache lifetime unavailable)`, ...
    pub fn describe(&self, now: Instant) -> String {
        let decision = match (&self.state, &self.decision) {
            (WarmingState::Inactive(reason), None) => return format!("Inactive ({reason})"),
            (WarmingState::Inactive(reason), Some(d)) if !d.economics_available => {
                return format!("Inactive ({reason})");
            }
            (_, Some(d)) => d,
            (_, None) => return "Inactive (cache economics unavailable)".into(),
        };
        let action = match decision.action {
            Action::Warm => "warm",
            Action::Stop => "stop",
        };
        let details = format!("{} -> {action}", decision.economics());
        match &self.state {
            WarmingState::Inactive(_) => format!("Stopped ({details})"),
            WarmingState::Refreshing => format!("Warming cache ({details})"),
            WarmingState::Scheduled(at) => {
                format!(
                    "{} ({details})",
                    decision_time(at.saturating_duration_since(now))
                )
            }
        }
    }
}

fn decision_time(remaining: Duration) -> String {
    if remaining.is_zero() {
        return "Decision now".into();
    }
    let mut seconds = remaining.as_millis().div_ceil(1000) as u64;
    let hours = seconds / 3600;
    seconds %= 3600;
    let minutes = seconds / 60;
    seconds %= 60;
    let mut parts = Vec::new();
    if hours > 0 {
        parts.push(format!("{hours}h"));
    }
    if minutes > 0 {
        parts.push(format!("{minutes}m"));
    }
    if seconds > 0 || parts.is_empty() {
        parts.push(format!("{seconds}s"));
    }
    format!("Decision in {}", parts.join(" "))
}

/// pi's transcript line for a refresh: `Cache warmed: $0.015`.
pub fn warmed_text(cost: f64) -> String {
    let mut text = format!("{cost:.6}");
    // At least three decimals, no trailing zeros after them.
    while text.ends_with('0') && text.len() > text.find('.').map_or(0, |p| p + 4) {
        text.pop();
    }
    format!("Cache warmed: ${text}")
}

/// What the application tells a [`CacheWarmer`] and is told by it.
pub trait WarmingHost: Send + Sync {
    /// The mode in force (read at every decision: a change applies at once).
    fn mode(&self) -> CacheWarmingMode;
    /// The conversation as it is now (taken when a request is sent).
    fn transcript_mark(&self) -> TranscriptMark;
    /// True while `model` is the session's model and the transcript still
    /// continues `mark`: the request still is the start of the next one.
    fn is_current(&self, model: &Model, mark: TranscriptMark) -> bool;
    /// The prompt size of the last real request on the session's branch, as
    /// the provider reported it (input, cache reads and writes).
    fn last_prompt_tokens(&self) -> u64;
    /// A refresh succeeded: record its usage (pi's `cache_warm` entry).
    fn warmed(&self, message: &AssistantMessage);
}

/// The request whose cache entry is kept warm, as it was sent.
struct WarmRequest {
    model: Model,
    context: Context,
    options: StreamOptions,
}

struct ActiveRun {
    id: u64,
    model: Model,
    phase: Phase,
    started: Instant,
    /// When the next refresh is due.
    next: Instant,
    /// A refresh is being sent.
    refreshing: bool,
    cancel: CancellationToken,
}

#[derive(Default)]
struct State {
    run: Option<ActiveRun>,
    next_id: u64,
    inactive: Option<String>,
    stopped_by: Option<Decision>,
}

/// Keeps the prompt cache entry of a session's last request warm (see the
/// module docs). [`CacheWarmer::start`] with every real request replaces
/// what it kept before.
pub struct CacheWarmer {
    client: Arc<dyn ProtocolClient>,
    host: OnceLock<Weak<dyn WarmingHost>>,
    state: Mutex<State>,
}

impl std::fmt::Debug for CacheWarmer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CacheWarmer").finish_non_exhaustive()
    }
}

impl CacheWarmer {
    /// A warmer sending its refreshes through `client` (the session's, so
    /// that budgets count them). It does nothing until [`CacheWarmer::set_host`].
    pub fn new(client: Arc<dyn ProtocolClient>) -> Arc<Self> {
        Arc::new(CacheWarmer {
            client,
            host: OnceLock::new(),
            state: Mutex::new(State::default()),
        })
    }

    /// Sets the application it serves (held weakly: the host owns the warmer).
    pub fn set_host(&self, host: Weak<dyn WarmingHost>) {
        let _ = self.host.set(host);
    }

    fn host(&self) -> Option<Arc<dyn WarmingHost>> {
        self.host.get()?.upgrade()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Where warming stands.
    pub fn status(&self) -> WarmingStatus {
        let Some(host) = self.host() else {
            return inactive("waiting for first request");
        };
        if host.mode() == CacheWarmingMode::Off {
            return inactive("cache warming disabled");
        }
        let state = self.lock();
        let Some(run) = &state.run else {
            return WarmingStatus {
                state: WarmingState::Inactive(
                    state
                        .inactive
                        .clone()
                        .unwrap_or_else(|| "waiting for first request".into()),
                ),
                decision: state.stopped_by,
            };
        };
        let decision = Decision::evaluate(&run.model, host.last_prompt_tokens(), run.phase);
        if run.refreshing {
            WarmingStatus {
                state: WarmingState::Refreshing,
                decision: Some(decision),
            }
        } else if !decision.economics_available {
            inactive("cache economics unavailable")
        } else {
            WarmingStatus {
                state: WarmingState::Scheduled(run.next),
                decision: Some(decision),
            }
        }
    }

    /// Keeps the cache entry `model`, `context` and `options` write warm
    /// (the request as the run sends it). Replaces what was kept before; a
    /// request that cannot be kept warm stops warming.
    pub fn start(self: &Arc<Self>, model: &Model, context: &Context, options: &StreamOptions) {
        let Some(host) = self.host() else {
            return;
        };
        let mut state = self.lock();
        clear(&mut state);
        if host.mode() == CacheWarmingMode::Off {
            return stop(&mut state, "cache warming disabled", None);
        }
        if !model.replays_with_one_output_token(options) {
            return stop(&mut state, "request cannot be replayed safely", None);
        }
        let Some(ttl) = model.prompt_cache_lifetime(options.cache_retention) else {
            let reason = if options.cache_retention == CacheRetention::None {
                "request disabled prompt caching"
            } else {
                "cache lifetime unavailable"
            };
            return stop(&mut state, reason, None);
        };
        let Some(delay) = warming_delay(ttl) else {
            return stop(&mut state, "cache lifetime unavailable", None);
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return stop(&mut state, "no runtime to schedule refreshes on", None);
        };
        state.next_id += 1;
        let id = state.next_id;
        let cancel = CancellationToken::new();
        let started = Instant::now();
        state.run = Some(ActiveRun {
            id,
            model: model.clone(),
            phase: Phase::Streaming,
            started,
            next: started + delay,
            refreshing: false,
            cancel: cancel.clone(),
        });
        let mut options = options.clone();
        options.max_tokens = Some(1);
        options.retry = RetryPolicy {
            max_retries: 0,
            ..options.retry
        };
        let request = WarmRequest {
            model: model.clone(),
            context: context.clone(),
            options,
        };
        let mark = host.transcript_mark();
        drop(state);
        let warmer = Arc::downgrade(self);
        runtime.spawn(async move {
            tokio::select! {
                () = cancel.cancelled() => {}
                () = keep_warm(warmer, id, request, mark, ttl, delay) => {}
            }
        });
    }

    /// The run that sent the request ended: warming goes on idle (mode
    /// `idle`) or stops (mode `streaming`).
    pub fn on_agent_settled(&self) {
        let Some(host) = self.host() else {
            return;
        };
        let mut state = self.lock();
        let Some(run) = state.run.as_mut() else {
            return;
        };
        if host.mode() != CacheWarmingMode::Idle {
            return stop(&mut state, "agent run settled", None);
        }
        run.phase = Phase::Idle;
        let deadline = run.started + MAX_IDLE_WARMING_AGE;
        if run.next > deadline || Instant::now() >= deadline {
            stop(&mut state, "30-minute idle safety limit reached", None);
        }
    }

    /// Stops warming (the session ended or changed).
    pub fn cancel(&self) {
        stop(&mut self.lock(), "inactive", None);
    }
}

impl Drop for CacheWarmer {
    fn drop(&mut self) {
        // The refresh task holds the warmer weakly: it ends at once.
        clear(&mut self.lock());
    }
}

fn inactive(reason: &str) -> WarmingStatus {
    WarmingStatus {
        state: WarmingState::Inactive(reason.into()),
        decision: None,
    }
}

fn clear(state: &mut State) {
    if let Some(run) = state.run.take() {
        run.cancel.cancel();
    }
}

fn stop(state: &mut State, reason: &str, decision: Option<Decision>) {
    clear(state);
    state.inactive = Some(reason.into());
    state.stopped_by = decision;
}

/// What the warmer's task reads of its run.
struct RunView {
    warmer: Arc<CacheWarmer>,
    host: Arc<dyn WarmingHost>,
    phase: Phase,
    started: Instant,
    next: Instant,
}

/// Run `id` as its task sees it; `None` once the run was replaced or
/// stopped (or the warmer dropped).
fn run_view(warmer: &Weak<CacheWarmer>, id: u64) -> Option<RunView> {
    let warmer = warmer.upgrade()?;
    let host = warmer.host()?;
    let (phase, started, next) = {
        let state = warmer.lock();
        let run = state.run.as_ref().filter(|r| r.id == id)?;
        (run.phase, run.started, run.next)
    };
    Some(RunView {
        warmer,
        host,
        phase,
        started,
        next,
    })
}

/// Sets run `id`'s next refresh and whether one is being sent; false once
/// the run is no longer the warmer's.
fn set_run(warmer: &CacheWarmer, id: u64, next: Option<Instant>, refreshing: bool) -> bool {
    let mut state = warmer.lock();
    match state.run.as_mut().filter(|r| r.id == id) {
        Some(run) => {
            if let Some(next) = next {
                run.next = next;
            }
            run.refreshing = refreshing;
            true
        }
        None => false,
    }
}

/// Stops run `id` (if it is still the warmer's) for `reason`.
fn stop_run(warmer: &CacheWarmer, id: u64, reason: &str, decision: Option<Decision>) {
    let mut state = warmer.lock();
    if state.run.as_ref().is_some_and(|r| r.id == id) {
        stop(&mut state, reason, decision);
    }
}

/// Why run `id` can no longer be warmed, if it cannot.
fn invalid(
    host: &dyn WarmingHost,
    request: &WarmRequest,
    phase: Phase,
    mark: TranscriptMark,
) -> Option<&'static str> {
    match host.mode() {
        CacheWarmingMode::Off => return Some("cache warming disabled"),
        CacheWarmingMode::Streaming if phase == Phase::Idle => return Some("agent run settled"),
        _ => {}
    }
    (!host.is_current(&request.model, mark)).then_some("conversation context changed")
}

/// The refresh loop of one run.
async fn keep_warm(
    warmer: Weak<CacheWarmer>,
    id: u64,
    request: WarmRequest,
    mark: TranscriptMark,
    ttl: Duration,
    delay: Duration,
) {
    let mut first = true;
    loop {
        // Schedule the next refresh (the first was set when the run started).
        let Some(view) = run_view(&warmer, id) else {
            return;
        };
        let next = if first {
            view.next
        } else {
            Instant::now() + delay
        };
        first = false;
        let (limit, limit_reason) = match view.phase {
            Phase::Streaming => (MAX_WARMING_AGE, "one-hour safety limit reached"),
            Phase::Idle => (MAX_IDLE_WARMING_AGE, "30-minute idle safety limit reached"),
        };
        if next > view.started + limit {
            return stop_run(&view.warmer, id, limit_reason, None);
        }
        // A late timer (a suspended laptop) keeps half the margin for sending:
        // later than that the refresh would be a full-price cache write.
        let refresh_deadline = next + (ttl - delay) / 2;
        if !set_run(&view.warmer, id, Some(next), false) {
            return;
        }
        drop(view);
        tokio::time::sleep_until(next.into()).await;

        // Refresh.
        let Some(view) = run_view(&warmer, id) else {
            return;
        };
        if let Some(reason) = invalid(&*view.host, &request, view.phase, mark) {
            return stop_run(&view.warmer, id, reason, None);
        }
        if Instant::now() > refresh_deadline {
            return stop_run(&view.warmer, id, "cache refresh deadline missed", None);
        }
        let decision =
            Decision::evaluate(&request.model, view.host.last_prompt_tokens(), view.phase);
        if decision.action == Action::Stop {
            let reason = if decision.economics_available {
                "expected savings below threshold"
            } else {
                "cache economics unavailable"
            };
            return stop_run(&view.warmer, id, reason, Some(decision));
        }
        let cancel = {
            let state = view.warmer.lock();
            match state.run.as_ref().filter(|r| r.id == id) {
                Some(run) => run.cancel.child_token(),
                None => return,
            }
        };
        if !set_run(&view.warmer, id, None, true) {
            return;
        }
        let mut options = request.options.clone();
        options.cancel = cancel;
        let client = view.warmer.client.clone();
        drop(view);
        let message = client
            .stream(&request.model, &request.context, options)
            .await
            .result()
            .await;
        let Some(view) = run_view(&warmer, id) else {
            return;
        };
        if let Some(reason) = invalid(&*view.host, &request, view.phase, mark) {
            return stop_run(&view.warmer, id, reason, None);
        }
        match message.stop_reason {
            StopReason::Error | StopReason::Aborted => {
                tracing::debug!(
                    error = message.error_message.as_deref().unwrap_or(""),
                    "a cache-warming refresh failed; the next one is scheduled"
                );
            }
            _ => view.host.warmed(&message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refreshes_are_due_at_ninety_percent_keeping_ten_seconds_in_hand() {
        let s = Duration::from_secs;
        assert_eq!(warming_delay(s(300)), Some(s(270)));
        assert_eq!(warming_delay(s(3600)), Some(s(3240)));
        assert_eq!(warming_delay(s(60)), Some(s(50)));
        assert_eq!(warming_delay(s(11)), Some(s(1)));
        assert_eq!(warming_delay(s(10)), None);
    }

    fn priced(input: f64, output: f64, cache_read: f64, cache_write: f64) -> Model {
        let mut m = Model::custom(makai_ai::Api::AnthropicMessages, "p", "m", "http://x");
        m.cost.input = input;
        m.cost.output = output;
        m.cost.cache_read = cache_read;
        m.cost.cache_write = cache_write;
        m
    }

    #[test]
    fn a_refresh_is_worth_it_when_the_expected_savings_reach_five_cents() {
        // Sonnet's prices, a 100k-token prompt: a miss costs a $0.375 write
        // instead of a $0.03 read.
        let sonnet = priced(3.0, 15.0, 0.3, 3.75);
        let d = Decision::evaluate(&sonnet, 100_000, Phase::Streaming);
        assert!((d.warm_cost - 0.030_015).abs() < 1e-9, "{d:?}");
        assert!((d.miss_cost - 0.345).abs() < 1e-9, "{d:?}");
        assert_eq!(d.action, Action::Warm);
        // Idle, the chance of a next request is 15%: 0.15 * 0.345 - 0.030 < 0.05.
        let idle = Decision::evaluate(&sonnet, 100_000, Phase::Idle);
        assert_eq!(idle.action, Action::Stop);
        assert!((idle.expected_savings - (0.15 * 0.345 - 0.030_015)).abs() < 1e-9);
        // Without cache-write prices a miss is priced as uncached input.
        let no_write = priced(3.0, 15.0, 0.3, 0.0);
        let d = Decision::evaluate(&no_write, 100_000, Phase::Streaming);
        assert!((d.miss_cost - 0.27).abs() < 1e-9, "{d:?}");
        // Unknown prompt size or prices: no economics, no refresh.
        let d = Decision::evaluate(&sonnet, 0, Phase::Streaming);
        assert!(!d.economics_available);
        assert_eq!(d.action, Action::Stop);
        assert!(
            !Decision::evaluate(&priced(0.0, 0.0, 0.0, 0.0), 1000, Phase::Idle).economics_available
        );
    }

    #[test]
    fn the_status_line_reads_as_pis() {
        let sonnet = priced(3.0, 15.0, 0.3, 3.75);
        let now = Instant::now();
        let status = WarmingStatus {
            state: WarmingState::Scheduled(now + Duration::from_millis(269_500)),
            decision: Some(Decision::evaluate(&sonnet, 100_000, Phase::Streaming)),
        };
        assert_eq!(
            status.describe(now),
            "Decision in 4m 30s (100% continuation probability while agent is running, expected savings $0.315 >= $0.050 -> warm)"
        );
        let stopped = WarmingStatus {
            state: WarmingState::Inactive("expected savings below threshold".into()),
            decision: Some(Decision::evaluate(&sonnet, 100_000, Phase::Idle)),
        };
        assert_eq!(
            stopped.describe(now),
            "Stopped (15% continuation probability, expected savings $0.022 < $0.050 -> stop)"
        );
        assert_eq!(
            inactive("cache lifetime unavailable").describe(now),
            "Inactive (cache lifetime unavailable)"
        );
        assert_eq!(decision_time(Duration::from_secs(3600)), "Decision in 1h");
        assert_eq!(decision_time(Duration::ZERO), "Decision now");
    }

    #[test]
    fn the_transcript_line_keeps_three_decimals_at_least() {
        assert_eq!(warmed_text(0.015), "Cache warmed: $0.015");
        assert_eq!(warmed_text(0.0301), "Cache warmed: $0.0301");
        assert_eq!(warmed_text(0.1234567), "Cache warmed: $0.123457");
        assert_eq!(warmed_text(2.0), "Cache warmed: $2.000");
    }

    #[test]
    fn modes_read_and_write_as_pis() {
        for (text, mode) in [
            ("\"off\"", CacheWarmingMode::Off),
            ("\"streaming\"", CacheWarmingMode::Streaming),
            ("\"idle\"", CacheWarmingMode::Idle),
        ] {
            assert_eq!(
                serde_json::from_str::<CacheWarmingMode>(text).unwrap(),
                mode
            );
            assert_eq!(serde_json::to_string(&mode).unwrap(), text);
        }
        assert_eq!(CacheWarmingMode::default(), CacheWarmingMode::Idle);
    }
}
