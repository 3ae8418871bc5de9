//! MCP server configuration: the `mcpServers` section of the settings files.
//!
//! The shape is the one most MCP clients use:
//!
//! ```json
//! {
//!   "mcpServers": {
//!     "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
//!               "env": {"DEBUG": "1"}, "cwd": "/tmp", "timeout": 60},
//!     "remote": {"url": "https://example.invalid/mcp",
//!                "headers": {"Authorization": "Bearer ${REMOTE_TOKEN}"}, "enabled": false}
//!   }
//! }
//! ```
//!
//! A server has either a `command` (a child process spoken to over stdio) or
//! a `url` (streamable HTTP). `enabled` (default `true`; `"disabled": true` is
//! also understood) switches it off without removing it; `timeout` is the
//! longest a tool call may take, in seconds; `startupTimeout` the longest the
//! start-up handshake may take, in seconds. A `type` field (`stdio`, `http`,
//! `streamable-http`) is accepted and checked; `sse` (the deprecated HTTP+SSE
//! transport) is refused with an explanation. Unknown fields are ignored, so
//! files shared with other MCP clients load.
//!
//! `sandbox` gives a stdio server its own sandbox instead of the one of the
//! settings (see `docs/sandbox.md`): a policy name (`"sandbox": "read-only"`)
//! or an object `{"policy": ..., "network": true, "writableRoots": [...]}`
//! whose fields replace (policy, network) or extend (writable roots) the
//! settings' sandbox for this server only.
//!
//! `${VAR}` and `${VAR:-default}` in `command`, `args`, `env` values, `url`
//! and `headers` values are replaced by the variable's value from makai's environment when
//! the server starts: that is how a config passes one chosen secret to a
//! server without handing it the whole environment. As in pi 1.5.2's
//! `mcp.json`, an `env` or `headers` value written `!command` is that
//! command's output (`"Authorization": "!echo Bearer $(gh auth token)"`), and
//! a leading `~/` in `command`, an argument or `cwd` is the home folder.
//! `exposure` and `toolExposure` (pi's) say how the model reaches the
//! server's tools (see [`crate::exposure`]: by default from `codemode`
//! scripts only); `description` says what the server offers, in a sentence
//! (the system prompt and `describeNamespace()` show it). pi's `oauth` is
//! read past.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use makai_sandbox::{Policy, SandboxConfig};

use crate::exposure::{Exposure, ToolExposure};
use serde_json::{Map, Value};

/// Default longest time one tool call may take.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// Default longest time a server may take to start and answer the handshake.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// How to reach one server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerTransport {
    /// A child process spoken to over its standard input and output.
    Stdio {
        /// The program to run (looked up on `PATH` when not a path).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Environment variables given to it, on top of the minimal safe set.
        env: BTreeMap<String, String>,
        /// Its working directory (default: makai's working directory).
        cwd: Option<PathBuf>,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// The endpoint URL.
        url: String,
        /// Headers sent with every request (for example `Authorization`).
        headers: BTreeMap<String, String>,
    },
}

/// A server's own sandbox settings (`"sandbox"` in its entry).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerSandbox {
    /// Replaces the policy of the settings' sandbox.
    pub policy: Option<Policy>,
    /// Replaces whether the network is allowed.
    pub network: Option<bool>,
    /// Writable folders added for this server.
    pub writable_roots: Vec<PathBuf>,
}

impl ServerSandbox {
    /// `base` with this server's changes.
    pub fn apply(&self, base: &SandboxConfig) -> SandboxConfig {
        let mut c = base.clone();
        if let Some(p) = self.policy {
            c.policy = p;
        }
        if let Some(n) = self.network {
            c.network = n;
        }
        c.writable_roots.extend(self.writable_roots.iter().cloned());
        c
    }

    fn from_json(v: &Value) -> Result<Self, String> {
        let policy = |s: &str| s.parse::<Policy>().map_err(|e| format!("\"sandbox\": {e}"));
        match v {
            Value::String(s) => Ok(ServerSandbox {
                policy: Some(policy(s)?),
                ..Default::default()
            }),
            Value::Object(obj) => Ok(ServerSandbox {
                policy: opt_string(obj, "policy")?.as_deref().map(policy).transpose()?,
                network: match obj.get("network") {
                    None | Some(Value::Null) => None,
                    Some(Value::Bool(b)) => Some(*b),
                    Some(_) => return Err("\"sandbox.network\" must be true or false".into()),
                },
                writable_roots: string_list(obj, "writableRoots")?
                    .into_iter()
                    .map(PathBuf::from)
                    .collect(),
            }),
            _ => Err(
                "\"sandbox\" must be a policy name (read-only, workspace-write, full-access) or an object"
                    .into(),
            ),
        }
    }

    fn to_json(&self) -> Value {
        if self.network.is_none()
            && self.writable_roots.is_empty()
            && let Some(p) = self.policy
        {
            return Value::from(p.as_str());
        }
        let mut obj = Map::new();
        if let Some(p) = self.policy {
            obj.insert("policy".into(), Value::from(p.as_str()));
        }
        if let Some(n) = self.network {
            obj.insert("network".into(), Value::Bool(n));
        }
        if !self.writable_roots.is_empty() {
            let roots: Vec<Value> = self
                .writable_roots
                .iter()
                .map(|p| Value::from(p.display().to_string()))
                .collect();
            obj.insert("writableRoots".into(), Value::Array(roots));
        }
        Value::Object(obj)
    }
}

/// One configured server.
#[derive(Clone, Debug, PartialEq)]
pub struct McpServerConfig {
    /// How to reach it.
    pub transport: ServerTransport,
    /// False when the server is switched off.
    pub enabled: bool,
    /// Longest one tool call may take (default [`DEFAULT_CALL_TIMEOUT`]).
    pub timeout: Option<Duration>,
    /// Longest start-up may take (default [`DEFAULT_STARTUP_TIMEOUT`]).
    pub startup_timeout: Option<Duration>,
    /// The server's own sandbox settings (stdio servers only).
    pub sandbox: Option<ServerSandbox>,
    /// How the model reaches its tools (`None`: the default, `codemode`).
    pub exposure: Option<Exposure>,
    /// Per-tool overrides of `exposure`.
    pub tool_exposure: ToolExposure,
    /// What the server offers, in a sentence.
    pub description: Option<String>,
}

/// A server entry that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("MCP server '{name}': {reason}")]
pub struct ServerConfigError {
    /// The server's name.
    pub name: String,
    /// What is wrong and how to fix it.
    pub reason: String,
}

impl McpServerConfig {
    /// A stdio server running `command` with `args`, enabled, default timeouts.
    pub fn stdio(
        command: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        McpServerConfig {
            transport: ServerTransport::Stdio {
                command: command.into(),
                args: args.into_iter().map(Into::into).collect(),
                env: BTreeMap::new(),
                cwd: None,
            },
            enabled: true,
            timeout: None,
            startup_timeout: None,
            sandbox: None,
            exposure: None,
            tool_exposure: ToolExposure::default(),
            description: None,
        }
    }

    /// A streamable HTTP server at `url`, enabled, default timeouts.
    pub fn http(url: impl Into<String>) -> Self {
        McpServerConfig {
            transport: ServerTransport::Http {
                url: url.into(),
                headers: BTreeMap::new(),
            },
            enabled: true,
            timeout: None,
            startup_timeout: None,
            sandbox: None,
            exposure: None,
            tool_exposure: ToolExposure::default(),
            description: None,
        }
    }

    /// Adds an environment variable (stdio servers only; ignored for HTTP).
    pub fn with_env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let ServerTransport::Stdio { env, .. } = &mut self.transport {
            env.insert(key.into(), value.into());
        }
        self
    }

    /// Sets the working directory (stdio servers only; ignored for HTTP).
    pub fn with_cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        if let ServerTransport::Stdio { cwd, .. } = &mut self.transport {
            *cwd = Some(dir.into());
        }
        self
    }

    /// Adds an HTTP header (HTTP servers only; ignored for stdio).
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let ServerTransport::Http { headers, .. } = &mut self.transport {
            headers.insert(name.into(), value.into());
        }
        self
    }

    /// Gives the server its own sandbox settings.
    pub fn with_sandbox(mut self, sandbox: ServerSandbox) -> Self {
        self.sandbox = Some(sandbox);
        self
    }

    /// Sets the per-call timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Sets the start-up timeout.
    pub fn with_startup_timeout(mut self, timeout: Duration) -> Self {
        self.startup_timeout = Some(timeout);
        self
    }

    /// Switches the server on or off.
    pub fn with_enabled(mut self, enabled: bool) -> Self {
        self.enabled = enabled;
        self
    }

    /// Sets how the model reaches the server's tools.
    pub fn with_exposure(mut self, exposure: Exposure) -> Self {
        self.exposure = Some(exposure);
        self
    }

    /// How the model reaches the server's tool `tool` (its name on the
    /// server): its `toolExposure`, else the server's `exposure`, else
    /// `codemode`.
    pub fn exposure_of(&self, tool: &str) -> Exposure {
        self.tool_exposure
            .of(tool)
            .or(self.exposure)
            .unwrap_or_default()
    }

    /// True when some of its tools are reached from `codemode` scripts only
    /// (its `exposure`, or one of its `toolExposure` overrides).
    pub fn has_indirect_tools(&self) -> bool {
        self.exposure.unwrap_or_default().is_indirect()
            || self.tool_exposure.exposures().any(Exposure::is_indirect)
    }

    /// True when some of its tools have exposure `exposure` (the server's,
    /// or one of its `toolExposure` overrides).
    pub fn has_tools_exposed(&self, exposure: Exposure) -> bool {
        self.exposure.unwrap_or_default() == exposure
            || self.tool_exposure.exposures().any(|e| e == exposure)
    }

    /// The per-call timeout in force.
    pub fn call_timeout(&self) -> Duration {
        self.timeout.unwrap_or(DEFAULT_CALL_TIMEOUT)
    }

    /// The start-up timeout in force.
    pub fn start_timeout(&self) -> Duration {
        self.startup_timeout.unwrap_or(DEFAULT_STARTUP_TIMEOUT)
    }

    /// A one-line description: the command line or the URL.
    pub fn target(&self) -> String {
        match &self.transport {
            ServerTransport::Stdio { command, args, .. } => {
                let mut s = command.clone();
                for a in args {
                    s.push(' ');
                    s.push_str(a);
                }
                s
            }
            ServerTransport::Http { url, .. } => url.clone(),
        }
    }

    /// Parses one entry of `mcpServers`.
    pub fn from_json(name: &str, value: &Value) -> Result<Self, ServerConfigError> {
        let err = |reason: String| ServerConfigError {
            name: name.to_string(),
            reason,
        };
        let Value::Object(obj) = value else {
            return Err(err(
                "the entry is not a JSON object; give {\"command\": ..., \"args\": [...]} or {\"url\": ...}".into(),
            ));
        };
        let command = opt_string(obj, "command").map_err(&err)?;
        let url = opt_string(obj, "url").map_err(&err)?;
        let kind = opt_string(obj, "type").map_err(&err)?;
        match kind.as_deref() {
            None
            | Some("stdio")
            | Some("http")
            | Some("streamable-http")
            | Some("streamableHttp") => {}
            Some("sse") => {
                return Err(err(
                    "the SSE transport (\"type\": \"sse\") is deprecated in MCP and not supported; use the server's streamable HTTP endpoint (often the same URL ending in /mcp)".into(),
                ));
            }
            Some(other) => {
                return Err(err(format!(
                    "unknown \"type\" \"{other}\"; use \"stdio\" (with \"command\") or \"http\" (with \"url\")"
                )));
            }
        }
        let transport = match (command, url) {
            (Some(_), Some(_)) => {
                return Err(err(
                    "it has both \"command\" and \"url\"; keep \"command\" for a local server or \"url\" for a remote one".into(),
                ));
            }
            (None, None) => {
                return Err(err(
                    "it has neither \"command\" nor \"url\"; add \"command\" (and \"args\") for a local server or \"url\" for a remote one".into(),
                ));
            }
            (Some(command), None) => {
                if command.trim().is_empty() {
                    return Err(err("\"command\" is empty".into()));
                }
                ServerTransport::Stdio {
                    command,
                    args: string_list(obj, "args").map_err(&err)?,
                    env: string_map(obj, "env").map_err(&err)?,
                    cwd: opt_string(obj, "cwd").map_err(&err)?.map(PathBuf::from),
                }
            }
            (None, Some(url)) => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(err(format!(
                        "\"url\" {url:?} is not an http:// or https:// URL"
                    )));
                }
                ServerTransport::Http {
                    url,
                    headers: string_map(obj, "headers").map_err(&err)?,
                }
            }
        };
        let enabled = match (obj.get("enabled"), obj.get("disabled")) {
            (Some(Value::Bool(b)), _) => *b,
            (Some(_), _) => return Err(err("\"enabled\" must be true or false".into())),
            (None, Some(Value::Bool(b))) => !*b,
            (None, Some(_)) => return Err(err("\"disabled\" must be true or false".into())),
            (None, None) => true,
        };
        Ok(McpServerConfig {
            transport,
            enabled,
            timeout: seconds(obj, "timeout").map_err(&err)?,
            startup_timeout: seconds(obj, "startupTimeout").map_err(&err)?,
            sandbox: match obj.get("sandbox") {
                None | Some(Value::Null) => None,
                Some(v) => Some(ServerSandbox::from_json(v).map_err(&err)?),
            },
            exposure: exposure_field(obj).map_err(&err)?,
            tool_exposure: tool_exposure_field(obj).map_err(&err)?,
            description: opt_string(obj, "description").map_err(&err)?,
        })
    }

    /// The entry as written in `mcpServers` (defaults left out).
    pub fn to_json(&self) -> Value {
        let mut obj = Map::new();
        match &self.transport {
            ServerTransport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                obj.insert("command".into(), Value::from(command.clone()));
                if !args.is_empty() {
                    obj.insert("args".into(), Value::from(args.clone()));
                }
                if !env.is_empty() {
                    obj.insert("env".into(), string_map_json(env));
                }
                if let Some(cwd) = cwd {
                    obj.insert("cwd".into(), Value::from(cwd.display().to_string()));
                }
            }
            ServerTransport::Http { url, headers } => {
                obj.insert("url".into(), Value::from(url.clone()));
                if !headers.is_empty() {
                    obj.insert("headers".into(), string_map_json(headers));
                }
            }
        }
        if !self.enabled {
            obj.insert("enabled".into(), Value::Bool(false));
        }
        if let Some(t) = self.timeout {
            obj.insert("timeout".into(), seconds_json(t));
        }
        if let Some(t) = self.startup_timeout {
            obj.insert("startupTimeout".into(), seconds_json(t));
        }
        if let Some(sb) = &self.sandbox {
            obj.insert("sandbox".into(), sb.to_json());
        }
        if let Some(e) = self.exposure {
            obj.insert("exposure".into(), Value::from(e.as_str()));
        }
        if !self.tool_exposure.is_empty() {
            obj.insert("toolExposure".into(), self.tool_exposure.to_json());
        }
        if let Some(d) = &self.description {
            obj.insert("description".into(), Value::from(d.clone()));
        }
        Value::Object(obj)
    }
}

/// The `exposure` of an entry, if set.
pub(crate) fn exposure_field(obj: &Map<String, Value>) -> Result<Option<Exposure>, String> {
    opt_string(obj, "exposure")?
        .map(|s| s.parse().map_err(|e| format!("\"exposure\": {e}")))
        .transpose()
}

/// The `toolExposure` of an entry (empty when unset).
pub(crate) fn tool_exposure_field(obj: &Map<String, Value>) -> Result<ToolExposure, String> {
    match obj.get("toolExposure") {
        None | Some(Value::Null) => Ok(ToolExposure::default()),
        Some(v) => ToolExposure::from_json(v),
    }
}

fn opt_string(obj: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("\"{key}\" must be a string")),
    }
}

fn string_list(obj: &Map<String, Value>, key: &str) -> Result<Vec<String>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                Value::Number(n) => Ok(n.to_string()),
                _ => Err(format!("\"{key}\" must be an array of strings")),
            })
            .collect(),
        Some(_) => Err(format!("\"{key}\" must be an array of strings")),
    }
}

fn string_map(obj: &Map<String, Value>, key: &str) -> Result<BTreeMap<String, String>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                Value::Number(n) => Ok((k.clone(), n.to_string())),
                Value::Bool(b) => Ok((k.clone(), b.to_string())),
                _ => Err(format!("\"{key}.{k}\" must be a string")),
            })
            .collect(),
        Some(_) => Err(format!("\"{key}\" must be an object of string values")),
    }
}

fn seconds(obj: &Map<String, Value>, key: &str) -> Result<Option<Duration>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(s) if s > 0.0 && s.is_finite() && s < 1e9 => Ok(Some(Duration::from_secs_f64(s))),
            _ => Err(format!("\"{key}\" must be a positive number of seconds")),
        },
        Some(_) => Err(format!("\"{key}\" must be a number of seconds")),
    }
}

fn seconds_json(d: Duration) -> Value {
    if d.subsec_nanos() == 0 {
        Value::from(d.as_secs())
    } else {
        Value::from(d.as_secs_f64())
    }
}

fn string_map_json(m: &BTreeMap<String, String>) -> Value {
    Value::Object(
        m.iter()
            .map(|(k, v)| (k.clone(), Value::from(v.clone())))
            .collect(),
    )
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
