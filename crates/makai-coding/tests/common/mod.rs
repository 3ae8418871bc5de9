pub mod subagents;
