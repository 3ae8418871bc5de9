//! MCP resources, as pi 1.5 (and Codex, OpenCode) reach them: three tools
//! over every enabled, non-`hidden` server that offers resources.
//!
//! - [`LIST_RESOURCES`] `{server?, cursor?}`: JSON
//!   `{server?, resources: [{server, uri, name, …}], nextCursor?}`. With
//!   `server`, one page (`cursor` continues from an earlier `nextCursor`);
//!   without it, every resource of every server (servers still starting are
//!   waited for, up to [`SETTLE_WAIT`]; one that cannot list is named under
//!   `errors`).
//! - [`LIST_RESOURCE_TEMPLATES`]: the same for URI templates
//!   (`resourceTemplates: [{server, uriTemplate, name, …}]`).
//! - [`READ_RESOURCE`] `{server, uri}`: text reaches the model as text (cut
//!   as [`crate::long_text`] cuts long results), images as images; another
//!   binary resource is saved to a temporary file whose path the model gets.
//!   `details` is `{server, uri, contents}`, what a codemode script receives
//!   (a saved binary's `blob` replaced by its `path`).
//!
//! Resources of MCP Apps (`ui://` URIs, `text/html;profile=mcp-app`) are
//! left out, as are icons. A request that fails because the connection broke
//! (an HTTP error, a dropped session) is tried once more. The tools are
//! read-only; how the model reaches them is the widest exposure among the
//! servers with resources ([`McpManager::tools_with_exposure`]).
//!
//! [`McpManager::tools_with_exposure`]: crate::McpManager::tools_with_exposure

use std::io::Write;
use std::sync::{Arc, Weak};
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine;
use makai_agent::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use makai_ai::UserContent;
use serde_json::{Map, Value, json};

use crate::exposure::Exposure;
use crate::sdk::CallFailure;
use crate::sdk::client::Connection;
use crate::servers::ServerList;
use crate::status::ServerState;
use crate::supervisor::ServerShared;

/// The tool listing resources.
pub const LIST_RESOURCES: &str = "list_mcp_resources";
/// The tool listing resource templates.
pub const LIST_RESOURCE_TEMPLATES: &str = "list_mcp_resource_templates";
/// The tool reading a resource.
pub const READ_RESOURCE: &str = "read_mcp_resource";
/// The three resource tools' names.
pub const RESOURCE_TOOL_NAMES: [&str; 3] = [LIST_RESOURCES, LIST_RESOURCE_TEMPLATES, READ_RESOURCE];

/// How long listing every server's resources waits for servers still starting.
pub const SETTLE_WAIT: Duration = Duration::from_secs(10);

/// Which of the three tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    List,
    Templates,
    Read,
}

/// One of the resource tools.
pub(crate) struct ResourceTool {
    spec: ToolSpec,
    kind: Kind,
    /// The manager's servers (gone with the manager), as the last reload left them.
    servers: Weak<ServerList>,
}

impl std::fmt::Debug for ResourceTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceTool")
            .field("name", &self.spec.name)
            .finish()
    }
}

/// The three tools over `servers`.
pub(crate) fn resource_tools(servers: &Arc<ServerList>) -> Vec<Arc<ResourceTool>> {
    let servers = Arc::downgrade(servers);
    let list_params = |what: &str| {
        json!({
            "type": "object",
            "properties": {
                "server": {"type": "string", "description": format!("The MCP server whose {what} to list. Without it, every server's {what} are listed.")},
                "cursor": {"type": "string", "description": "The nextCursor of an earlier call for the same server, to list the next page."}
            },
            "additionalProperties": false
        })
    };
    let tool = |name: &str, kind: Kind, description: &str, params: Value| {
        Arc::new(ResourceTool {
            spec: ToolSpec::new(name, description, params)
                .with_label(name)
                .with_read_only(true),
            kind,
            servers: servers.clone(),
        })
    };
    vec![
        tool(
            LIST_RESOURCES,
            Kind::List,
            "List the resources MCP servers offer (files, records, documents), as JSON: {server?, resources: [{server, uri, name, ...}], nextCursor?}. Read one with read_mcp_resource.",
            list_params("resources"),
        ),
        tool(
            LIST_RESOURCE_TEMPLATES,
            Kind::Templates,
            "List the URI templates of resources MCP servers can read but do not list, as JSON: {server?, resourceTemplates: [{server, uriTemplate, name, ...}], nextCursor?}. Fill a template in and read it with read_mcp_resource.",
            list_params("resource templates"),
        ),
        tool(
            READ_RESOURCE,
            Kind::Read,
            "Read a resource of an MCP server by its URI (from list_mcp_resources, a filled-in template, or a resource link in a tool result).",
            json!({
                "type": "object",
                "properties": {
                    "server": {"type": "string", "description": "The MCP server offering the resource."},
                    "uri": {"type": "string", "description": "The resource's URI."}
                },
                "required": ["server", "uri"],
                "additionalProperties": false
            }),
        ),
    ]
}

/// How the model reaches the resource tools: the widest exposure among the
/// ready servers that offer resources (`direct`, then `codemode` or
/// `deferred`); `None` when no such server is ready.
pub(crate) fn resource_exposure(servers: &[Arc<ServerShared>]) -> Option<Exposure> {
    let exposures: Vec<Exposure> = servers
        .iter()
        .filter(|s| s.config.enabled && server_exposure(s) != Exposure::Hidden)
        .filter(|s| s.connection().is_ok_and(|c| c.has_resources))
        .map(|s| server_exposure(s))
        .collect();
    if exposures.contains(&Exposure::Direct) {
        Some(Exposure::Direct)
    } else if exposures.contains(&Exposure::Deferred) && !exposures.contains(&Exposure::Codemode) {
        Some(Exposure::Deferred)
    } else {
        exposures.first().map(|_| Exposure::Codemode)
    }
}

fn server_exposure(s: &ServerShared) -> Exposure {
    s.config.exposure.unwrap_or_default()
}

fn failed(text: String) -> ToolError {
    ToolError::Output(ToolOutput::text(text))
}

fn arg<'a>(args: &'a Value, key: &str) -> Result<Option<&'a str>, ToolError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.trim())),
        Some(_) => Err(failed(format!("'{key}' must be a non-empty string"))),
    }
}

impl ResourceTool {
    /// The servers these tools reach that are alive: enabled and not hidden.
    fn reachable(&self) -> Vec<Arc<ServerShared>> {
        self.servers
            .upgrade()
            .map(|list| list.snapshot())
            .unwrap_or_default()
            .into_iter()
            .filter(|s| s.config.enabled && server_exposure(s) != Exposure::Hidden)
            .collect()
    }

    /// The connection of the server called `name` (`-` and `_` alike), or
    /// an error the model can act on.
    fn connection_of(&self, name: &str) -> Result<(String, Arc<Connection>), ToolError> {
        let servers = self.reachable();
        let same = |a: &str| a.replace('-', "_") == name.replace('-', "_");
        let Some(server) = servers.iter().find(|s| same(&s.name)) else {
            let offering: Vec<&str> = servers
                .iter()
                .filter(|s| s.connection().is_ok_and(|c| c.has_resources))
                .map(|s| s.name.as_str())
                .collect();
            return Err(failed(format!(
                "There is no MCP server '{name}' whose resources makai reaches. Servers offering resources: {}.",
                if offering.is_empty() {
                    "none".to_string()
                } else {
                    offering.join(", ")
                }
            )));
        };
        let conn = server.connection().map_err(|state| {
            failed(format!(
                "MCP server '{}' is {}, so its resources cannot be reached now{}.",
                server.name,
                state.label(),
                match &state {
                    ServerState::Failed { reason } | ServerState::Restarting { reason, .. } =>
                        format!(" ({reason})"),
                    _ => String::new(),
                }
            ))
        })?;
        if !conn.has_resources {
            return Err(failed(format!(
                "MCP server '{}' offers no resources.",
                server.name
            )));
        }
        Ok((server.name.clone(), conn))
    }

    async fn list(&self, args: &Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let key = if self.kind == Kind::List {
            "resources"
        } else {
            "resourceTemplates"
        };
        let cursor = arg(args, "cursor")?.map(str::to_string);
        if let Some(name) = arg(args, "server")? {
            let (server, conn) = self.connection_of(name)?;
            let page = self.page(&conn, &server, cursor, ctx).await?;
            let mut out = Map::new();
            out.insert("server".into(), Value::from(server.clone()));
            out.insert(key.into(), Value::Array(items(&page, key, &server)));
            if let Some(next) = page.get("nextCursor").filter(|c| !c.is_null()) {
                out.insert("nextCursor".into(), next.clone());
            }
            return Ok(json_output(Value::Object(out)));
        }
        if cursor.is_some() {
            return Err(failed(
                "'cursor' continues one server's list: pass the 'server' it came from too".into(),
            ));
        }
        let mut all = Vec::new();
        let mut errors = Vec::new();
        for server in self.reachable() {
            settle(&server).await;
            let Ok(conn) = server.connection() else {
                if let ServerState::Failed { reason } = server.state() {
                    errors.push(json!({"server": server.name, "error": reason}));
                }
                continue;
            };
            if !conn.has_resources {
                continue;
            }
            let mut cursor = None;
            loop {
                match self.page(&conn, &server.name, cursor, ctx).await {
                    Ok(page) => {
                        all.extend(items(&page, key, &server.name));
                        cursor = page
                            .get("nextCursor")
                            .and_then(Value::as_str)
                            .filter(|c| !c.is_empty())
                            .map(str::to_string);
                        if cursor.is_none() {
                            break;
                        }
                    }
                    Err(ToolError::Cancelled) => return Err(ToolError::Cancelled),
                    Err(e) => {
                        errors.push(json!({"server": server.name, "error": error_text(&e)}));
                        break;
                    }
                }
            }
        }
        let mut out = Map::new();
        out.insert(key.into(), Value::Array(all));
        if !errors.is_empty() {
            out.insert("errors".into(), Value::Array(errors));
        }
        Ok(json_output(Value::Object(out)))
    }

    /// One page of resources or templates, tried once more after a broken
    /// connection.
    async fn page(
        &self,
        conn: &Connection,
        server: &str,
        cursor: Option<String>,
        ctx: &ToolContext,
    ) -> Result<Value, ToolError> {
        let what = if self.kind == Kind::List {
            "resources/list"
        } else {
            "resources/templates/list"
        };
        let limit = self.limit(server);
        retried(server, what, ctx, || async {
            if self.kind == Kind::List {
                conn.list_resources(cursor.clone(), limit).await
            } else {
                conn.list_resource_templates(cursor.clone(), limit).await
            }
        })
        .await
    }

    async fn read(&self, args: &Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let (Some(name), Some(uri)) = (arg(args, "server")?, arg(args, "uri")?) else {
            return Err(failed("read_mcp_resource needs 'server' and 'uri'".into()));
        };
        let (server, conn) = self.connection_of(name)?;
        let limit = self.limit(&server);
        let answer = retried(&server, "resources/read", ctx, || {
            conn.read_resource(uri, limit)
        })
        .await?;
        let mut output = read_output(&server, uri, &answer);
        crate::long_text::cut_long_texts(&mut output, &server, READ_RESOURCE);
        Ok(output)
    }

    /// The request timeout of server `name`.
    fn limit(&self, name: &str) -> Duration {
        self.reachable()
            .iter()
            .find(|s| s.name == name)
            .map_or(crate::config::DEFAULT_CALL_TIMEOUT, |s| {
                s.config.call_timeout()
            })
    }
}

/// Waits (at most [`SETTLE_WAIT`]) while `server` is still starting.
async fn settle(server: &ServerShared) {
    let mut state = server.watch_state();
    let _ = tokio::time::timeout(
        SETTLE_WAIT,
        state.wait_for(|s| !matches!(s, ServerState::Starting)),
    )
    .await;
}

/// `request` (`what`, to `server`), tried a second time when the connection
/// broke; cancelled with the run.
async fn retried<F, Fut>(
    server: &str,
    what: &str,
    ctx: &ToolContext,
    request: F,
) -> Result<Value, ToolError>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<Value, CallFailure>>,
{
    let cancel = ctx.cancel_token();
    let mut tries = 0;
    loop {
        tries += 1;
        let answer = tokio::select! {
            a = request() => a,
            _ = cancel.cancelled() => return Err(ToolError::Cancelled),
        };
        match answer {
            Ok(v) => return Ok(v),
            Err(CallFailure::Closed(_)) if tries < 2 => continue,
            Err(CallFailure::Cancelled) => return Err(ToolError::Cancelled),
            Err(CallFailure::Closed(reason)) => {
                return Err(failed(format!(
                    "MCP server '{server}' stopped answering {what} ({reason})"
                )));
            }
            Err(CallFailure::TimedOut(d)) => {
                return Err(failed(format!(
                    "MCP server '{server}' did not answer {what} within {}s",
                    d.as_secs_f64()
                )));
            }
            Err(CallFailure::Protocol(msg)) => {
                return Err(failed(format!(
                    "MCP server '{server}' refused {what}: {msg}"
                )));
            }
        }
    }
}

fn error_text(e: &ToolError) -> String {
    match e {
        ToolError::Output(o) => o.text_content(),
        other => other.to_string(),
    }
}

/// Whether a listed resource belongs to an MCP App (pi leaves those out).
fn is_app(item: &Value) -> bool {
    let s = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or("");
    s("uri").starts_with("ui://")
        || s("uriTemplate").starts_with("ui://")
        || s("mimeType")
            .to_ascii_lowercase()
            .replace(' ', "")
            .starts_with("text/html;profile=mcp-app")
}

/// The `key` items of a page, each with its `server`, without icons and
/// MCP Apps.
fn items(page: &Value, key: &str, server: &str) -> Vec<Value> {
    page.get(key)
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter(|i| !is_app(i))
                .filter_map(|i| {
                    let mut out = Map::new();
                    out.insert("server".into(), Value::from(server));
                    for (k, v) in i.as_object()? {
                        if k != "icons" {
                            out.insert(k.clone(), v.clone());
                        }
                    }
                    Some(Value::Object(out))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `value` as the model reads it (compact JSON), and as details.
fn json_output(value: Value) -> ToolOutput {
    ToolOutput::text(value.to_string()).with_details(value)
}

/// A `resources/read` answer for the model and for scripts (see the module
/// documentation).
fn read_output(server: &str, uri: &str, answer: &Value) -> ToolOutput {
    let empty = Vec::new();
    let contents = answer
        .get("contents")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    let mut parts = Vec::new();
    let mut kept = Vec::new();
    for item in contents {
        let s = |k: &str| item.get(k).and_then(Value::as_str);
        let item_uri = s("uri").unwrap_or(uri);
        let mime = s("mimeType");
        let mut item_out = item.as_object().cloned().unwrap_or_default();
        if let Some(text) = s("text") {
            parts.push(UserContent::text(text));
        } else if let Some(blob) = s("blob") {
            match mime {
                Some(m) if m.starts_with("image/") => parts.push(UserContent::image(blob, m)),
                _ => {
                    let saved = save_blob(blob, server, item_uri);
                    let note = match &saved {
                        Ok((path, bytes)) => {
                            item_out.remove("blob");
                            item_out.insert("path".into(), Value::from(path.clone()));
                            format!(
                                "[{item_uri}: {}, {bytes} bytes, saved to {path}]",
                                mime.unwrap_or("binary")
                            )
                        }
                        Err(why) => format!(
                            "[{item_uri}: {}, not shown: {why}]",
                            mime.unwrap_or("binary")
                        ),
                    };
                    parts.push(UserContent::text(note));
                }
            }
        }
        kept.push(Value::Object(item_out));
    }
    if parts.is_empty() {
        parts.push(UserContent::text(format!(
            "(the resource {uri} has no content)"
        )));
    }
    ToolOutput {
        content: parts,
        details: json!({"server": server, "uri": uri, "contents": kept}),
        usage: None,
        nested_calls: None,
    }
}

/// Decodes a binary resource and saves it to a temporary file: its path and
/// size.
fn save_blob(blob: &str, server: &str, uri: &str) -> Result<(String, usize), String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(blob.trim())
        .map_err(|e| format!("its base64 does not decode ({e})"))?;
    let name: String = uri
        .rsplit('/')
        .next()
        .unwrap_or("")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '-'
            }
        })
        .take(40)
        .collect();
    let clean_server: String = server
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let mut file = tempfile::Builder::new()
        .prefix(&format!("makai-mcp-{clean_server}-"))
        .suffix(&format!("-{name}"))
        .tempfile()
        .map_err(|e| format!("no temporary file ({e})"))?;
    file.write_all(&bytes)
        .map_err(|e| format!("the temporary file could not be written ({e})"))?;
    let (_, path) = file
        .keep()
        .map_err(|e| format!("the temporary file could not be kept ({e})"))?;
    Ok((path.display().to_string(), bytes.len()))
}

#[async_trait]
impl Tool for ResourceTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn execute(
        &self,
        _call_id: &str,
        args: Value,
        ctx: ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        match self.kind {
            Kind::List | Kind::Templates => self.list(&args, &ctx).await,
            Kind::Read => self.read(&args, &ctx).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listed_items_name_their_server_without_icons_or_apps() {
        let page = json!({"resources": [
            {"uri": "file:///a", "name": "a", "icons": [{"src": "x"}]},
            {"uri": "ui://app/x", "name": "app"},
            {"uri": "https://h/x", "name": "x", "mimeType": "text/html;profile=mcp-app"}
        ]});
        assert_eq!(
            items(&page, "resources", "s"),
            [json!({"server": "s", "uri": "file:///a", "name": "a"})]
        );
    }

    #[test]
    fn a_binary_resource_is_saved_and_text_and_images_are_shown() {
        let answer = json!({"contents": [
            {"uri": "u://t", "text": "hello"},
            {"uri": "u://i", "mimeType": "image/png", "blob": "iVBORw0KGgo="},
            {"uri": "u://b/data.bin", "mimeType": "application/octet-stream", "blob": "AAEC"},
            {"uri": "u://bad", "blob": "%%%"}
        ]});
        let out = read_output("s", "u://t", &answer);
        assert!(matches!(&out.content[0], UserContent::Text(t) if t.text == "hello"));
        assert!(matches!(&out.content[1], UserContent::Image(_)));
        let UserContent::Text(note) = &out.content[2] else {
            panic!("{:?}", out.content[2]);
        };
        assert!(note.text.contains("3 bytes, saved to "), "{}", note.text);
        let path = out.details["contents"][2]["path"].as_str().unwrap();
        assert_eq!(std::fs::read(path).unwrap(), [0, 1, 2]);
        assert!(out.details["contents"][2].get("blob").is_none());
        let _ = std::fs::remove_file(path);
        assert!(
            matches!(&out.content[3], UserContent::Text(t) if t.text.contains("does not decode")),
            "{:?}",
            out.content[3]
        );
    }
}
