//! pi's `codemode` tool: the model writes a JavaScript script that calls the
//! session's other tools; only what the script outputs reaches the model.
//!
//! The script runs in [`makai_codemode`]'s sandbox. Its tool calls are
//! nested calls of the `codemode` call ([`makai_agent::ToolContext::call_tool`]):
//! the schema, the approval and other hooks, dry run and timeouts apply as
//! to a direct call. What each call resolves to is [`project`]'s. `store()`
//! keeps its values in the session ([`store`]).
//!
//! With `codemode.mode: "on"` (the default) the other tools stay declared to
//! the model and the description names them with what they resolve to; with
//! `"only"` the tools given to [`with_codemode`] are hidden from the model
//! and declared in the description instead. Tools the description has no
//! room for (`codemode.inlineBudget`), and MCP tools, are found with
//! `searchTools()` and the like.

mod host;
pub mod project;
pub mod store;

use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use makai_agent::{Tool, ToolContext, ToolError, ToolOutput, ToolSet, ToolSpec};
use makai_codemode::{CallableTool, Catalog, Part, RunEnv, Script};

pub use host::ModelCatalog;
pub use makai_codemode::Namespace;
pub use store::{CodemodeStore, STORE_ENTRY_TYPE};

use host::ScriptHost;
use project::{MCP_PREFIX, MCP_SEPARATOR, Projection, RESULT_TYPES};

/// The tool's name.
pub const CODEMODE_TOOL_NAME: &str = "codemode";

/// The line the system prompt gains while `codemode` is on (pi's guideline).
pub const PROMPT_GUIDELINE: &str = "Use codemode to batch or chain several tool calls, or to filter large tool output down to what you need, instead of issuing many individual tool calls.";

/// pi's `codemode.mode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CodemodeMode {
    /// The other tools stay declared.
    #[default]
    On,
    /// The other tools are reached through scripts only.
    Only,
}

/// pi's `codemode` settings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CodemodeSettings {
    /// How the other tools are presented while `codemode` is active.
    pub mode: CodemodeMode,
    /// Estimated tokens (characters / 4) the description may spend on tool
    /// declarations; `0` lists only namespaces.
    pub inline_budget: usize,
}

impl Default for CodemodeSettings {
    fn default() -> Self {
        CodemodeSettings {
            mode: CodemodeMode::On,
            inline_budget: 3000,
        }
    }
}

const INTRO: &str = r#"Run JavaScript that calls other tools. Use it to chain, loop over or parallelize tool calls (Promise.all) and to cut large results down to what you need: you see only what the script outputs, not the results of the calls it makes.

- `code` is the body of an async function: top-level `await` and `return` work. Its first line may set options: `// @options: {"max_output_tokens": 2000, "timeout_ms": 60000}` (`max_output_tokens` defaults to 10000; there is no timeout unless set).
- Call a tool as `await tools.<name>(args)` with one object argument matching its parameters. In names, characters that are not valid in an identifier become `_`; `tools["name"]` works too.
- A call that fails or is blocked rejects with an Error carrying the tool's error text: catch it, or use Promise.allSettled(), to go on.
- `text(value)` and a top-level `return value` add output (strings as they are, other values as JSON); `image(value)` shows an image (a base64 data: URL, `{ image_url }`, or an image block such as `read` returns); `console.log/info/warn/error/debug` lines follow the output; `exit()` ends the script successfully.
- `store(key, value)` keeps a JSON value for later codemode calls in this session (`undefined` deletes it) and `load(key)` reads it; writes are kept only when the script succeeds.
- `ALL_TOOLS`, `searchTools(query, { limit, namespace })`, `describeTool(name)` and `describeNamespace(name)` find the tools not listed below.
- Nothing else is available: no file system, network, process, timers, require or import. Use tools.
- Calls still running when the script ends are cancelled: await everything you start. Tool calls are real: when a script fails, the calls it made are not undone."#;

const GLOBALS: &str = r#"declare function text(value: unknown): void;
declare function image(value: string | { image_url: string | { url: string } } | ImageBlock): void;
declare function exit(): never;
declare function store(key: string, value: unknown): void;
declare function load(key: string): unknown;
declare const ALL_TOOLS: readonly { name: string; description: string }[];
declare function searchTools(query: string, options?: { limit?: number; namespace?: string }): Promise<{ name: string; description: string }[]>;
declare function describeTool(name: string): Promise<{ name: string; description: string; declaration: string } | undefined>;
declare function describeNamespace(name: string): Promise<{ name: string; description?: string; instructions?: string; tools: { name: string; description: string }[] } | undefined>;
type ModelType = "chat" | "image" | "classifier";
interface ModelInfo { type?: ModelType; provider: string; id: string; name: string; api: string; input: ("text" | "image")[]; contextWindow?: number; [key: string]: unknown }
declare const models: {
  getModelsOfType(type: ModelType, provider?: string): Promise<ModelInfo[]>;
  getAvailableOfType(type: ModelType, provider?: string): Promise<ModelInfo[]>;
  getModelOfType(type: ModelType, provider: string, id: string): Promise<ModelInfo | undefined>;
};"#;

fn tools_named(tools: &[CallableTool], name: &str) -> bool {
    tools.iter().any(|t| t.name == name)
}

/// Whether a script may reach tools that are not declared: it names an MCP
/// tool or namespace, or lists or searches the tools.
fn reaches_indirect_tools(source: &str) -> bool {
    [
        MCP_PREFIX,
        "ALL_TOOLS",
        "searchTools",
        "describeTool",
        "describeNamespace",
        "list_mcp_resource",
        "read_mcp_resource",
    ]
    .iter()
    .any(|word| source.contains(word))
}

/// A tool as scripts (and `tool_search`) reach it.
pub(crate) fn callable(tool: &Arc<dyn Tool>, listed: bool) -> CallableTool {
    let name = tool.name().to_string();
    let projection = Projection::of(&name);
    let namespace = (projection == Projection::Mcp).then(|| {
        let rest = name.strip_prefix(MCP_PREFIX).unwrap_or(&name);
        rest.split(MCP_SEPARATOR)
            .next()
            .unwrap_or_default()
            .to_string()
    });
    CallableTool {
        description: tool.description().to_string(),
        parameters: tool.parameters().clone(),
        result_type: projection.result_type().to_string(),
        listed: listed && namespace.is_none(),
        namespace,
        name,
    }
}

/// Tools scripts reach that the model is not offered (MCP tools of
/// `codemode` or `deferred` exposure), with their namespaces. Shared: the
/// application updates it as servers come and go, and each script sees it
/// as it is when the script starts.
#[derive(Clone, Default)]
pub struct IndirectTools(Arc<IndirectInner>);

#[derive(Default)]
struct IndirectInner {
    tools: RwLock<(ToolSet, Vec<Namespace>)>,
    refresh: RwLock<Option<RefreshIndirect>>,
}

/// Brings [`IndirectTools`] up to date: waits (bounded) for the MCP servers
/// still starting, then sets the tools again.
pub type RefreshIndirect =
    Arc<dyn Fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> + Send + Sync>;

impl IndirectTools {
    /// Replaces the tools and the namespaces (an MCP server's name and
    /// description).
    pub fn set(&self, tools: Vec<Arc<dyn Tool>>, namespaces: Vec<Namespace>) {
        let set = ToolSet::new(tools);
        *self.0.tools.write().unwrap_or_else(|p| p.into_inner()) = (set, namespaces);
    }

    /// The tools and namespaces now.
    pub fn get(&self) -> (ToolSet, Vec<Namespace>) {
        self.0
            .tools
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// What brings the tools up to date before a search (pi waits for the
    /// servers still connecting when `tool_search` runs, or a script names
    /// or searches the tools).
    pub fn set_refresh(&self, refresh: RefreshIndirect) {
        *self.0.refresh.write().unwrap_or_else(|p| p.into_inner()) = Some(refresh);
    }

    /// The tools and namespaces once brought up to date (see
    /// [`IndirectTools::set_refresh`]).
    pub async fn settled(&self) -> (ToolSet, Vec<Namespace>) {
        let refresh = self
            .0
            .refresh
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some(refresh) = refresh {
            refresh().await;
        }
        self.get()
    }
}

/// What a `codemode` tool is built with besides the tools.
#[derive(Clone, Default)]
pub struct CodemodeParts {
    /// `mode` and `inlineBudget`.
    pub settings: CodemodeSettings,
    /// Keeps `store()`'s values (none: they last one script).
    pub store: Option<Arc<dyn CodemodeStore>>,
    /// Answers `models.*`.
    pub models: Option<Arc<dyn ModelCatalog>>,
    /// The tools only scripts reach.
    pub indirect: IndirectTools,
}

/// The `codemode` tool.
pub struct CodemodeTool {
    spec: ToolSpec,
    /// Tools only scripts reach (`"only"` mode).
    hidden: ToolSet,
    parts: CodemodeParts,
}

impl std::fmt::Debug for CodemodeTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodemodeTool")
            .field("hidden", &self.hidden.names())
            .finish_non_exhaustive()
    }
}

/// `tools` with the `codemode` tool added as `parts.settings` say: in
/// `"only"` mode the result is `codemode` alone, holding the others.
pub fn with_codemode(tools: Vec<Arc<dyn Tool>>, parts: CodemodeParts) -> Vec<Arc<dyn Tool>> {
    let settings = parts.settings.clone();
    let tools: Vec<Arc<dyn Tool>> = tools
        .into_iter()
        .filter(|t| t.name() != CODEMODE_TOOL_NAME)
        .collect();
    match settings.mode {
        CodemodeMode::On => {
            let declared: Vec<&Arc<dyn Tool>> = tools.iter().collect();
            let description = description(&[], &declared, settings.inline_budget);
            let tool = CodemodeTool::new(description, ToolSet::default(), parts);
            let mut out = tools;
            out.push(Arc::new(tool));
            out
        }
        CodemodeMode::Only => {
            let listed: Vec<CallableTool> = tools.iter().map(|t| callable(t, true)).collect();
            let description = description(&listed, &[], settings.inline_budget);
            vec![Arc::new(CodemodeTool::new(
                description,
                ToolSet::new(tools),
                parts,
            ))]
        }
    }
}

/// The description: the intro, then the API: the result types, the listed
/// tools' declarations within the budget, the declared tools by name with
/// what they resolve to, and the globals.
fn description(listed: &[CallableTool], declared: &[&Arc<dyn Tool>], budget: usize) -> String {
    let catalog = Catalog::new(listed.to_vec(), Vec::new());
    let mut api = format!(
        "{RESULT_TYPES}\n{}",
        makai_codemode::tools_declaration(&catalog, budget)
    );
    if !declared.is_empty() {
        api.push_str("\n// Your declared tools are callable as tools.<name>(args) with the parameters declared to you:");
        for t in declared {
            let p = Projection::of(t.name());
            api.push_str(&format!(
                "\n//   tools.{}(args): Promise<{}>",
                makai_codemode::js_name(t.name()),
                p.result_type()
            ));
        }
    }
    format!("{INTRO}\n\nAvailable API:\n```ts\n{api}\n{GLOBALS}\n```")
}

impl CodemodeTool {
    fn new(description: String, hidden: ToolSet, parts: CodemodeParts) -> Self {
        let parameters = json!({
            "type": "object",
            "properties": {
                "code": {
                    "type": "string",
                    "description": "The script: the body of an async JavaScript function (top-level await and return work). It may start with a `// @options: {\"max_output_tokens\": 2000, \"timeout_ms\": 60000}` line."
                }
            },
            "required": ["code"]
        });
        CodemodeTool {
            spec: ToolSpec::new(CODEMODE_TOOL_NAME, description, parameters).with_label("codemode"),
            hidden,
            parts,
        }
    }

    /// The catalog of this call: the run's tools but `codemode`, the
    /// hidden ones, then the indirect ones; MCP tools grouped by server.
    fn catalog(&self, declared: &ToolSet, indirect: &ToolSet, known: &[Namespace]) -> Catalog {
        let mut tools: Vec<CallableTool> = declared
            .iter()
            .filter(|t| t.name() != CODEMODE_TOOL_NAME)
            .map(|t| callable(t, false))
            .collect();
        for set in [&self.hidden, indirect] {
            tools.extend(
                set.iter()
                    .filter(|t| !tools_named(&tools, t.name()))
                    .map(|t| callable(t, true))
                    .collect::<Vec<_>>(),
            );
        }
        let mut namespaces: Vec<Namespace> = Vec::new();
        for ns in tools.iter().filter_map(|t| t.namespace.as_deref()) {
            if !namespaces.iter().any(|n| n.name == ns) {
                namespaces.push(known.iter().find(|n| n.name == ns).cloned().unwrap_or(
                    Namespace {
                        name: ns.to_string(),
                        description: None,
                        instructions: None,
                    },
                ));
            }
        }
        Catalog::new(tools, namespaces)
    }
}

#[async_trait]
impl Tool for CodemodeTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn execute(
        &self,
        _call_id: &str,
        args: Value,
        ctx: ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let source = args.get("code").and_then(Value::as_str).unwrap_or_default();
        let script = Script::parse(source)
            .map_err(|e| ToolError::Failed(format!("Script failed before it ran: {e}")))?;
        let declared = ctx.snapshot().map(|s| s.tools.clone()).unwrap_or_default();
        // A script that names MCP tools or searches the tools waits for the
        // servers still connecting (as pi's does).
        let (indirect, namespaces) = if reaches_indirect_tools(source) {
            self.parts.indirect.settled().await
        } else {
            self.parts.indirect.get()
        };
        let catalog = Arc::new(self.catalog(&declared, &indirect, &namespaces));
        let host = Arc::new(ScriptHost::new(
            ctx.clone(),
            [declared, self.hidden.clone(), indirect],
            self.parts.models.clone(),
        ));
        let store = self
            .parts
            .store
            .as_ref()
            .map(|s| s.load())
            .unwrap_or_default();
        let outcome = makai_codemode::run(
            &script,
            RunEnv {
                host: host.clone(),
                catalog,
                store,
                cancel: ctx.cancel_token().clone(),
            },
        )
        .await;
        let mut notes = Vec::new();
        if outcome.completed()
            && !outcome.store_writes.is_empty()
            && let Some(store) = &self.parts.store
            && let Err(e) = store.save(&outcome.store_writes)
        {
            notes.push(format!("The values stored could not be kept: {e}"));
        }
        let calls = host.finish();
        if !outcome.completed() {
            notes.push(host::call_summary(&calls));
        }
        let note = (!notes.is_empty()).then(|| notes.join("\n"));
        let rendered = outcome.render(script.options.max_output_tokens, note.as_deref());
        let content = rendered
            .parts
            .into_iter()
            .map(|p| match p {
                Part::Text(t) => makai_ai::UserContent::text(t),
                Part::Image { data, mime_type } => makai_ai::UserContent::image(data, mime_type),
            })
            .collect();
        let mut details = json!({ "calls": calls, "logs": outcome.console });
        if let Some(p) = rendered.full_output_path {
            details["fullOutputPath"] = Value::String(p.display().to_string());
        }
        let output = ToolOutput {
            content,
            details,
            usage: None,
            nested_calls: None,
        };
        if outcome.completed() {
            Ok(output)
        } else {
            Err(ToolError::Output(output))
        }
    }
}
