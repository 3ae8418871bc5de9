//! `makai auth login|status|logout`: its words, parsed by hand (clap's
//! subcommands would take the place of the run's free-form messages).

use std::ffi::OsString;

use crate::error::CliError;

/// `makai auth ...`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuthCommand {
    /// Log in to a provider: an account sign-in for `anthropic` (Claude
    /// Pro/Max), `openai-codex` (ChatGPT Plus/Pro) and `github-copilot`; an
    /// API key, read without echo, for the others or with `--api-key`.
    Login {
        /// The provider.
        provider: String,
        /// `--api-key`: store an API key instead of signing in.
        api_key: bool,
        /// `--no-browser`: print the sign-in URL and take a pasted code
        /// instead of opening a browser.
        no_browser: bool,
    },
    /// Show stored credentials (never the secrets).
    Status,
    /// Remove stored credentials of one provider, or of all.
    Logout {
        /// The provider; `None` removes all.
        provider: Option<String>,
    },
}

/// What `makai auth --help` prints.
pub const AUTH_USAGE: &str = "\
Usage:
  makai auth login [PROVIDER] [--api-key] [--no-browser]
      Log in and exit. anthropic (the default), openai-codex and github-copilot
      sign in with an account; other providers, or --api-key, store an API key
      (read without echo; from standard input when it is not a terminal).
      --no-browser prints the sign-in URL instead of opening a browser.
  makai auth status
      Show the stored credentials (never the secrets) and the key variables set.
  makai auth logout [PROVIDER]
      Remove the stored credentials of PROVIDER, or of every provider.
";

pub(crate) fn parse_auth(rest: &[OsString]) -> Result<AuthCommand, CliError> {
    let words: Vec<String> = rest
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let usage = "usage: makai auth login [PROVIDER] [--api-key] [--no-browser] | makai auth status | makai auth logout [PROVIDER]";
    if words.first().map(String::as_str) == Some("login") {
        let mut provider = None;
        let (mut api_key, mut no_browser) = (false, false);
        for w in &words[1..] {
            match w.as_str() {
                "--api-key" => api_key = true,
                "--no-browser" => no_browser = true,
                flag if flag.starts_with('-') => {
                    return Err(CliError::Usage(format!(
                        "unknown option '{flag}' for makai auth login; {usage}"
                    )));
                }
                p if provider.is_none() => provider = Some(p.to_string()),
                extra => {
                    return Err(CliError::Usage(format!(
                        "unexpected argument '{extra}' for makai auth login; {usage}"
                    )));
                }
            }
        }
        if api_key && no_browser {
            return Err(CliError::Usage(
                "--no-browser is not allowed with --api-key (a key needs no browser)".into(),
            ));
        }
        return Ok(AuthCommand::Login {
            provider: provider.unwrap_or_else(|| "anthropic".into()),
            api_key,
            no_browser,
        });
    }
    match words.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["status"] => Ok(AuthCommand::Status),
        ["logout"] => Ok(AuthCommand::Logout { provider: None }),
        ["logout", p] => Ok(AuthCommand::Logout {
            provider: Some(p.to_string()),
        }),
        [] => Err(CliError::Usage(format!(
            "makai auth needs a command; {usage}"
        ))),
        [first, ..] => Err(CliError::Usage(format!(
            "unknown auth command '{first}' or extra arguments; {usage}"
        ))),
    }
}
