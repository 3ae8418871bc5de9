//! The built-in local model in a run (makai-local runs the server): `--local`,
//! the automatic fallback without a key, the run's flags pointed at the
//! server, and stopping it on a signal.

use makai_ai::Api;
pub use makai_local::{
    AUTO_ENV, DIR_ENV, LocalError, LocalModel, LocalStopper, PROVIDER, SCRIPT, auto_enabled,
    cache_dir, check_tools,
};

use crate::cli::Args;
use crate::error::CliError;

/// Points a run's flags at `local`'s server: provider `local`, the
/// openai-completions API, base URL `URL/v1`, the server's model and the
/// server program (whose `tool_choice` dialect the model entry then names).
///
/// The 0.5B model cannot use tools reliably, and their descriptions alone
/// fill most of its 4,096-token window, so its entry says it cannot call
/// tools (see [`crate::models::choose`]): its runs get none unless `--tools`
/// asks for them (said on stderr), while a model switched to later in the
/// session gets the usual tools.
pub fn apply(local: &LocalModel, args: &mut Args) {
    args.base_url = Some(format!("{}/v1", local.url()));
    args.api = Some(Api::OpenAiCompletions);
    args.model = Some(local.model().to_string());
    args.provider = Some(PROVIDER.into());
    args.local_runtime = Some(local.runtime());
    if args.tools.is_none() && !args.no_tools {
        eprintln!(
            "makai: the local model is too small to use tools reliably, so tools are off; \
             pass --tools read,ls,... to enable some"
        );
    }
}

/// On Ctrl-C, SIGTERM or SIGHUP: stop the server, then exit (130, 143, 129).
/// For the modes that have no signal handling of their own.
pub fn stop_on_signals(local: &LocalModel) {
    let stopper = local.stopper();
    if stopper.is_done() {
        return;
    }
    let mut signals = crate::signals::StopSignals::install();
    tokio::spawn(async move {
        let code = signals.next().await;
        if let Err(e) = tokio::task::spawn_blocking(move || stopper.stop()).await {
            eprintln!("makai: stopping the local model server failed: {e}");
        }
        std::process::exit(code);
    });
}

/// The session for a run, with the local model when `--local` asks for it or
/// when no key is configured (and no `--base-url` given): then it says so on
/// stderr. Without bash / curl / Python the old "no key" message stays.
pub async fn build_app(
    args: &mut Args,
) -> Result<(crate::app::AppSession, Option<LocalModel>), CliError> {
    if args.local {
        let local = LocalModel::start(args.keep_local, crate::offline::is_offline())
            .await
            .map_err(|e| CliError::failed(format!("--local: {e}")))?;
        apply(&local, args);
        let app = crate::app::setup::build(args).await?;
        return Ok((app, Some(local)));
    }
    match crate::app::setup::build(args).await {
        Err(CliError::NoKey(message)) if args.base_url.is_none() && auto_enabled() => {
            let Some(dir) = cache_dir() else {
                return Err(CliError::NoKey(message));
            };
            if let Err(e) = check_tools(&dir) {
                return Err(CliError::NoKey(format!("{message}\n\n({e}.)")));
            }
            let offline = crate::offline::is_offline();
            let install = if offline {
                format!(
                    "makai: offline: it is used if it is installed in {}; nothing is downloaded.",
                    dir.display()
                )
            } else {
                format!(
                    "makai: the first run installs it into {} (about 530 MB, typically under a minute; progress follows).",
                    dir.display()
                )
            };
            eprintln!(
                "makai: no API key or login found, so makai uses its built-in local model \
                 (Qwen2.5-Coder-0.5B-Instruct, run on this machine by llama.cpp; no key needed).\n\
                 {install} \
                 Set {AUTO_ENV}=0 to turn this off; `makai --help` shows how to use a provider key."
            );
            let local = LocalModel::start(args.keep_local, offline)
                .await
                .map_err(|e| CliError::NoKey(format!("{e}\n\n{message}")))?;
            apply(&local, args);
            let app = crate::app::setup::build(args).await?;
            Ok((app, Some(local)))
        }
        other => other.map(|app| (app, None)),
    }
}
