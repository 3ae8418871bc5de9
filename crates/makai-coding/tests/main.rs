//! makai-coding's integration tests: the built-in tools, sessions, settings,
//! context files, sub-agents and budgets through the public API. One module per
//! concern.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

mod cache_warming;
mod overview;
mod resources;
mod session_damage;
mod session_durability;
mod session_format;
mod session_pi152_messages;
mod session_pi1x;
mod session_repair;
mod session_store;
mod session_title;
mod session_tree;
mod settings_context_and_specs;
mod settings_load;
mod spending;
mod subagent_budget;
mod subagents;
mod tool_search;
mod tools_adapter;
mod tools_bash;
mod tools_bash_sandbox;
mod tools_bounded_errors;
mod tools_dry_run;
mod tools_files;
mod tools_paths;
mod tools_search;
mod trust;
