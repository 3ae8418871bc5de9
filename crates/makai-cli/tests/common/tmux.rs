//! The interactive UI in a tmux pane (120x40) of its own tmux server: keys go
//! in with `send-keys`, the screen is read back with `capture-pane`.

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::{Env, KEY_VARS, SESSION_DIR_VARS};

/// How long a screen may take to show what a test waits for.
pub const WAIT: Duration = Duration::from_secs(20);

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// What the pane's shell prints after makai has ended.
const EXITED: &str = "[makai has ended]";

pub fn tmux_available() -> bool {
    let ok = Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        // In CI the set-up installs tmux: a UI test that skips there is a failure.
        assert!(
            std::env::var_os("CI").is_none(),
            "tmux is not installed in CI: .ci/run installs it; the terminal UI tests cannot run"
        );
        eprintln!(
            "SKIPPED: tmux is not installed, so the terminal UI cannot be driven \
             (install it with `apt-get install tmux`)"
        );
    }
    ok
}

pub fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// A tmux server of its own (a private socket) with one pane running makai.
pub struct Pane {
    socket: String,
    /// makai's stderr (kept out of the screen).
    stderr: std::path::PathBuf,
    /// Where the shell writes makai's exit code.
    exit_file: std::path::PathBuf,
}

impl Pane {
    pub fn tmux(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux runs")
    }

    /// Starts `makai args...` in the work folder with the test's home.
    pub fn start(env: &Env, args: &[String]) -> Pane {
        Pane::start_with(env, args, &[])
    }

    /// The command line that runs makai with the test's home, `vars` set,
    /// its stderr kept in a file and its exit code written to another.
    fn command_line(
        env: &Env,
        args: &[String],
        vars: &[(&str, &str)],
    ) -> (String, std::path::PathBuf, std::path::PathBuf) {
        let mut cmd = format!("cd {} && env", quote(&env.work().display().to_string()));
        for k in KEY_VARS.iter().chain(&SESSION_DIR_VARS) {
            cmd.push_str(&format!(" -u {k}"));
        }
        for (k, v) in vars {
            cmd.push_str(&format!(" {k}={}", quote(v)));
        }
        cmd.push_str(&format!(
            " MAKAI_HOME={} PI_CODING_AGENT_DIR={} MAKAI_NO_BROWSER=1 MAKAI_AUTO_TITLE=0 TERM=xterm-256color {}",
            quote(&env.home.path().display().to_string()),
            quote(&env.pi_dir().display().to_string()),
            quote(env!("CARGO_BIN_EXE_makai"))
        ));
        for a in args {
            cmd.push(' ');
            cmd.push_str(&quote(a));
        }
        let stderr = env.home.path().join("stderr.txt");
        cmd.push_str(&format!(" 2>{}", quote(&stderr.display().to_string())));
        let exit_file = env.home.path().join("exit-code.txt");
        // The line after makai's last output: once the screen shows it, tmux
        // has read all of makai's (see `Pane::output_after_exit`).
        cmd.push_str(&format!(
            "; echo $? > {}; echo '{EXITED}'",
            quote(&exit_file.display().to_string())
        ));
        (cmd, stderr, exit_file)
    }

    /// Starts an interactive bash (with job control, as a user's terminal
    /// has) and types the makai command line into it.
    pub fn start_in_shell(env: &Env, args: &[String]) -> Pane {
        let socket = format!(
            "makai-tui-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        let (cmd, stderr, exit_file) = Pane::command_line(env, args, &[]);
        let pane = Pane {
            socket,
            stderr,
            exit_file,
        };
        let out = pane.tmux(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-x",
            "120",
            "-y",
            "40",
            "-s",
            "t",
            "env PS1='shell$ ' bash --norc --noprofile -i",
        ]);
        assert!(
            out.status.success(),
            "tmux new-session failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        pane.wait_text("shell$");
        pane.type_text(&cmd);
        pane.keys(&["Enter"]);
        pane
    }

    /// In a pane of [`Pane::start_in_shell`] whose makai was suspended:
    /// types `fg` (makai's exit code is written when it ends, as before).
    pub fn resume_job(&self) {
        std::fs::remove_file(&self.exit_file).unwrap();
        self.type_text(&format!(
            "fg; echo $? > {}",
            quote(&self.exit_file.display().to_string())
        ));
        self.keys(&["Enter"]);
    }

    /// Starts `makai args...` as [`Pane::start`] does, with `vars` set.
    pub fn start_with(env: &Env, args: &[String], vars: &[(&str, &str)]) -> Pane {
        Pane::launch(env, args, vars, None)
    }

    /// Starts `makai args...` as [`Pane::start_with`] does, everything it
    /// writes to the terminal appended to `raw` from its first byte on
    /// (`pipe-pane` in the command that starts it).
    pub fn start_piped(
        env: &Env,
        args: &[String],
        vars: &[(&str, &str)],
        raw: &std::path::Path,
    ) -> Pane {
        Pane::launch(env, args, vars, Some(raw))
    }

    fn launch(
        env: &Env,
        args: &[String],
        vars: &[(&str, &str)],
        raw: Option<&std::path::Path>,
    ) -> Pane {
        let socket = format!(
            "makai-tui-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        // The shell waits for makai and writes its exit code (tmux may not
        // have reaped the process when the test asks).
        let (cmd, stderr, exit_file) = Pane::command_line(env, args, vars);
        let pane = Pane {
            socket,
            stderr,
            exit_file,
        };
        let pipe = raw.map(|raw| format!("cat >> {}", quote(&raw.display().to_string())));
        let mut command = vec![
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-x",
            "120",
            "-y",
            "40",
            "-s",
            "t",
            &cmd,
            ";",
        ];
        // One command list: tmux reads nothing of the pane before the pipe is set.
        if let Some(pipe) = &pipe {
            command.extend(["pipe-pane", "-t", "t", "-o", pipe, ";"]);
        }
        command.extend(["set-option", "-t", "t", "remain-on-exit", "on"]);
        let out = pane.tmux(&command);
        assert!(
            out.status.success(),
            "tmux new-session failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        pane
    }

    /// Sends keys by tmux name (`Enter`, `Escape`, `C-c`, `M-Enter`, ...).
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "t"];
        args.extend_from_slice(keys);
        let out = self.tmux(&args);
        assert!(
            out.status.success(),
            "send-keys failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Pastes `text` as the terminal does (a bracketed paste when the
    /// program asked for it; line breaks as typed, CR).
    pub fn paste(&self, text: &str) {
        let out = self.tmux(&["set-buffer", "-b", "test-paste", text]);
        assert!(out.status.success());
        let out = self.tmux(&["paste-buffer", "-p", "-d", "-b", "test-paste", "-t", "t"]);
        assert!(out.status.success());
    }

    /// Types text literally.
    pub fn type_text(&self, text: &str) {
        let out = self.tmux(&["send-keys", "-t", "t", "-l", text]);
        assert!(out.status.success());
    }

    /// The visible screen.
    pub fn screen(&self) -> String {
        String::from_utf8_lossy(&self.tmux(&["capture-pane", "-p", "-t", "t"]).stdout).into_owned()
    }

    /// A tmux format's value for the pane (`#{cursor_flag}`,
    /// `#{alternate_on}`, ...).
    pub fn value(&self, format: &str) -> String {
        String::from_utf8_lossy(
            &self
                .tmux(&["display-message", "-p", "-t", "t", format])
                .stdout,
        )
        .trim()
        .to_string()
    }

    /// The visible screen with its colours and attributes as escape
    /// sequences (tmux's `capture-pane -e`).
    pub fn screen_with_styles(&self) -> String {
        String::from_utf8_lossy(&self.tmux(&["capture-pane", "-e", "-p", "-t", "t"]).stdout)
            .into_owned()
    }

    /// The scrollback and the visible screen.
    pub fn screen_and_scrollback(&self) -> String {
        String::from_utf8_lossy(
            &self
                .tmux(&["capture-pane", "-p", "-S", "-", "-t", "t"])
                .stdout,
        )
        .into_owned()
    }

    /// Everything makai left in the terminal (scrollback included) once it
    /// has ended and tmux has read all its output: the exit code is written
    /// before tmux may have read it.
    pub fn output_after_exit(&self) -> String {
        let start = Instant::now();
        loop {
            let all = self.screen_and_scrollback();
            if all.contains(EXITED) {
                return all;
            }
            if start.elapsed() > WAIT {
                panic!("makai did not end; {}", self.diagnostics());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The exit code once makai has ended.
    pub fn exit_status(&self) -> Option<i32> {
        let text = std::fs::read_to_string(&self.exit_file).ok()?;
        text.trim().parse().ok()
    }

    /// Waits for makai to end (or stop) and returns its exit code; panics
    /// after [`WAIT`]. The shell writes the code a moment after the screen
    /// shows that the job ended.
    pub fn wait_exit_status(&self, what: &str) -> i32 {
        let start = Instant::now();
        loop {
            if let Some(code) = self.exit_status() {
                return code;
            }
            if start.elapsed() > WAIT {
                panic!("makai did not {what}; {}", self.diagnostics());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The screen and makai's stderr, for failure messages.
    pub fn diagnostics(&self) -> String {
        let stderr = std::fs::read_to_string(&self.stderr).unwrap_or_default();
        format!("the screen was:\n{}\nstderr:\n{stderr}", self.screen())
    }

    /// Polls the screen until `pred` holds; panics with the last screen after [`WAIT`].
    pub fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if pred(&screen) {
                return screen;
            }
            if start.elapsed() > WAIT {
                panic!("timed out waiting for {what}; {}", self.diagnostics());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn wait_text(&self, text: &str) -> String {
        self.wait_for(&format!("{text:?}"), |s| s.contains(text))
    }

    /// Ctrl+C twice, then waits for the process to end; returns its exit code.
    pub fn quit_with_ctrl_c(&self) -> i32 {
        self.keys(&["C-c"]);
        self.wait_text("Press Ctrl+C again to exit");
        self.keys(&["C-c"]);
        self.wait_exit_status("exit after Ctrl+C twice")
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let path = self.tmux(&["display-message", "-p", "#{socket_path}"]);
        let _ = self.tmux(&["kill-server"]);
        let path = String::from_utf8_lossy(&path.stdout).trim().to_string();
        if path.contains(&self.socket) {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// The editor's text: the rows between its two horizontal borders.
pub fn editor_text(screen: &str) -> String {
    let rows: Vec<&str> = screen.lines().collect();
    let borders: Vec<usize> = rows
        .iter()
        .enumerate()
        .filter(|(_, r)| r.starts_with("────────"))
        .map(|(i, _)| i)
        .collect();
    match borders.as_slice() {
        [.., a, b] => rows[a + 1..*b]
            .iter()
            .map(|r| r.trim())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}
