//! makai-cli: the `makai` coding agent.
//!
//! - [`cli`]: the command line (pi's flag names) and exit codes.
//! - [`auth`]: `auth.json`, the Claude Pro/Max OAuth login, key resolution.
//! - [`models`]: the catalog, `--model provider/id[:thinking]`, ad-hoc endpoints.
//! - [`app`]: [`app::AppSession`], what every mode drives (pi's `AgentSession`).
//! - [`modes`]: print, JSON and RPC modes; [`tui`]: the interactive UI.
//! - [`export_html`]: a session as one self-contained HTML file.
//! - [`serve`]: `makai serve`, the session over the makai protocol.
//! - [`local`]: the built-in local model (`--local`, and the default without a key).
//! - [`mcp_cmd`]: `makai mcp list|add|remove|serve`.
//! - [`signals`]: the stop signals (Ctrl-C, SIGTERM, SIGHUP).
//! - [`session_cwd`]: a `--session` runs in the session's working directory.
//! - [`sessions_cmd`]: `makai sessions check|repair FILE`.
//! - [`sandboxing`]: the sandbox of a run (`--sandbox`, settings).
//! - [`logging`]: where the libraries' `tracing` records go (`MAKAI_LOG`).
//! - [`offline`]: `--offline`, `MAKAI_OFFLINE`, `PI_OFFLINE`.
//! - [`proxy`]: pi's `httpProxy` setting.

pub mod app;
pub mod attachments;
pub mod auth;
pub mod bug_report;
pub mod cli;
pub mod crash_log;
pub mod error;
pub mod export_html;
pub mod local;
pub mod logging;
pub mod mcp_cmd;
pub mod models;
pub mod modes;
pub mod offline;
pub mod panic_guard;
pub mod process_markers;
pub mod proxy;
pub mod resume;
pub mod sandboxing;
pub mod serve;
pub mod session_cwd;
pub mod sessions_cmd;
pub mod signals;
pub mod store;
pub mod tui;

use std::ffi::OsString;
use std::io::IsTerminal;

use cli::{Args, Invocation, Mode};
use error::{CliError, EXIT_FAILED, EXIT_OK};
use modes::print::{Format, Prompt};

/// Runs `makai` with these arguments (program name first); returns the exit code.
pub fn main_with_args<I, T>(argv: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let invocation = match cli::parse(argv) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("makai: {e}");
            return e.exit_code();
        }
    };
    let log_to = match &invocation {
        Invocation::Version | Invocation::Help(_) => None,
        Invocation::Serve(_) => Some(logging::LogDestination::Stderr),
        _ => Some(logging::LogDestination::default_file()),
    };
    if let Some(warning) = log_to.and_then(logging::init) {
        eprintln!("makai: {warning}");
    }
    let code = match invocation {
        Invocation::Version => {
            println!("makai {}", env!("CARGO_PKG_VERSION"));
            EXIT_OK
        }
        Invocation::Help(text) => {
            print!("{text}");
            EXIT_OK
        }
        Invocation::Auth(command) => block_on(SESSION_WORKERS, async move {
            auth::run_command(command, makai_coding::makai_home()).await
        }),
        Invocation::Run(args) => {
            offline::set_flag(args.offline);
            block_on(SESSION_WORKERS, run(*args))
        }
        Invocation::Serve(args) => {
            offline::set_flag(args.run.offline);
            block_on(server_workers(), serve::run(*args))
        }
        Invocation::Mcp(command) => block_on(SESSION_WORKERS, mcp_cmd::run(command)),
        Invocation::Sessions(command) => match sessions_cmd::run(command) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("makai: {e}");
                e.exit_code()
            }
        },
    };
    // Log records the UI kept from a log file that could not be written.
    if let Some(lost) = logging::lost_records() {
        eprintln!("makai: {lost}");
    }
    code
}

/// Worker threads for one session (interactive, print, JSON and RPC modes, and
/// the auth and MCP commands): one. A session's async work (streaming,
/// decoding, rendering, the agent loop) runs on that one thread, so a socket
/// read wakes no other thread and the allocator keeps one arena; the second
/// worker of a two-worker runtime cost 15 to 50% more CPU and 0.5 MiB more
/// memory in the agent-loop bench (BENCHMARKS.md, "One worker per session").
/// Blocking work still runs beside it: the file tools, the terminal's input
/// and the RPC writer on Tokio's blocking threads, and the PostgreSQL store
/// through `block_in_place`, which hands the worker's tasks to another thread
/// while it waits (neither is allowed on Tokio's current-thread runtime).
const SESSION_WORKERS: usize = 1;

/// Stack size of a worker thread: the main thread's (8 MiB of address space;
/// only the pages used become resident), as the command runs on a worker.
const WORKER_STACK: usize = 8 << 20;

/// Worker threads for `makai serve`, which streams many sessions at once: one
/// per core, and never fewer than a session gets.
fn server_workers() -> usize {
    std::thread::available_parallelism().map_or(SESSION_WORKERS, |n| n.get().max(SESSION_WORKERS))
}

/// Runs the command `f` on a new runtime with `workers` worker threads and
/// returns its exit code.
///
/// `f` runs as a task on a worker, not in `block_on` on the main thread: the
/// main thread is no worker and does not drive the I/O driver, so every
/// socket read would wake it from a worker.
fn block_on<F>(workers: usize, f: F) -> i32
where
    F: std::future::Future<Output = Result<i32, CliError>> + Send + 'static,
{
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_stack_size(WORKER_STACK)
        .enable_all()
        .build();
    let runtime = match runtime {
        Ok(r) => r,
        Err(e) => {
            eprintln!("makai: cannot start the async runtime: {e}");
            return EXIT_FAILED;
        }
    };
    let outcome = match runtime.block_on(runtime.spawn(f)) {
        Ok(outcome) => outcome,
        // A panic keeps its message (the hook printed it) and its exit code.
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(CliError::failed(format!("the command's task ended: {e}"))),
    };
    let code = match outcome {
        Ok(code) => code,
        Err(e) => {
            eprintln!("makai: {e}");
            e.exit_code()
        }
    };
    // Do not wait for stray blocking work (a stdin reader, say).
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    code
}

/// How long print and JSON modes wait for the MCP servers to start.
const MCP_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Whether `--list-models` asks a llama.cpp router: unless the built-in
/// extension is off (the user's settings and the flags; a project's
/// settings are not read before it is trusted).
fn list_llama_cpp_models(args: &Args, home: Option<&std::path::Path>) -> bool {
    let cwd = std::env::current_dir().unwrap_or_default();
    let setting = app::trust::settings_for(&cwd, home, false)
        .map(|l| l.settings.extensions)
        .unwrap_or_default();
    makai_coding::extensions::BuiltinExtensions::resolve(
        &setting,
        args.no_extensions,
        &args.extension,
    )
    .is_ok_and(|e| e.enabled("llama.cpp"))
}

/// A normal run: list models, or build the session and enter the mode.
pub async fn run(mut args: Args) -> Result<i32, CliError> {
    let home = makai_coding::makai_home();
    if let Some(pattern) = &args.list_models {
        let mut registry = models::load_registry(home.as_deref())?;
        // Settings are read only when there is a router to ask.
        if std::env::var_os(makai_ai::catalog::llama_cpp::BASE_URL_ENV).is_some()
            && list_llama_cpp_models(&args, home.as_deref())
            && let Some(warning) =
                models::add_llama_cpp_models(&mut registry, home.as_deref()).await
        {
            eprintln!("makai: {warning}");
        }
        print!("{}", models::list(&registry, pattern));
        return Ok(EXIT_OK);
    }
    if let Some(paths) = &args.export {
        let written = export_html::export_file(&paths[0], paths.get(1).map(|p| p.as_path()))?;
        println!("Exported to {written}");
        return Ok(EXIT_OK);
    }
    let mode = args.effective_mode(std::io::stdout().is_terminal());
    let in_ui = mode.is_none() && std::io::stdout().is_terminal();
    let pick_session = match resume::choose(&mut args, home.as_deref(), in_ui)? {
        session_cwd::Start::Cancel => return Ok(EXIT_OK),
        session_cwd::Start::PickInUi => true,
        session_cwd::Start::Run(_) => false,
    };
    match session_cwd::adopt(
        &mut args,
        mode.is_none(),
        home.as_deref(),
        &mut session_cwd::ask_on_terminal,
    )? {
        session_cwd::Start::Cancel => return Ok(EXIT_OK),
        session_cwd::Start::Run(Some(note)) => eprintln!("makai: {note}"),
        session_cwd::Start::Run(None) | session_cwd::Start::PickInUi => {}
    }
    let cwd = app::setup::working_dir(&args)?;
    let (files, mut messages) = attachments::split_args(&args.messages);
    let attached = attachments::load(&files, &cwd)?;
    let stdin = match mode {
        Some(Mode::Text) | Some(Mode::Json) => attachments::read_piped_stdin()?,
        _ => None,
    };
    let first = attachments::initial_message(stdin, &attached, &mut messages);
    let mut prompts = Vec::new();
    if let Some(text) = first {
        prompts.push(Prompt {
            text,
            images: attached.images.clone(),
        });
    } else if !attached.images.is_empty() {
        prompts.push(Prompt {
            text: String::new(),
            images: attached.images.clone(),
        });
    }
    prompts.extend(messages.into_iter().map(|text| Prompt {
        text,
        images: Vec::new(),
    }));

    if mode.is_none() {
        app::trust::ask_at_start(&mut args, &cwd, home.as_deref())?;
    }
    let (app, local) = local::build_app(&mut args).await?;
    crash_log::watch_session(app.session());
    if let Some(local) = &local {
        local::stop_on_signals(local);
    }
    // The first request's connection opens while the user types (interactive
    // and RPC modes) or the MCP servers start. A one-shot run that waits for
    // nothing sends its request at once, on a connection of its own.
    if matches!(mode, None | Some(Mode::Rpc)) || app.mcp().is_some() {
        app.preconnect();
    }
    if matches!(mode, Some(Mode::Text) | Some(Mode::Json)) {
        // One-shot runs: the first prompt would otherwise go out before the
        // MCP servers are up (interactive modes never wait for them).
        app.wait_mcp_settled(MCP_WAIT).await;
    }
    let session = app.clone();
    let code = match mode {
        Some(Mode::Rpc) => modes::rpc::run(app, session_cwd::reopener(args.clone(), false)).await,
        Some(Mode::Json) => modes::print::run(&app, prompts, Format::Json).await,
        Some(Mode::Text) => {
            modes::print::run(
                &app,
                prompts,
                Format::Text {
                    verbose: args.verbose,
                },
            )
            .await
        }
        None => {
            let reopen = tui::reopener(args.clone());
            let mut warnings = tui::theme::choose_at_start(&app, &args);
            // A crash since the last report is said once.
            if let Some(said) = home
                .as_deref()
                .and_then(|h| crash_log::announcement(&crash_log::take_unannounced(h)))
            {
                warnings.push(said);
            }
            tui::markdown::set_code_block_indent(&app.settings());
            tui::markdown::set_mermaid_mode(&app.settings());
            tui::run(app, prompts, warnings, reopen, pick_session, args.tui_mode).await
        }
    };
    session.shutdown_mcp().await;
    if let Some(local) = local {
        local.stop();
    }
    Ok(code)
}
