//! Per-request options: credentials, sampling, reasoning, caching, retries, cancellation.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

/// How hard a reasoning model should think.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingLevel {
    /// No reasoning requested.
    #[default]
    Off,
    /// The least reasoning.
    Minimal,
    /// Low.
    Low,
    /// Medium.
    Medium,
    /// High.
    High,
    /// Extra high.
    Xhigh,
    /// pi 1.5's opt-in level above `xhigh` (GPT-5.6, adaptive Claude models):
    /// offered only by the models whose catalog entry lists it; elsewhere it
    /// is clamped to the highest level the model has.
    Max,
}

impl ThinkingLevel {
    /// Every level in increasing order.
    pub const ALL: [ThinkingLevel; 7] = [
        ThinkingLevel::Off,
        ThinkingLevel::Minimal,
        ThinkingLevel::Low,
        ThinkingLevel::Medium,
        ThinkingLevel::High,
        ThinkingLevel::Xhigh,
        ThinkingLevel::Max,
    ];

    /// The wire name (`off`, `minimal`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            ThinkingLevel::Off => "off",
            ThinkingLevel::Minimal => "minimal",
            ThinkingLevel::Low => "low",
            ThinkingLevel::Medium => "medium",
            ThinkingLevel::High => "high",
            ThinkingLevel::Xhigh => "xhigh",
            ThinkingLevel::Max => "max",
        }
    }
}

impl std::str::FromStr for ThinkingLevel {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ThinkingLevel::ALL
            .into_iter()
            .find(|l| l.as_str() == s)
            .ok_or_else(|| format!("unknown thinking level '{s}' (expected off, minimal, low, medium, high, xhigh or max)"))
    }
}

/// Token budgets per thinking level for token-budget APIs (Anthropic, Gemini 2.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThinkingBudgets {
    /// Budget for `minimal`.
    pub minimal: u32,
    /// Budget for `low`.
    pub low: u32,
    /// Budget for `medium`.
    pub medium: u32,
    /// Budget for `high` (`xhigh` gets twice as much, `max` four times).
    pub high: u32,
}

impl Default for ThinkingBudgets {
    fn default() -> Self {
        ThinkingBudgets {
            minimal: 1024,
            low: 2048,
            medium: 8192,
            high: 16384,
        }
    }
}

impl ThinkingBudgets {
    /// The budget for a level; `None` for `off`.
    pub fn for_level(&self, level: ThinkingLevel) -> Option<u32> {
        match level {
            ThinkingLevel::Off => None,
            ThinkingLevel::Minimal => Some(self.minimal),
            ThinkingLevel::Low => Some(self.low),
            ThinkingLevel::Medium => Some(self.medium),
            ThinkingLevel::High => Some(self.high),
            ThinkingLevel::Xhigh => Some(self.high.saturating_mul(2)),
            ThinkingLevel::Max => Some(self.high.saturating_mul(4)),
        }
    }
}

/// How long a provider should keep the prompt cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheRetention {
    /// No cache breakpoints.
    None,
    /// The provider's default (about 5 minutes).
    #[default]
    Short,
    /// Extended retention where offered (1 hour on Anthropic, 24 h on OpenAI).
    Long,
}

/// Which tool the model must or may call.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// No tool calls.
    None,
    /// At least one tool call.
    Required,
    /// This tool must be called.
    #[serde(untagged)]
    Tool(String),
}

/// Retries of failed requests: exponential backoff with jitter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0 disables retrying).
    pub max_retries: u32,
    /// Delay before the first retry; doubled for each further one.
    pub initial_delay: Duration,
    /// Longest delay makai will wait. If the server asks for longer, the request
    /// fails at once with an error that states the requested delay.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            initial_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// No retries at all.
    pub fn none() -> Self {
        RetryPolicy {
            max_retries: 0,
            ..Default::default()
        }
    }

    /// The backoff before retry number `attempt` (1-based), with up to 25% jitter, capped at `max_delay`.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let base = self
            .initial_delay
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
        let jitter = base.mul_f64(fastrand::f64() * 0.25);
        (base + jitter).min(self.max_delay)
    }
}

/// An API key that never shows itself in `Debug` output, logs or errors.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into())
    }

    /// The key itself, for building the request header only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

impl From<&str> for ApiKey {
    fn from(s: &str) -> Self {
        ApiKey::new(s)
    }
}

impl From<String> for ApiKey {
    fn from(s: String) -> Self {
        ApiKey(s)
    }
}

/// Options of one streaming request. `Default` gives sensible values for every field.
#[derive(Clone, Debug, Default)]
pub struct StreamOptions {
    /// The API key; when unset, the provider's usual environment variable is read.
    pub api_key: Option<ApiKey>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Output token limit; defaults to the model's limit (capped for thinking budgets).
    pub max_tokens: Option<u64>,
    /// Reasoning effort.
    pub thinking: ThinkingLevel,
    /// Token budgets per level.
    pub thinking_budgets: ThinkingBudgets,
    /// Session id for prompt caching and routing.
    pub session_id: Option<String>,
    /// Prompt cache retention.
    pub cache_retention: CacheRetention,
    /// Which tool to call.
    pub tool_choice: Option<ToolChoice>,
    /// Extra headers sent with the request (override defaults).
    pub headers: BTreeMap<String, String>,
    /// Cancels the request; the stream then ends with stop reason `aborted`.
    pub cancel: CancellationToken,
    /// Retry policy.
    pub retry: RetryPolicy,
    /// Connect timeout (default 10 s).
    pub connect_timeout: Option<Duration>,
    /// Longest silence between two chunks of the body (or before the
    /// response head) before the stream fails (default 120 s; zero: none,
    /// in practice a year).
    pub idle_timeout: Option<Duration>,
    /// Read a fast stream at most once per this interval (default: as data
    /// arrives). Once the response's reads come closer together than the
    /// interval, each read waits until an interval after the one before and
    /// takes everything that arrived meanwhile: one wake-up and one `read`
    /// for several token events. The first read, a stream slower than the
    /// interval and a read after a full buffer are never delayed. A display
    /// that draws at most every 16 ms loses nothing at 16 ms (the `makai`
    /// binary's default); the cost is the end of each response read up to
    /// one interval late. A client that measures each token's arrival should
    /// leave it unset.
    pub read_interval: Option<Duration>,
    /// Hand over the deltas of one block that one read delivered as one
    /// `*_delta` event (default: one event per delta the provider sent).
    /// The text, the order and every other event are the same; with
    /// [`StreamOptions::read_interval`] a fast stream then costs its
    /// consumers one event per block per interval.
    pub merge_deltas: bool,
    /// Environment values read before the process environment for provider
    /// settings and credentials (`AWS_REGION`, `AWS_PROFILE`,
    /// `GOOGLE_CLOUD_PROJECT`, `AZURE_OPENAI_BASE_URL`, ...), as pi's `env`
    /// option. Never sent anywhere; `Debug` shows the names only.
    pub env: EnvOverrides,
}

/// Per-request environment values (see [`StreamOptions::env`]); `Debug` lists
/// the names, never the values (they may be secrets).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct EnvOverrides(pub BTreeMap<String, String>);

impl EnvOverrides {
    /// Sets `name` to `value`.
    pub fn set(&mut self, name: impl Into<String>, value: impl Into<String>) -> &mut Self {
        self.0.insert(name.into(), value.into());
        self
    }
}

impl fmt::Debug for EnvOverrides {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for EnvOverrides {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        EnvOverrides(
            iter.into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_key_debug_is_redacted() {
        let o = StreamOptions {
            api_key: Some(ApiKey::new("sk-secret-123")),
            ..Default::default()
        };
        let dbg = format!("{o:?}");
        assert!(!dbg.contains("sk-secret-123"), "{dbg}");
        assert!(dbg.contains("redacted"));
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        let p = RetryPolicy {
            max_retries: 10,
            initial_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(1),
        };
        assert!(
            p.backoff(1) >= Duration::from_millis(100)
                && p.backoff(1) <= Duration::from_millis(125)
        );
        assert!(p.backoff(3) >= Duration::from_millis(400));
        assert_eq!(p.backoff(10), Duration::from_secs(1));
    }

    #[test]
    fn tool_choice_serializes_like_pi() {
        assert_eq!(
            serde_json::to_string(&ToolChoice::Auto).unwrap(),
            "\"auto\""
        );
        assert_eq!(
            serde_json::to_string(&ToolChoice::Tool("read".into())).unwrap(),
            "\"read\""
        );
    }
}
