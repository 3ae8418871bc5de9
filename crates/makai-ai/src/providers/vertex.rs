//! Google Vertex AI: Gemini (`google-vertex`) and Claude (`anthropic-vertex`).
//!
//! The base URL arrives concrete from [`crate::endpoint`]
//! (`https://{location}-aiplatform.googleapis.com/v1/projects/{p}/locations/{l}`).
//! - Gemini: `{base}/publishers/google/models/{id}:streamGenerateContent?alt=sse`,
//!   the body and stream of the Gemini API; an ADC token as a bearer token, an
//!   API key (express mode) in `x-goog-api-key`.
//! - Claude: `{base}/publishers/anthropic/models/{id}:streamRawPredict`, the
//!   Anthropic Messages body with `anthropic_version: vertex-2023-10-16` instead
//!   of `model`, and the Anthropic event stream; always a bearer token.

use crate::context::Context;
use crate::credentials::Credential;
use crate::error::ProviderError;
use crate::model::Model;
use crate::options::StreamOptions;
use crate::provider::{WireApi, WireDecoder, WireRequest};
use crate::providers::{anthropic, google};

/// `google-vertex`: Gemini on Vertex AI.
pub(crate) struct GoogleVertex;

/// `anthropic-vertex`: Claude on Vertex AI.
pub(crate) struct AnthropicVertex;

fn with_headers(
    mut headers: Vec<(String, String)>,
    model: &Model,
    options: &StreamOptions,
) -> Vec<(String, String)> {
    for (k, v) in model.headers.iter().chain(options.headers.iter()) {
        headers.retain(|(existing, _)| !existing.eq_ignore_ascii_case(k));
        headers.push((k.clone(), v.clone()));
    }
    headers
}

fn bearer(credential: Option<&Credential>) -> Option<(String, String)> {
    match credential {
        Some(Credential::Bearer(token)) => Some((
            "authorization".to_string(),
            format!("Bearer {}", token.expose()),
        )),
        _ => None,
    }
}

impl WireApi for GoogleVertex {
    fn build_request(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
        credential: Option<&Credential>,
    ) -> Result<WireRequest, ProviderError> {
        let mut publisher = model.clone();
        publisher.base_url = format!("{}/publishers/google", model.base_url.trim_end_matches('/'));
        let key = match credential {
            Some(Credential::ApiKey(k)) => Some(k),
            _ => None,
        };
        let mut wire = google::request::build(&publisher, context, options, key)?;
        if let Some(h) = bearer(credential) {
            wire.headers.insert(0, h);
        }
        Ok(wire)
    }

    fn decoder(&self) -> Box<dyn WireDecoder> {
        google::GoogleGenerativeAi.decoder()
    }

    fn provider_effort(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> Option<String> {
        google::GoogleGenerativeAi.provider_effort(model, context, options)
    }
}

impl WireApi for AnthropicVertex {
    fn build_request(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
        credential: Option<&Credential>,
    ) -> Result<WireRequest, ProviderError> {
        let id = model.id.strip_prefix("anthropic/").unwrap_or(&model.id);
        let url = format!(
            "{}/publishers/anthropic/models/{id}:streamRawPredict",
            model.base_url.trim_end_matches('/')
        );
        let mut headers = vec![("accept".to_string(), "text/event-stream".to_string())];
        // Claude on Vertex takes OAuth tokens only: any key is sent as one.
        if let Some(token) = credential.and_then(Credential::key) {
            headers.push((
                "authorization".to_string(),
                format!("Bearer {}", token.expose()),
            ));
        }
        Ok(WireRequest {
            url,
            headers: with_headers(headers, model, options),
            body: anthropic::request::body(model, context, options, true)?,
        })
    }

    fn decoder(&self) -> Box<dyn WireDecoder> {
        anthropic::AnthropicMessages.decoder()
    }

    fn provider_effort(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> Option<String> {
        anthropic::AnthropicMessages.provider_effort(model, context, options)
    }

    fn caches_for_an_hour(&self, model: &Model, options: &StreamOptions) -> bool {
        anthropic::AnthropicMessages.caches_for_an_hour(model, options)
    }
}
