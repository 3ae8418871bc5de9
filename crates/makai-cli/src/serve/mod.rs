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
pub mod shared;

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

    if let Some(store) = shared_store(&args)? {
        return run_shared(args, addr, token, store).await;
    }
    let (app, local) = crate::local::build_app(&mut args.run).await?;
    // The session's first prompt does not wait for the model's handshake.
    app.preconnect();
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

/// The PostgreSQL store `--store` (or the `store` setting) names, if any:
/// then this instance is stateless ([`shared`]).
fn shared_store(args: &ServeArgs) -> Result<Option<makai_store_pg::PgStore>, CliError> {
    let setting = if args.run.store.is_some() {
        None
    } else {
        let cwd = crate::app::setup::working_dir(&args.run)?;
        let home = makai_coding::makai_home();
        // The project's settings count only when the project is trusted.
        let user = crate::app::trust::settings_for(&cwd, home.as_deref(), false)?;
        let trust = crate::app::trust::decide(&args.run, &cwd, home.as_deref(), &user.settings)?;
        crate::app::trust::settings_for(&cwd, home.as_deref(), trust.trusted)?
            .settings
            .store
    };
    crate::store::open_pg(args.run.store.as_deref(), setting.as_deref())
}

/// This instance's default name: host, process id, random suffix.
fn instance_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "makai".into());
    format!("{host}:{}:{:04x}", std::process::id(), fastrand::u16(..))
}

/// `makai serve --store postgres://...`: any session of the database, to any client.
async fn run_shared(
    args: ServeArgs,
    addr: std::net::SocketAddr,
    token: ServeToken,
    store: makai_store_pg::PgStore,
) -> Result<i32, CliError> {
    let session_flag = [
        (args.run.session.is_some(), "--session"),
        (args.run.continue_, "-c/--continue"),
        (args.run.no_session, "--no-session"),
    ]
    .into_iter()
    .find_map(|(given, flag)| given.then_some(flag));
    if let Some(flag) = session_flag {
        return Err(CliError::Usage(format!(
            "makai serve --store postgres://... does not take {flag}: each client works on its own \
             session in the database (a new one, or the one it names with switch_session)"
        )));
    }
    if args.run.local {
        return Err(CliError::Usage(
            "makai serve --store postgres://... does not take --local: every instance must reach \
             the same model; give --provider/--model (or --base-url)"
                .into(),
        ));
    }
    let config = shared::SharedConfig {
        instance: args.instance.clone().unwrap_or_else(instance_name),
        lease_ttl: args.lease_ttl()?,
        grace: GRACE,
    };
    let instance = config.instance.clone();
    let url = store.url().to_string();
    let handler = shared::SharedSessions::new(store, args.run.clone(), config);
    handler.start_sweep();
    let mut server_config = ServerConfig::new(token.secret()).with_session(handler.clone());
    server_config.bind = addr;
    server_config.allow_non_loopback = args.allow_non_loopback;
    if let Some(base) = &args.run.base_url {
        server_config.trusted_base_urls.push(base.clone());
    }
    let server = makai_protocol::serve(server_config)
        .await
        .map_err(|e| CliError::failed(format!("makai serve: {e}")))?;
    let ws = server.ws_url();
    eprintln!(
        "makai serve: listening on {ws} (instance {instance}, sessions in PostgreSQL at {url})"
    );
    if !addr.ip().is_loopback() {
        eprintln!(
            "makai serve: warning: listening on {} without TLS: anyone on the network path can read the traffic, token included",
            addr.ip()
        );
    }
    if token.was_created() {
        eprintln!(
            "makai serve: new access token (shown only this once; stored in {}):\n\n    {}\n",
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
    let mut stdout = std::io::stdout();
    if let Err(e) = writeln!(stdout, "{ws}").and_then(|()| stdout.flush()) {
        eprintln!("makai serve: cannot write the URL on stdout: {e}");
    }
    signals.next().await;
    eprintln!(
        "makai serve: stopping: running sessions get up to {GRACE:?} to finish, then their leases go to the other instances"
    );
    handler.drain().await;
    let report = server.shutdown(GRACE).await;
    if report.cut_short > 0 {
        eprintln!(
            "makai serve: {} model call(s) of remote clients were cut short",
            report.cut_short
        );
    }
    eprintln!("makai serve: stopped");
    Ok(EXIT_OK)
}
