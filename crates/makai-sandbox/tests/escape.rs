//! Escape attempts on the real kernel: each is refused with an error the
//! model can read, and nothing outside changes.

mod common;

use std::io::ErrorKind;
use std::net::TcpListener;

use common::{run, run_with, sandbox, workspace};
use makai_sandbox::{Policy, Sandbox, SandboxConfig};

fn refused(output: &str) -> bool {
    output.contains("Permission denied") || output.contains("Operation not permitted")
}

#[tokio::test]
async fn write_outside_the_working_directory_is_refused() {
    let ws = workspace();
    let sb = sandbox(Policy::WorkspaceWrite);
    let out = ws.outside.display().to_string();
    std::os::unix::fs::symlink(&ws.outside, ws.cwd.join("link")).unwrap();
    let attempts = [
        ("direct", format!("echo x > {out}/direct")),
        ("dotdot", "echo x > ../outside/dotdot".to_string()),
        ("symlink", "echo x > link/symlink".to_string()),
        (
            "proc-cwd",
            "echo x > /proc/self/cwd/../outside/proc-cwd".to_string(),
        ),
        (
            "grandchild",
            format!("bash -c 'sh -c \"echo x > {out}/grandchild\"'"),
        ),
        ("mkdir", format!("mkdir {out}/newdir")),
        ("remove", format!("rm -f {out}/keep")),
        ("truncate", format!("truncate -s 0 {out}/keep")),
    ];
    std::fs::write(ws.outside.join("keep"), "kept").unwrap();
    for (name, script) in attempts {
        let ran = run(&sb, &ws.cwd, &script).await;
        assert_ne!(ran.code, Some(0), "{name}: {}", ran.output);
        assert!(refused(&ran.output), "{name}: {}", ran.output);
    }
    let mut left: Vec<String> = std::fs::read_dir(&ws.outside)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["keep"], "nothing was created outside");
    assert_eq!(
        std::fs::read_to_string(ws.outside.join("keep")).unwrap(),
        "kept"
    );
}

#[tokio::test]
async fn secrets_under_home_cannot_be_read() {
    let ws = workspace();
    let home = ws.outside.join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_rsa"), "PRIVATE-KEY-MATERIAL").unwrap();
    std::fs::write(home.join(".profile"), "profile-ok").unwrap();
    let makai_home = home.join(".makai");
    std::fs::create_dir_all(&makai_home).unwrap();
    std::fs::write(makai_home.join("auth.json"), "{\"token\":\"AUTH-SECRET\"}").unwrap();
    let config = SandboxConfig::new(Policy::WorkspaceWrite).with_deny_read(
        SandboxConfig::default_deny_read(Some(&home), Some(&makai_home)),
    );
    let sb = Sandbox::new(config).unwrap();
    let h = home.display().to_string();
    let env = [("HOME", h.as_str())];
    for script in [
        "cat ~/.ssh/id_rsa",
        "cp ~/.ssh/id_rsa ./stolen",
        "cat ~/.makai/auth.json",
        "cd ~/.ssh && cat id_rsa",
    ] {
        let ran = run_with(&sb, &ws.cwd, script, &env).await;
        assert_ne!(ran.code, Some(0), "{script}: {}", ran.output);
        assert!(refused(&ran.output), "{script}: {}", ran.output);
        assert!(!ran.output.contains("PRIVATE-KEY"), "{script}");
        assert!(!ran.output.contains("AUTH-SECRET"), "{script}");
    }
    assert!(!ws.cwd.join("stolen").exists());
    // The rest of the home folder stays readable.
    let ran = run_with(&sb, &ws.cwd, "cat ~/.profile", &env).await;
    assert_eq!(ran.code, Some(0), "{}", ran.output);
    assert_eq!(ran.output, "profile-ok");
}

#[tokio::test]
async fn network_is_off_loopback_included() {
    let ws = workspace();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let sb = sandbox(Policy::WorkspaceWrite);
    let ran = run(
        &sb,
        &ws.cwd,
        &format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"),
    )
    .await;
    assert_ne!(ran.code, Some(0), "{}", ran.output);
    assert!(!ran.output.contains("connected"));
    assert!(refused(&ran.output), "{}", ran.output);
    let ran = run(
        &sb,
        &ws.cwd,
        "python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM)'",
    )
    .await;
    assert_ne!(ran.code, Some(0), "UDP too: {}", ran.output);
    assert!(matches!(listener.accept(), Err(e) if e.kind() == ErrorKind::WouldBlock));

    // With the network allowed, the same connection goes through.
    let open = Sandbox::new(SandboxConfig::new(Policy::WorkspaceWrite).with_network(true)).unwrap();
    let ran = run(
        &open,
        &ws.cwd,
        &format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"),
    )
    .await;
    assert_eq!(ran.code, Some(0), "{}", ran.output);
    assert!(listener.accept().is_ok() || ran.output.contains("connected"));
}

#[tokio::test]
async fn ptrace_and_other_processes_are_out_of_reach() {
    let ws = workspace();
    let mut victim = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let pid = victim.id();
    let sb = sandbox(Policy::WorkspaceWrite);
    let script = format!(
        "python3 -c 'import ctypes,sys; libc=ctypes.CDLL(None, use_errno=True); \
         r=libc.ptrace(16, {pid}, 0, 0); print(\"ptrace\", r, ctypes.get_errno()); sys.exit(0 if r == 0 else 3)'"
    );
    let ran = run(&sb, &ws.cwd, &script).await;
    assert_eq!(ran.code, Some(3), "{}", ran.output);
    assert!(ran.output.contains("ptrace -1 1"), "EPERM: {}", ran.output);
    // Nor is makai's memory (here: the test's), nor where its executable is.
    let me = std::process::id();
    let ran = run(&sb, &ws.cwd, &format!("head -c 16 /proc/{me}/mem")).await;
    assert_ne!(ran.code, Some(0), "{}", ran.output);
    assert!(refused(&ran.output), "{}", ran.output);
    let ran = run(&sb, &ws.cwd, &format!("readlink /proc/{me}/exe")).await;
    assert_ne!(ran.code, Some(0), "{}", ran.output);
    assert!(ran.output.trim().is_empty(), "{}", ran.output);
    // Nor can it be signalled (Landlock scopes, ABI 6 and later).
    if makai_sandbox::probe().landlock_abi >= Some(6) {
        let ran = run(&sb, &ws.cwd, &format!("kill -STOP {pid}")).await;
        assert_ne!(ran.code, Some(0), "{}", ran.output);
    }
    assert!(victim.try_wait().unwrap().is_none(), "victim still running");
    victim.kill().unwrap();
    victim.wait().unwrap();
}

#[tokio::test]
async fn leaving_the_process_group_is_refused() {
    let ws = workspace();
    let sb = sandbox(Policy::WorkspaceWrite);
    let ran = run(&sb, &ws.cwd, "setsid --wait sleep 30").await;
    assert_ne!(ran.code, Some(0), "{}", ran.output);
    assert!(refused(&ran.output), "{}", ran.output);
    let ran = run(&sb, &ws.cwd, "python3 -c 'import os; os.setpgid(0, 0)'").await;
    assert_ne!(ran.code, Some(0), "{}", ran.output);
}

#[tokio::test]
async fn read_only_writes_only_its_private_temp_dir() {
    let ws = workspace();
    std::fs::write(ws.cwd.join("a.txt"), "hello").unwrap();
    let sb = sandbox(Policy::ReadOnly);
    let ran = run(&sb, &ws.cwd, "cat a.txt && echo more >> a.txt").await;
    assert_ne!(ran.code, Some(0), "{}", ran.output);
    assert!(ran.output.starts_with("hello"), "{}", ran.output);
    assert!(refused(&ran.output), "{}", ran.output);
    assert_eq!(
        std::fs::read_to_string(ws.cwd.join("a.txt")).unwrap(),
        "hello"
    );
    let ran = run(
        &sb,
        &ws.cwd,
        "echo tmp > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"",
    )
    .await;
    assert_eq!(ran.code, Some(0), "{}", ran.output);
    assert_eq!(ran.output.trim(), "tmp");
}

#[tokio::test]
async fn denied_environment_variables_do_not_reach_commands() {
    let ws = workspace();
    let sb = Sandbox::new(
        SandboxConfig::new(Policy::WorkspaceWrite).with_deny_env(["HOM*".to_string()]),
    )
    .unwrap();
    let ran = run(
        &sb,
        &ws.cwd,
        "echo \"home=${HOME:-unset} path=${PATH:+set}\"",
    )
    .await;
    assert_eq!(ran.output.trim(), "home=unset path=set");
}
