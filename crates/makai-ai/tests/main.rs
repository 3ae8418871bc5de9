//! makai-ai's integration tests: every wire API through the real HTTP client and
//! parsers against the scripted LLM server, the catalog, credentials and signing.
//! One module per concern.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

mod aws_chain;
mod azure;
mod bedrock;
mod catalog;
mod client;
mod eventstream_frames;
mod failure_diagnostics;
mod http_behaviour;
mod http_connections;
mod http_timeouts;
mod llama_cpp_router;
mod models_json_compat;
mod request_bodies;
mod secrets_in_logs;
mod sigv4_vectors;
mod subscriptions;
mod tls;
mod vertex;
mod wire_fixtures;
