//! pi's `tool_search` tool: finds tools that are not declared to the model
//! (MCP tools of `codemode` and `deferred` exposure, [`IndirectTools`]) and
//! declares the matches from the next model call on
//! ([`makai_agent::ToolContext::declare_tools`]).
//!
//! It ranks tools as codemode's `searchTools()` does (BM25 over each tool's
//! name, description, and its arguments' property names and descriptions,
//! also behind a local `$ref`). The loop records the loaded tools in the
//! transcript (a system message with `toolsAdded`), so they stay declared
//! on that branch of the session.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use makai_agent::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use makai_codemode::Catalog;

use super::codemode::{IndirectTools, callable};

/// The tool's name.
pub const TOOL_SEARCH_TOOL_NAME: &str = "tool_search";

/// How many tools a search loads unless it says.
pub const DEFAULT_LIMIT: usize = 5;

/// The most a search loads.
pub const MAX_LIMIT: usize = 20;

/// The `tool_search` tool over `indirect`.
pub struct ToolSearchTool {
    spec: ToolSpec,
    indirect: IndirectTools,
}

impl std::fmt::Debug for ToolSearchTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSearchTool").finish_non_exhaustive()
    }
}

impl ToolSearchTool {
    /// The tool, searching the tools `indirect` holds when it runs.
    pub fn new(indirect: IndirectTools) -> Self {
        let spec = ToolSpec::new(
            TOOL_SEARCH_TOOL_NAME,
            "Search the tools that are not declared to you yet (such as MCP servers' tools) by what they do, and load the best matches: they are declared to you from your next response on, and stay declared for the rest of the session. Search with a few words naming the capability you need.",
            json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Words naming the capability you need (e.g. \"create github issue\")."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": format!("How many matching tools to load (default {DEFAULT_LIMIT}).")}
                },
                "required": ["query"],
                "additionalProperties": false
            }),
        )
        .with_label("tool search")
        .with_read_only(true);
        ToolSearchTool { spec, indirect }
    }

    /// The tool as an `Arc<dyn Tool>`.
    pub fn into_arc(self) -> Arc<dyn Tool> {
        Arc::new(self)
    }
}

#[async_trait]
impl Tool for ToolSearchTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn execute(
        &self,
        _call_id: &str,
        args: Value,
        ctx: ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let query = args
            .get("query")
            .and_then(Value::as_str)
            .map(str::trim)
            .unwrap_or_default();
        if query.is_empty() {
            return Err(ToolError::failed(
                "tool_search needs a 'query': a few words naming the capability you need",
            ));
        }
        let limit = args
            .get("limit")
            .and_then(Value::as_u64)
            .map_or(DEFAULT_LIMIT, |n| (n as usize).clamp(1, MAX_LIMIT));
        // Servers still connecting are waited for (as pi does).
        let (set, namespaces) = self.indirect.settled().await;
        let declared = ctx.snapshot().map(|s| s.tools.clone()).unwrap_or_default();
        let candidates: Vec<&Arc<dyn Tool>> = set
            .iter()
            .filter(|t| declared.get(t.name()).is_none())
            .collect();
        let catalog = Catalog::new(
            candidates.iter().map(|t| callable(t, false)).collect(),
            namespaces,
        );
        let found: Vec<(String, String)> = catalog
            .search(query, limit, None)
            .into_iter()
            .map(|s| (s.name.to_string(), s.description.to_string()))
            .collect();
        if found.is_empty() {
            let text = if candidates.is_empty() {
                "Every tool is already declared to you: there is nothing to load.".to_string()
            } else {
                format!(
                    "No tool matches \"{query}\" among the {} that can be loaded. Try other words.",
                    candidates.len()
                )
            };
            return Ok(ToolOutput::text(text).with_details(
                json!({"query": query, "loaded": [], "available": candidates.len()}),
            ));
        }
        let tools: Vec<Arc<dyn Tool>> = found
            .iter()
            .filter_map(|(name, _)| set.get(name).cloned())
            .collect();
        if !ctx.declare_tools(tools) {
            return Err(ToolError::failed(
                "tool_search can only load tools inside an agent run",
            ));
        }
        let mut text = format!(
            "Loaded {} tool{}; call {} from your next response on:",
            found.len(),
            if found.len() == 1 { "" } else { "s" },
            if found.len() == 1 { "it" } else { "them" }
        );
        for (name, description) in &found {
            text.push_str(&format!("\n- {name}: {description}"));
        }
        let names: Vec<&str> = found.iter().map(|(n, _)| n.as_str()).collect();
        Ok(ToolOutput::text(text).with_details(json!({"query": query, "loaded": names})))
    }
}
