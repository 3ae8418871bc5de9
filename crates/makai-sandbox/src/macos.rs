//! macOS: Seatbelt through `sandbox-exec` with a profile written from the
//! policy. Paths travel as `-D` parameters, never spliced into the profile
//! text, so no path can change its meaning. Compiled and type-checked on
//! Linux with `cargo check --target x86_64-apple-darwin`; not run here.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::support::KernelSupport;

/// Where Seatbelt's command lives.
pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// What this system offers.
pub fn probe() -> KernelSupport {
    KernelSupport {
        landlock_abi: None,
        seccomp: false,
        seatbelt: Path::new(SANDBOX_EXEC).is_file(),
    }
}

/// The arguments of `sandbox-exec` before the command: `-p PROFILE` and one
/// `-D NAME=PATH` per writable root and denied path.
pub fn arguments(writable: &[PathBuf], denied: &[PathBuf], network: bool) -> Vec<OsString> {
    let canon = |p: &PathBuf| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
    let mut params: Vec<OsString> = Vec::new();
    let mut profile = String::from(
        "(version 1)\n(deny default)\n(allow process-exec process-fork)\n\
         (allow signal (target same-sandbox))\n(allow sysctl-read)\n(allow mach-lookup)\n\
         (allow ipc-posix-shm)\n(allow file-read*)\n\
         (allow file-write* (literal \"/dev/null\") (literal \"/dev/zero\"))\n",
    );
    for (i, root) in writable.iter().enumerate() {
        profile.push_str(&format!("(allow file-write* (subpath (param \"W{i}\")))\n"));
        params.push("-D".into());
        let mut p = OsString::from(format!("W{i}="));
        p.push(canon(root));
        params.push(p);
    }
    // Later rules win: the denials come after every grant.
    for (i, path) in denied.iter().enumerate() {
        profile.push_str(&format!(
            "(deny file-read* file-write* (subpath (param \"D{i}\")))\n"
        ));
        params.push("-D".into());
        let mut p = OsString::from(format!("D{i}="));
        p.push(canon(path));
        params.push(p);
    }
    if network {
        profile.push_str("(allow network*)\n");
    } else {
        profile.push_str("(allow network* (remote unix-socket))\n");
    }
    let mut args: Vec<OsString> = vec!["-p".into(), profile.into()];
    args.extend(params);
    args
}
