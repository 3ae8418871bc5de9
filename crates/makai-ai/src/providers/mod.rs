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

/// What a tool result with no text is sent as.
pub(crate) const NO_OUTPUT: &str = "(no output)";

/// A tool result's text as the APIs that refuse a blank tool output take it
/// (OpenAI's Chat Completions and Responses, Google's): its text;
/// `images_note` when its text is blank and it has images; [`NO_OUTPUT`]
/// when it has neither (a bare `\r\n` from a command failed the whole
/// request with a 400; pi's #8720).
pub(crate) fn tool_output_text(
    r: &crate::ToolResultMessage,
    images_note: &'static str,
) -> std::borrow::Cow<'static, str> {
    let text = r.text_content();
    if !text.trim().is_empty() {
        return std::borrow::Cow::Owned(text);
    }
    let has_images = r
        .content
        .iter()
        .any(|c| matches!(c, crate::UserContent::Image(_)));
    std::borrow::Cow::Borrowed(if has_images { images_note } else { NO_OUTPUT })
}

/// An `f32` as the JSON number it was written as: `0.7f32` is sent as `0.7`,
/// not `0.699999988079071` (through its shortest decimal form).
pub(crate) fn decimal_f32(v: f32) -> f64 {
    v.to_string().parse().unwrap_or(f64::from(v))
}
