//! Running `bash -c` under a real sandbox on the real kernel.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Stdio;

use makai_sandbox::{Policy, Sandbox, SandboxConfig};

/// A working directory with a sibling `outside` directory, both in one temp dir.
pub struct Workspace {
    _root: tempfile::TempDir,
    /// The working directory.
    pub cwd: PathBuf,
    /// A directory beside it, outside every writable root.
    pub outside: PathBuf,
}

pub fn workspace() -> Workspace {
    let root = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(root.path()).unwrap();
    let cwd = base.join("ws");
    let outside = base.join("outside");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    Workspace {
        _root: root,
        cwd,
        outside,
    }
}

pub fn sandbox(policy: Policy) -> Sandbox {
    Sandbox::new(SandboxConfig::new(policy)).expect("this kernel enforces the sandbox")
}

/// What a command did.
pub struct Ran {
    pub code: Option<i32>,
    pub output: String,
}

/// Runs `script` with `bash -c` in `cwd` under `sb`, in its own process group.
pub async fn run(sb: &Sandbox, cwd: &Path, script: &str) -> Ran {
    run_with(sb, cwd, script, &[]).await
}

/// [`run`] with extra environment variables.
pub async fn run_with(sb: &Sandbox, cwd: &Path, script: &str, env: &[(&str, &str)]) -> Ran {
    let c = sb.confine(cwd).expect("confine");
    let mut cmd = c.command("bash");
    cmd.arg("-c")
        .arg(script)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .process_group(0);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = tokio::time::timeout(std::time::Duration::from_secs(60), cmd.output())
        .await
        .expect("command finished in time")
        .expect("command started");
    let mut output = String::from_utf8_lossy(&out.stdout).into_owned();
    output.push_str(&String::from_utf8_lossy(&out.stderr));
    Ran {
        code: out.status.code(),
        output,
    }
}
