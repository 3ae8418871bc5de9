//! makai-protocol's integration tests: ProtocolClient in process and over the
//! wire protocol (streaming, cancellation, shutdown, resume, shared sessions,
//! auth and limits). One module per concern.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

mod agent;
mod auth_limits;
mod cancel_shutdown;
mod resume;
mod shared_sessions;
mod streaming;
