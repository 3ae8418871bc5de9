//! makai-mcp's integration tests: the MCP client against the official servers
//! and makai's test server, mcp.json loading, the sandbox around servers, and
//! serving makai's tools over MCP. One module per concern.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

mod admin;
mod agent_run;
mod client_cases;
mod client_http;
mod mcp_json;
mod reload;
mod sandbox;
mod serve;
