//! `makai serve`: the agent session (the RPC mode's commands and events) and
//! provider streaming, served over the makai protocol ([`makai_protocol`]).
//!
//! - The bearer token comes from `--token-file` or `${MAKAI_HOME:-~/.makai}/serve-token`
//!   (generated at first start with mode 0600 and printed once, on stderr).
//! - The first stdout line is the server's URL (`ws://127.0.0.1:PORT/`), so a
//!   script (or a test) starting it with `--port 0` can read where it listens.
//! - Ctrl-C or SIGTERM stops it gracefully: running model calls and prompts get
//!   [`GRACE`] to finish, then are aborted; every message ends up in the
//!   session file. A second signal aborts the running prompt at once.

pub mod args;
pub mod session;

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use makai_protocol::{ServeToken, ServerConfig};

pub use args::ServeArgs;
pub use session::ServedSession;

use crate::error::{CliError, EXIT_OK};

/// How long running work may take to finish at shutdown.
pub const GRACE: Duration = Duration::from_secs(10);

/// Runs the server until Ctrl-C / SIGTERM; returns the exit code.
pub async fn run(mut args: ServeArgs) -> Result<i32, CliError> {
    let addr = args.bind_addr()?;
    let token_path = match &args.token_file {
        Some(p) => p.clone(),
        None => ServeToken::default_path().map_err(|e| CliError::config(e.to_string()))?,
    };
    let token =
        ServeToken::load_or_create(&token_path).map_err(|e| CliError::config(e.to_string()))?;

    let (app, local) = crate::local::build_app(&mut args.run).await?;
    let served = Arc::new(ServedSession::new(app.clone(), GRACE));
    let mut config = ServerConfig::new(token.secret()).with_session(served.clone());
    config.bind = addr;
    config.allow_non_loopback = args.allow_non_loopback;
    if let Some(url) = &args.run.base_url {
        // The operator chose this endpoint: the server's key may go there.
        config.trusted_base_urls.push(url.clone());
    }
    let server = makai_protocol::serve(config)
        .await
        .map_err(|e| CliError::failed(format!("makai serve: {e}")))?;
    let url = server.ws_url();

    let model = app.model();
    eprintln!(
        "makai serve: listening on {url} (model {}/{}, session {}{})",
        model.provider,
        model.id,
        app.session_id(),
        app.session_file()
            .map(|p| format!(", file {}", p.display()))
            .unwrap_or_else(|| ", in memory".into())
    );
    if !addr.ip().is_loopback() {
        eprintln!(
            "makai serve: warning: listening on {} without TLS: anyone on the network path can read the traffic, token included",
            addr.ip()
        );
    }
    if token.was_created() {
        eprintln!(
            "makai serve: new access token (shown only this once; stored in {}):\n\n    {}\n\n\
             Clients connect to {url} with it: makai_protocol::RemoteProtocolClient::connect(\"{url}\", TOKEN),\n\
             or any WebSocket client sending the header `Authorization: Bearer TOKEN` (see docs/protocol.md).",
            token.path().display(),
            token.secret()
        );
    } else {
        eprintln!(
            "makai serve: clients authenticate with the token in {}",
            token.path().display()
        );
    }
    let mut signals = crate::signals::StopSignals::install();
    eprintln!("makai serve: Ctrl-C stops the server");
    // Last, so a reader of stdout finds the rest already on stderr.
    let mut stdout = std::io::stdout();
    let _ = writeln!(stdout, "{url}").and_then(|()| stdout.flush());

    signals.next().await;
    eprintln!(
        "makai serve: stopping: running work gets up to {GRACE:?} to finish (Ctrl-C again to abort it now)"
    );
    let aborter = app.clone();
    let second = tokio::spawn(async move {
        signals.next().await;
        eprintln!("makai serve: aborting the running prompt");
        aborter.abort().await;
    });
    served.drain().await;
    let report = server.shutdown(GRACE).await;
    second.abort();
    app.agent().wait_for_idle().await;
    if report.cut_short > 0 {
        eprintln!(
            "makai serve: {} model call(s) of remote clients were cut short",
            report.cut_short
        );
    }
    if let Some(path) = app.session_file() {
        eprintln!("makai serve: stopped; session saved in {}", path.display());
    } else {
        eprintln!("makai serve: stopped");
    }
    drop(served);
    app.shutdown_mcp().await;
    if let Some(local) = local {
        local.stop();
    }
    Ok(EXIT_OK)
}
