//! makai-agent's integration tests: agent_loop, agent_loop_continue and the
//! stateful Agent through the public API, every stream checked by the shared
//! event-contract helper. One module per concern.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

mod agent;
mod agent_compact;
mod branch_summary;
mod budget;
mod compaction;
mod hook_panics;
mod http;
mod inline_subscriber;
mod limits;
mod loop_context;
mod loop_control;
mod loop_events;
mod loop_nested_calls;
mod loop_tools;
mod queued;
