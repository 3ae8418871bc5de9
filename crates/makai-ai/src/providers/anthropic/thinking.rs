//! How reasoning is requested from a Claude model, and the `max_tokens` that goes with it.
//!
//! Two request shapes exist:
//! - **budget**: `thinking: {type: "enabled", budget_tokens: N}`, where `N` comes
//!   from [`ThinkingBudgets`](crate::ThinkingBudgets) and `max_tokens` must exceed `N`;
//! - **adaptive**: `thinking: {type: "adaptive", display: "summarized"}` plus
//!   `output_config: {effort}`; the model decides how much to think.
//!
//! The rule (see [`uses_adaptive_thinking`]): adaptive for the Fable and Mythos
//! families and for Opus/Sonnet/Haiku generation 4.6 and later (`claude-opus-4-6`,
//! `claude-sonnet-4-6`, `claude-opus-4-7`, `claude-opus-5`, ...), whose APIs
//! deprecate (4.6) or reject (4.7 and later) budget mode; budget mode for
//! everything older and for ids that name no known family. `display: "summarized"`
//! is sent because newer models otherwise omit the reasoning text.

use serde_json::{Value, json};

use crate::context::Context;
use crate::model::Model;
use crate::options::{StreamOptions, ThinkingLevel, ToolChoice};

/// The smallest `budget_tokens` the API accepts.
const MIN_BUDGET: u64 = 1024;
/// Room left for the answer when the budget has to shrink to fit the model's limit.
const ANSWER_ROOM: u64 = 1024;

/// A Claude model generation, e.g. 4.6 for `claude-opus-4-6`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Generation {
    pub major: u32,
    pub minor: u32,
}

/// The family (`opus`, `sonnet`, `haiku`, `fable`, `mythos`) and generation named
/// by a model id. Understands `claude-opus-4-6`, `claude-sonnet-4-5-20250929`,
/// `claude-3-7-sonnet-20250219`, `anthropic.claude-opus-4-6-v1`,
/// `claude-opus-4-20250514` (4.0) and `claude-4.7-opus`.
pub(super) fn family_and_generation(id: &str) -> Option<(&'static str, Option<Generation>)> {
    const FAMILIES: [&str; 5] = ["opus", "sonnet", "haiku", "fable", "mythos"];
    let lower = id.to_ascii_lowercase();
    let tokens: Vec<&str> = lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|t| !t.is_empty())
        .collect();
    let (pos, family) = tokens
        .iter()
        .enumerate()
        .find_map(|(i, t)| FAMILIES.iter().find(|f| *f == t).map(|f| (i, *f)))?;
    fn version_part(t: &&&str) -> bool {
        t.len() <= 2 && t.chars().all(|c| c.is_ascii_digit())
    }
    let parse = |parts: &[&str]| -> Option<Generation> {
        let major = parts.first()?.parse().ok()?;
        let minor = parts.get(1).and_then(|m| m.parse().ok()).unwrap_or(0);
        Some(Generation { major, minor })
    };
    let after: Vec<&str> = tokens[pos + 1..]
        .iter()
        .take_while(version_part)
        .take(2)
        .copied()
        .collect();
    let generation = parse(&after).or_else(|| {
        let before: Vec<&str> = tokens[..pos]
            .iter()
            .rev()
            .take_while(version_part)
            .take(2)
            .copied()
            .collect();
        let ordered: Vec<&str> = before.into_iter().rev().collect();
        parse(&ordered)
    });
    Some((family, generation))
}

/// True when `model_id` takes adaptive thinking (see the module docs for the rule).
pub(super) fn uses_adaptive_thinking(model_id: &str) -> bool {
    match family_and_generation(model_id) {
        Some(("fable" | "mythos", _)) => true,
        Some((_, Some(g))) => g >= Generation { major: 4, minor: 6 },
        _ => false,
    }
}

/// True when the model accepts the `xhigh` effort (Opus 4.7 and later); older
/// adaptive models get `max` for makai's `xhigh` instead.
fn accepts_xhigh_effort(model_id: &str) -> bool {
    match family_and_generation(model_id) {
        Some(("fable" | "mythos", _)) => true,
        Some((_, Some(g))) => g >= Generation { major: 4, minor: 7 },
        _ => false,
    }
}

/// The `output_config.effort` for a thinking level.
fn effort(level: ThinkingLevel, model_id: &str) -> &'static str {
    match level {
        ThinkingLevel::Off | ThinkingLevel::Minimal | ThinkingLevel::Low => "low",
        ThinkingLevel::Medium => "medium",
        ThinkingLevel::High => "high",
        ThinkingLevel::Xhigh if accepts_xhigh_effort(model_id) => "xhigh",
        ThinkingLevel::Xhigh | ThinkingLevel::Max => "max",
    }
}

/// What the request carries for reasoning.
#[derive(Debug, PartialEq)]
pub(crate) struct ThinkingPlan {
    /// The `thinking` field, when reasoning is on.
    pub thinking: Option<Value>,
    /// The `output_config` field (adaptive effort).
    pub output_config: Option<Value>,
    /// The `max_tokens` to send.
    pub max_tokens: u64,
}

impl ThinkingPlan {
    /// True when the request asks for reasoning (then `temperature` must be left out).
    pub fn is_on(&self) -> bool {
        self.thinking.is_some()
    }
}

/// The adaptive `effort` [`plan`] sends (pi's `providerThinkingLevel`),
/// when it sends one (a token budget is no effort).
pub(crate) fn planned_effort(
    model: &Model,
    options: &StreamOptions,
    forces_tool: bool,
) -> Option<String> {
    let plan = plan(model, options, forces_tool);
    let effort = plan.output_config.as_ref()?.get("effort")?.as_str()?;
    Some(effort.to_string())
}

/// True when the request forces a tool call (then thinking is left off).
pub(crate) fn forces_tool(context: &Context, options: &StreamOptions) -> bool {
    !context.tools.is_empty()
        && matches!(
            options.tool_choice,
            Some(ToolChoice::Required | ToolChoice::Tool(_))
        )
}

/// Decides the thinking fields and `max_tokens`.
///
/// Reasoning is requested when `options.thinking` is not `off` and the model
/// reasons, and not when `forces_tool` (the API rejects thinking together with a
/// forced tool choice, and the forced call is the more specific request).
///
/// In budget mode `max_tokens` must exceed the budget. When the requested limit
/// (`options.max_tokens`, else the model's) does not, the limit is raised to
/// budget + requested limit, capped at the model's `max_tokens`; if that cap still
/// leaves no room, the budget shrinks to the cap minus 1024 tokens, and if that is
/// below the API minimum of 1024, reasoning is left off.
pub(crate) fn plan(model: &Model, options: &StreamOptions, forces_tool: bool) -> ThinkingPlan {
    let limit = options.max_tokens.unwrap_or(model.max_tokens).max(1);
    let off = ThinkingPlan {
        thinking: None,
        output_config: None,
        max_tokens: limit,
    };
    if options.thinking == ThinkingLevel::Off || !model.reasoning {
        return off;
    }
    if forces_tool {
        tracing::debug!(model = %model.id, "thinking left off: the tool choice forces a tool call");
        return off;
    }
    if uses_adaptive_thinking(&model.id) {
        return ThinkingPlan {
            thinking: Some(json!({"type": "adaptive", "display": "summarized"})),
            output_config: Some(json!({
                "effort": model
                    .thinking_value(options.thinking)
                    .unwrap_or_else(|| effort(options.thinking, &model.id))
            })),
            max_tokens: limit,
        };
    }
    let Some(budget) = options.thinking_budgets.for_level(options.thinking) else {
        return off;
    };
    let budget = u64::from(budget).max(MIN_BUDGET);
    match fit_budget(limit, model.max_tokens, budget) {
        Some((max_tokens, budget)) => ThinkingPlan {
            thinking: Some(json!({"type": "enabled", "budget_tokens": budget})),
            output_config: None,
            max_tokens,
        },
        None => {
            tracing::debug!(model = %model.id, limit, "thinking left off: max_tokens leaves no room for a budget");
            off
        }
    }
}

/// `(max_tokens, budget)` with `max_tokens > budget >= MIN_BUDGET`, or `None`.
fn fit_budget(limit: u64, model_max: u64, budget: u64) -> Option<(u64, u64)> {
    if budget < limit {
        return Some((limit, budget));
    }
    let cap = model_max.max(limit);
    let grown = budget.saturating_add(limit).min(cap);
    if grown > budget {
        return Some((grown, budget));
    }
    let shrunk = grown.saturating_sub(ANSWER_ROOM);
    (shrunk >= MIN_BUDGET).then_some((grown, shrunk))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_generations_from_many_id_styles() {
        let g = |major, minor| Some(Generation { major, minor });
        for (id, family, generation) in [
            ("claude-opus-4-6", "opus", g(4, 6)),
            ("claude-sonnet-4-5-20250929", "sonnet", g(4, 5)),
            ("claude-3-7-sonnet-20250219", "sonnet", g(3, 7)),
            ("claude-3-opus-latest", "opus", g(3, 0)),
            ("anthropic.claude-opus-4-6-v1", "opus", g(4, 6)),
            ("claude-opus-4-20250514", "opus", g(4, 0)),
            ("anthropic/claude-4.7-opus", "opus", g(4, 7)),
            ("claude-opus-5", "opus", g(5, 0)),
            ("claude-fable-5", "fable", g(5, 0)),
        ] {
            assert_eq!(
                family_and_generation(id),
                Some((family, generation)),
                "{id}"
            );
        }
        assert_eq!(family_and_generation("gpt-4o"), None);
    }

    #[test]
    fn adaptive_rule() {
        for id in [
            "claude-opus-4-6",
            "claude-sonnet-4-6",
            "claude-opus-4-7",
            "claude-opus-5",
            "claude-sonnet-5-20260801",
            "claude-fable-5",
            "claude-mythos-preview",
        ] {
            assert!(uses_adaptive_thinking(id), "{id} should be adaptive");
        }
        for id in [
            "claude-sonnet-4-5-20250929",
            "claude-opus-4-1",
            "claude-3-7-sonnet-20250219",
            "claude-haiku-4-5",
            "my-proxy-model",
        ] {
            assert!(!uses_adaptive_thinking(id), "{id} should use a budget");
        }
    }

    #[test]
    fn xhigh_maps_to_max_before_4_7() {
        assert_eq!(effort(ThinkingLevel::Xhigh, "claude-opus-4-6"), "max");
        assert_eq!(effort(ThinkingLevel::Xhigh, "claude-opus-4-7"), "xhigh");
        assert_eq!(effort(ThinkingLevel::Max, "claude-opus-4-7"), "max");
        assert_eq!(effort(ThinkingLevel::Max, "claude-opus-4-6"), "max");
        assert_eq!(effort(ThinkingLevel::Minimal, "claude-opus-4-7"), "low");
    }

    #[test]
    fn budget_always_fits_below_max_tokens() {
        assert_eq!(fit_budget(32_000, 64_000, 8192), Some((32_000, 8192)));
        // Requested 4096 with a 16k budget: grow to budget + 4096.
        assert_eq!(fit_budget(4096, 64_000, 16_384), Some((20_480, 16_384)));
        // The model cap leaves no room: the budget shrinks.
        assert_eq!(fit_budget(16_384, 16_384, 16_384), Some((16_384, 15_360)));
        assert_eq!(fit_budget(4096, 4096, 16_384), Some((4096, 3072)));
        // Too small for any budget.
        assert_eq!(fit_budget(1024, 1024, 1024), None);
        assert_eq!(fit_budget(1500, 1500, 1024), Some((1500, 1024)));
        for limit in [1, 100, 1024, 1025, 2048, 5000, 70_000] {
            for cap in [1, 2048, 8192, 64_000] {
                for budget in [1024, 2048, 16_384, 32_768] {
                    if let Some((max, b)) = fit_budget(limit, cap, budget) {
                        assert!(max > b && b >= MIN_BUDGET, "{limit} {cap} {budget}");
                        assert!(max <= cap.max(limit));
                    }
                }
            }
        }
    }
}
