//! The wire APIs. Each module has a request builder and a decoder; see [`crate::provider`].

pub(crate) mod anthropic;
mod delta_template;
pub(crate) mod google;
pub(crate) mod openai_completions;
pub(crate) mod openai_responses;

/// `data` shortened to 200 characters (with `…` when cut), for quoting bad wire
/// data in an error message.
pub(crate) fn snippet(data: &str) -> String {
    let mut out: String = data.chars().take(200).collect();
    if out.len() < data.len() {
        out.push('…');
    }
    out
}
