//! The test server's tools: each one a precise case for the client.
//!
//! Shared by the binary (stdio) and the tests (streamable HTTP in-process).

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelledNotificationParam,
    Implementation, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Value, json};

/// A 1×1 red PNG.
pub const RED_PIXEL_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/// The test server.
#[derive(Clone, Default)]
pub struct Cases {
    /// Appends one line per notable event (calls, cancellations) here.
    pub log: Option<PathBuf>,
    /// Tools added at run time by `add_tool`.
    extra: Arc<Mutex<Vec<String>>>,
}

impl Cases {
    /// A server logging to `log`.
    pub fn new(log: Option<PathBuf>) -> Self {
        Cases {
            log,
            extra: Arc::default(),
        }
    }

    fn note(&self, line: &str) {
        if let Some(path) = &self.log
            && let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
        {
            // Test server: a log line that cannot be written changes no case.
            let _ = writeln!(f, "{line}");
        }
    }

    fn tool_list(&self) -> Vec<Tool> {
        let obj = |props: Value, required: Value| json!({"type": "object", "properties": props, "required": required});
        let mut wire = vec![
            json!({"name": "echo", "description": "Returns its text.", "title": "Echo",
                   "inputSchema": obj(json!({"text": {"type": "string"}}), json!(["text"])),
                   "annotations": {"readOnlyHint": true}}),
            json!({"name": "add", "description": "Adds two numbers; structured result.",
                   "inputSchema": obj(json!({"a": {"type": "number"}, "b": {"type": "number"}}), json!(["a", "b"])),
                   "annotations": {"readOnlyHint": true}}),
            json!({"name": "fail", "description": "Always returns an error result.",
                   "inputSchema": obj(json!({}), json!([]))}),
            json!({"name": "image", "description": "Returns a tiny image.",
                   "inputSchema": obj(json!({}), json!([])), "annotations": {"readOnlyHint": true}}),
            json!({"name": "crash", "description": "Kills the server in the middle of the call.",
                   "inputSchema": obj(json!({}), json!([]))}),
            json!({"name": "hang", "description": "Never answers (until cancelled).",
                   "inputSchema": obj(json!({}), json!([]))}),
            json!({"name": "progress", "description": "Sends progress notifications, then answers.",
                   "inputSchema": obj(json!({"steps": {"type": "integer"}, "ms": {"type": "integer"}}), json!([]))}),
            json!({"name": "add_tool", "description": "Adds a tool and sends tools/list_changed.",
                   "inputSchema": obj(json!({"name": {"type": "string"}}), json!(["name"]))}),
            json!({"name": "env", "description": "Returns the server's environment variables.",
                   "inputSchema": obj(json!({}), json!([])), "annotations": {"readOnlyHint": true}}),
            json!({"name": "read_file", "description": "Returns a file's text.",
                   "inputSchema": obj(json!({"path": {"type": "string"}}), json!(["path"]))}),
            json!({"name": "has.dots in/name", "description": "A name that needs sanitizing.",
                   "inputSchema": {"properties": {}}}),
        ];
        for name in self.extra.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            wire.push(json!({"name": name, "description": "Added at run time.",
                             "inputSchema": obj(json!({}), json!([]))}));
        }
        wire.into_iter()
            .filter_map(|w| serde_json::from_value(w).ok())
            .collect()
    }

    async fn run(&self, name: &str, args: Value, ctx: RequestContext<RoleServer>) -> Value {
        self.note(&format!("call {name}"));
        let text = |t: String| json!({"content": [{"type": "text", "text": t}]});
        match name {
            "echo" => text(format!("echo: {}", args["text"].as_str().unwrap_or(""))),
            "add" => {
                let sum = args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0);
                json!({"content": [], "structuredContent": {"sum": sum}})
            }
            "fail" => {
                json!({"content": [{"type": "text", "text": "the operation failed on purpose"}], "isError": true})
            }
            "image" => json!({"content": [{"type": "text", "text": "a red pixel"},
                                          {"type": "image", "data": RED_PIXEL_PNG, "mimeType": "image/png"}]}),
            "crash" => {
                eprintln!("fatal: simulated crash in the middle of a call");
                tokio::time::sleep(Duration::from_millis(50)).await;
                std::process::exit(7);
            }
            "hang" => {
                ctx.ct.cancelled().await;
                self.note("hang saw its request cancelled");
                text("cancelled".into())
            }
            "progress" => {
                let steps = args["steps"].as_u64().unwrap_or(3);
                let ms = args["ms"].as_u64().unwrap_or(50);
                if let Some(token) = ctx.meta.get_progress_token() {
                    for i in 1..=steps {
                        tokio::time::sleep(Duration::from_millis(ms)).await;
                        let p = ProgressNotificationParam::new(token.clone(), i as f64)
                            .with_total(steps as f64)
                            .with_message(format!("step {i}"));
                        // Test server: a client that left needs no progress.
                        let _ = ctx.peer.notify_progress(p).await;
                    }
                }
                text(format!("finished {steps} steps"))
            }
            "add_tool" => {
                let new = args["name"].as_str().unwrap_or("extra").to_string();
                self.extra
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(new.clone());
                // Test server: a client that left needs no notice.
                let _ = ctx.peer.notify_tool_list_changed().await;
                text(format!("added {new}"))
            }
            "env" => {
                let vars: serde_json::Map<String, Value> =
                    std::env::vars().map(|(k, v)| (k, Value::from(v))).collect();
                text(Value::Object(vars).to_string())
            }
            "has.dots in/name" => text("sanitized".into()),
            "read_file" => match std::fs::read_to_string(args["path"].as_str().unwrap_or("")) {
                Ok(t) => text(t),
                Err(e) => {
                    json!({"content": [{"type": "text", "text": format!("cannot read: {e}")}], "isError": true})
                }
            },
            other
                if self
                    .extra
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .iter()
                    .any(|n| n == other) =>
            {
                text(format!("{other} ran"))
            }
            other => {
                json!({"content": [{"type": "text", "text": format!("no tool {other}")}], "isError": true})
            }
        }
    }
}

impl ServerHandler for Cases {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        );
        info.server_info = Implementation::new("makai-mcp-testserver", "1.0.0");
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult {
            tools: self.tool_list(),
            ..Default::default()
        })
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        let wire = self.run(&request.name, args, context).await;
        serde_json::from_value::<CallToolResult>(wire)
            .map(CallToolResponse::Complete)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    async fn on_cancelled(
        &self,
        notification: CancelledNotificationParam,
        _context: NotificationContext<RoleServer>,
    ) {
        self.note(&format!(
            "cancelled: {}",
            notification.reason.as_deref().unwrap_or("(no reason)")
        ));
    }
}
