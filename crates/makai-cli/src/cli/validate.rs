//! What clap cannot check of the command line: combinations of flags, and
//! names, lists and paths that are empty or missing.

use makai_ai::Api;
use makai_ai::quote::bounded;

use super::{Args, Mode};
use crate::error::CliError;

/// A usage error when the `what` (a name, an id, ...) given to `flag` is
/// empty or only whitespace.
fn require_name(flag: &str, what: &str, value: Option<&str>) -> Result<(), CliError> {
    match value {
        Some(v) if v.trim().is_empty() => Err(CliError::Usage(format!(
            "{flag} {}: the {what} is empty; give one, or leave {flag} out",
            if v.is_empty() {
                "''".to_string()
            } else {
                format!("{v:?}")
            }
        ))),
        _ => Ok(()),
    }
}

/// A comma-separated list given to `flag` must name something, with no
/// empty entries.
fn validate_list(flag: &str, list: &str) -> Result<(), CliError> {
    if list.split(',').any(|n| n.trim().is_empty()) {
        return Err(CliError::Usage(format!(
            "{flag} {:?}: an entry of the list is empty; separate entries with single commas",
            bounded(list)
        )));
    }
    Ok(())
}

/// Every name in a comma-separated `--tools` list must be non-empty.
fn validate_tool_list(list: &str) -> Result<(), CliError> {
    if list.trim().is_empty() {
        return Err(CliError::Usage(
            "--tools '': the list is empty; name the tools (e.g. --tools read,ls) or use --no-tools"
                .into(),
        ));
    }
    if let Some(at) = list.split(',').position(|n| n.trim().is_empty()) {
        return Err(CliError::Usage(format!(
            "--tools {:?}: tool name {} of the list is empty; separate names with single commas \
             (e.g. --tools read,ls)",
            bounded(list),
            at + 1
        )));
    }
    Ok(())
}

/// Checks what clap cannot express: combinations, and names that are empty.
pub(crate) fn validate(args: &Args) -> Result<(), CliError> {
    require_name("--model", "model name", args.model.as_deref())?;
    if let Some(spec) = &args.model {
        let (id, _) = crate::models::split_thinking(spec);
        let id = id.rsplit_once('/').map_or(id.as_str(), |(_, id)| id);
        if id.trim().is_empty() {
            return Err(CliError::Usage(format!(
                "--model {:?}: the model id is empty; give it as ID, PROVIDER/ID or PROVIDER/ID:THINKING",
                bounded(spec)
            )));
        }
    }
    require_name("--provider", "provider name", args.provider.as_deref())?;
    require_name("--agent", "agent name", args.agent.as_deref())?;
    require_name("--session", "session id or path", args.session.as_deref())?;
    require_name("--name", "session name", args.name.as_deref())?;
    if args
        .api_key
        .as_ref()
        .is_some_and(|k| k.expose().trim().is_empty())
    {
        return Err(CliError::Usage(
            "--api-key is empty; give the key, or leave --api-key out to use auth.json or the environment"
                .into(),
        ));
    }
    if args
        .session_dir
        .as_ref()
        .is_some_and(|d| d.as_os_str().is_empty())
    {
        return Err(CliError::Usage(
            "--session-dir '': the folder is empty; give a folder, or leave --session-dir out"
                .into(),
        ));
    }
    if let Some(list) = &args.tools {
        validate_tool_list(list)?;
    }
    if args.api.is_some() && args.base_url.is_none() {
        return Err(CliError::Usage(
            "--api needs --base-url: it names the wire API of that endpoint".into(),
        ));
    }
    if let Some(url) = &args.base_url {
        if args.api.is_none() {
            return Err(CliError::Usage(format!(
                "--base-url {} needs --api (one of: {})",
                bounded(url),
                Api::ALL.map(|a| a.as_str()).join(", ")
            )));
        }
        if args.model.is_none() {
            return Err(CliError::Usage(format!(
                "--base-url {} needs --model NAME: the model id the server knows",
                bounded(url)
            )));
        }
        if url::Url::parse(url).is_err() {
            return Err(CliError::Usage(format!(
                "--base-url '{}' is not a URL (expected e.g. http://127.0.0.1:11434/v1)",
                bounded(url)
            )));
        }
    }
    if let Some(dir) = &args.cwd
        && !dir.is_dir()
    {
        return Err(CliError::Usage(format!(
            "--cwd {}: no such directory",
            bounded(&dir.to_string_lossy())
        )));
    }
    for (flag, paths) in [
        ("--skill", &args.skill),
        ("--prompt-template", &args.prompt_template),
    ] {
        if let Some(missing) = paths.iter().find(|p| !p.exists()) {
            return Err(CliError::Usage(format!(
                "{flag} {}: no such file or folder",
                bounded(&missing.to_string_lossy())
            )));
        }
    }
    // A stray comma in `--models` names nothing (pi ignores it too, its
    // #10334); a list of nothing at all is an error.
    if let Some(list) = &args.models
        && list.split(',').all(|n| n.trim().is_empty())
    {
        return Err(CliError::Usage(format!(
            "--models {:?}: the list names no model; give patterns such as --models 'claude-*,gpt-5'",
            bounded(list)
        )));
    }
    require_name("--fork", "session", args.fork.as_deref())?;
    if let Some(id) = &args.session_id {
        let chars_ok = id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        let ends_ok = id.starts_with(|c: char| c.is_ascii_alphanumeric())
            && id.ends_with(|c: char| c.is_ascii_alphanumeric());
        if !chars_ok || !ends_ok {
            return Err(CliError::Usage(format!(
                "--session-id {:?}: an id is letters, digits, '.', '_' and '-', starting and \
                 ending with a letter or digit",
                bounded(id)
            )));
        }
    }
    for list in &args.exclude_tools {
        validate_list("--exclude-tools", list)?;
    }
    if let Some(list) = &args.tools {
        let entries = makai_coding::tools::selection::parse_list(list);
        let changes = entries
            .iter()
            .filter(|e| e.starts_with('+') || e.starts_with('-'))
            .count();
        if changes > 0 && changes < entries.len() {
            return Err(CliError::Usage(format!(
                "--tools {}: plain names and +name/-name changes cannot be mixed; \
                 name every tool, or only add and remove",
                bounded(list)
            )));
        }
    }
    if args.mode == Some(Mode::Rpc) && !args.messages.is_empty() {
        return Err(CliError::Usage(
            "--mode rpc takes commands on stdin, not messages on the command line".into(),
        ));
    }
    Ok(())
}
