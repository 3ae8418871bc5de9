//! makai-protocol: makai's protocol layer.
//!
//! Everything reaches models only through a [`makai_ai::ProtocolClient`].
//! This crate carries that interface over a connection, so the agent loop can
//! run on one machine and the providers (and their credentials) on another:
//!
//! - [`envelope`]: the wire format, one JSON envelope `{v, stream, seq, type,
//!   payload}` per frame; every message of a stream is sequenced so the client
//!   detects gaps and duplicates.
//! - [`transport`]: frames over WebSocket, or newline-delimited JSON over TCP
//!   or a Unix socket.
//! - [`serve`] / [`ProtocolServer`]: the server behind `makai serve`. It
//!   authenticates every connection with a bearer token ([`ServeToken`]),
//!   runs model calls on its own [`makai_ai::ProtocolClient`] and serves
//!   an agent session ([`SessionHandler`]) to remote UIs.
//! - [`RemoteProtocolClient`]: the client side; implements `ProtocolClient`,
//!   multiplexes streams on one connection, reconnects and resumes.
//!
//! The protocol itself is specified in `docs/protocol.md`.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use makai_protocol::{RemoteProtocolClient, ServeToken, ServerConfig, serve};
//!
//! let token = ServeToken::load_or_create(&ServeToken::default_path()?)?;
//! if token.was_created() {
//!     println!("token: {}", token.secret());
//! }
//! let server = serve(ServerConfig::new(token.secret())).await?;
//! let client = RemoteProtocolClient::connect(&server.ws_url(), token.secret()).await?;
//! let client: Arc<dyn makai_ai::ProtocolClient> = Arc::new(client);
//! # let _ = client; Ok(()) }
//! ```

pub mod client;
pub mod envelope;
pub mod payload;
pub mod server;
pub mod session;
pub mod testing;
pub mod token;
pub mod transport;

pub use client::{ClientConfig, ClientError, ClientStats, RemoteProtocolClient, SessionEvents};
pub use envelope::{Body, Envelope, Kind, PROTOCOL_VERSION};
pub use payload::{
    EndReason, ErrorCode, Json, PreconnectRequest, StreamRequest, WireLimits, WireOptions,
};
pub use server::{
    DEFAULT_PORT, Limits, ProtocolServer, ServeError, ServerConfig, ServerStats, ShutdownReport,
    serve,
};
pub use session::{Refusal, SessionHandler};
pub use token::{ServeToken, TokenError, generate_token};
