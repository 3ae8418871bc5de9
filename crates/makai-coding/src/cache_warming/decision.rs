//! The warm-or-stop decision and how it is said: when a refresh is due, what
//! it costs against what a lost entry costs, and pi's lines for `/session`
//! and the transcript.

use std::time::{Duration, Instant};

use makai_ai::{Model, Usage};

/// A refresh is sent only when it is expected to save at least this many dollars.
pub const MINIMUM_EXPECTED_SAVINGS: f64 = 0.05;
/// The chance that a real request comes before the entry expires while the
/// agent is idle (pi's measured constant).
pub const IDLE_CONTINUATION_PROBABILITY: f64 = 0.15;
/// The margin kept before a cache entry expires.
const EXPIRY_MARGIN: Duration = Duration::from_secs(10);

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

/// The status of warming that is not going on, for `reason`.
pub(super) fn inactive(reason: &str) -> WarmingStatus {
    WarmingStatus {
        state: WarmingState::Inactive(reason.into()),
        decision: None,
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
}
