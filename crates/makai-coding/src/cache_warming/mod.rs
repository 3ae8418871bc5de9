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

mod decision;
mod warmer;

pub use decision::{
    Action, Decision, IDLE_CONTINUATION_PROBABILITY, MINIMUM_EXPECTED_SAVINGS, Phase, WarmingState,
    WarmingStatus, warmed_text, warming_delay,
};
pub use warmer::{CacheWarmer, MAX_IDLE_WARMING_AGE, MAX_WARMING_AGE};

use makai_agent::TranscriptMark;
use makai_ai::{AssistantMessage, Model};
use serde::{Deserialize, Serialize};

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

#[cfg(test)]
mod tests {
    use super::*;

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
