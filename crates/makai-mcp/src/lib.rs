//! makai-mcp: Model Context Protocol for makai.
//!
//! # Client
//!
//! [`McpManager`] runs the MCP servers configured under `mcpServers` in the
//! settings files and `mcp.json` files, pi's included ([`load_mcp_sources`],
//! [`McpSources`]; shape in [`config`]). Servers start in
//! the background and never hold up start-up: [`McpManager::tools`] returns,
//! at any moment, the tools of the servers that are ready, as agent tools
//! named `mcp__<server>__<tool>`, as pi names them (sanitized to `^[a-zA-Z0-9_-]{1,64}$`, see
//! [`naming`]) whose parameters are the server's input schema and which are
//! read-only when the server marks them `readOnlyHint`. State changes
//! (starting, ready, restarting, failed) are logged and broadcast as
//! [`McpEvent`]s; the tool list follows `notifications/tools/list_changed`.
//!
//! A call has a timeout (per server, `timeout` in seconds); passing it, or
//! aborting the run, sends `notifications/cancelled` to the server and gives
//! the model an error result. A server that dies is restarted with backoff;
//! calls meanwhile get an error result saying so. Results keep text and
//! images, turn structured content into JSON text and `isError` into an error
//! result ([`content`]).
//!
//! A stdio server's environment is its config's `env` plus a minimal safe set
//! ([`env::SAFE_VARS`]: `PATH`, `HOME`, locale, temp folder) — never makai's
//! whole environment, which holds provider API keys.
//!
//! # Server
//!
//! [`serve_builtin_tools_stdio`] exposes makai's built-in tools over stdio
//! (`makai mcp serve`), honouring path confinement and dry-run.
//!
//! # Subcommands
//!
//! [`list_report`], [`add_server`] and [`remove_server`] implement `makai mcp
//! list/add/remove`.
//!
//! The MCP SDK (`rmcp`) is used only inside the private `sdk` module.

pub mod admin;
pub mod config;
pub mod content;
pub mod env;
pub mod exposure;
pub mod load;
pub mod long_text;
mod manager;
pub mod naming;
pub mod resources;
mod sdk;
mod serve;
mod servers;
mod status;
mod supervisor;
mod tool;

pub use admin::{
    add_server, format_report, list_report, remove_server, report_servers, settings_file_for,
    validate_server_name,
};
pub use config::{McpServerConfig, ServerConfigError, ServerSandbox, ServerTransport};
pub use exposure::{Exposure, ToolExposure};
pub use load::{
    ConfigScope, LoadedMcpConfig, MCP_FILE, McpConfigError, McpSources, ServerEntry,
    load_mcp_config, load_mcp_sources, project_settings_file, user_settings_file,
};
pub use manager::{McpManager, McpReload, ServerDescription};
pub use sdk::ProgressUpdate;
pub use serve::{ServeError, serve_builtin_tools_stdio, serve_tools_stdio};
pub use status::{McpEvent, ServerState, ServerStatus};
pub use supervisor::{EnvLookup, McpOptions};
pub use tool::{McpTool, progress_text};
