//! What the server saw: [`RecordedRequest`] and the [`WireApi`] a path maps to.

use serde::{Deserialize, Serialize};

/// One of the four LLM wire APIs the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireApi {
    /// OpenAI Chat Completions: `POST /v1/chat/completions`.
    ChatCompletions,
    /// OpenAI Responses: `POST /v1/responses`.
    Responses,
    /// Anthropic Messages: `POST /v1/messages`.
    AnthropicMessages,
    /// Gemini: `POST /v1beta/models/{model}:streamGenerateContent` (or
    /// `:generateContent`), also on Vertex AI's
    /// `.../publishers/google/models/{model}:streamGenerateContent`.
    Gemini,
    /// Amazon Bedrock: `POST /model/{modelId}/converse-stream` (or `/converse`).
    BedrockConverseStream,
}

impl WireApi {
    /// The API a request path belongs to, if any (query string excluded).
    /// Azure OpenAI (`/openai/v1/...`) and the Codex endpoint
    /// (`/backend-api/codex/responses`) speak Chat Completions and Responses;
    /// Claude on Vertex AI (`.../publishers/anthropic/models/{m}:streamRawPredict`)
    /// speaks Anthropic Messages.
    pub fn from_path(path: &str) -> Option<Self> {
        match path {
            "/v1/chat/completions" | "/chat/completions" | "/openai/v1/chat/completions" => {
                Some(Self::ChatCompletions)
            }
            "/v1/responses"
            | "/responses"
            | "/openai/v1/responses"
            | "/codex/responses"
            | "/backend-api/codex/responses" => Some(Self::Responses),
            "/v1/messages" | "/messages" => Some(Self::AnthropicMessages),
            _ if bedrock_target(path).is_some() => Some(Self::BedrockConverseStream),
            _ if vertex_anthropic_target(path).is_some() => Some(Self::AnthropicMessages),
            _ => gemini_target(path).map(|_| Self::Gemini),
        }
    }
}

/// Parses `/model/{id}/converse-stream` (or `/converse`): the decoded model id
/// and whether it streams.
pub(crate) fn bedrock_target(path: &str) -> Option<(String, bool)> {
    let rest = path.strip_prefix("/model/")?;
    let (id, action) = rest.rsplit_once('/')?;
    let stream = match action {
        "converse-stream" => true,
        "converse" => false,
        _ => return None,
    };
    let id = percent_encoding::percent_decode_str(id)
        .decode_utf8()
        .ok()?
        .into_owned();
    (!id.is_empty()).then_some((id, stream))
}

/// Parses `.../publishers/anthropic/models/{m}:streamRawPredict` (or `:rawPredict`).
pub(crate) fn vertex_anthropic_target(path: &str) -> Option<(String, bool)> {
    let (_, rest) = path.split_once("/publishers/anthropic/models/")?;
    let (model, action) = rest.rsplit_once(':')?;
    let stream = match action {
        "streamRawPredict" => true,
        "rawPredict" => false,
        _ => return None,
    };
    Some((model.to_owned(), stream))
}

/// A Gemini request target: the model and whether it streams.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GeminiTarget {
    pub(crate) model: String,
    pub(crate) stream: bool,
}

/// Parses `/v1beta/models/{model}:streamGenerateContent` (or `:generateContent`).
pub(crate) fn gemini_target(path: &str) -> Option<GeminiTarget> {
    let rest = path
        .strip_prefix("/v1beta/models/")
        .or_else(|| path.strip_prefix("/v1/models/"))
        .or_else(|| {
            path.split_once("/publishers/google/models/")
                .map(|(_, r)| r)
        })?;
    let (model, action) = rest.rsplit_once(':')?;
    if model.is_empty() {
        return None;
    }
    let stream = match action {
        "streamGenerateContent" => true,
        "generateContent" => false,
        _ => return None,
    };
    Some(GeminiTarget {
        model: model.to_owned(),
        stream,
    })
}

/// One request as the server received it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedRequest {
    /// HTTP method, e.g. `"POST"`.
    pub method: String,
    /// Path without the query string, e.g. `"/v1/chat/completions"`.
    pub path: String,
    /// The raw query string without `?`, if any (e.g. `"alt=sse"`).
    pub query: Option<String>,
    /// Headers in arrival order, names lowercased; values lossily decoded.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON, or `Null` if it is not JSON.
    pub body: serde_json::Value,
    /// The body as text (lossily decoded).
    pub raw_body: String,
}

impl RecordedRequest {
    /// The first value of a header (name matched case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The wire API this request's path belongs to, if any.
    pub fn wire_api(&self) -> Option<WireApi> {
        WireApi::from_path(&self.path)
    }

    /// The requested model: `body.model`, or for Gemini the model in the path.
    pub fn model(&self) -> Option<String> {
        if let Some(target) = gemini_target(&self.path) {
            return Some(target.model);
        }
        if let Some((model, _)) =
            bedrock_target(&self.path).or_else(|| vertex_anthropic_target(&self.path))
        {
            return Some(model);
        }
        self.body
            .get("model")
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
    }

    /// Whether the request asks for a stream (`"stream": true`; Gemini:
    /// `:streamGenerateContent`).
    pub fn wants_stream(&self) -> bool {
        if let Some(target) = gemini_target(&self.path) {
            return target.stream;
        }
        if let Some((_, stream)) = bedrock_target(&self.path) {
            return stream;
        }
        self.body.get("stream").and_then(serde_json::Value::as_bool) == Some(true)
    }

    /// Whether a query parameter is present with this exact value (e.g. `alt=sse`).
    pub fn has_query_param(&self, key: &str, value: &str) -> bool {
        self.query.as_deref().is_some_and(|q| {
            q.split('&')
                .any(|pair| pair.split_once('=') == Some((key, value)))
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn paths_map_to_apis() {
        assert_eq!(
            WireApi::from_path("/v1/chat/completions"),
            Some(WireApi::ChatCompletions)
        );
        assert_eq!(WireApi::from_path("/responses"), Some(WireApi::Responses));
        assert_eq!(
            WireApi::from_path("/v1/messages"),
            Some(WireApi::AnthropicMessages)
        );
        assert_eq!(
            WireApi::from_path("/v1beta/models/gemini-2.5-flash:streamGenerateContent"),
            Some(WireApi::Gemini)
        );
        assert_eq!(WireApi::from_path("/v1beta/models/x:countTokens"), None);
        assert_eq!(
            WireApi::from_path("/model/us.anthropic.claude-v1%3A0/converse-stream"),
            Some(WireApi::BedrockConverseStream)
        );
        assert_eq!(
            bedrock_target("/model/us.anthropic.claude-v1%3A0/converse-stream"),
            Some(("us.anthropic.claude-v1:0".into(), true))
        );
        assert_eq!(
            WireApi::from_path(
                "/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-x:streamRawPredict"
            ),
            Some(WireApi::AnthropicMessages)
        );
        assert_eq!(
            WireApi::from_path(
                "/v1/projects/p/locations/l/publishers/google/models/gemini-2.5-pro:streamGenerateContent"
            ),
            Some(WireApi::Gemini)
        );
        assert_eq!(WireApi::from_path("/nope"), None);
        let t = gemini_target("/v1beta/models/gemini-2.5-pro:generateContent");
        assert_eq!(
            t,
            Some(GeminiTarget {
                model: "gemini-2.5-pro".into(),
                stream: false
            })
        );
    }
}
