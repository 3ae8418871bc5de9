//! A scripted LLM server for tests and benchmarks.
//!
//! [`MockServer`] is a real HTTP server on `127.0.0.1` (ephemeral port by
//! default) that speaks four real LLM wire formats with real SSE framing, so
//! tests drive real HTTP clients through it:
//!
//! | route | API |
//! | --- | --- |
//! | `POST /v1/chat/completions` (or `/chat/completions`) | OpenAI Chat Completions |
//! | `POST /v1/responses` (or `/responses`) | OpenAI Responses |
//! | `POST /v1/messages` (or `/messages`) | Anthropic Messages |
//! | `POST /v1beta/models/{model}:streamGenerateContent?alt=sse` (also `:generateContent`) | Gemini |
//! | `POST /model/{modelId}/converse-stream` (or `/converse`) | Amazon Bedrock ConverseStream (AWS binary event stream) |
//! | `POST .../publishers/google/models/{m}:streamGenerateContent` | Gemini on Vertex AI |
//! | `POST .../publishers/anthropic/models/{m}:streamRawPredict` | Claude on Vertex AI (Anthropic events) |
//! | `POST /openai/v1/chat/completions`, `/openai/v1/responses` | Azure OpenAI |
//! | `POST /backend-api/codex/responses` | the ChatGPT Codex endpoint (Responses events) |
//! | `POST /token` (also `/{tenant}/oauth2/v2.0/token`) | an OAuth2 token endpoint (Google service accounts and users, Entra service principals; see [`TokenEndpoint`]) |
//! | `GET /v1/models` | a JSON model list, for readiness checks |
//!
//! Cloud routes check authentication once a test asks for it
//! ([`MockServer::require_aws`]: SigV4 recomputed server-side by [`sigv4`];
//! [`MockServer::require_azure`]: `api-version` and key;
//! [`MockServer::serve_tokens`]: bearer tokens this server issued).
//!
//! Anything else gets a 404 JSON error. A POST streams `text/event-stream`
//! when its body has `"stream": true` (Gemini's `streamGenerateContent`
//! always streams: SSE with `alt=sse`, else a streamed JSON array); otherwise
//! it gets the API's plain JSON response.
//!
//! Each LLM request consumes the next [`ScriptedResponse`] of the
//! [`Scenario`] (whatever its route), rendered in that route's format, with
//! the model name taken from the request. Once the queue is empty the
//! scenario's [`Responder`] answers, and without one the request gets a 500
//! `{"error":{"message":"mockllm: script exhausted after N requests"}}`.
//! Every request is recorded as a [`RecordedRequest`].
//!
//! # Example
//!
//! ```no_run
//! use makai_mockllm::{ErrorKind, MockServer, Scenario, ScriptedResponse};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let server = MockServer::start(
//!     Scenario::new()
//!         .push(ScriptedResponse::text("Hello world"))
//!         .push(ScriptedResponse::tool_call("call_1", "read", r#"{"path":"a.txt"}"#))
//!         .push(
//!             ScriptedResponse::new()
//!                 .with_status(429)
//!                 .with_header("retry-after", "2")
//!                 .with_body(r#"{"error":{"message":"Rate limit reached. Please try again in 1.8s"}}"#),
//!         )
//!         .push(ScriptedResponse::text("cut short").error_after(3, ErrorKind::Overloaded)),
//! )
//! .await?;
//! let base = server.base_url_v1(); // "http://127.0.0.1:PORT/v1"
//! // ... point an OpenAI / Anthropic client at `base`, a Gemini client at `server.url()` ...
//! server.push(ScriptedResponse::text("one more")); // extend the script at runtime
//! let seen = server.requests();
//! # let _ = (base, seen);
//! drop(server); // shuts the server down
//! # Ok(()) }
//! ```
//!
//! # Scenario files
//!
//! The `makai-mockllm` binary (`makai-mockllm --scenario FILE [--port N]`)
//! loads a scenario from JSON, prints `listening on http://127.0.0.1:PORT` and
//! serves until killed. The file is either an array of responses or
//! `{"responses": [...], "fallback": {...}}` (the fallback answers every
//! request once the list is used up). Every response field is optional and
//! named as in [`ScriptedResponse`]; unknown fields are errors:
//!
//! ```json
//! {
//!   "responses": [
//!     {"items": [{"thinking": {"text": "Let me look.", "signature": "sig-1"}},
//!                {"text": "Reading the file."},
//!                {"tool_call": {"id": "call_1", "name": "read", "arguments": {"path": "a.txt"}}}]},
//!     {"items": [{"text": "Done."}], "usage": {"input": 120, "output": 8, "cache_read": 100},
//!      "chunk_size": 4, "delay_per_event": 5},
//!     {"status": 429, "headers": [["retry-after", "2"]],
//!      "body_override": "{\"error\":{\"message\":\"Rate limit reached\"}}"},
//!     {"items": [{"text": "partial answer"}], "error_event_after": [2, "overloaded"]},
//!     {"replay_file": "transcripts/anthropic.sse", "chunk_size": 7}
//!   ],
//!   "fallback": {"items": [{"text": "no more script"}]}
//! }
//! ```
//!
//! `stop` is `"stop"`, `"length"` or `"tool_use"`; error kinds are
//! `"overloaded"`, `"rate_limit"`, `"server"`, `"invalid_request"`;
//! `delay_per_event` is in milliseconds; `arguments` may be a JSON value or a
//! string of raw JSON text; `replay_bytes` is an array of byte values; a
//! relative `replay_file` is relative to the scenario file. The crate's
//! `examples/scenario.json` is a runnable sample.
//!
//! The binary also has `--bench-tokens N [--bench-tool-rounds R]` (serve
//! [`bench_responder`], each response in one write), `--bench-stream` (each
//! event its own write) with `--bench-delay-us D` (events D microseconds
//! apart), `--bench-paragraph P` (a paragraph every P tokens,
//! [`bench_responder_in_paragraphs`]), and `--no-record`.

mod auth;
mod bench;
mod body;
mod chunking;
mod error;
pub mod invariants;
mod llama_router;
mod record;
mod scenario;
mod script;
mod server;
pub mod sigv4;
mod wire;

pub use auth::{AwsRules, AzureRules, TokenEndpoint};
pub use bench::{BENCH_TOOL, BenchPacing, bench_responder, bench_responder_in_paragraphs};
pub use error::MockError;
pub use record::{RecordedRequest, WireApi};
pub use scenario::{FRIENDLY_TEXT, Responder, Scenario};
pub use script::{ErrorKind, Item, ScriptedResponse, StopKind, Usage};
pub use server::{DEFAULT_MODEL, MockServer, ServerOptions};
