//! The `makai` binary.

fn main() {
    // Before any thread starts: provider keys leave the environment block
    // that /proc/PID/environ shows (std::env still has them). See docs/sandbox.md.
    let patterns: Vec<String> = makai_sandbox::DEFAULT_DENY_ENV
        .iter()
        .map(|s| s.to_string())
        .collect();
    if let Ok(filter) = makai_sandbox::EnvFilter::new(&patterns) {
        // SAFETY: first thing in main; no other thread exists yet.
        unsafe {
            makai_sandbox::hide_own_environment(&filter);
        }
    }
    // SAFETY: still no other thread.
    unsafe {
        makai_cli::proxy::apply_from_user_settings();
        makai_cli::process_markers::set();
    }
    makai_cli::crash_log::install_hook();
    let run = std::panic::AssertUnwindSafe(|| makai_cli::main_with_args(std::env::args_os()));
    let code = match std::panic::catch_unwind(run) {
        Ok(code) => code,
        // The hook printed the panic; it is kept for the next `/bug`.
        Err(_) => {
            if let Some(home) = makai_coding::makai_home() {
                makai_cli::crash_log::record_last_panic(&home);
            }
            101
        }
    };
    std::process::exit(code);
}
