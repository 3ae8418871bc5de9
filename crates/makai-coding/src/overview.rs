//! A compact overview of the working directory, for models that cannot look
//! around themselves (no tools in the run, such as the built-in 0.5B local
//! model): the top of the README, the top-level entries, and the git branch
//! and status summary, within a token budget sized to the model's window.
//!
//! It goes into the system prompt as its own section ([`workspace_overview`]),
//! headed by a note that says what it is, so the model does not claim to have
//! read more than it was shown. The project's context files (`AGENTS.md`) are
//! in the prompt already ([`crate::context_files`]), so they are not repeated.
//!
//! What is never included: hidden files and what `.gitignore` excludes (the
//! listing skips them), files whose names mark secrets (`.env`, `*.pem`,
//! `id_rsa`, ...: see [`is_secret_name`]; neither listed nor read), a README
//! that is binary, or that is a link leaving the working directory or pointing
//! at a secret.

use std::io::Read;
use std::path::Path;
use std::time::Duration;

/// File names read as the README, in order of preference.
pub const README_NAMES: [&str; 6] = [
    "README.md",
    "README",
    "README.markdown",
    "README.rst",
    "README.txt",
    "readme.md",
];

/// Bytes per token assumed when sizing the overview (the rough figure the
/// compaction estimate uses too).
pub const BYTES_PER_TOKEN: u64 = 4;

/// Largest overview, in tokens, whatever the window: it is an overview.
pub const MAX_OVERVIEW_TOKENS: u64 = 2048;

/// Tokens kept free for the user's prompt when sizing the overview.
pub const PROMPT_RESERVE_TOKENS: u64 = 256;

/// Smallest budget worth an overview (its note alone is about 120 tokens);
/// below it there is none.
pub const MIN_OVERVIEW_TOKENS: u64 = 160;

/// Top-level entries listed at most.
const MAX_ENTRIES: usize = 80;
/// Changed paths named at most in the git summary.
const MAX_STATUS_PATHS: usize = 10;
/// Longest wait for `git status` (a huge repository is summarised without it).
const GIT_TIMEOUT: Duration = Duration::from_secs(3);

/// How many tokens the overview may take: what the window leaves after the
/// system prompt, the answer and the user's prompt, at most a quarter of the
/// window and at most [`MAX_OVERVIEW_TOKENS`].
///
/// For the built-in local model (4,096 tokens, a system prompt of about 800,
/// 512 for the answer) that is 1,024 tokens: a quarter of the window.
pub fn overview_budget(context_window: u64, system_prompt_tokens: u64, answer_tokens: u64) -> u64 {
    let room = context_window
        .saturating_sub(system_prompt_tokens)
        .saturating_sub(answer_tokens)
        .saturating_sub(PROMPT_RESERVE_TOKENS);
    room.min(context_window / 4).min(MAX_OVERVIEW_TOKENS)
}

/// True for file names that usually hold secrets: `.env` and `.env.*`,
/// private keys and certificates (`*.pem`, `*.key`, `*.p12`, `*.pfx`,
/// `id_rsa`, `id_ed25519`, ...), credential and token files (`.netrc`,
/// `.npmrc`, `.pypirc`, `credentials*`, `auth.json`, `*.secret`, `secrets.*`).
pub fn is_secret_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    let exact = [
        ".env",
        ".netrc",
        ".npmrc",
        ".pypirc",
        ".pgpass",
        ".git-credentials",
        "auth.json",
        "credentials",
        "credentials.json",
        "token.json",
    ];
    let suffixes = [
        ".pem",
        ".key",
        ".p12",
        ".pfx",
        ".jks",
        ".keystore",
        ".secret",
        ".secrets",
        ".asc",
        ".gpg",
        ".kdbx",
        ".tfvars",
        ".tfstate",
    ];
    exact.contains(&lower.as_str())
        || lower.starts_with(".env.")
        || lower.ends_with(".env")
        || lower.starts_with("id_rsa")
        || lower.starts_with("id_dsa")
        || lower.starts_with("id_ecdsa")
        || lower.starts_with("id_ed25519")
        || lower.starts_with("secrets.")
        || lower.starts_with("credentials.")
        || suffixes.iter().any(|s| lower.ends_with(s))
}

/// What the overview says about the run it is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OverviewOptions {
    /// Tokens the section may take (see [`overview_budget`]).
    pub budget_tokens: u64,
    /// True when the run has tools (the overview was asked for by a setting);
    /// without tools the note tells the model it cannot look further.
    pub tools: bool,
}

/// The overview section for `cwd`, at most `budget_tokens` ×
/// [`BYTES_PER_TOKEN`] bytes, or `None` when the budget is below
/// [`MIN_OVERVIEW_TOKENS`]. Never fails: a part that cannot be read (no
/// README, no git, an unreadable folder) is left out.
pub async fn workspace_overview(cwd: &Path, options: OverviewOptions) -> Option<String> {
    if options.budget_tokens < MIN_OVERVIEW_TOKENS {
        return None;
    }
    let budget = usize::try_from(options.budget_tokens.saturating_mul(BYTES_PER_TOKEN))
        .unwrap_or(usize::MAX);
    let mut out = String::from(
        "# Overview of the working directory\n\n\
         Below are the top of the project's README, its top-level entries and its git status, \
         as they were when the session started. This is all you have seen of the project: you \
         have not read any other file, so do not claim to have; when a question needs another \
         file, say which one.",
    );
    if !options.tools {
        out.push_str(
            " You cannot run tools in this session; the user can show you a file by naming it \
             as @path in a message.",
        );
    }
    out.push('\n');
    if out.len() > budget {
        return None;
    }
    let git = git_summary(cwd).await;
    let entries = top_level_entries(cwd);
    // The fixed parts first; the README takes what they leave.
    let mut tail = String::new();
    if let Some(entries) = entries {
        tail.push_str(&entries);
    }
    if let Some(git) = git {
        tail.push_str(&git);
    }
    let fixed = out.len() + tail.len();
    if fixed > budget {
        // Too small for everything: the note and as many whole lines of the rest as fit.
        let room = budget.saturating_sub(out.len());
        out.push_str(&cut_at_line(&tail, room));
        return Some(out);
    }
    if let Some(readme) = readme_section(cwd, budget - fixed) {
        out.push_str(&readme);
    }
    out.push_str(&tail);
    Some(out)
}

/// The README section with at most `room` bytes, or `None`: the first of
/// [`README_NAMES`] that is a readable text file inside `cwd`.
fn readme_section(cwd: &Path, room: usize) -> Option<String> {
    let root = cwd.canonicalize().ok()?;
    README_NAMES
        .into_iter()
        .find_map(|name| readme_text(&root, name, room))
}

/// `name`'s section, or `None` when it is missing, binary, a secret, a link
/// leaving `root`, or does not fit.
fn readme_text(root: &Path, name: &str, room: usize) -> Option<String> {
    // "\n## NAME (first N of M bytes)\n\n" plus the text plus "\n".
    const HEAD: usize = 64;
    if room <= HEAD + name.len() + 80 {
        return None;
    }
    let path = root.join(name).canonicalize().ok()?;
    let target_name = path.file_name()?.to_str()?;
    if !path.starts_with(root) || !path.is_file() || is_secret_name(target_name) {
        return None;
    }
    let size = std::fs::metadata(&path).ok()?.len();
    let mut bytes = Vec::new();
    let limit = (room - HEAD - name.len()) as u64;
    std::fs::File::open(&path)
        .ok()?
        .take(limit)
        .read_to_end(&mut bytes)
        .ok()?;
    if bytes.contains(&0) {
        tracing::debug!(path = %path.display(), "overview: README skipped, binary");
        return None;
    }
    let whole = bytes.len() as u64 == size;
    let text = match std::str::from_utf8(&bytes) {
        Ok(t) => t,
        // A cut in the middle of a character: keep what comes before it.
        Err(e) if e.error_len().is_none() => std::str::from_utf8(&bytes[..e.valid_up_to()]).ok()?,
        Err(_) => return None,
    };
    let text = if whole {
        text.trim_end().to_string()
    } else {
        // Cut: end at the last whole line.
        text.rfind('\n')
            .map_or(text, |i| &text[..i])
            .trim_end()
            .to_string()
    };
    if text.is_empty() {
        return None;
    }
    let head = if whole {
        format!("\n## {name}\n\n")
    } else {
        format!("\n## {name} (first {} of {size} bytes)\n\n", text.len())
    };
    Some(format!("{head}{text}\n"))
}

/// `## Top-level entries` with folders marked by `/`; hidden, ignored and
/// secret-named entries left out.
fn top_level_entries(cwd: &Path) -> Option<String> {
    let mut names: Vec<String> = ignore::WalkBuilder::new(cwd)
        .max_depth(Some(1))
        .hidden(true)
        .require_git(false)
        .build()
        .filter_map(Result::ok)
        .filter(|e| e.depth() == 1)
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            if is_secret_name(&name) {
                return None;
            }
            let dir = e.file_type().is_some_and(|t| t.is_dir());
            Some(if dir { format!("{name}/") } else { name })
        })
        .collect();
    if names.is_empty() {
        return None;
    }
    names.sort();
    let total = names.len();
    names.truncate(MAX_ENTRIES);
    let mut s = format!("\n## Top-level entries ({total})\n\n{}", names.join("  "));
    if total > MAX_ENTRIES {
        s.push_str(&format!("  (and {} more)", total - MAX_ENTRIES));
    }
    s.push('\n');
    Some(s)
}

/// `## Git`: the branch and a summary of `git status`, or `None` when `cwd`
/// is not in a repository, git is missing or too slow.
async fn git_summary(cwd: &Path) -> Option<String> {
    let mut cmd = tokio::process::Command::new("git");
    cmd.arg("-C")
        .arg(cwd)
        .args([
            "status",
            "--porcelain=v1",
            "--branch",
            "--untracked-files=normal",
        ])
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("LC_ALL", "C")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    let out = match tokio::time::timeout(GIT_TIMEOUT, cmd.output()).await {
        Ok(Ok(out)) if out.status.success() => out,
        Ok(Ok(_)) => return None, // not a repository
        Ok(Err(e)) => {
            tracing::debug!("overview: git status not run: {e}");
            return None;
        }
        Err(_) => {
            tracing::debug!("overview: git status took over {GIT_TIMEOUT:?}; left out");
            return None;
        }
    };
    let text = String::from_utf8_lossy(&out.stdout);
    Some(format!("\n## Git\n\n{}\n", summarize_status(&text)))
}

/// One paragraph from `git status --porcelain=v1 --branch` output.
fn summarize_status(porcelain: &str) -> String {
    let mut lines = porcelain.lines();
    let branch_line = lines.next().unwrap_or_default();
    let branch = branch_line.strip_prefix("## ").unwrap_or(branch_line);
    let branch = if let Some(b) = branch.strip_prefix("No commits yet on ") {
        format!("Branch {b} (no commits yet)")
    } else if branch.starts_with("HEAD (no branch)") {
        "Detached HEAD".to_string()
    } else {
        // "main...origin/main [ahead 1, behind 2]"
        let (name, rest) = branch.split_once("...").unwrap_or((branch, ""));
        let tracking = rest.split_once(" [").map(|(_, t)| t.trim_end_matches(']'));
        match tracking {
            Some(t) => format!("Branch {name} ({t})"),
            None => format!("Branch {name}"),
        }
    };
    let (mut staged, mut changed, mut untracked) = (0usize, 0usize, 0usize);
    let mut paths = Vec::new();
    for line in lines {
        let (code, path) = line.split_at(line.len().min(3));
        let mut chars = code.chars();
        let (x, y) = (chars.next().unwrap_or(' '), chars.next().unwrap_or(' '));
        if x == '?' {
            untracked += 1;
        } else {
            staged += usize::from(x != ' ');
            changed += usize::from(y != ' ');
        }
        paths.push(path.trim().to_string());
    }
    if paths.is_empty() {
        return format!("{branch}; the working tree is clean.");
    }
    let mut counts = Vec::new();
    if staged > 0 {
        counts.push(format!("{staged} staged"));
    }
    if changed > 0 {
        counts.push(format!("{changed} modified"));
    }
    if untracked > 0 {
        counts.push(format!("{untracked} untracked"));
    }
    let total = paths.len();
    paths.truncate(MAX_STATUS_PATHS);
    let more = if total > MAX_STATUS_PATHS {
        format!(" and {} more", total - MAX_STATUS_PATHS)
    } else {
        String::new()
    };
    format!(
        "{branch}; {}: {}{more}.",
        counts.join(", "),
        paths.join(", ")
    )
}

/// The longest prefix of `text` of at most `max` bytes that ends at a line
/// break (or at a character boundary when the first line is longer).
fn cut_at_line(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let head = &text[..end];
    match head.rfind('\n') {
        Some(i) if i > 0 => head[..=i].to_string(),
        _ => head.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_summary_counts_and_names() {
        let s =
            summarize_status("## main...origin/main [ahead 2]\n M src/a.rs\nM  b.rs\n?? new.txt\n");
        assert_eq!(
            s,
            "Branch main (ahead 2); 1 staged, 1 modified, 1 untracked: src/a.rs, b.rs, new.txt."
        );
        assert_eq!(
            summarize_status("## No commits yet on main\n"),
            "Branch main (no commits yet); the working tree is clean."
        );
        assert_eq!(
            summarize_status("## feature\n"),
            "Branch feature; the working tree is clean."
        );
    }

    #[test]
    fn cut_keeps_whole_lines_and_characters() {
        assert_eq!(cut_at_line("ab\ncd\nef", 7), "ab\ncd\n");
        assert_eq!(cut_at_line("é", 1), "");
        assert_eq!(cut_at_line("abcdef", 3), "abc");
    }

    #[test]
    fn secret_names() {
        for n in [
            ".env",
            ".env.local",
            "prod.env",
            "id_rsa",
            "id_ed25519.pub",
            "server.pem",
            "auth.json",
            ".npmrc",
            "secrets.yaml",
        ] {
            assert!(is_secret_name(n), "{n}");
        }
        for n in [
            "README.md",
            "src",
            "Cargo.toml",
            "environment.rs",
            "keys.rs",
        ] {
            assert!(!is_secret_name(n), "{n}");
        }
    }
}
