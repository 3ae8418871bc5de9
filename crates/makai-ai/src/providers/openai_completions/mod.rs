//! OpenAI Chat Completions (`POST {base_url}/chat/completions`) and every server
//! that speaks it: OpenAI, Ollama, llama.cpp, vLLM, LM Studio, OpenRouter, Groq,
//! DeepSeek, Mistral, xAI, Cerebras.
//!
//! - [`compat`] guesses what the server accepts from its base URL; explicit
//!   `model.compat` flags win.
//! - [`request`] builds the body (never `content: null`, which llama.cpp rejects).
//! - [`decode`] reads the chunk stream, tolerating the quirks of real servers.

mod compat;
mod decode;
mod request;

use crate::context::Context;
use crate::credentials::Credential;
use crate::error::ProviderError;
use crate::model::Model;
use crate::options::StreamOptions;
use crate::provider::{WireApi, WireDecoder, WireRequest};
use crate::transform::prepare_messages;

/// The `openai-completions` wire API.
pub(crate) struct OpenAiCompletions;

impl WireApi for OpenAiCompletions {
    fn build_request(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
        credential: Option<&Credential>,
    ) -> Result<WireRequest, ProviderError> {
        let api_key = credential.and_then(Credential::key);
        let compat = compat::resolve(model);
        let mut messages = prepare_messages(model, &context.messages, compat.ids);
        if let Some(len) = compat.exact_alnum_ids {
            request::exact_alnum_ids(&mut messages, len);
        }
        request::build(model, context, &messages, options, api_key, &compat)
    }

    fn decoder(&self) -> Box<dyn WireDecoder> {
        Box::new(decode::Decoder::default())
    }

    fn provider_effort(
        &self,
        model: &Model,
        _context: &Context,
        options: &StreamOptions,
    ) -> Option<String> {
        request::effort(model, options, &compat::resolve(model)).map(str::to_string)
    }
}
