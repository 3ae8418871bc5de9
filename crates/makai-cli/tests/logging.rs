//! Where the libraries' `tracing` records go in the `makai` binary: a run's
//! warnings land in `<makai home>/logs/makai.log` (never on the terminal the
//! mode owns), `makai serve` writes them to standard error, `MAKAI_LOG` and
//! `MAKAI_LOG_FILE` choose what and where, and a provider key's value never
//! reaches a log.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;
use makai_mockllm::{Scenario, ScriptedResponse};

const KEY: &str = "sk-test-0123456789-logged-nowhere";

/// A session file whose header says it is newer than this makai: opening it
/// is logged as a warning (`makai_coding::session::scan`) that names its
/// path. The path holds the key's value, so the record would carry the key.
fn newer_session(env: &Env) -> PathBuf {
    let dir = env.work().join(KEY);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("s.jsonl");
    std::fs::write(
        &file,
        format!(
            "{{\"type\":\"session\",\"version\":99,\"id\":\"01a21edf-ea19-772a-8598-1803a84c8a41\",\"timestamp\":\"2026-11-27T21:18:40.665Z\",\"cwd\":{:?}}}\n",
            env.work().display().to_string()
        ),
    )
    .unwrap();
    file
}

fn log_file(env: &Env) -> PathBuf {
    env.home.path().join("logs").join("makai.log")
}

fn run_print(
    env: &Env,
    mock: &Mock,
    session: Option<&Path>,
    vars: &[(&str, &str)],
) -> std::process::Output {
    let mut args: Vec<std::ffi::OsString> = mock.args().into_iter().map(Into::into).collect();
    args.extend(["-p".into(), "hi".into()]);
    match session {
        Some(s) => args.extend(["--session".into(), s.into()]),
        None => args.push("--no-session".into()),
    }
    let mut all = vec![("OPENAI_API_KEY", KEY)];
    all.extend_from_slice(vars);
    env.run_with_vars(args, &all)
}

fn answered() -> Mock {
    Mock::start(Scenario::new().with_fallback(ScriptedResponse::text("fine")))
}

#[test]
fn a_warning_of_a_run_goes_to_the_log_file_with_the_key_redacted_and_not_to_the_terminal() {
    let env = Env::new();
    let mock = answered();
    let session = newer_session(&env);
    let out = run_print(&env, &mock, Some(&session), &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "fine");
    assert!(
        !stderr(&out).contains("newer than this makai"),
        "the warning reached the terminal: {}",
        stderr(&out)
    );
    let log = std::fs::read_to_string(log_file(&env)).unwrap();
    assert!(
        log.contains("WARN makai_coding::session::scan: session file is newer than this makai"),
        "{log}"
    );
    assert!(log.contains("/[redacted]/s.jsonl"), "{log}");
    assert!(!log.contains(KEY), "the key reached the log: {log}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(log_file(&env))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    // A second run appends.
    let out = run_print(&env, &mock, Some(&session), &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let log = std::fs::read_to_string(log_file(&env)).unwrap();
    assert_eq!(log.matches("newer than this makai").count(), 2, "{log}");
}

#[test]
fn a_run_that_logs_nothing_leaves_no_log_file() {
    let env = Env::new();
    let mock = answered();
    let out = run_print(&env, &mock, None, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "fine");
    assert!(!env.home.path().join("logs").exists());
}

#[test]
fn makai_log_off_keeps_nothing_and_a_dash_for_the_file_means_standard_error() {
    let env = Env::new();
    let mock = answered();
    let session = newer_session(&env);
    let out = run_print(&env, &mock, Some(&session), &[("MAKAI_LOG", "off")]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!env.home.path().join("logs").exists());
    assert!(!stderr(&out).contains("newer than this makai"));

    let out = run_print(&env, &mock, Some(&session), &[("MAKAI_LOG_FILE", "-")]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("newer than this makai"), "{err}");
    assert!(!err.contains(KEY), "the key reached standard error: {err}");
    assert!(!env.home.path().join("logs").exists());

    // Only the session module, and at error: the warning is filtered out.
    let other = env.work().join("other.log");
    let out = run_print(
        &env,
        &mock,
        Some(&session),
        &[
            ("MAKAI_LOG", "makai_coding::session=error,off"),
            ("MAKAI_LOG_FILE", other.to_str().unwrap()),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!other.exists());
    let out = run_print(
        &env,
        &mock,
        Some(&session),
        &[
            ("MAKAI_LOG", "makai_coding::session=warn,off"),
            ("MAKAI_LOG_FILE", other.to_str().unwrap()),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let log = std::fs::read_to_string(&other).unwrap();
    assert!(log.contains("newer than this makai"), "{log}");
}

#[test]
fn an_unreadable_makai_log_is_reported_and_the_run_logs_at_warn() {
    let env = Env::new();
    let mock = answered();
    let session = newer_session(&env);
    let out = run_print(
        &env,
        &mock,
        Some(&session),
        &[("MAKAI_LOG", "makai_ai=loudly")],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("MAKAI_LOG=\"makai_ai=loudly\" is not a filter") && err.contains("\"warn\""),
        "{err}"
    );
    let log = std::fs::read_to_string(log_file(&env)).unwrap();
    assert!(log.contains("newer than this makai"), "{log}");
}

#[test]
fn makai_serve_logs_to_standard_error_at_the_level_asked() {
    let env = Env::new();
    let mock = answered();
    let token_file = env.home.path().join("serve-token");
    let start = |level: Option<&str>| {
        let mut cmd = env.cmd();
        cmd.arg("serve")
            .arg("--port")
            .arg("0")
            .arg("--token-file")
            .arg(&token_file)
            .args(mock.args())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(l) = level {
            cmd.env("MAKAI_LOG", l);
        }
        let mut child = cmd.spawn().unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut url = String::new();
        out.read_line(&mut url).unwrap();
        if !url.starts_with("ws://127.0.0.1:") {
            let mut err = String::new();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            panic!("first stdout line is not the URL: {url:?}; stderr: {err}");
        }
        child
    };
    let stop = |mut child: std::process::Child| {
        std::process::Command::new("kill")
            .arg("-TERM")
            .arg(child.id().to_string())
            .status()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "makai serve did not stop");
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        err
    };

    let err = stop(start(Some("info")));
    assert!(
        err.contains("INFO makai_protocol::server: makai protocol server listening"),
        "{err}"
    );
    let err = stop(start(None));
    assert!(!err.contains("INFO"), "{err}");
    assert!(!env.home.path().join("logs").exists());
}

/// The bug this pins: when the log file could not be opened, every record
/// was dropped without a word.
#[test]
fn a_log_file_that_cannot_be_written_is_said_and_its_records_go_to_standard_error() {
    let env = Env::new();
    let mock = answered();
    let session = newer_session(&env);
    // A folder cannot be made under a regular file.
    let blocker = env.work().join("not-a-folder");
    std::fs::write(&blocker, "x").unwrap();
    let target = blocker.join("makai.log");
    let out = run_print(
        &env,
        &mock,
        Some(&session),
        &[("MAKAI_LOG_FILE", target.to_str().unwrap())],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "fine");
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "the log file {} cannot be written",
            target.display()
        )),
        "{err}"
    );
    assert!(
        err.contains("WARN makai_coding::session::scan: session file is newer than this makai"),
        "the record went to standard error: {err}"
    );
    assert!(!err.contains(KEY), "the key reached standard error: {err}");
    assert_eq!(
        err.matches("cannot be written").count(),
        1,
        "said once: {err}"
    );
}
