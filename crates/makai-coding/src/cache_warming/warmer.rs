//! [`CacheWarmer`]: the refresh task of the last request, and its state.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::time::{Duration, Instant};

use makai_agent::TranscriptMark;
use makai_ai::{
    CacheRetention, Context, Model, ProtocolClient, RetryPolicy, StopReason, StreamOptions,
};
use tokio_util::sync::CancellationToken;

use super::decision::{
    Action, Decision, Phase, WarmingState, WarmingStatus, inactive, warming_delay,
};
use super::{CacheWarmingMode, WarmingHost};

/// How long warming goes on after the real request that started it, while
/// the run goes on.
pub const MAX_WARMING_AGE: Duration = Duration::from_secs(60 * 60);
/// How long warming goes on after the real request that started it once the
/// agent is idle: guesses of a next request get worse with age.
pub const MAX_IDLE_WARMING_AGE: Duration = Duration::from_secs(30 * 60);

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
