//! Serving makai tools to MCP clients.

use std::path::PathBuf;

use makai_agent::{ToolContext, ToolError, ToolSet};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool as SdkTool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::{Value, json};

use crate::content::output_to_json;

/// An MCP server exposing a set of makai tools.
#[derive(Clone)]
pub(crate) struct ToolsServer {
    tools: ToolSet,
    cwd: PathBuf,
    name: String,
}

impl ToolsServer {
    pub(crate) fn new(tools: ToolSet, cwd: PathBuf, name: impl Into<String>) -> Self {
        ToolsServer {
            tools,
            cwd,
            name: name.into(),
        }
    }

    fn sdk_tools(&self) -> Vec<SdkTool> {
        self.tools
            .iter()
            .filter_map(|t| {
                let mut wire = json!({
                    "name": t.name(),
                    "description": t.description(),
                    "inputSchema": t.parameters(),
                    "annotations": {
                        "readOnlyHint": t.read_only(),
                        "destructiveHint": !t.read_only(),
                        "openWorldHint": false,
                    },
                });
                if t.label() != t.name() {
                    wire["title"] = Value::from(t.label());
                }
                match serde_json::from_value::<SdkTool>(wire) {
                    Ok(tool) => Some(tool),
                    Err(e) => {
                        tracing::warn!(tool = t.name(), error = %e, "cannot describe the tool over MCP; it is not served");
                        None
                    }
                }
            })
            .collect()
    }

    /// Runs one call; a failing tool becomes an error result the client shows.
    async fn run(&self, params: CallToolRequestParams, ctx: RequestContext<RoleServer>) -> Value {
        let name = params.name.to_string();
        let args = Value::Object(params.arguments.unwrap_or_default());
        let Some(tool) = self.tools.get(&name).cloned() else {
            let known = self.tools.names().join(", ");
            return error_json(format!("Unknown tool '{name}'. The tools are: {known}."));
        };
        if let Err(problems) = self.tools.validate(&name, &args) {
            return error_json(format!(
                "Invalid arguments for '{name}': {}",
                problems.join("; ")
            ));
        }
        let call_id = format!("mcp-{}", super::to_wire(&ctx.id));
        let tool_ctx = ToolContext::detached(call_id.clone(), self.cwd.clone());
        let cancel = tool_ctx.cancel_token().clone();
        let request_ct = ctx.ct.clone();
        let forward = tokio::spawn(async move {
            request_ct.cancelled().await;
            cancel.cancel();
        });
        let result = tool.execute(&call_id, args, tool_ctx).await;
        forward.abort();
        match result {
            Ok(out) => output_to_json(&out, false),
            Err(ToolError::Cancelled) => error_json("The call was cancelled.".into()),
            Err(e) => output_to_json(&e.into_output(), true),
        }
    }
}

fn error_json(text: String) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": true})
}

impl ServerHandler for ToolsServer {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new(self.name.clone(), env!("CARGO_PKG_VERSION"));
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult {
            tools: self.sdk_tools(),
            ..Default::default()
        })
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let wire = self.run(request, context).await;
        serde_json::from_value::<CallToolResult>(wire)
            .map(CallToolResponse::Complete)
            .map_err(|e| ErrorData::internal_error(format!("cannot encode the result: {e}"), None))
    }
}

/// Serves `server` over this process's standard input and output until the
/// client disconnects.
pub(crate) async fn serve_stdio(server: ToolsServer) -> Result<(), String> {
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| format!("the MCP handshake with the client failed: {e}"))?;
    running
        .waiting()
        .await
        .map_err(|e| format!("the MCP server task failed: {e}"))?;
    Ok(())
}
