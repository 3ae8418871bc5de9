//! The wire APIs. Each module has a request builder and a decoder; see [`crate::provider`].

pub(crate) mod anthropic;
pub(crate) mod google;
pub(crate) mod openai_completions;
pub(crate) mod openai_responses;
