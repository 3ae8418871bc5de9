//! [`Limits`]: how long a run may go and what a session tree may spend.
//!
//! The same four limits come from the settings (`"limits": {"maxTurns": 40,
//! "maxTime": "20m", "maxTokens": 2000000, "maxCost": 5}`), an agent spec
//! (`[limits]` with `max_turns`, `max_time`, `max_tokens`, `max_cost`) and
//! the command line (`--max-turns`, `--max-time`, `--max-tokens`,
//! `--max-cost`); a later source wins per limit.
//!
//! - `maxTurns` and `maxTime` bound each run (one prompt and what follows
//!   it): the agent layer's [`ExecutionLimits`].
//! - `maxTokens` (input, cache reads and writes included, plus output) and
//!   `maxCost` (dollars) cap the whole session tree, sub-agents, compactions
//!   and titles included: the [`Budget`] a ledger enforces before each
//!   request.

use std::time::Duration;

use makai_agent::{Budget, ExecutionLimits};
use serde::{Deserialize, Serialize};

/// Limits of runs and the budget of a session tree.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct Limits {
    /// Most model calls per run.
    #[serde(alias = "max_turns", skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<u32>,
    /// Longest a run may take (`"90s"`, `"20m"`, `"1h 30m"`).
    #[serde(
        alias = "max_time",
        with = "duration_text",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_time: Option<Duration>,
    /// Most tokens the session tree may use.
    #[serde(alias = "max_tokens", skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Most dollars the session tree may spend.
    #[serde(alias = "max_cost", skip_serializing_if = "Option::is_none")]
    pub max_cost: Option<f64>,
}

impl Limits {
    /// These limits with `over`'s set ones taking their place.
    pub fn overridden_by(self, over: Limits) -> Limits {
        Limits {
            max_turns: over.max_turns.or(self.max_turns),
            max_time: over.max_time.or(self.max_time),
            max_tokens: over.max_tokens.or(self.max_tokens),
            max_cost: over.max_cost.or(self.max_cost),
        }
    }

    /// The per-run part, for the agent loop.
    pub fn execution(&self) -> ExecutionLimits {
        ExecutionLimits {
            max_turns: self.max_turns,
            max_total_tokens: None,
            max_wall_time: self.max_time,
        }
    }

    /// The session-tree part, for the ledger.
    pub fn budget(&self) -> Budget {
        Budget {
            max_cost: self.max_cost,
            max_tokens: self.max_tokens,
        }
    }

    /// Checks the values: a zero turn or time limit and a negative or
    /// non-finite cost are errors naming the limit.
    pub fn check(&self) -> Result<(), String> {
        if self.max_turns == Some(0) {
            return Err("maxTurns must be at least 1".into());
        }
        if self.max_time.is_some_and(|d| d.is_zero()) {
            return Err("maxTime must be longer than zero".into());
        }
        if let Some(c) = self.max_cost
            && !(c.is_finite() && c >= 0.0)
        {
            return Err(format!(
                "maxCost must be a number of dollars, 0 or more (got {c})"
            ));
        }
        Ok(())
    }
}

/// Parses a duration such as `90s`, `20m`, `1h 30m` or a plain number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    if let Ok(secs) = t.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    humantime::parse_duration(t).map_err(|e| {
        format!(
            "'{}' is not a duration ({e}); write it like 90s, 20m or 1h 30m",
            makai_ai::quote::bounded(t)
        )
    })
}

/// `Option<Duration>` as text (`"20m"`) or a number of seconds.
mod duration_text {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Secs(u64),
        Text(String),
    }

    pub(super) fn serialize<S: Serializer>(v: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(d) => s.serialize_str(&humantime::format_duration(*d).to_string()),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        match Option::<Raw>::deserialize(d)? {
            None => Ok(None),
            Some(Raw::Secs(s)) => Ok(Some(Duration::from_secs(s))),
            Some(Raw::Text(t)) => super::parse_duration(&t)
                .map(Some)
                .map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_json_and_spec_toml_spell_the_same_limits() {
        let json: Limits = serde_json::from_str(
            r#"{"maxTurns": 5, "maxTime": "1m 30s", "maxTokens": 1000, "maxCost": 0.5}"#,
        )
        .unwrap();
        let toml: Limits =
            toml::from_str("max_turns = 5\nmax_time = 90\nmax_tokens = 1000\nmax_cost = 0.5")
                .unwrap();
        assert_eq!(json, toml);
        assert_eq!(json.max_time, Some(Duration::from_secs(90)));
        assert_eq!(
            serde_json::to_value(json).unwrap()["maxTime"],
            serde_json::json!("1m 30s")
        );
        let e = serde_json::from_str::<Limits>(r#"{"maxTime": "soon"}"#).unwrap_err();
        assert!(e.to_string().contains("not a duration"), "{e}");
    }

    #[test]
    fn a_later_source_wins_per_limit() {
        let settings = Limits {
            max_turns: Some(10),
            max_cost: Some(1.0),
            ..Default::default()
        };
        let flags = Limits {
            max_cost: Some(0.25),
            ..Default::default()
        };
        let l = settings.overridden_by(flags);
        assert_eq!((l.max_turns, l.max_cost), (Some(10), Some(0.25)));
        assert_eq!(l.budget().max_cost, Some(0.25));
        assert_eq!(l.execution().max_turns, Some(10));
        assert!(
            Limits {
                max_cost: Some(-1.0),
                ..Default::default()
            }
            .check()
            .is_err()
        );
    }
}
