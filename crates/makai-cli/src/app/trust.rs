//! Project trust for a run (see `makai_coding::trust`): decided once per
//! process, before the session is built, and asked on the terminal (stdout,
//! where the UI draws) in the interactive mode when `defaultProjectTrust` is
//! `"ask"`.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use makai_coding::resources::pi_agent_dir;
use makai_coding::settings::Settings;
use makai_coding::trust::{
    self, ProjectTrust, Resolution, TrustSource, TrustStore, protected_resources,
};

use crate::cli::Args;
use crate::error::CliError;

/// The folders that are the user's own, never a project's: the makai home
/// folder, pi's agent folder and `~/.agents`.
pub(crate) fn user_dirs(home: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = home.map(Path::to_path_buf).into_iter().collect();
    dirs.extend(pi_agent_dir());
    dirs.extend(dirs::home_dir().map(|h| h.join(".agents")));
    dirs
}

/// The trust store of `home` (none without a home folder).
/// The settings of a run in `cwd`: the user files (pi's, then makai's), and
/// the project files (pi's `.pi/settings.json`, then `.makai/settings.json`)
/// when `project_trusted` ([`Settings::files`]).
pub(crate) fn settings_for(
    cwd: &Path,
    home: Option<&Path>,
    project_trusted: bool,
) -> Result<makai_coding::settings::LoadedSettings, CliError> {
    let pi = pi_agent_dir();
    let files = Settings::files(cwd, home, pi.as_deref(), project_trusted);
    Settings::load_from(&files, cwd).map_err(|e| CliError::config(e.to_string()))
}

fn store(home: Option<&Path>) -> Result<TrustStore, CliError> {
    match home {
        Some(home) => TrustStore::load(home).map_err(|e| CliError::config(e.to_string())),
        None => Ok(TrustStore::empty()),
    }
}

/// `--approve` / `--no-approve`, or the answer given at start-up.
fn flag(args: &Args) -> Option<bool> {
    if args.approve {
        Some(true)
    } else if args.no_approve {
        Some(false)
    } else {
        args.trust_answer
    }
}

/// Resolves the trust of `cwd` without asking anybody (the user settings
/// give `defaultProjectTrust`). An answer given at start-up counts as
/// [`TrustSource::Answer`].
pub(crate) fn decide(
    args: &Args,
    cwd: &Path,
    home: Option<&Path>,
    user_settings: &Settings,
) -> Result<ProjectTrust, CliError> {
    let mut decided = decide_with(flag(args), cwd, home, user_settings)?;
    if args.trust_answer.is_some() && !args.approve && !args.no_approve {
        decided.source = TrustSource::Answer;
    }
    Ok(decided)
}

/// The trust of `cwd` for a command that takes no trust flags (`makai mcp`):
/// a saved decision, else `defaultProjectTrust`, never a question.
pub(crate) fn decide_for_command(
    cwd: &Path,
    home: Option<&Path>,
) -> Result<ProjectTrust, CliError> {
    let settings = settings_for(cwd, home, false)?.settings;
    decide_with(None, cwd, home, &settings)
}

fn decide_with(
    flag: Option<bool>,
    cwd: &Path,
    home: Option<&Path>,
    user_settings: &Settings,
) -> Result<ProjectTrust, CliError> {
    let users = user_dirs(home);
    let users: Vec<&Path> = users.iter().map(PathBuf::as_path).collect();
    let protected = protected_resources(cwd, &users);
    match trust::resolve(
        cwd,
        flag,
        &store(home)?,
        user_settings.default_project_trust,
        &protected,
        false,
    ) {
        Resolution::Decided(decided) => Ok(decided),
        // `resolve` asks only when told it can.
        Resolution::Ask(_) => Err(CliError::failed("project trust was left undecided")),
    }
}

/// The interactive mode's question, asked on the terminal before the
/// full-screen UI starts when the project supplies something that needs
/// trust and neither a flag, a saved decision nor `defaultProjectTrust`
/// decides. The answer is kept in `args` for this process; "always" and
/// "never" are saved in `trust.json`.
pub(crate) fn ask_at_start(
    args: &mut Args,
    cwd: &Path,
    home: Option<&Path>,
) -> Result<(), CliError> {
    // The question goes where the UI will draw (stdout), so stderr may be
    // sent to a file.
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Ok(());
    }
    let settings = settings_for(cwd, home, false)?.settings;
    let users = user_dirs(home);
    let users: Vec<&Path> = users.iter().map(PathBuf::as_path).collect();
    let protected = protected_resources(cwd, &users);
    let mut saved = store(home)?;
    let Resolution::Ask(found) = trust::resolve(
        cwd,
        flag(args),
        &saved,
        settings.default_project_trust,
        &protected,
        true,
    ) else {
        return Ok(());
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "makai: {} supplies configuration that can steer the model or run programs:",
        cwd.display()
    );
    for path in &found {
        let shown = path.strip_prefix(cwd).unwrap_or(path);
        let _ = writeln!(out, "  {}", shown.display());
    }
    drop(out);
    let line = crate::session_cwd::read_answer(
        "Trust this project? [y] yes, this time  [a] always  [n] no, this time (default)  [d] never: ",
    )?;
    let (trusted, remember) = parse_answer(&line);
    args.trust_answer = Some(trusted);
    if remember {
        saved
            .save(cwd, Some(trusted))
            .map_err(|e| CliError::failed(e.to_string()))?;
    }
    Ok(())
}

/// An answer to the start-up question: whether to trust, and whether to
/// save the decision. Anything but yes or always declines.
fn parse_answer(line: &str) -> (bool, bool) {
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => (true, false),
        "a" | "always" => (true, true),
        "d" | "never" => (false, true),
        _ => (false, false),
    }
}

/// `/trust`: says the project's trust, or saves a decision for future
/// processes (`yes`, `no`, `forget`). What this process loaded stays.
pub(crate) fn trust_command(
    arg: &str,
    cwd: &Path,
    home: Option<&Path>,
    current: &ProjectTrust,
) -> Result<String, String> {
    let Some(home) = home else {
        return Err("no makai home folder, so no decision can be saved".to_string());
    };
    let mut saved = TrustStore::load(home).map_err(|e| e.to_string())?;
    let decision = match arg.trim() {
        "" => {
            let saved_note = match saved.decision_for(cwd) {
                Some((dir, true)) => format!("saved: trusted ({})", dir.display()),
                Some((dir, false)) => format!("saved: not trusted ({})", dir.display()),
                None => "nothing saved".to_string(),
            };
            return Ok(format!(
                "This process: {}. {saved_note}. `/trust yes`, `/trust no` or `/trust forget` saves a decision for {} for the next start.",
                current.describe(),
                cwd.display()
            ));
        }
        "yes" | "y" | "always" => Some(true),
        "no" | "n" | "never" => Some(false),
        "forget" => None,
        other => {
            return Err(format!(
                "/trust {other}: use /trust yes, /trust no or /trust forget"
            ));
        }
    };
    saved.save(cwd, decision).map_err(|e| e.to_string())?;
    Ok(match decision {
        Some(true) => format!("Saved: {} is trusted from the next start.", cwd.display()),
        Some(false) => format!(
            "Saved: {} is not trusted from the next start.",
            cwd.display()
        ),
        None => format!("Forgot the decision saved for {}.", cwd.display()),
    })
}

#[cfg(test)]
mod tests {
    use super::parse_answer;

    #[test]
    fn only_yes_and_always_trust() {
        assert_eq!(parse_answer("y\n"), (true, false));
        assert_eq!(parse_answer("Always\n"), (true, true));
        assert_eq!(parse_answer("d\n"), (false, true));
        assert_eq!(parse_answer("\n"), (false, false));
        assert_eq!(parse_answer("sure\n"), (false, false));
    }
}
