//! makai-local: the built-in local model (`makai --local`, and the default
//! without any key): Qwen2.5-Coder-0.5B-Instruct behind llama.cpp's
//! OpenAI-compatible server (the prebuilt `xllamacpp` wheel; llama-cpp-python
//! where that does not fit), installed, started and stopped by
//! `scripts/real-model.sh`.
//!
//! The script is embedded in the binary (so `makai` works outside the
//! repository), written to the cache folder and run with `bash`. Its progress
//! goes straight to our stderr; its stdout carries only the URL. A server that
//! was already running is reused and left running; one this process started is
//! stopped when makai exits (also on Ctrl-C / SIGTERM), unless `--keep-local`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

/// The install / start / stop script, as in the repository.
pub const SCRIPT: &str = include_str!("../../../scripts/real-model.sh");

/// Environment variable naming the cache folder (the script reads it too).
pub const DIR_ENV: &str = "MAKAI_LOCAL_MODEL_DIR";

/// Environment variable turning the automatic fallback off (`0`, `false`, `no`, `off`).
pub const AUTO_ENV: &str = "MAKAI_AUTO_LOCAL";

/// The variable telling the script to download nothing (set for it by
/// [`LocalModel::start`] when offline; the script also reads `PI_OFFLINE`).
pub const OFFLINE_ENV: &str = "MAKAI_OFFLINE";

/// The provider name of the local model.
pub const PROVIDER: &str = "local";

/// The server's context window in tokens (`n_ctx` in `scripts/real-model.sh`).
pub const CONTEXT_WINDOW: u64 = 4096;

/// Longest answer asked of the local model: an eighth of its window (the
/// rest is for the system prompt, the overview and the conversation), and a
/// bound on the time a 0.5B model that repeats itself takes (10 to 20 tokens
/// a second on 2 cores).
pub const MAX_TOKENS: u64 = 512;

/// Sampling temperature asked of the local model: greedy, so that its answer
/// stays with what it was shown (sampled at the server's 0.7, or even 0.2, the
/// 0.5B model sometimes answered the README's question without naming the
/// language), and the same question gets the same answer.
pub const TEMPERATURE: f32 = 0.0;

/// Model calls per run of the local model when it has tools: it does not
/// decide well when to stop calling them, and each call takes seconds.
pub const MAX_TURNS: u32 = 6;

/// The server program behind the local model. They differ in the
/// `tool_choice` they honour, so the model entry says which one it talks to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runtime {
    /// llama.cpp's own server (the `xllamacpp` wheel): takes `tool_choice`
    /// only as a string, and ignores the named form.
    LlamaCppServer,
    /// llama-cpp-python's server: forces a call only for the named form, and
    /// ignores `"required"`.
    LlamaCppPython,
}

impl Runtime {
    /// The runtime `scripts/real-model.sh runtime` names (`xllamacpp` or
    /// `llama-cpp-python`), if any.
    pub fn from_script_name(name: &str) -> Option<Runtime> {
        match name.trim() {
            "xllamacpp" => Some(Runtime::LlamaCppServer),
            "llama-cpp-python" => Some(Runtime::LlamaCppPython),
            _ => None,
        }
    }

    /// True when the server forces a call for a named `tool_choice` (the
    /// model entry's `supportsNamedToolChoice`).
    pub fn honours_named_tool_choice(self) -> bool {
        self == Runtime::LlamaCppPython
    }
}

/// Why the local model cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LocalError {
    /// A program the script needs is not installed.
    #[error(
        "the built-in local model needs {needs} on PATH, and this machine lacks {missing}; install it, or use a provider key or --base-url"
    )]
    Missing {
        /// What is needed.
        needs: String,
        /// What is missing.
        missing: String,
    },
    /// No home folder to cache the model in.
    #[error(
        "cannot find a folder for the local model: neither {DIR_ENV}, MAKAI_HOME nor HOME is set; set {DIR_ENV}"
    )]
    NoDir,
    /// The cache folder or the script file cannot be written.
    #[error(
        "cannot prepare the local model folder {path}: {source}; set {DIR_ENV} to a writable folder"
    )]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The script failed (its own messages are above on stderr).
    #[error(
        "the local model server did not start: `{script} {command}` {outcome} (its messages are above). \
         Retry, or run `bash {script} status` to see what is installed"
    )]
    Script {
        /// The script file.
        script: String,
        /// The script command.
        command: String,
        /// Exit status or output problem.
        outcome: String,
    },
}

/// The cache folder: `$MAKAI_LOCAL_MODEL_DIR`, else `<makai home>/local-model`.
pub fn cache_dir() -> Option<PathBuf> {
    match std::env::var_os(DIR_ENV).filter(|v| !v.is_empty()) {
        Some(d) => Some(PathBuf::from(d)),
        None => makai_coding::makai_home().map(|h| h.join("local-model")),
    }
}

/// False when `MAKAI_AUTO_LOCAL` turns the automatic fallback off.
pub fn auto_enabled() -> bool {
    match std::env::var(AUTO_ENV) {
        Ok(v) => !matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "0" | "false" | "no" | "off"
        ),
        Err(_) => true,
    }
}

/// True when `name` is an executable file in one of the PATH folders (or a path to one).
fn on_path(name: &str) -> bool {
    fn executable(p: &Path) -> bool {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            p.metadata()
                .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
        }
        #[cfg(not(unix))]
        {
            p.is_file()
        }
    }
    if name.contains('/') {
        return executable(Path::new(name));
    }
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|d| executable(&d.join(name))))
        .unwrap_or(false)
}

/// Checks that the programs the script needs exist (Python only while the
/// server is not installed yet).
pub fn check_tools(dir: &Path) -> Result<(), LocalError> {
    let python = std::env::var("MAKAI_PYTHON")
        .ok()
        .filter(|p| !p.trim().is_empty())
        .unwrap_or_else(|| "python3".into());
    let mut needed = vec!["bash", "curl"];
    let installed = dir.join("venv").join("bin").join("python").is_file();
    if !installed {
        needed.push(python.as_str());
    }
    let missing: Vec<&str> = needed.iter().copied().filter(|n| !on_path(n)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(LocalError::Missing {
        needs: needed.join(", "),
        missing: missing.join(", "),
    })
}

/// What stopping needs; shared with the signal task.
#[derive(Debug)]
struct StopState {
    script: PathBuf,
    dir: PathBuf,
    /// Set once stopped (or when there is nothing to stop).
    done: bool,
}

impl StopState {
    /// Stops the server (blocking) unless already done.
    fn stop(&mut self) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        let out = std::process::Command::new("bash")
            .arg(&self.script)
            .arg("stop")
            .env(DIR_ENV, &self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output();
        match out {
            Ok(o) if o.status.success() => {}
            Ok(o) => eprintln!(
                "makai: could not stop the local model server ({}): {}; stop it with `bash {} stop`",
                o.status,
                String::from_utf8_lossy(&o.stderr).trim(),
                self.script.display()
            ),
            Err(e) => eprintln!(
                "makai: could not run bash to stop the local model server: {e}; stop it with `bash {} stop`",
                self.script.display()
            ),
        }
    }
}

/// A running local model server.
#[derive(Debug)]
pub struct LocalModel {
    url: String,
    model: String,
    runtime: Runtime,
    script: PathBuf,
    /// True when this process started the server (and so stops it).
    started_here: bool,
    stop: Arc<Mutex<StopState>>,
}

fn lock(m: &Mutex<StopState>) -> std::sync::MutexGuard<'_, StopState> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Writes the embedded script to `<dir>/real-model.sh` when it differs.
fn write_script(dir: &Path) -> Result<PathBuf, LocalError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| LocalError::Io { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let path = dir.join("real-model.sh");
    if std::fs::read_to_string(&path).ok().as_deref() == Some(SCRIPT) {
        return Ok(path);
    }
    let tmp = dir.join(format!(".real-model.sh.{}", std::process::id()));
    std::fs::write(&tmp, SCRIPT).map_err(io(&tmp))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).map_err(io(&tmp))?;
    }
    std::fs::rename(&tmp, &path).map_err(io(&path))?;
    Ok(path)
}

/// Runs `bash script command`; returns its stdout. `progress` passes the
/// script's stderr through, otherwise it is discarded.
async fn run_script(
    script: &Path,
    dir: &Path,
    command: &str,
    progress: bool,
    offline: bool,
) -> Result<(bool, String), LocalError> {
    let mut cmd = tokio::process::Command::new("bash");
    if offline {
        cmd.env(OFFLINE_ENV, "1");
    }
    let out = cmd
        .arg(script)
        .arg(command)
        .env(DIR_ENV, dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(if progress {
            Stdio::inherit()
        } else {
            Stdio::null()
        })
        .kill_on_drop(true)
        // Not `output()`: it would capture stderr too, hiding the progress.
        .spawn()
        .map_err(|e| LocalError::Script {
            script: script.display().to_string(),
            command: command.into(),
            outcome: format!("could not be run ({e})"),
        })?
        .wait_with_output()
        .await
        .map_err(|e| LocalError::Script {
            script: script.display().to_string(),
            command: command.into(),
            outcome: format!("could not be waited for ({e})"),
        })?;
    Ok((
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).trim().to_string(),
    ))
}

impl LocalModel {
    /// Installs (first time) and starts the server, or reuses a running one.
    /// Progress goes to stderr. `keep` leaves the server running when the
    /// returned model is stopped. `offline` installs nothing: a missing server
    /// package or model is an error that says so (the script gets
    /// [`OFFLINE_ENV`]); an installed model starts as usual.
    pub async fn start(keep: bool, offline: bool) -> Result<LocalModel, LocalError> {
        let dir = cache_dir().ok_or(LocalError::NoDir)?;
        check_tools(&dir)?;
        let script = write_script(&dir)?;
        let fail = |command: &str, outcome: String| LocalError::Script {
            script: script.display().to_string(),
            command: command.into(),
            outcome,
        };
        // Already running (say, started by CI or another makai): reuse it, never stop it.
        let (running, _) = run_script(&script, &dir, "url", false, offline).await?;
        let (ok, stdout) = run_script(&script, &dir, "start", true, offline).await?;
        if !ok {
            return Err(fail("start", "failed".into()));
        }
        let url = stdout
            .lines()
            .map(str::trim)
            .rfind(|l| !l.is_empty())
            .unwrap_or_default()
            .trim_end_matches('/')
            .to_string();
        if !url.starts_with("http://") {
            return Err(fail(
                "start",
                format!("printed '{url}' instead of the server's URL"),
            ));
        }
        let started_here = !running;
        let stop = Arc::new(Mutex::new(StopState {
            script: script.clone(),
            dir: dir.clone(),
            done: !started_here || keep,
        }));
        let (ok, model) = run_script(&script, &dir, "model", true, offline).await?;
        let model = model.lines().last().unwrap_or_default().trim().to_string();
        if !ok || model.is_empty() {
            lock(&stop).stop();
            return Err(fail("model", "did not print the model name".into()));
        }
        let (ok, name) = run_script(&script, &dir, "runtime", true, offline).await?;
        let Some(runtime) = Runtime::from_script_name(name.lines().last().unwrap_or_default())
        else {
            lock(&stop).stop();
            return Err(fail(
                "runtime",
                if ok {
                    format!("printed '{name}' instead of xllamacpp or llama-cpp-python")
                } else {
                    "failed".into()
                },
            ));
        };
        Ok(LocalModel {
            url,
            model,
            runtime,
            script,
            started_here,
            stop,
        })
    }

    /// The server's URL (`http://127.0.0.1:PORT`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The model name the server reports.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The server program answering at [`LocalModel::url`].
    pub fn runtime(&self) -> Runtime {
        self.runtime
    }

    /// The script file in the cache folder (for `bash SCRIPT stop`).
    pub fn script(&self) -> &Path {
        &self.script
    }

    /// True when this process started the server (and stops it at exit unless kept).
    pub fn started_here(&self) -> bool {
        self.started_here
    }

    /// Stops the server when this process started it and it is not kept.
    /// Runs at most once (also from `Drop` and the signal task).
    pub fn stop(&self) {
        lock(&self.stop).stop();
    }

    /// A handle that stops the server from elsewhere (a signal task).
    pub fn stopper(&self) -> LocalStopper {
        LocalStopper(self.stop.clone())
    }
}

/// Stops a [`LocalModel`]'s server from another task; cheap to clone.
#[derive(Clone, Debug)]
pub struct LocalStopper(Arc<Mutex<StopState>>);

impl LocalStopper {
    /// True once stopped, or when there is nothing to stop (a reused or kept server).
    pub fn is_done(&self) -> bool {
        lock(&self.0).done
    }

    /// Stops the server (blocking: call it from `spawn_blocking` in async
    /// code); runs at most once.
    pub fn stop(&self) {
        lock(&self.0).stop();
    }
}

impl Drop for LocalModel {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_script_is_the_repository_script() {
        assert!(SCRIPT.starts_with("#!/usr/bin/env bash"));
        for command in ["start)", "stop)", "model)", "url)", "runtime)"] {
            assert!(SCRIPT.contains(command), "{command}");
        }
    }

    #[test]
    fn script_is_written_once_and_executable() {
        let dir = tempfile::tempdir().unwrap();
        let p = write_script(&dir.path().join("cache")).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), SCRIPT);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&p).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o755);
        }
        let before = std::fs::metadata(&p).unwrap().modified().unwrap();
        write_script(&dir.path().join("cache")).unwrap();
        assert_eq!(std::fs::metadata(&p).unwrap().modified().unwrap(), before);
    }

    #[test]
    fn the_context_window_is_the_one_the_server_starts_with() {
        assert!(SCRIPT.contains(&format!("N_CTX={CONTEXT_WINDOW}")));
    }

    #[test]
    fn the_script_names_each_runtime_this_crate_knows() {
        for name in ["xllamacpp", "llama-cpp-python"] {
            assert!(SCRIPT.contains(&format!("printf '{name}\\n'")), "{name}");
            assert!(Runtime::from_script_name(name).is_some(), "{name}");
        }
        assert_eq!(Runtime::from_script_name("ollama"), None);
        assert!(Runtime::LlamaCppPython.honours_named_tool_choice());
        assert!(!Runtime::LlamaCppServer.honours_named_tool_choice());
    }

    #[test]
    fn tools_are_looked_up_on_path() {
        assert!(on_path("sh"));
        assert!(!on_path("no-such-program-makai-xyz"));
    }
}
