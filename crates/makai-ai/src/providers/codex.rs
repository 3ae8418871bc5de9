//! The Codex Responses endpoint of a ChatGPT subscription
//! (`POST {base_url}/codex/responses`, base `https://chatgpt.com/backend-api`).
//!
//! The body is the OpenAI Responses body (stateless, `store: false`, reasoning
//! replayed from its encrypted content) with the endpoint's differences: it
//! requires `instructions` and rejects `max_output_tokens`. The access token of
//! the ChatGPT login is a bearer token; the endpoint also wants the account id
//! (the `chatgpt_account_id` claim of that token, a JWT) in `chatgpt-account-id`,
//! `OpenAI-Beta: responses=experimental`, an `originator`, and the session id in
//! `session_id` for prompt caching. The stream is the Responses event stream.

use crate::context::Context;
use crate::credentials::Credential;
use crate::error::ProviderError;
use crate::model::Model;
use crate::options::{CacheRetention, StreamOptions};
use crate::provider::{WireApi, WireDecoder, WireRequest};
use crate::providers::openai_responses;

/// The `originator` header value.
pub(crate) const ORIGINATOR: &str = "makai";

/// `openai-codex-responses`.
pub(crate) struct CodexResponses;

impl WireApi for CodexResponses {
    fn build_request(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
        credential: Option<&Credential>,
    ) -> Result<WireRequest, ProviderError> {
        let mut headers = vec![
            ("accept".to_string(), "text/event-stream".to_string()),
            (
                "OpenAI-Beta".to_string(),
                "responses=experimental".to_string(),
            ),
            ("originator".to_string(), ORIGINATOR.to_string()),
        ];
        // No token yet: the driver resolves it and rebuilds these headers.
        if let Some(token) = credential.and_then(Credential::key) {
            let account =
                crate::credentials::codex_account_id(token.expose()).ok_or_else(|| {
                    ProviderError::InvalidRequest(
                    "the ChatGPT access token names no account (it is not a Codex login token); \
                     run `makai auth login openai-codex` again"
                        .to_string(),
                )
                })?;
            headers.push((
                "authorization".to_string(),
                format!("Bearer {}", token.expose()),
            ));
            headers.push(("chatgpt-account-id".to_string(), account));
        }
        if let Some(session) = options
            .session_id
            .as_deref()
            .filter(|s| !s.is_empty() && options.cache_retention != CacheRetention::None)
        {
            headers.push(("session_id".to_string(), session.to_string()));
        }
        for (k, v) in model.headers.iter().chain(options.headers.iter()) {
            headers.retain(|(existing, _)| !existing.eq_ignore_ascii_case(k));
            headers.push((k.clone(), v.clone()));
        }
        let base = model.base_url.trim_end_matches('/');
        let url = if base.ends_with("/codex/responses") {
            base.to_string()
        } else {
            format!("{base}/codex/responses")
        };
        Ok(WireRequest {
            url,
            headers,
            body: openai_responses::request::body(model, context, options, true)?,
        })
    }

    fn decoder(&self) -> Box<dyn WireDecoder> {
        openai_responses::OpenAiResponses.decoder()
    }

    fn provider_effort(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> Option<String> {
        openai_responses::OpenAiResponses.provider_effort(model, context, options)
    }
}
