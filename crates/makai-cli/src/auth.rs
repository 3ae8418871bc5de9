//! `makai auth login|status|logout`: the interactive logins of Anthropic
//! (Claude Pro/Max), ChatGPT (Codex) and GitHub Copilot, and the stored
//! credentials.

use std::io::IsTerminal;
use std::path::PathBuf;

use makai_auth::store::{AuthStore, Credential};
use makai_auth::{codex, copilot, oauth};

use crate::cli::AuthCommand;
use crate::error::CliError;

/// The providers with a login.
const LOGIN_PROVIDERS: &str =
    "anthropic (Claude Pro/Max), openai-codex (ChatGPT Plus/Pro), github-copilot";

/// Runs `makai auth ...`; returns the exit code.
pub async fn run_command(command: AuthCommand, home: Option<PathBuf>) -> Result<i32, CliError> {
    let home = home.ok_or_else(|| {
        CliError::config("cannot find a home folder for auth.json; set MAKAI_HOME to a folder")
    })?;
    let path = AuthStore::file_in(&home);
    match command {
        AuthCommand::Login {
            provider,
            api_key,
            no_browser,
        } => {
            // pi 1.5: a provider without an account sign-in asks for its key.
            if api_key || !has_login(&provider) {
                let var = makai_ai::credentials::env_var_for_provider(&provider)
                    .map(|v| format!(" (or set {v} instead)"))
                    .unwrap_or_default();
                let key = read_secret(&format!("API key for {provider}{var}: "))
                    .await
                    .map_err(|e| CliError::failed(format!("cannot read the API key: {e}")))?;
                let key = key.trim();
                if key.is_empty() {
                    return Err(CliError::Usage(format!(
                        "no API key was given for {provider}{var}; nothing was saved"
                    )));
                }
                let mut store = AuthStore::load(&path)?;
                store.set(
                    &provider,
                    Credential::ApiKey {
                        key: key.to_string(),
                    },
                );
                store.save()?;
                eprintln!("API key for {provider} saved to {}.", path.display());
                return Ok(0);
            }
            let (line_tx, line_rx) = tokio::sync::mpsc::channel::<String>(1);
            std::thread::spawn(move || {
                let mut line = String::new();
                if std::io::stdin().read_line(&mut line).is_ok_and(|n| n > 0) {
                    // The receiver is gone once the callback won: the line is not needed.
                    let _ = line_tx.blocking_send(line);
                }
            });
            let ui = LoginUi {
                say: Box::new(|text| eprintln!("{text}")),
                sign_in_url: Box::new(|_| {}),
                pasted: line_rx,
                open_browser: !no_browser,
            };
            let saved = login(&provider, &path, ui).await?;
            eprintln!("{saved}");
            Ok(0)
        }
        AuthCommand::Status => {
            let store = AuthStore::load(&path)?;
            let now = makai_ai::now_ms();
            println!("Credentials file: {}", path.display());
            let mut any = false;
            for (provider, cred) in store.iter() {
                any = true;
                println!("  {provider}: {}", cred.describe(now));
            }
            if !any {
                println!("  (no stored credentials)");
            }
            let vars = [
                "ANTHROPIC_API_KEY",
                "OPENAI_API_KEY",
                "GEMINI_API_KEY",
                "GOOGLE_API_KEY",
                "GROQ_API_KEY",
                "OPENROUTER_API_KEY",
                "DEEPSEEK_API_KEY",
                "MISTRAL_API_KEY",
                "XAI_API_KEY",
                "AWS_BEARER_TOKEN_BEDROCK",
                "AWS_ACCESS_KEY_ID",
                "AWS_PROFILE",
                "GOOGLE_CLOUD_API_KEY",
                "GOOGLE_APPLICATION_CREDENTIALS",
                "AZURE_OPENAI_API_KEY",
                "AZURE_OPENAI_AD_TOKEN",
                "COPILOT_GITHUB_TOKEN",
            ];
            let set: Vec<&str> = vars
                .into_iter()
                .filter(|v| std::env::var(v).is_ok_and(|x| !x.trim().is_empty()))
                .collect();
            if set.is_empty() {
                println!("Environment: no provider key variables set");
            } else {
                println!("Environment: {} set", set.join(", "));
            }
            Ok(0)
        }
        AuthCommand::Logout { provider } => {
            let mut store = AuthStore::load(&path)?;
            let removed = match &provider {
                Some(p) => store.remove(p),
                None => {
                    let had = store.iter().next().is_some();
                    store.clear();
                    had
                }
            };
            if removed {
                store.save()?;
                eprintln!(
                    "Removed the credentials of {} from {}.",
                    provider.as_deref().unwrap_or("every provider"),
                    path.display()
                );
            } else {
                eprintln!(
                    "No stored credentials for {}.",
                    provider.as_deref().unwrap_or("any provider")
                );
            }
            Ok(0)
        }
    }
}

/// Opens `url` in a browser when one can be opened (never with `MAKAI_NO_BROWSER`).
fn open_browser(url: &str) {
    if std::env::var_os("MAKAI_NO_BROWSER").is_none() && std::io::stderr().is_terminal() {
        // A browser that cannot be started changes nothing: the URL is printed.
        if let Err(e) = std::process::Command::new("xdg-open")
            .arg(url)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
        {
            tracing::debug!(error = %e, "could not open a browser");
        }
    }
}

/// How a login talks to the user: where its messages go, who is told the
/// sign-in URL (the TUI keeps it for Ctrl+X), and where a code pasted by the
/// user arrives (a line on stdin, or the TUI's editor).
pub struct LoginUi {
    /// Shows a message.
    pub say: Box<dyn Fn(String) + Send + Sync>,
    /// Told the URL the user must open (besides the message saying it).
    pub sign_in_url: Box<dyn Fn(&str) + Send + Sync>,
    /// Codes (or final redirect URLs) the user pasted.
    pub pasted: tokio::sync::mpsc::Receiver<String>,
    /// Open the sign-in URL in a browser where one can be opened (false:
    /// `--no-browser`, the URL is only shown).
    pub open_browser: bool,
}

/// Reads a secret line: from the terminal without echoing it (the prompt on
/// stderr), or a line of standard input when that is not a terminal
/// (`echo "$KEY" | makai auth login openai --api-key`). Ctrl+C while typing
/// cancels, and the terminal gets its echo back either way.
async fn read_secret(prompt: &str) -> std::io::Result<String> {
    use std::io::BufRead;
    let read_line = || {
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line).map(|_| line)
    };
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return read_line();
    }
    eprint!("{prompt}");
    let saved = nix::sys::termios::tcgetattr(&stdin).map_err(std::io::Error::from)?;
    let mut quiet = saved.clone();
    quiet
        .local_flags
        .remove(nix::sys::termios::LocalFlags::ECHO);
    quiet
        .local_flags
        .insert(nix::sys::termios::LocalFlags::ECHONL);
    nix::sys::termios::tcsetattr(&stdin, nix::sys::termios::SetArg::TCSANOW, &quiet)
        .map_err(std::io::Error::from)?;
    // Ctrl+C is caught (not left to kill makai with the echo off).
    let read = tokio::select! {
        line = tokio::task::spawn_blocking(read_line) => line.map_err(std::io::Error::other).and_then(|l| l),
        _ = tokio::signal::ctrl_c() => {
            eprintln!();
            Err(std::io::Error::new(std::io::ErrorKind::Interrupted, "cancelled; nothing was saved"))
        }
    };
    let restored = nix::sys::termios::tcsetattr(&stdin, nix::sys::termios::SetArg::TCSANOW, &saved);
    let line = read?;
    restored.map_err(std::io::Error::from)?;
    Ok(line)
}

/// True for the providers `login` can sign in to.
pub fn has_login(provider: &str) -> bool {
    matches!(provider, "anthropic" | "openai-codex" | "github-copilot")
}

/// Signs in to `provider` (see [`has_login`]) and stores the credential in
/// the auth file at `path`; returns the message saying so.
pub async fn login(
    provider: &str,
    path: &std::path::Path,
    mut ui: LoginUi,
) -> Result<String, CliError> {
    let credential = match provider {
        "anthropic" => anthropic_login(&oauth::OAuthConfig::anthropic_from_env(), &mut ui).await?,
        "openai-codex" => codex_login(&codex::CodexConfig::from_env(), &mut ui).await?,
        "github-copilot" => copilot_login(&copilot::CopilotConfig::from_env(), &mut ui).await?,
        other => {
            return Err(CliError::Usage(format!(
                "logins are offered for {LOGIN_PROVIDERS}, not '{other}'"
            )));
        }
    };
    let mut store = AuthStore::load(path)?;
    store.set(provider, credential);
    store.save()?;
    Ok(format!(
        "Logged in to {provider}. Credentials saved to {}.",
        path.display()
    ))
}

/// Waits for the browser to come back to `server` or for a pasted code (or
/// redirect URL), within 10 minutes; returns the code.
async fn wait_for_code(
    server: &mut oauth::CallbackServer,
    state: &str,
    command: &str,
    pasted: &mut tokio::sync::mpsc::Receiver<String>,
) -> Result<String, CliError> {
    tokio::select! {
        got = server.wait() => got
            .map(|(code, _)| code)
            .ok_or_else(|| CliError::failed("the OAuth callback server stopped")),
        Some(line) = pasted.recv() => {
            let (code, pasted_state) = oauth::parse_pasted_code(&line);
            let code = code.ok_or_else(|| CliError::failed(format!("no code was pasted; run `{command}` again")))?;
            if let Some(s) = &pasted_state && s != state {
                return Err(CliError::failed(format!("the pasted code belongs to another login (state mismatch); run `{command}` again")));
            }
            Ok(code)
        }
        _ = tokio::time::sleep(std::time::Duration::from_secs(600)) => {
            Err(CliError::failed(format!("no login within 10 minutes; run `{command}` again")))
        }
    }
}

/// Shows the sign-in URL and opens it in a browser where one can be opened.
fn show_url(ui: &LoginUi, intro: &str, url: &str) {
    (ui.say)(format!("{intro}\n\n  {url}\n"));
    (ui.sign_in_url)(url);
    if ui.open_browser {
        open_browser(url);
    }
}

/// The Anthropic login: shows the URL, waits for the callback or a pasted code.
async fn anthropic_login(
    config: &oauth::OAuthConfig,
    ui: &mut LoginUi,
) -> Result<Credential, CliError> {
    let pkce = oauth::Pkce::generate();
    let state = oauth::Pkce::generate().verifier;
    let mut server = oauth::CallbackServer::start(config.callback_port, state.clone()).await?;
    let redirect = server.redirect_uri.clone();
    let url = oauth::authorize_url(config, &pkce, &state, &redirect)?;
    show_url(
        ui,
        "Open this URL in your browser to log in with your Claude Pro/Max account:",
        &url,
    );
    (ui.say)(format!(
        "Waiting for the browser to come back to {redirect} ...\n\
         If the browser runs on another machine, paste the code (or the final URL) here and press Enter:"
    ));
    let code = wait_for_code(
        &mut server,
        &state,
        "makai auth login anthropic",
        &mut ui.pasted,
    )
    .await?;
    drop(server);
    (ui.say)("Exchanging the authorization code for tokens...".into());
    Ok(oauth::exchange_code(config, &code, &state, &pkce.verifier, &redirect).await?)
}

/// The ChatGPT login (Codex): the same PKCE flow against OpenAI's auth server.
async fn codex_login(
    config: &codex::CodexConfig,
    ui: &mut LoginUi,
) -> Result<Credential, CliError> {
    let pkce = oauth::Pkce::generate();
    let state = oauth::Pkce::generate().verifier;
    let mut server =
        oauth::CallbackServer::start_at(config.callback_port, state.clone(), codex::CALLBACK_PATH)
            .await?;
    let redirect = server.redirect_uri.clone();
    let url = codex::authorize_url(config, &pkce, &state, &redirect)?;
    show_url(
        ui,
        "Open this URL in your browser to log in with your ChatGPT Plus/Pro account:",
        &url,
    );
    (ui.say)(format!(
        "Waiting for the browser to come back to {redirect} ...\n\
         If the browser runs on another machine, paste the final URL (or the code) here and press Enter:"
    ));
    let code = wait_for_code(
        &mut server,
        &state,
        "makai auth login openai-codex",
        &mut ui.pasted,
    )
    .await?;
    drop(server);
    (ui.say)("Exchanging the authorization code for tokens...".into());
    Ok(codex::exchange_code(config, &code, &pkce.verifier, &redirect).await?)
}

/// The GitHub Copilot login: the device flow, then the Copilot token exchange.
async fn copilot_login(
    config: &copilot::CopilotConfig,
    ui: &mut LoginUi,
) -> Result<Credential, CliError> {
    let code = copilot::device_code(config).await?;
    (ui.say)(format!(
        "To log in to GitHub Copilot, open {} and enter the code:\n\n  {}\n\nWaiting for GitHub...",
        code.verification_uri, code.user_code
    ));
    (ui.sign_in_url)(&code.verification_uri);
    open_browser(&code.verification_uri);
    let github_token = copilot::wait_for_authorization(config, &code).await?;
    (ui.say)("Exchanging the GitHub token for a Copilot token...".into());
    Ok(copilot::exchange(config, &github_token).await?)
}
