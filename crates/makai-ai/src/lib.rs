//! makai-ai: the provider layer of makai.
//!
//! One message model ([`Message`]), one streaming event model
//! ([`AssistantMessageEvent`]), and providers for the real wire APIs: Anthropic
//! Messages, OpenAI Chat Completions (and every OpenAI-compatible server), OpenAI
//! Responses and Google Gemini. [`stream`] runs one model call with retries,
//! timeouts and cancellation; every failure becomes an `error` event, never a panic.
//!
//! ```no_run
//! # async fn demo() {
//! use futures::StreamExt;
//! use makai_ai::{Api, Context, Model, StreamOptions, UserMessage, stream};
//!
//! let model = Model::custom(Api::OpenAiCompletions, "local", "qwen", "http://127.0.0.1:8080/v1");
//! let context = Context { messages: vec![UserMessage::text("Hi!").into()], ..Default::default() };
//! let mut events = stream(&model, &context, StreamOptions::default());
//! while let Some(event) = events.next().await {
//!     println!("{event:?}");
//! }
//! # }
//! ```

mod accumulator;
mod builder;
pub mod catalog;
mod client;
mod context;
pub mod credentials;
mod endpoint;
pub mod error;
mod event;
mod event_stream;
mod framing;
mod http;
mod message;
mod model;
pub mod models_json;
mod options;
pub mod partial_json;
mod provider;
mod providers;
pub mod quote;
pub mod shell_command;
pub mod sigv4;
pub mod sse;
mod stream;
pub mod tagged;
pub mod testing;
pub mod transform;
mod usage;

pub use accumulator::MessageAccumulator;
pub use builder::MessageBuilder;
pub use client::{InProcessClient, ProtocolClient};
pub use context::{Context, ToolDefinition};
pub use error::ProviderError;
pub use event::{AssistantMessageEvent, Delta};
pub use event_stream::AssistantMessageEventStream;
pub use message::{
    AssistantContent, AssistantMessage, AssistantMessageDiagnostic, DeferredHandle, DiagnosticCode,
    DiagnosticError, ImageContent, Message, NestedCallStatus, NestedToolCall, NestedToolCalls,
    StopReason, TextContent, ThinkingContent, Timestamp, ToolCall, ToolResultMessage, UserContent,
    UserMessage, assistant_parts, now_ms, user_parts,
};
pub use model::{
    Api, CompatFlags, CostTier, Modality, Model, ModelCost, PromptCacheKeyMode,
    PromptCacheLifetimes, ThinkingLevelMap,
};
pub use options::{
    ApiKey, CacheRetention, EnvOverrides, RetryPolicy, StreamOptions, ThinkingBudgets,
    ThinkingLevel, ToolChoice,
};
pub use provider::{HttpRequest, build_request};
pub use stream::{complete, decode_body, http_client, preconnect, stream};
pub use usage::{Usage, UsageCost};

pub use tokio_util::sync::CancellationToken;
