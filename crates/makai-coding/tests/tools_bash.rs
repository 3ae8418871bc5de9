//! `bash` against real processes: streaming, exit codes, truncation with the
//! full output saved, timeouts and aborts that leave no process behind.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use makai_coding::tools::{CallCtx, ToolEnv, ToolOutput, run_builtin};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// A tool call's output and whether it failed (a failure with output, such
/// as a non-zero exit, is `Err(ToolError::Output)`).
fn ran(
    result: Result<makai_coding::tools::ToolOutput, makai_coding::tools::ToolError>,
) -> (makai_coding::tools::ToolOutput, bool) {
    match result {
        Ok(out) => (out, false),
        Err(makai_coding::tools::ToolError::Output(out)) => (out, true),
        Err(e) => panic!("the call failed without output: {e}"),
    }
}

/// True once `pid` no longer runs: gone from /proc, or a zombie nobody reaped yet.
fn is_dead(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            let after = &stat[stat.rfind(')').unwrap() + 1..];
            after.split_whitespace().next() == Some("Z")
        }
    }
}

async fn wait_dead(pid: i32, within: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < within {
        if is_dead(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    is_dead(pid)
}

fn recorder() -> (CallCtx, Arc<Mutex<Vec<ToolOutput>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let ctx = CallCtx {
        cancel: CancellationToken::new(),
        on_update: Some(Arc::new(move |o| s2.lock().unwrap().push(o))),
        session: None,
    };
    (ctx, seen)
}

/// The model reads what a terminal would show: colours, titles and
/// progress redraws are gone (pi cleans `bash` output the same way).
#[tokio::test]
async fn output_reaches_the_model_as_a_terminal_shows_it() {
    let dir = tempfile::tempdir().unwrap();
    let env = ToolEnv::new(dir.path());
    let out = run_builtin(
        "bash",
        &env,
        json!({"command": "printf '\\033]0;title\\007\\033[1;31merror:\\033[0m failed\\n'; printf ' 10%%\\r 60%%\\r100%%\\n'; printf 'ab\\bc\\r\\n'"}),
        &CallCtx::default(),
    )
    .await;
    let (out, failed) = ran(out);
    assert!(!failed);
    assert_eq!(out.text_content(), "error: failed\n100%\nac");
}

#[tokio::test]
async fn runs_in_cwd_merges_streams_and_reports_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let env = ToolEnv::new(dir.path());
    let out = run_builtin(
        "bash",
        &env,
        json!({"command": "pwd; echo out; echo err >&2"}),
        &CallCtx::default(),
    )
    .await;
    let (out, failed) = ran(out);
    let text = out.text_content();
    let real = std::fs::canonicalize(dir.path()).unwrap();
    assert!(text.contains(&real.display().to_string()), "{text}");
    assert!(text.contains("out") && text.contains("err"), "{text}");
    assert!(!failed);
    assert_eq!(out.details["exitCode"], json!(0));

    let out = run_builtin(
        "bash",
        &env,
        json!({"command": "echo before; exit 3"}),
        &CallCtx::default(),
    )
    .await;
    let (out, failed) = ran(out);
    assert!(failed);
    assert_eq!(out.details["exitCode"], json!(3));
    assert_eq!(out.text_content(), "before\n\nCommand exited with code 3");
}

#[tokio::test]
async fn output_is_streamed_as_updates() {
    let dir = tempfile::tempdir().unwrap();
    let env = ToolEnv::new(dir.path());
    let (ctx, seen) = recorder();
    let out = run_builtin(
        "bash",
        &env,
        json!({"command": "echo one; sleep 0.4; echo two; sleep 0.4; echo three"}),
        &ctx,
    )
    .await
    .unwrap();
    assert_eq!(out.text_content(), "one\ntwo\nthree");
    let updates = seen.lock().unwrap();
    assert!(updates.len() >= 2, "got {} updates", updates.len());
    assert_eq!(
        updates[0].text_content(),
        "one",
        "first update carries the first line"
    );
    assert!(updates.iter().any(|u| u.text_content() == "one\ntwo"));
}

#[tokio::test]
async fn abort_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let env = ToolEnv::new(dir.path());
    let (ctx, seen) = recorder();
    let cancel = ctx.cancel.clone();
    let task = tokio::spawn(async move {
        run_builtin(
            "bash",
            &env,
            json!({"command": "sleep 300 & echo child=$!; bash -c 'sleep 301 & echo grandchild=$!; wait' & wait"}),
            &ctx,
        )
        .await
    });
    // Wait until both pids were printed.
    let mut pids = Vec::new();
    let start = Instant::now();
    while pids.len() < 2 && start.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if let Some(last) = seen.lock().unwrap().last() {
            pids = last
                .text_content()
                .lines()
                .filter_map(|l| {
                    l.split_once('=')
                        .and_then(|(_, p)| p.trim().parse::<i32>().ok())
                })
                .collect();
        }
    }
    assert_eq!(pids.len(), 2, "both background pids were printed");
    for &pid in &pids {
        assert!(!is_dead(pid), "pid {pid} runs before the abort");
    }
    cancel.cancel();
    let out = tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("abort returns promptly")
        .unwrap();
    let (out, failed) = ran(out);
    assert!(failed);
    assert!(
        out.text_content().ends_with("Command aborted"),
        "{}",
        out.text_content()
    );
    assert_eq!(out.details["aborted"], json!(true));
    for &pid in &pids {
        assert!(
            wait_dead(pid, Duration::from_secs(5)).await,
            "pid {pid} survived the abort"
        );
    }
}

#[tokio::test]
async fn timeout_kills_and_reports() {
    let dir = tempfile::tempdir().unwrap();
    let env = ToolEnv::new(dir.path());
    let start = Instant::now();
    let out = run_builtin(
        "bash",
        &env,
        json!({"command": "echo started; sleep 30 & echo bg=$!; sleep 30", "timeout": 0.5}),
        &CallCtx::default(),
    )
    .await;
    let (out, failed) = ran(out);
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "took {:?}",
        start.elapsed()
    );
    let text = out.text_content();
    assert!(failed);
    assert!(text.starts_with("started\n"), "{text}");
    assert!(
        text.ends_with("Command timed out after 0.5 seconds"),
        "{text}"
    );
    let bg: i32 = text
        .lines()
        .find_map(|l| l.strip_prefix("bg="))
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        wait_dead(bg, Duration::from_secs(5)).await,
        "background job survived the timeout"
    );

    let bad = run_builtin(
        "bash",
        &ToolEnv::new(dir.path()),
        json!({"command": "true", "timeout": -1}),
        &CallCtx::default(),
    )
    .await;
    assert!(
        bad.unwrap_err()
            .to_string()
            .contains("timeout must be a positive number")
    );
}

#[tokio::test]
async fn huge_output_is_tail_truncated_and_saved() {
    let dir = tempfile::tempdir().unwrap();
    let saves = tempfile::tempdir().unwrap();
    let env = ToolEnv::new(dir.path()).with_temp_dir(saves.path());
    let out = run_builtin(
        "bash",
        &env,
        json!({"command": "seq 1 100000"}),
        &CallCtx::default(),
    )
    .await;
    let (out, failed) = ran(out);
    let text = out.text_content();
    assert!(!failed);
    let path = out.details["fullOutputPath"]
        .as_str()
        .expect("a saved file")
        .to_string();
    assert!(path.starts_with(&saves.path().display().to_string()));
    assert!(
        text.ends_with(&format!(
            "[Showing lines 98001-100000 of 100000. Full output: {path}]"
        )),
        "{}",
        &text[text.len() - 200..]
    );
    assert!(text.starts_with("98001\n"), "{}", &text[..20]);
    assert!(text.len() < 50 * 1024 + 300);
    let full = std::fs::read_to_string(&path).unwrap();
    assert_eq!(full.lines().count(), 100_000);
    assert_eq!(full.lines().next(), Some("1"));
    assert_eq!(full.lines().last(), Some("100000"));
}

#[tokio::test]
async fn one_enormous_line_keeps_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let env = ToolEnv::new(dir.path()).with_temp_dir(dir.path());
    let out = run_builtin(
        "bash",
        &env,
        json!({"command": "head -c 300000 /dev/zero | tr '\\0' 'a'; printf END"}),
        &CallCtx::default(),
    )
    .await
    .unwrap();
    let text = out.text_content();
    assert!(
        text.contains("aaaaEND\n\n[Showing the last 50.0KB of line 1."),
        "{}",
        &text[text.len() - 300..]
    );
}

#[tokio::test]
async fn background_jobs_holding_the_pipe_do_not_hang_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let env = ToolEnv::new(dir.path());
    // A quiet background job keeps the pipe open: the call returns anyway.
    let start = Instant::now();
    let out = run_builtin(
        "bash",
        &env,
        json!({"command": "sleep 3 & echo quiet=$!"}),
        &CallCtx::default(),
    )
    .await
    .unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "took {:?}",
        start.elapsed()
    );
    assert!(
        out.text_content().starts_with("quiet="),
        "{}",
        out.text_content()
    );
    // A chatty one too (never quiet for long); once the call drops the pipe it dies of SIGPIPE.
    let start = Instant::now();
    let env = env.with_temp_dir(dir.path());
    let out = run_builtin(
        "bash",
        &env,
        json!({"command": "(while :; do echo tick; sleep 0.01; done) & echo $! > loop.pid"}),
        &CallCtx::default(),
    )
    .await;
    let (out, failed) = ran(out);
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "took {:?}",
        start.elapsed()
    );
    assert!(
        out.text_content().contains("tick\ntick"),
        "{}",
        out.text_content()
    );
    let pid: i32 = std::fs::read_to_string(dir.path().join("loop.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        wait_dead(pid, Duration::from_secs(5)).await,
        "the writer kept running"
    );
    assert!(!failed);
}

/// pi's session variables: set from the call's session (the file looked up
/// when the command starts), left out when the environment does not expose
/// the session.
#[tokio::test]
async fn commands_are_told_the_session_unless_it_is_hidden() {
    use makai_coding::tools::{SessionFile, ShellSession};
    let dir = tempfile::tempdir().unwrap();
    let file = Arc::new(Mutex::new(Some(dir.path().join("first.jsonl"))));
    let now = file.clone();
    let env = ToolEnv::new(dir.path()).with_session_file(SessionFile::new(move |id| {
        assert_eq!(id, Some("s-1"), "the call's session is looked up");
        now.lock().unwrap().clone()
    }));
    let ctx = CallCtx {
        session: Some(ShellSession {
            id: Some("s-1".into()),
            file: None,
            provider: Some("lab".into()),
            model: Some("m".into()),
            reasoning_level: Some("low"),
        }),
        ..CallCtx::default()
    };
    let print = json!({"command": r#"printf '%s|' "${PI_SESSION_ID-unset}" "${PI_SESSION_FILE-unset}" "${PI_PROVIDER-unset}" "${PI_MODEL-unset}" "${PI_REASONING_LEVEL-unset}""#});
    let run = |env: ToolEnv| {
        let (print, ctx) = (print.clone(), ctx.clone());
        async move {
            let (out, failed) = ran(run_builtin("bash", &env, print, &ctx).await);
            assert!(!failed);
            out.text_content()
        }
    };
    let first = format!(
        "s-1|{}|lab|m|low|",
        dir.path().join("first.jsonl").display()
    );
    assert_eq!(run(env.clone()).await, first);
    // The session moved on: the next command sees where it is now.
    *file.lock().unwrap() = None;
    assert_eq!(run(env.clone()).await, "s-1|unset|lab|m|low|");
    let mut hidden = env;
    hidden.expose_session = false;
    assert_eq!(run(hidden).await, "unset|unset|unset|unset|unset|");
}
