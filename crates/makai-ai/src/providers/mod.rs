//! The wire APIs. Each module has a request builder and a decoder; see [`crate::provider`].

pub(crate) mod anthropic;
pub(crate) mod bedrock;
pub(crate) mod codex;
mod delta_template;
pub(crate) mod google;
pub(crate) mod openai_completions;
pub(crate) mod openai_responses;
pub(crate) mod vertex;

/// An `f32` as the JSON number it was written as: `0.7f32` is sent as `0.7`,
/// not `0.699999988079071` (through its shortest decimal form).
pub(crate) fn decimal_f32(v: f32) -> f64 {
    v.to_string().parse().unwrap_or(f64::from(v))
}
