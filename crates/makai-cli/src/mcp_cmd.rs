//! `makai mcp list|add|remove|serve`: the MCP servers of the settings files,
//! and makai's own tools served over MCP (the logic lives in [`makai_mcp`]).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use makai_mcp::{ConfigScope, McpServerConfig};

use crate::cli::{Invocation, clap_message};
use crate::error::{CliError, EXIT_OK};

/// Which settings file `add` / `remove` edit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Scope {
    /// `~/.makai/settings.json` (every project).
    User,
    /// `<cwd>/.makai/settings.json` (loaded only when the user settings say
    /// `"trustProjectSettings": true`).
    Project,
}

impl From<Scope> for ConfigScope {
    fn from(s: Scope) -> Self {
        match s {
            Scope::User => ConfigScope::User,
            Scope::Project => ConfigScope::Project,
        }
    }
}

/// `makai mcp ...`.
#[derive(Clone, Debug, Parser)]
#[command(
    name = "makai mcp",
    about = "Manage the MCP servers whose tools the agent gets, or serve makai's tools over MCP",
    disable_version_flag = true,
    arg_required_else_help = true
)]
pub struct McpArgs {
    /// The command.
    #[command(subcommand)]
    pub command: McpCommand,
}

/// The `makai mcp` commands.
#[derive(Clone, Debug, Subcommand)]
pub enum McpCommand {
    /// Start every configured server and show its state and tools.
    List {
        /// Seconds to wait for the servers to start.
        #[arg(long, value_name = "SECS", default_value_t = 15)]
        wait: u64,
        /// Project folder whose settings are read (default: the current directory).
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
    },
    /// Add a server: `makai mcp add NAME -- COMMAND [ARGS...]` or `makai mcp add NAME --url URL`.
    Add {
        /// The server's name (its tools are called NAME__TOOL).
        name: String,
        /// Streamable-HTTP endpoint of the server (instead of a command).
        #[arg(long, value_name = "URL")]
        url: Option<String>,
        /// An environment variable for a command server (repeatable); `${VAR}` is read from makai's environment at start.
        #[arg(short = 'e', long = "env", value_name = "KEY=VALUE")]
        env: Vec<String>,
        /// An HTTP header for a URL server (repeatable), e.g. "Authorization: Bearer ${TOKEN}".
        #[arg(short = 'H', long = "header", value_name = "NAME: VALUE")]
        header: Vec<String>,
        /// Longest a tool call may take, in seconds.
        #[arg(long, value_name = "SECS")]
        timeout: Option<u64>,
        /// How the model reaches the server's tools: codemode (the default:
        /// from codemode scripts only), deferred, direct (declared to the
        /// model) or hidden.
        #[arg(long, value_name = "MODE", value_parser = parse_exposure)]
        exposure: Option<makai_mcp::Exposure>,
        /// What the server offers, in a sentence (shown in the system prompt
        /// and by describeNamespace()).
        #[arg(long, value_name = "TEXT")]
        description: Option<String>,
        /// Which settings file to write.
        #[arg(long, value_enum, default_value = "user")]
        scope: Scope,
        /// Replace a server of the same name.
        #[arg(long)]
        replace: bool,
        /// Project folder for `--scope project` (default: the current directory).
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
        /// The command and its arguments, after `--`.
        #[arg(last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// Remove a server (from the user settings, else the project settings).
    Remove {
        /// The server's name.
        name: String,
        /// Only this settings file.
        #[arg(long, value_enum)]
        scope: Option<Scope>,
        /// Project folder for the project settings (default: the current directory).
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
    },
    /// Serve makai's built-in tools (read, write, edit, bash, grep, find, ls)
    /// to an MCP client over stdin/stdout, confined to the working directory.
    Serve {
        /// Working directory of the tools (default: the current directory).
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
        /// Tools that change things only describe what they would do.
        #[arg(long = "dry-run")]
        dry_run: bool,
    },
}

/// Parses `makai mcp ...` (`rest` are the words after `mcp`).
pub fn parse(rest: &[OsString]) -> Result<Invocation, CliError> {
    let argv = std::iter::once(OsString::from("makai mcp")).chain(rest.iter().cloned());
    match McpArgs::try_parse_from(argv) {
        Ok(a) => {
            validate(&a.command)?;
            Ok(Invocation::Mcp(a.command))
        }
        Err(e) => match e.kind() {
            clap::error::ErrorKind::DisplayHelp
            | clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                Ok(Invocation::Help(e.render().to_string()))
            }
            _ => Err(CliError::Usage(
                clap_message(&e).replace("`makai --help`", "`makai mcp --help`"),
            )),
        },
    }
}

fn parse_exposure(text: &str) -> Result<makai_mcp::Exposure, String> {
    text.parse()
}

fn validate(command: &McpCommand) -> Result<(), CliError> {
    if let McpCommand::Add {
        name,
        url,
        command,
        env,
        header,
        ..
    } = command
    {
        makai_mcp::validate_server_name(name).map_err(CliError::Usage)?;
        match (url, command.is_empty()) {
            (Some(_), false) => {
                return Err(CliError::Usage(
                    "makai mcp add: give either --url URL or `-- COMMAND [ARGS...]`, not both"
                        .into(),
                ));
            }
            (None, true) => {
                return Err(CliError::Usage(format!(
                    "makai mcp add {name}: say how to reach the server: `makai mcp add {name} -- COMMAND [ARGS...]` \
                     or `makai mcp add {name} --url URL`"
                )));
            }
            _ => {}
        }
        if url.is_some() && !env.is_empty() {
            return Err(CliError::Usage(
                "makai mcp add: --env is for command servers; a --url server takes --header".into(),
            ));
        }
        if url.is_none() && !header.is_empty() {
            return Err(CliError::Usage(
                "makai mcp add: --header is for --url servers; a command server takes --env".into(),
            ));
        }
        for e in env {
            split_pair(e, '=', "--env", "KEY=VALUE")?;
        }
        for h in header {
            split_pair(h, ':', "--header", "NAME: VALUE")?;
        }
    }
    Ok(())
}

fn split_pair<'a>(
    s: &'a str,
    sep: char,
    flag: &str,
    shape: &str,
) -> Result<(&'a str, &'a str), CliError> {
    match s.split_once(sep) {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim(), v.trim_start())),
        _ => Err(CliError::Usage(format!("{flag} '{s}' is not {shape}"))),
    }
}

fn folder(cwd: &Option<PathBuf>) -> Result<PathBuf, CliError> {
    let dir = match cwd {
        Some(d) => d.clone(),
        None => std::env::current_dir()
            .map_err(|e| CliError::config(format!("cannot read the current directory: {e}")))?,
    };
    if !dir.is_dir() {
        return Err(CliError::Usage(format!(
            "--cwd {}: no such directory",
            dir.display()
        )));
    }
    Ok(std::fs::canonicalize(&dir).unwrap_or(dir))
}

fn settings_file(scope: Scope, cwd: &Path, home: Option<&Path>) -> Result<PathBuf, CliError> {
    makai_mcp::settings_file_for(scope.into(), cwd, home)
        .map_err(|e| CliError::config(e.to_string()))
}

/// Runs a `makai mcp` command; returns the exit code.
pub async fn run(command: McpCommand) -> Result<i32, CliError> {
    let home = makai_coding::makai_home();
    match command {
        McpCommand::List { wait, cwd } => {
            let cwd = folder(&cwd)?;
            // An untrusted project's servers are neither started nor listed.
            let trust = crate::app::trust::decide_for_command(&cwd, home.as_deref())?;
            let pi_dir = makai_coding::resources::pi_agent_dir();
            let sources = makai_mcp::McpSources::standard(
                &cwd,
                home.as_deref(),
                pi_dir.as_deref(),
                trust.trusted,
            );
            let report = match makai_mcp::load_mcp_sources(&sources, &cwd) {
                Ok(mut loaded) => {
                    if !trust.trusted {
                        for file in makai_mcp::McpSources::project_files(&cwd) {
                            if file.is_file() {
                                loaded.warnings.push(format!(
                                    "{} not read: {}; save a decision with /trust in makai",
                                    file.display(),
                                    trust.describe()
                                ));
                            }
                        }
                    }
                    makai_mcp::report_servers(loaded, &cwd, Duration::from_secs(wait)).await
                }
                Err(e) => format!("Cannot read the MCP settings: {e}\n"),
            };
            print!("{report}");
            Ok(EXIT_OK)
        }
        McpCommand::Add {
            name,
            url,
            env,
            header,
            timeout,
            exposure,
            description,
            scope,
            replace,
            cwd,
            command,
        } => {
            let cwd = folder(&cwd)?;
            let mut config = match url {
                Some(url) => McpServerConfig::http(url),
                None => {
                    let mut words = command.into_iter();
                    let program = words.next().unwrap_or_default();
                    McpServerConfig::stdio(program, words)
                }
            };
            for e in &env {
                let (k, v) = split_pair(e, '=', "--env", "KEY=VALUE")?;
                config = config.with_env(k, v);
            }
            for h in &header {
                let (k, v) = split_pair(h, ':', "--header", "NAME: VALUE")?;
                config = config.with_header(k, v);
            }
            if let Some(secs) = timeout {
                config = config.with_timeout(Duration::from_secs(secs));
            }
            if let Some(e) = exposure {
                config = config.with_exposure(e);
            }
            config.description = description;
            let file = settings_file(scope, &cwd, home.as_deref())?;
            let message = makai_mcp::add_server(&file, &name, &config, replace)
                .map_err(|e| CliError::config(e.to_string()))?;
            println!("{message}");
            if scope == Scope::Project {
                println!(
                    "Project servers are used only when ~/.makai/settings.json has \"trustProjectSettings\": true."
                );
            }
            Ok(EXIT_OK)
        }
        McpCommand::Remove { name, scope, cwd } => {
            let cwd = folder(&cwd)?;
            let scopes = match scope {
                Some(s) => vec![s],
                None => vec![Scope::User, Scope::Project],
            };
            let mut errors = Vec::new();
            for s in scopes {
                let file = match settings_file(s, &cwd, home.as_deref()) {
                    Ok(f) => f,
                    Err(e) => {
                        errors.push(e.to_string());
                        continue;
                    }
                };
                match makai_mcp::remove_server(&file, &name) {
                    Ok(message) => {
                        println!("{message}");
                        return Ok(EXIT_OK);
                    }
                    Err(e) => errors.push(e.to_string()),
                }
            }
            Err(CliError::config(errors.join("\n")))
        }
        McpCommand::Serve { cwd, dry_run } => {
            let cwd = folder(&cwd)?;
            let trust = crate::app::trust::decide_for_command(&cwd, home.as_deref())?;
            let loaded = crate::app::trust::settings_for(&cwd, home.as_deref(), trust.trusted)?;
            let mut policy = makai_coding::tools::PathPolicy::confined();
            for root in &loaded.settings.allowed_paths {
                policy = policy.with_allowed_root(root.clone());
            }
            let sandbox = crate::sandboxing::choose(&loaded.settings, None, false);
            let env = makai_coding::tools::ToolEnv::new(cwd)
                .with_policy(policy)
                .with_dry_run(dry_run)
                .with_sandbox(sandbox);
            makai_mcp::serve_builtin_tools_stdio(env)
                .await
                .map_err(|e| CliError::failed(e.to_string()))?;
            Ok(EXIT_OK)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Result<Invocation, CliError> {
        let v: Vec<OsString> = args.iter().map(OsString::from).collect();
        parse(&v)
    }

    #[test]
    fn add_takes_a_command_or_a_url() {
        let Invocation::Mcp(McpCommand::Add { name, command, .. }) = run(&[
            "add", "files", "-e", "A=1", "--", "npx", "-y", "srv", "--flag",
        ])
        .unwrap() else {
            panic!()
        };
        assert_eq!(name, "files");
        assert_eq!(command, ["npx", "-y", "srv", "--flag"]);
        assert!(matches!(
            run(&[
                "add",
                "web",
                "--url",
                "http://127.0.0.1:1/mcp",
                "-H",
                "X: y"
            ])
            .unwrap(),
            Invocation::Mcp(McpCommand::Add { url: Some(_), .. })
        ));
        for bad in [
            &["add", "x"][..],
            &["add", "x", "--url", "http://h", "--", "cmd"],
            &["add", "bad name", "--", "cmd"],
            &["add", "x", "-e", "NOEQUALS", "--", "cmd"],
            &["add", "x", "--url", "http://h", "-e", "A=1"],
            &["frobnicate"],
        ] {
            let e = run(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad:?}: {e}");
        }
        assert!(matches!(run(&["--help"]).unwrap(), Invocation::Help(_)));
        assert!(matches!(run(&[]).unwrap(), Invocation::Help(_)));
    }
}
