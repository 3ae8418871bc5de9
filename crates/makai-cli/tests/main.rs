//! makai's integration tests: the binary driven as users drive it (print, JSON,
//! RPC and interactive modes, serve, MCP, sessions), through the scripted LLM
//! server. One module per concern.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

mod approvals;
mod auth;
mod auth_subscriptions;
mod block_images;
mod bounded_tool_errors;
mod budget;
mod cache_warming;
mod cloud_models;
mod codemode;
mod default_tools;
mod first_turn;
mod http_settings;
mod image_resize;
mod llama_cpp;
mod local_model;
mod logging;
mod mcp;
mod models_json;
mod names_and_session_paths;
mod offline;
mod one_door;
mod overview;
mod pi1_client;
mod pi_cli_flags;
mod pi_client;
mod pi_session;
mod print_json;
mod project_trust;
mod resources;
mod rpc;
mod rpc_pi1;
mod sandbox;
mod serve;
mod serve_scale;
mod session_cwd;
mod session_damage;
mod shell_session_env;
mod store_pg;
mod stream_reading;
mod subagents;
mod thinking_levels;
mod tui_approvals;
mod tui_branch_summary;
mod tui_bug_report;
mod tui_hangup;
mod tui_images;
mod tui_keys;
mod tui_links;
mod tui_llama;
mod tui_mouse;
mod tui_pi_commands;
mod tui_program_status;
mod tui_regular;
mod tui_resume;
mod tui_session_cwd;
mod tui_summaries;
mod tui_themes;
mod tui_tmux;
mod tui_transcript;
mod tui_tree_labels;
