//! The wire APIs. Each module has a request builder and a decoder; see [`crate::provider`].

pub(crate) mod anthropic;
pub(crate) mod bedrock;
pub(crate) mod codex;
mod delta_template;
pub(crate) mod google;
pub(crate) mod openai_completions;
pub(crate) mod openai_responses;
pub(crate) mod vertex;

/// True when a request to `model` over an OpenAI API asks for long prompt
/// caching (`asked` is long): where the endpoint takes it
/// ([`crate::Model::cache_retention`]) and is OpenAI's own, or `models.json`
/// says it takes it (pi's `supportsLongCacheRetention: true`, for proxies).
pub(crate) fn openai_long_retention(
    model: &crate::Model,
    asked: crate::options::CacheRetention,
) -> bool {
    use crate::options::CacheRetention;
    model.cache_retention(asked) == CacheRetention::Long
        && model
            .long_cache_retention_set()
            .unwrap_or_else(|| model.base_url.contains("api.openai.com"))
}

/// An `f32` as the JSON number it was written as: `0.7f32` is sent as `0.7`,
/// not `0.699999988079071` (through its shortest decimal form).
pub(crate) fn decimal_f32(v: f32) -> f64 {
    v.to_string().parse().unwrap_or(f64::from(v))
}
