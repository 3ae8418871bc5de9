//! A `makai --mode rpc` process driven line by line.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::*;

/// A `makai --mode rpc` process with a line reader.
pub struct Rpc {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<Value>,
    /// Everything received, in order.
    pub seen: Vec<Value>,
    next_id: u64,
}

impl Rpc {
    pub fn start(env: &Env, args: &[String]) -> Rpc {
        Rpc::start_with(env, args, &[])
    }

    /// Like [`Rpc::start`], with extra environment variables.
    pub fn start_with(env: &Env, args: &[String], vars: &[(&str, &str)]) -> Rpc {
        let mut cmd = env.cmd();
        for (k, v) in vars {
            cmd.env(k, v);
        }
        let mut child = cmd
            .arg("--mode")
            .arg("rpc")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let v: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Rpc {
            child,
            stdin,
            lines: rx,
            seen: Vec::new(),
            next_id: 0,
        }
    }

    /// Writes a raw line.
    pub fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends a command with a fresh id; returns the id.
    pub fn send(&mut self, mut cmd: Value) -> String {
        self.next_id += 1;
        let id = format!("t{}", self.next_id);
        cmd["id"] = json!(id);
        self.send_raw(&cmd.to_string());
        id
    }

    /// The next line (panics after 30 s).
    pub fn next(&mut self) -> Value {
        let v = self
            .lines
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("no output from makai within 30 s; seen: {:#?}", self.seen));
        pi_codes::check_record(&v);
        self.seen.push(v.clone());
        v
    }

    /// Reads until the response with `id`.
    pub fn response(&mut self, id: &str) -> Value {
        loop {
            let v = self.next();
            if v["type"] == "response" && v["id"] == id {
                return v;
            }
        }
    }

    /// Sends a command and returns its response.
    pub fn call(&mut self, cmd: Value) -> Value {
        let id = self.send(cmd);
        self.response(&id)
    }

    /// Sends a command and returns its successful response's data.
    pub fn ok(&mut self, cmd: Value) -> Value {
        let r = self.call(cmd.clone());
        assert_eq!(r["success"], true, "command {cmd} failed: {r}");
        r.get("data").cloned().unwrap_or(Value::Null)
    }

    /// Reads until an event of this type; returns it.
    pub fn wait_event(&mut self, kind: &str) -> Value {
        loop {
            let v = self.next();
            if v["type"] == kind {
                return v;
            }
        }
    }

    /// Closes stdin and waits for the exit code.
    pub fn finish(mut self) -> i32 {
        drop(self.stdin.take());
        let start = Instant::now();
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st.code().unwrap_or(-1);
            }
            if start.elapsed() > Duration::from_secs(30) {
                let _ = self.child.kill();
                panic!("makai --mode rpc did not exit after stdin closed");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Rpc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
