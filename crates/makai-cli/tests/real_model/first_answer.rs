//! The zero-key first run against the real local model, in this repository:
//! the README's own question gets an answer that says what the repository is,
//! and five questions about the repository measure the two ways of showing a
//! small model the project (see BENCHMARKS.md, "The zero-key first answer"):
//!
//! - **overview** (the default, kept): tools off, the working-directory
//!   overview in the system prompt;
//! - **first-turn tool** (`--tools read,ls`): no overview; the first call of
//!   the run must call `read` on the file the question names, else `ls`.
//!
//! Both run the built binary exactly as a user without a key does; the server
//! `scripts/real-model.sh start` runs is reused (so the cache folder must be
//! the one it used, as in CI).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::*;

/// A question about this repository and the words a useful answer contains
/// (each group: at least one of its words, case-insensitive).
pub struct Question {
    pub text: &'static str,
    pub needs: &'static [&'static [&'static str]],
}

/// The five questions (the first is the README's own).
pub const QUESTIONS: [Question; 5] = [
    Question {
        text: "What does this repository do?",
        needs: &[&["rust"], &["agent"]],
    },
    Question {
        text: "Which programming language is this project written in?",
        needs: &[&["rust"]],
    },
    Question {
        text: "How do I run the tests of this project?",
        needs: &[&["cargo test"]],
    },
    Question {
        text: "Which crates does this workspace have?",
        // makai-agent and at least one other of them.
        needs: &[
            &["makai-agent"],
            &[
                "makai-ai",
                "makai-cli",
                "makai-coding",
                "makai-protocol",
                "makai-mcp",
                "makai-mockllm",
                "makai-local",
                "makai-rpc",
            ],
        ],
    },
    Question {
        text: "Which Rust edition does Cargo.toml set?",
        needs: &[&["2024"]],
    },
];

/// True when `answer` has a word of every group of `q`.
pub fn answers(q: &Question, answer: &str) -> bool {
    let a = answer.to_lowercase();
    q.needs
        .iter()
        .all(|group| group.iter().any(|w| a.contains(w)))
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// The cache folder of the running server, or `None` (with a note) when the
/// server at `url` was not started from it.
fn reusable_cache(url: &str) -> Option<PathBuf> {
    let dir = installed_cache_dir()?;
    let recorded = std::fs::read_to_string(dir.join("server.url")).unwrap_or_default();
    if recorded.trim().trim_end_matches('/') != url {
        eprintln!(
            "skipped: the server at {url} was not started from the cache folder {} \
             (set MAKAI_LOCAL_MODEL_DIR to the folder `scripts/real-model.sh start` used)",
            dir.display()
        );
        return None;
    }
    Some(dir)
}

/// `makai [extra] -p question` in this repository with no key: the built-in
/// local model, reusing the running server. Returns (answer, stderr, seconds).
fn ask(env: &Env, dir: &Path, extra: &[&str], question: &str) -> (String, String, f64) {
    let mut args = extra.to_vec();
    args.extend(["-p", question]);
    run_makai(env, dir, &args)
}

/// `makai args` in this repository with no key, stdout a pipe (so print mode
/// without `-p`, as the README's command run from a script).
fn run_makai(env: &Env, dir: &Path, args: &[&str]) -> (String, String, f64) {
    let mut cmd = env.cmd();
    cmd.env_remove("MAKAI_AUTO_LOCAL")
        .env("MAKAI_LOCAL_MODEL_DIR", dir)
        .current_dir(repo_root())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let t0 = Instant::now();
    let out = wait_output(cmd.spawn().unwrap(), Duration::from_secs(600));
    let secs = t0.elapsed().as_secs_f64();
    let err = stderr(&out);
    // The local model's answers stop at its output limit (512 tokens): an
    // answer cut off there is written as far as it goes, said on stderr,
    // and exits 1 (pi's print mode); it is still the answer these tests
    // judge. Any other failure fails the test.
    let cut_off = err.contains("the answer was cut off: the model reached its output token limit");
    match out.status.code() {
        Some(0) => {}
        Some(1) if cut_off => {}
        code => panic!("exit {code:?}; stderr:\n{err}"),
    }
    assert!(err.contains("reusing the running server"), "{err}");
    (stdout(&out), err, secs)
}

#[test]
fn the_readmes_question_gets_an_answer_that_says_what_the_repository_is() {
    let Some((url, _)) = real_model() else {
        return;
    };
    let Some(dir) = reusable_cache(&url) else {
        return;
    };
    let _turn = SERVER.lock().unwrap_or_else(|e| e.into_inner());
    let env = Env::new();
    // The README's command as it is written there: the question alone.
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    assert!(
        readme.contains(&format!(
            "cargo run --release --bin makai -- \"{}\"",
            QUESTIONS[0].text
        )),
        "the README's first command changed; update this test"
    );
    let (answer, err, secs) = run_makai(&env, &dir, &[QUESTIONS[0].text]);
    eprintln!("README question answered in {secs:.1} s: {answer}");
    // The zero-key default: the local model, tools off, said on stderr.
    assert!(err.contains("no API key or login found"), "{err}");
    assert!(err.contains("tools are off"), "{err}");
    assert!(
        answers(&QUESTIONS[0], &answer),
        "no 'Rust' and 'agent' in: {answer}"
    );
}

#[test]
fn five_questions_about_this_repository_with_the_overview() {
    let Some((url, _)) = real_model() else {
        return;
    };
    let Some(dir) = reusable_cache(&url) else {
        return;
    };
    let _turn = SERVER.lock().unwrap_or_else(|e| e.into_inner());
    let env = Env::new();
    // MAKAI_COMPARE_FIRST_TURN=1 also runs the first-turn tool approach (the
    // measurement in BENCHMARKS.md); CI runs the kept approach only.
    let compare = std::env::var("MAKAI_COMPARE_FIRST_TURN").is_ok_and(|v| v == "1");
    let mut approaches: Vec<(&str, &[&str])> = vec![("overview", &[])];
    if compare {
        approaches.push(("first-turn tool", &["--tools", "read,ls"]));
    }
    let mut scores = Vec::new();
    for (name, extra) in approaches {
        let mut score = 0;
        let mut total_secs = 0.0;
        for q in &QUESTIONS {
            let (answer, _, secs) = ask(&env, &dir, extra, q.text);
            let ok = answers(q, &answer);
            score += usize::from(ok);
            total_secs += secs;
            eprintln!(
                "[{name}] {} ({secs:.1} s) {}\n    {}",
                if ok { "PASS" } else { "MISS" },
                q.text,
                answer.trim().replace('\n', "\n    ")
            );
        }
        eprintln!(
            "[{name}] {score} of {} in {total_secs:.0} s",
            QUESTIONS.len()
        );
        scores.push((name, score));
    }
    // The kept approach answers at least three of the five (it answered four
    // in three of the four measured runs, three in one; the first-turn tool
    // approach none in all four).
    assert!(scores[0].1 >= 3, "{scores:?}");
    if compare {
        assert!(
            scores[0].1 >= scores[1].1,
            "the other approach wins: {scores:?}"
        );
    }
}
