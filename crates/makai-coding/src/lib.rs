//! makai-coding: what makes the agent a coding agent. The built-in tools
//! ([`tools`]), sessions as a tree ([`session`]), settings, project trust and
//! system-prompt files ([`settings`], [`trust`], [`system_files`]), context
//! files, skills and prompt templates ([`context_files`], [`resources`]),
//! agent specs, limits and sub-agents ([`agent_spec`], [`limits`],
//! [`subagent`]), approvals and the sandbox settings ([`approvals`],
//! [`sandbox_settings`]), images fitted for a request ([`images`]).
pub mod agent_spec;
pub mod approvals;
pub mod cache_warming;
pub mod context_files;
pub mod extensions;
pub mod first_turn;
pub mod images;
pub mod limits;
pub mod overview;
pub mod prompts;
pub mod resources;
pub mod sandbox_settings;
pub mod session;
pub mod settings;
pub mod subagent;
pub mod system_files;
pub mod tools;
pub mod trust;

pub use agent_spec::{AgentCatalog, AgentSpec, build_system_prompt};
pub use context_files::{ContextFile, context_section, discover_context_files};
pub use limits::Limits;
pub use overview::{OverviewOptions, overview_budget, workspace_overview};
pub use resources::{CommandInfo, Expanded, Resources, expand_input, list_commands};
pub use session::{JsonlStore, Session, SessionStore, SharedSession};
pub use settings::{Settings, makai_home};
pub use tools::{PathPolicy, ToolEnv, builtin_tools, tools_by_names};
