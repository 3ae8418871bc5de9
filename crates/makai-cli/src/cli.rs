//! The command line: `makai [options] [@files...] [messages...]`, with pi's flag
//! names where pi has them, plus `makai auth login|status|logout`.
//!
//! Parsing never panics and never exits by itself: [`parse`] returns what to do,
//! and a usage error (exit code 2) names the flag that was wrong.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Parser, ValueEnum};
use makai_ai::ApiKey;
use makai_ai::{Api, ThinkingLevel};

use crate::error::CliError;

mod auth_args;
mod validate;

use auth_args::parse_auth;
pub use auth_args::{AUTH_USAGE, AuthCommand};
pub(crate) use validate::validate;

/// How the run talks to its user.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// Print the final answer (the default for `-p` and when stdout is not a terminal).
    Text,
    /// Every event as one JSON line.
    Json,
    /// pi's JSONL RPC protocol on stdin/stdout.
    Rpc,
}

/// The options of a normal run.
#[derive(Clone, Debug, Default, Parser)]
#[command(
    name = "makai",
    about = "makai: a coding agent for your terminal (print, JSON and RPC modes compatible with pi)",
    disable_version_flag = true,
    after_help = AFTER_HELP
)]
pub struct Args {
    /// Print the final answer and exit (non-interactive).
    #[arg(short = 'p', long = "print")]
    pub print: bool,
    /// Output mode: text, json (every event as a JSON line) or rpc (JSONL protocol on stdin/stdout).
    #[arg(long, value_enum, value_name = "MODE")]
    pub mode: Option<Mode>,
    /// Provider of the model (anthropic, openai, google, ...).
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// Model: `id`, `provider/id`, optionally with `:thinking` (e.g. `anthropic/claude-sonnet-4-5:high`).
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// API key for the selected provider (overrides auth.json and the environment).
    #[arg(long = "api-key", value_name = "KEY", value_parser = parse_api_key)]
    pub api_key: Option<ApiKey>,
    /// Thinking level: off, minimal, low, medium, high, xhigh, max (clamped to the
    /// levels the model offers: its `thinkingLevelMap`).
    #[arg(long, value_name = "LEVEL", value_parser = parse_thinking)]
    pub thinking: Option<ThinkingLevel>,
    /// Comma-separated built-in tools to enable (read,write,edit,bash,grep,find,ls);
    /// a list of only +name/-name entries changes the default selection (the
    /// defaultTools setting) instead of replacing it, e.g. --tools -bash,+grep.
    #[arg(
        short = 't',
        long,
        value_name = "LIST",
        conflicts_with = "no_tools",
        allow_hyphen_values = true
    )]
    pub tools: Option<String>,
    /// Disable every tool (pi's -nt).
    #[arg(long = "no-tools")]
    pub no_tools: bool,
    /// Disable the built-in tools, keeping MCP tools (pi's -nbt).
    #[arg(long = "no-builtin-tools")]
    pub no_builtin_tools: bool,
    /// Disable tools by name or pattern (`*` matches any run of characters)
    /// after every other selection, MCP tools included (pi's -xt). Comma-separated;
    /// may be repeated.
    #[arg(long = "exclude-tools", value_name = "LIST")]
    pub exclude_tools: Vec<String>,
    /// Models for startup and Ctrl+P / cycle_model: comma-separated ids,
    /// `provider/id`, fuzzy names or `*` globs, each with an optional `:thinking`.
    /// Without --model, the first one available starts the run.
    #[arg(long, value_name = "PATTERNS")]
    pub models: Option<String>,
    /// Start no MCP server: no MCP tools this run.
    #[arg(long = "no-mcp")]
    pub no_mcp: bool,
    /// Turn on a built-in extension (`builtin:mcp`, `builtin:codemode`,
    /// `builtin:tool-search`) whatever the settings say (pi's -e; makai runs
    /// no TypeScript extensions). May be repeated.
    #[arg(short = 'e', long = "extension", value_name = "builtin:NAME")]
    pub extension: Vec<String>,
    /// Turn the built-in extensions off (MCP, codemode, tool_search), but
    /// those -e names (pi's -ne).
    #[arg(long = "no-extensions")]
    pub no_extensions: bool,
    /// Load a skill file or folder besides the discovered ones (may be
    /// repeated; loaded even with --no-skills).
    #[arg(long = "skill", value_name = "PATH")]
    pub skill: Vec<PathBuf>,
    /// Load a prompt template file or folder besides the discovered ones (may
    /// be repeated; loaded even with --no-prompt-templates).
    #[arg(long = "prompt-template", value_name = "PATH")]
    pub prompt_template: Vec<PathBuf>,
    /// Load a theme file or folder besides the discovered ones (may be
    /// repeated; loaded even with --no-themes).
    #[arg(long = "theme", value_name = "PATH")]
    pub theme: Vec<PathBuf>,
    /// The interactive UI's theme for this run: a name, `system`, or
    /// `light/dark` (the `theme` setting is left as it is).
    #[arg(long = "use-theme", value_name = "NAME[/NAME]")]
    pub use_theme: Option<String>,
    /// Skip the discovered themes and the `themes` setting's (pi's
    /// --no-themes); --theme paths still load.
    #[arg(long = "no-themes")]
    pub no_themes: bool,
    /// Skip AGENTS.md / CLAUDE.md discovery (pi's -nc).
    #[arg(long = "no-context-files")]
    pub no_context_files: bool,
    /// Export a session file to HTML and exit (OUTPUT defaults to the input's
    /// name with .html).
    #[arg(long, value_name = "INPUT [OUTPUT]", num_args = 1..=2)]
    pub export: Option<Vec<PathBuf>>,
    /// Replace the agent's system prompt (text, or a path to a file holding it).
    #[arg(long = "system-prompt", value_name = "TEXT")]
    pub system_prompt: Option<String>,
    /// Append text to the system prompt (may be repeated).
    #[arg(long = "append-system-prompt", value_name = "TEXT")]
    pub append_system_prompt: Vec<String>,
    /// Skip skill discovery (makai's, pi's and `.agents/skills` folders; pi's -ns).
    #[arg(long = "no-skills")]
    pub no_skills: bool,
    /// Skip prompt template discovery (`/name` commands; pi's -np).
    #[arg(long = "no-prompt-templates")]
    pub no_prompt_templates: bool,
    /// Continue the most recent session of this directory.
    #[arg(short = 'c', long = "continue", conflicts_with_all = ["resume", "session", "no_session"])]
    pub continue_: bool,
    /// Pick a session of this directory to resume.
    #[arg(short = 'r', long, conflicts_with_all = ["session", "no_session"])]
    pub resume: bool,
    /// Use this session: an id (or unique id prefix) or a session file path. A
    /// path that does not exist yet, or an existing empty (0-byte) file, starts a
    /// new session there (its header is written with the first entry); a
    /// directory or a device is refused. A damaged session file is refused
    /// (exit 1) unless --repair is given.
    #[arg(long, value_name = "ID|PATH", conflicts_with = "no_session")]
    pub session: Option<String>,
    /// Fork a session (a file path, or an id or unique id prefix, from any
    /// directory) into a new session of this directory and continue there.
    #[arg(
        long,
        value_name = "PATH|ID",
        conflicts_with_all = ["session", "continue_", "resume", "no_session"]
    )]
    pub fork: Option<String>,
    /// Open this directory's session with this id, or start one with it
    /// (letters, digits, `.`, `_`, `-`, starting and ending with a letter or
    /// digit). With --fork: the id of the new session.
    #[arg(
        long = "session-id",
        value_name = "ID",
        conflicts_with_all = ["session", "continue_", "resume", "no_session"]
    )]
    pub session_id: Option<String>,
    /// Repair the session file before using it when it is damaged: a backup
    /// copy, damaged lines moved to FILE.damaged, cut-off entries re-attached
    /// (see `makai sessions --help`).
    #[arg(long, conflicts_with = "no_session")]
    pub repair: bool,
    /// Folder holding the session files.
    #[arg(long = "session-dir", value_name = "DIR")]
    pub session_dir: Option<PathBuf>,
    /// Where sessions are stored: `jsonl` (the session files, the default) or
    /// a PostgreSQL URL (`postgres://USER[:PASSWORD]@HOST[:PORT]/DB`, TLS with
    /// `?sslmode=require`). Overrides the `store` setting.
    #[arg(long, value_name = "jsonl|URL", conflicts_with = "no_session")]
    pub store: Option<String>,
    /// Keep the session in memory only.
    #[arg(long = "no-session")]
    pub no_session: bool,
    /// Display name of the session.
    #[arg(short = 'n', long, value_name = "NAME")]
    pub name: Option<String>,
    /// List the known models (optionally only those matching PATTERN) and exit.
    #[arg(long = "list-models", value_name = "PATTERN", num_args = 0..=1, default_missing_value = "")]
    pub list_models: Option<String>,
    /// Print the version and exit.
    #[arg(short = 'v', long)]
    pub version: bool,
    /// Base URL of an ad-hoc endpoint (any OpenAI-compatible server, say), used with --api and --model.
    #[arg(long = "base-url", value_name = "URL")]
    pub base_url: Option<String>,
    /// Wire API of --base-url: anthropic-messages, openai-completions, openai-responses, google-generative-ai.
    #[arg(long, value_name = "API", value_parser = parse_api)]
    pub api: Option<Api>,
    /// Agent spec to use (see `.makai/agents/` and `~/.makai/agents/`).
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// Tools that change things (write, edit, bash) only describe what they would do.
    #[arg(long = "dry-run")]
    pub dry_run: bool,
    /// When a steering message interrupts tool calls: `interrupt-tools` (the
    /// default: calls not started yet are skipped) or `after-tool-batch`
    /// (pi 1.x: delivered once every call of the batch ran).
    #[arg(long, value_name = "WHEN", value_parser = parse_steering)]
    pub steering: Option<makai_agent::SteeringBehavior>,
    /// Sandbox of shell commands and MCP servers: read-only, workspace-write
    /// (the default) or full-access (no sandbox). See docs/sandbox.md.
    #[arg(long, value_name = "POLICY")]
    pub sandbox: Option<makai_sandbox::Policy>,
    /// Pre-approve questions nobody can answer in print and JSON modes: tool
    /// names whose rule is `ask`, `escalate` (bash commands outside the
    /// sandbox) or `all`. Comma-separated; may be repeated.
    #[arg(long = "pre-approve", value_name = "LIST")]
    pub pre_approve: Vec<String>,
    /// Trust this project for this process: load its settings, skills, prompt
    /// templates, agent specs and SYSTEM.md files (pi's -a). See docs/trust.md.
    #[arg(short = 'a', long, conflicts_with = "no_approve")]
    pub approve: bool,
    /// Do not trust this project for this process: skip what it supplies
    /// (pi's -na).
    #[arg(long = "no-approve")]
    pub no_approve: bool,
    /// The answer to the start-up question about trusting the project, for
    /// this process.
    #[arg(skip)]
    pub trust_answer: Option<bool>,
    /// Use the built-in local model (installed and started on first use under
    /// `~/.makai/local-model/`; no key needed). Also the default when no key is configured.
    #[arg(long, conflicts_with_all = ["base_url", "api", "model", "provider"])]
    pub local: bool,
    /// Leave the local model server running when makai exits (it is reused next time).
    #[arg(long = "keep-local")]
    pub keep_local: bool,
    /// Start no network activity of makai's own: no connection opened ahead
    /// of the first request, the local model not installed (pi's `--offline`;
    /// also `MAKAI_OFFLINE=1` or `PI_OFFLINE=1`).
    #[arg(long)]
    pub offline: bool,
    /// pi's terminal mode: `fullscreen` (the alternate screen, the default)
    /// or `regular` (the conversation in the terminal's scrollback); over
    /// the `tuiMode` setting.
    #[arg(long = "tui-mode", value_name = "MODE", value_parser = crate::tui::terminal::TuiMode::parse)]
    pub tui_mode: Option<crate::tui::terminal::TuiMode>,
    /// The server program of the local model this run talks to (set when
    /// makai started or found it, never from the command line).
    #[arg(skip)]
    pub local_runtime: Option<makai_local::Runtime>,
    /// Most model calls per run (each prompt and what follows it).
    #[arg(long = "max-turns", value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_turns: Option<u32>,
    /// Longest a run may take: 90s, 20m, 1h 30m (or seconds).
    #[arg(long = "max-time", value_name = "DURATION", value_parser = makai_coding::limits::parse_duration)]
    pub max_time: Option<std::time::Duration>,
    /// Most tokens (input and output) the session may use, sub-agents,
    /// compactions and titles included; checked before each request.
    #[arg(long = "max-tokens", value_name = "N")]
    pub max_tokens: Option<u64>,
    /// Most dollars the session may spend (model prices from the catalog or
    /// models.json), sub-agents, compactions and titles included; each
    /// request is refused before it is sent when its worst case would pass it.
    #[arg(long = "max-cost", value_name = "USD", value_parser = parse_cost)]
    pub max_cost: Option<f64>,
    /// Working directory (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Print mode: show tool calls and a usage/cost line on stderr.
    #[arg(long)]
    pub verbose: bool,
    /// Messages to send; `@path` attaches a file (text inlined, images attached).
    #[arg(value_name = "MESSAGES", allow_hyphen_values = false)]
    pub messages: Vec<String>,
}

const AFTER_HELP: &str = "\
Commands:
  makai auth login [PROVIDER]    Sign in (anthropic, openai-codex, github-copilot) or store
                                 an API key (--api-key; other providers); makai auth --help
  makai auth status              Show which providers have credentials
  makai auth logout [PROVIDER]   Remove stored credentials
  makai serve [--port N] ...     Serve the agent to remote clients (makai serve --help)
  makai mcp list|add|remove      MCP servers whose tools the agent gets (makai mcp --help)
  makai mcp serve                Serve makai's tools to an MCP client over stdio
  makai sessions check FILE      Say whether a session file is damaged, and where
  makai sessions repair FILE     Repair a damaged session file (makai sessions --help)

Keys come from --api-key, ~/.makai/auth.json (makai auth login) or the provider's
environment variable (ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY, ...).
Without any key, makai uses its built-in local model (as with --local): installed
on first use under ~/.makai/local-model/ (about 530 MB), started for the run and
stopped afterwards (--keep-local keeps it running). MAKAI_AUTO_LOCAL=0 turns the
automatic choice off. Any other local OpenAI-compatible server needs no key either:
  makai --base-url http://127.0.0.1:11434/v1 --api openai-completions --model NAME

Exit codes: 0 done, 1 the run failed or was aborted, 2 usage error.";

/// What the command line asks for.
#[derive(Clone, Debug)]
pub enum Invocation {
    /// `--help` was given: the text to print.
    Help(String),
    /// `--version` was given.
    Version,
    /// `makai auth ...`.
    Auth(AuthCommand),
    /// A normal run.
    Run(Box<Args>),
    /// `makai serve ...`.
    Serve(Box<crate::serve::ServeArgs>),
    /// `makai mcp ...`.
    Mcp(crate::mcp_cmd::McpCommand),
    /// `makai sessions ...`.
    Sessions(crate::sessions_cmd::SessionsCommand),
}

fn parse_thinking(s: &str) -> Result<ThinkingLevel, String> {
    s.parse()
}

fn parse_steering(s: &str) -> Result<makai_agent::SteeringBehavior, String> {
    serde_json::from_value(serde_json::Value::String(s.to_string())).map_err(|_| {
        format!("'{s}' is not a steering delivery; use interrupt-tools or after-tool-batch")
    })
}

fn parse_cost(s: &str) -> Result<f64, String> {
    let t = s.trim().trim_start_matches('$');
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!(
            "'{}' is not an amount of dollars; write it like 0.50 or 5",
            makai_ai::quote::bounded(s)
        )),
    }
}

fn parse_api(s: &str) -> Result<Api, String> {
    s.parse()
}

/// Parses the arguments (without the program name at index 0 removed: pass
/// `std::env::args_os()` as is).
pub fn parse<I, T>(argv: I) -> Result<Invocation, CliError>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let argv: Vec<OsString> = pi_short_flags(argv.into_iter().map(Into::into).collect());
    match argv.get(1).and_then(|a| a.to_str()) {
        Some("auth") => {
            let rest = &argv[2..];
            if rest.iter().any(|a| a == "--help" || a == "-h") {
                return Ok(Invocation::Help(AUTH_USAGE.to_string()));
            }
            return parse_auth(rest).map(Invocation::Auth);
        }
        Some("serve") => return crate::serve::args::parse(&argv[2..]),
        Some("mcp") => return crate::mcp_cmd::parse(&argv[2..]),
        Some("sessions") => return crate::sessions_cmd::parse(&argv[2..]),
        _ => {}
    }
    match Args::try_parse_from(&argv) {
        Ok(args) => {
            if args.version {
                return Ok(Invocation::Version);
            }
            validate(&args)?;
            Ok(Invocation::Run(Box::new(args)))
        }
        Err(e) => match e.kind() {
            clap::error::ErrorKind::DisplayHelp
            | clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                Ok(Invocation::Help(e.render().to_string()))
            }
            _ => Err(CliError::Usage(clap_message(&e))),
        },
    }
}

/// pi's short flags of more than one letter, as the long flags they stand for.
const PI_SHORT_FLAGS: [(&str, &str); 8] = [
    ("-na", "--no-approve"),
    ("-ne", "--no-extensions"),
    ("-nt", "--no-tools"),
    ("-nbt", "--no-builtin-tools"),
    ("-xt", "--exclude-tools"),
    ("-ns", "--no-skills"),
    ("-np", "--no-prompt-templates"),
    ("-nc", "--no-context-files"),
];

/// `argv` with pi's multi-letter short flags (`-nt`, `-xt`, ...) spelled as
/// their long flags, up to a `--` (clap reads one letter per short flag).
fn pi_short_flags(argv: Vec<OsString>) -> Vec<OsString> {
    let mut options = true;
    argv.into_iter()
        .map(|a| {
            if a == "--" {
                options = false;
            }
            match PI_SHORT_FLAGS
                .iter()
                .find(|(short, _)| options && a == *short)
            {
                Some((_, long)) => OsString::from(long),
                None => a,
            }
        })
        .collect()
}

/// clap's error text without its trailing usage block and "For more information" line.
pub(crate) fn clap_message(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let first = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("invalid arguments")
        .trim();
    let first = first.strip_prefix("error: ").unwrap_or(first);
    let tip = text
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("tip:"))
        .map(|t| format!(" ({t})"))
        .unwrap_or_default();
    format!("{first}{tip}. Run `makai --help` for the list of options.")
}

impl Args {
    /// The mode this run uses, given whether stdout is a terminal.
    /// `None` means interactive.
    pub fn effective_mode(&self, stdout_is_terminal: bool) -> Option<Mode> {
        match self.mode {
            Some(m) => Some(m),
            None if self.print || !stdout_is_terminal => Some(Mode::Text),
            None => None,
        }
    }
}

/// Reads `--api-key` into an [`ApiKey`], so `Debug` of the options never
/// shows it.
fn parse_api_key(value: &str) -> Result<ApiKey, String> {
    Ok(ApiKey::new(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Result<Invocation, CliError> {
        let mut v = vec!["makai"];
        v.extend_from_slice(args);
        parse(v)
    }

    #[test]
    fn pi_flags_parse() {
        let Invocation::Run(a) = run(&[
            "-p",
            "--model",
            "anthropic/claude-sonnet-4-5:high",
            "--tools",
            "read,ls",
            "-n",
            "x",
            "@a.txt",
            "hello",
        ])
        .unwrap() else {
            panic!()
        };
        assert!(a.print);
        assert_eq!(a.messages, ["@a.txt", "hello"]);
        assert_eq!(a.tools.as_deref(), Some("read,ls"));
    }

    #[test]
    fn the_api_key_flag_never_shows_in_debug_output() {
        let Invocation::Run(a) = run(&["--api-key", "sk-secret-123", "hi"]).unwrap() else {
            panic!()
        };
        assert_eq!(
            a.api_key.as_ref().map(|k| k.expose()),
            Some("sk-secret-123")
        );
        let shown = format!("{a:?}");
        assert!(!shown.contains("sk-secret-123"), "{shown}");
        assert!(shown.contains("redacted"), "{shown}");
    }

    #[test]
    fn bad_flags_are_usage_errors_naming_the_flag() {
        let e = run(&["--bogus"]).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("--bogus"), "{e}");
        let e = run(&["--thinking", "huge"]).unwrap_err();
        assert!(e.to_string().contains("--thinking"), "{e}");
        let e = run(&["--api", "openai-completions"]).unwrap_err();
        assert!(e.to_string().contains("--base-url"), "{e}");
        let e = run(&["--tools", "read", "--no-tools"]).unwrap_err();
        assert!(e.to_string().contains("--no-tools"), "{e}");
    }

    #[test]
    fn auth_commands() {
        assert!(matches!(
            run(&["auth", "login"]).unwrap(),
            Invocation::Auth(AuthCommand::Login { .. })
        ));
        assert!(matches!(
            run(&["auth", "status"]).unwrap(),
            Invocation::Auth(AuthCommand::Status)
        ));
        assert_eq!(run(&["auth", "fly"]).unwrap_err().exit_code(), 2);
    }

    #[test]
    fn list_models_takes_an_optional_pattern() {
        let Invocation::Run(a) = run(&["--list-models"]).unwrap() else {
            panic!()
        };
        assert_eq!(a.list_models.as_deref(), Some(""));
        let Invocation::Run(a) = run(&["--list-models", "gpt"]).unwrap() else {
            panic!()
        };
        assert_eq!(a.list_models.as_deref(), Some("gpt"));
    }
}
