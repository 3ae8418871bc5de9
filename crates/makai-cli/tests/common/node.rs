//! Running pi's own JavaScript clients against the built `makai` binary.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::{Env, KEY_VARS, Mock, stderr, stdout, wait_output};

/// Runs a setup script from `scripts/` that prints the folder it installed
/// into. `None` (with the reason printed) when it cannot install; in CI
/// (`CI` set) that is a failure instead, since CI installs these first.
pub fn setup_dir(script: &str, args: &[&str], what: &str) -> Option<PathBuf> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scripts")
        .join(script);
    let out = Command::new("bash")
        .arg(&path)
        .args(args)
        .stderr(Stdio::piped())
        .output();
    let reason = match out {
        Ok(o) if o.status.success() => {
            return Some(PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
        }
        Ok(o) => format!(
            "{} failed:\n{}",
            path.display(),
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => format!("cannot run {}: {e}", path.display()),
    };
    assert!(
        std::env::var_os("CI").is_none(),
        "{what} is required in CI, and {reason}"
    );
    eprintln!("SKIPPED {what}: {reason}");
    None
}

/// Starts `makai` with the arguments of a pi `RpcClient`'s `cliPath` run
/// (`node SHIM --mode rpc ARGS...`).
const SHIM: &str = r#"import { spawn } from "node:child_process";
const child = spawn(process.env.MAKAI_BIN, process.argv.slice(2), { stdio: "inherit" });
for (const sig of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(sig, () => child.kill(sig));
child.on("exit", (code) => process.exit(code ?? 1));
"#;

/// Runs `driver` (an ES module; `CLIENT_PATH` in it is replaced by
/// `client`) with node against `makai --mode rpc` on `mock`, and returns the
/// JSON object its last stdout line holds.
pub fn run_driver(env: &Env, mock: &Mock, client: &Path, driver: &str) -> Value {
    let scripts = tempfile::tempdir().unwrap();
    let shim = scripts.path().join("makai-shim.mjs");
    std::fs::write(&shim, SHIM).unwrap();
    let driver_path = scripts.path().join("drive.mjs");
    std::fs::write(
        &driver_path,
        driver.replace("CLIENT_PATH", &client.display().to_string()),
    )
    .unwrap();
    let mut cmd = Command::new("node");
    cmd.arg(&driver_path)
        .current_dir(env.work())
        .env("MAKAI_HOME", env.home.path())
        .env("MAKAI_BIN", env!("CARGO_BIN_EXE_makai"))
        .env("MAKAI_AUTO_TITLE", "0")
        .env("SHIM", &shim)
        .env("WORK", env.work())
        .env("MAKAI_ARGS", serde_json::to_string(&mock.args()).unwrap())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for var in KEY_VARS {
        cmd.env_remove(var);
    }
    let out = wait_output(cmd.spawn().unwrap(), Duration::from_secs(120));
    assert_eq!(
        out.status.code(),
        Some(0),
        "node driver failed:\n{}\n{}",
        stdout(&out),
        stderr(&out)
    );
    let line = stdout(&out).lines().last().unwrap_or_default().to_string();
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)))
}
