//! [`SpeakingTerminal`]: makai on a pseudo-terminal the test plays, for what
//! tmux cannot stand in for (answering `OSC 11`, hanging up).

use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

use super::Env;

/// A terminal that says its colours: the test plays it on a pseudo-terminal,
/// answering the colour queries (`OSC 10`, `OSC 11`) with dark text on a
/// white background and every device attributes query (`CSI c`) as a VT
/// terminal does. tmux cannot stand in: it does not answer `OSC 11`.
/// Dropped, it hangs up and makai is killed if still there.
pub struct SpeakingTerminal {
    output: Arc<Mutex<Vec<u8>>>,
    /// The terminal's side of the pseudo-terminal (`None` once hung up).
    input: Option<std::fs::File>,
    child: Child,
    /// Tells the reader to let its copies of the terminal's side go.
    stop: Arc<AtomicBool>,
    reader: Option<JoinHandle<()>>,
}

impl SpeakingTerminal {
    /// Starts `makai args...` on a 100 x 30 pseudo-terminal.
    pub fn start(env: &Env, args: &[String]) -> SpeakingTerminal {
        SpeakingTerminal::start_with(env, args, &[])
    }

    /// [`SpeakingTerminal::start`] with `vars` set for makai.
    pub fn start_with(env: &Env, args: &[String], vars: &[(&str, &str)]) -> SpeakingTerminal {
        let size = nix::pty::Winsize {
            ws_row: 30,
            ws_col: 100,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        let pty = nix::pty::openpty(Some(&size), None).unwrap();
        // openpty's descriptors are inherited across exec: makai would hold
        // the terminal's side open itself, and no hang-up could reach it.
        // The standard library's copies close on exec.
        let master = std::fs::File::from(pty.master).try_clone().unwrap();
        let slave = std::fs::File::from(pty.slave).try_clone().unwrap();
        let stderr = std::fs::File::create(env.home.path().join("stderr.txt")).unwrap();
        let mut cmd = env.cmd();
        cmd.env("TERM", "xterm-256color")
            .env_remove("COLORFGBG")
            .env_remove("COLORTERM")
            .env_remove("PI_TRUE_COLOR")
            .env_remove("TERM_PROGRAM")
            .env_remove("WT_SESSION");
        for (k, v) in vars {
            cmd.env(k, v);
        }
        let child = cmd
            .args(args)
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(stderr))
            .spawn()
            .unwrap();
        drop(slave);
        let mut reader = master.try_clone().unwrap();
        let mut answers = master.try_clone().unwrap();
        let output = Arc::new(Mutex::new(Vec::new()));
        let seen = output.clone();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let reader = std::thread::spawn(move || {
            let queries: [(&[u8], &[u8]); 3] = [
                (b"\x1b]10;?", b"\x1b]10;rgb:1010/1010/1010\x1b\\"),
                (b"\x1b]11;?", b"\x1b]11;rgb:ffff/ffff/ffff\x1b\\"),
                (b"\x1b[c", b"\x1b[?1;2c"),
            ];
            let mut answered = 0;
            let mut chunk = [0u8; 4096];
            while !stopped.load(Ordering::SeqCst) {
                // Wakes now and then to see whether to stop.
                let mut fds = [PollFd::new(reader.as_fd(), PollFlags::POLLIN)];
                if poll(&mut fds, PollTimeout::from(50u16)).unwrap_or(0) == 0 {
                    continue;
                }
                let n = match reader.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                let mut all = seen.lock().unwrap();
                all.extend_from_slice(&chunk[..n]);
                // Answer each query once, in the order asked.
                loop {
                    let next = queries
                        .iter()
                        .filter_map(|(q, a)| {
                            all[answered..]
                                .windows(q.len())
                                .position(|w| w == *q)
                                .map(|at| (answered + at + q.len(), *a))
                        })
                        .min_by_key(|(end, _)| *end);
                    let Some((end, answer)) = next else { break };
                    answers.write_all(answer).unwrap();
                    answered = end;
                }
            }
        });
        SpeakingTerminal {
            output,
            input: Some(master),
            child,
            stop,
            reader: Some(reader),
        }
    }

    /// Everything makai wrote to the terminal so far.
    pub fn output(&self) -> String {
        String::from_utf8_lossy(&self.output.lock().unwrap()).into_owned()
    }

    /// Waits up to 20 s for `text` in the output.
    pub fn wait_for(&self, text: &str) {
        let start = Instant::now();
        while !self.output().contains(text) {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "timed out waiting for {text:?}; the output was {:?}",
                self.output()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Types `text` (escape sequences included) into the terminal.
    pub fn type_text(&mut self, text: &str) {
        if let Some(input) = &mut self.input {
            input.write_all(text.as_bytes()).unwrap();
        }
    }

    /// Closes the terminal's side, as a terminal window closed does, without
    /// the SIGHUP a terminal's session gets.
    pub fn hang_up(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(reader) = self.reader.take() {
            reader.join().unwrap();
        }
        self.input = None;
    }

    /// Waits up to `limit` for makai to end; its exit code (`None`: still
    /// running).
    pub fn wait_exit(&mut self, limit: Duration) -> Option<i32> {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            if start.elapsed() > limit {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for SpeakingTerminal {
    fn drop(&mut self) {
        self.hang_up();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
