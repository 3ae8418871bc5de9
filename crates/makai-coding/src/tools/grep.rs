//! `grep`: regex or literal content search with ripgrep's crates — a parallel
//! `.gitignore`-aware walk, optional glob filter, case option, context lines
//! and a match limit.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch,
};
use ignore::overrides::OverrideBuilder;
use ignore::{WalkBuilder, WalkState};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use makai_ai::quote::{bound_echoes, bounded};

use super::args::{opt_bool, opt_count};
use super::find::{invalid_glob, strip_dot_slash};
use super::truncate::{GREP_MAX_LINE_CHARS, MAX_BYTES, format_size, truncate_head, truncate_line};
use super::{CallCtx, ToolEnv, ToolError, ToolOutput, relative_display};

/// Matches returned when no limit is given.
pub const DEFAULT_LIMIT: u64 = 100;

/// Arguments of `grep`.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GrepArgs {
    /// Search pattern (regex, or literal text with literal: true).
    pub pattern: String,
    /// Directory or file to search (default: the working directory).
    #[serde(default)]
    pub path: Option<String>,
    /// Only search files matching this glob, e.g. '*.ts' or '**/*.spec.ts'.
    #[serde(default)]
    pub glob: Option<String>,
    /// Case-insensitive search (default: false).
    #[serde(default, deserialize_with = "opt_bool")]
    pub ignore_case: Option<bool>,
    /// Treat the pattern as literal text instead of a regex (default: false).
    #[serde(default, deserialize_with = "opt_bool")]
    pub literal: Option<bool>,
    /// Lines of context to show before and after each match (default: 0).
    #[serde(default, deserialize_with = "opt_count")]
    pub context: Option<u64>,
    /// Maximum number of matches to return (default: 100).
    #[serde(default, deserialize_with = "opt_count")]
    pub limit: Option<u64>,
}

/// The tool's description for the model.
pub fn description() -> String {
    format!(
        "Search file contents for a pattern. Returns matching lines as `path:line: text` (context lines as `path-line- text`), \
         paths relative to the working directory. Respects .gitignore; hidden files are searched, .git is not. \
         Output is limited to {DEFAULT_LIMIT} matches (change with limit) or {}KB; long lines are cut at {GREP_MAX_LINE_CHARS} characters.",
        MAX_BYTES / 1024
    )
}

#[derive(Debug)]
struct Hit {
    line: u64,
    is_match: bool,
    text: String,
}

struct Shared {
    limit: usize,
    matches: AtomicUsize,
    stop: AtomicBool,
    cancel: CancellationToken,
    files: Mutex<Vec<(PathBuf, Vec<Hit>)>>,
    long_lines: AtomicBool,
}

struct FileSink<'a> {
    shared: &'a Shared,
    hits: Vec<Hit>,
    context: usize,
    /// Set once this file produced the last match allowed.
    at_limit: bool,
    after_left: usize,
}

impl FileSink<'_> {
    fn push(&mut self, line: Option<u64>, bytes: &[u8], is_match: bool) {
        let mut b = bytes;
        if let Some(x) = b.strip_suffix(b"\n") {
            b = x;
        }
        if let Some(x) = b.strip_suffix(b"\r") {
            b = x;
        }
        let text = String::from_utf8_lossy(b);
        let (text, cut) = truncate_line(&text, GREP_MAX_LINE_CHARS);
        if cut {
            self.shared.long_lines.store(true, Ordering::Relaxed);
        }
        self.hits.push(Hit {
            line: line.unwrap_or(0),
            is_match,
            text,
        });
    }
}

impl Sink for FileSink<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        if self.at_limit || self.shared.cancel.is_cancelled() {
            return Ok(false);
        }
        let before = self.shared.matches.fetch_add(1, Ordering::Relaxed);
        if before >= self.shared.limit {
            self.shared.stop.store(true, Ordering::Relaxed);
            return Ok(false);
        }
        self.push(mat.line_number(), mat.bytes(), true);
        if before + 1 >= self.shared.limit {
            self.shared.stop.store(true, Ordering::Relaxed);
            self.at_limit = true;
            self.after_left = self.context;
            return Ok(self.context > 0);
        }
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, Self::Error> {
        if self.at_limit {
            if *ctx.kind() != SinkContextKind::After || self.after_left == 0 {
                return Ok(false);
            }
            self.after_left -= 1;
            self.push(ctx.line_number(), ctx.bytes(), false);
            return Ok(self.after_left > 0);
        }
        self.push(ctx.line_number(), ctx.bytes(), false);
        Ok(true)
    }
}

fn searcher(context: usize) -> Searcher {
    SearcherBuilder::new()
        .line_number(true)
        .before_context(context)
        .after_context(context)
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .build()
}

fn search_one(
    shared: &Shared,
    matcher: &RegexMatcher,
    searcher: &mut Searcher,
    path: &Path,
    context: usize,
) {
    let mut sink = FileSink {
        shared,
        hits: Vec::new(),
        context,
        at_limit: false,
        after_left: 0,
    };
    // Unreadable files are skipped, as ripgrep does (it only warns).
    let _ = searcher.search_path(matcher, path, &mut sink);
    if sink.hits.iter().any(|h| h.is_match)
        && let Ok(mut files) = shared.files.lock()
    {
        files.push((path.to_path_buf(), sink.hits));
    }
}

/// Runs `grep`.
pub async fn grep(env: &ToolEnv, args: GrepArgs, ctx: &CallCtx) -> Result<ToolOutput, ToolError> {
    ctx.check()?;
    let env = env.clone();
    let cancel = ctx.cancel.clone();
    let out = tokio::task::spawn_blocking(move || grep_blocking(&env, &args, cancel))
        .await
        .map_err(|e| ToolError::Failed(format!("The grep task failed: {e}")))??;
    ctx.check()?;
    Ok(out)
}

/// The matcher for `pattern` with the tool's options.
pub fn build_matcher(
    pattern: &str,
    ignore_case: bool,
    literal: bool,
) -> Result<RegexMatcher, ToolError> {
    let mut b = RegexMatcherBuilder::new();
    b.case_insensitive(ignore_case)
        .fixed_strings(literal)
        .line_terminator(Some(b'\n'));
    b.build(pattern).map_err(|e| {
        ToolError::Failed(format!(
            "Invalid regex pattern {:?}: {}. Fix the pattern, or pass literal: true to search for the text as written.",
            bounded(pattern),
            bound_echoes(&e.to_string(), pattern)
        ))
    })
}

fn grep_blocking(
    env: &ToolEnv,
    args: &GrepArgs,
    cancel: CancellationToken,
) -> Result<ToolOutput, ToolError> {
    if args.pattern.is_empty() {
        return Err(ToolError::invalid("grep", "pattern is empty"));
    }
    let limit = args.limit.unwrap_or(DEFAULT_LIMIT).max(1) as usize;
    let context = args.context.unwrap_or(0).min(1000) as usize;
    let root = env.resolve(args.path.as_deref().unwrap_or("."))?;
    let meta = std::fs::metadata(&root.path).map_err(|_| ToolError::NotFound {
        what: "Path",
        path: root.display.clone(),
        cwd: env.cwd.clone(),
    })?;
    let matcher = build_matcher(
        &args.pattern,
        args.ignore_case.unwrap_or(false),
        args.literal.unwrap_or(false),
    )?;
    let shared = Arc::new(Shared {
        limit,
        matches: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
        cancel: cancel.clone(),
        files: Mutex::new(Vec::new()),
        long_lines: AtomicBool::new(false),
    });

    if meta.is_file() {
        search_one(
            &shared,
            &matcher,
            &mut searcher(context),
            &root.path,
            context,
        );
    } else {
        let mut wb = WalkBuilder::new(&root.path);
        wb.hidden(false)
            .require_git(false)
            .follow_links(false)
            .threads(
                std::thread::available_parallelism()
                    .map(|n| n.get())
                    .unwrap_or(2)
                    .min(12),
            )
            .filter_entry(|e| e.file_name() != ".git");
        if let Some(glob) = args.glob.as_deref().filter(|g| !g.is_empty()) {
            let mut ob = OverrideBuilder::new(&root.path);
            // Relative to `path`, as ripgrep's `--glob` is; a leading `./`
            // (after a negating `!`) means that folder and matches nothing
            // literally (pi 1.5.1's fix).
            let (negated, bare) = match glob.strip_prefix('!') {
                Some(rest) => ("!", rest),
                None => ("", glob),
            };
            let relative = match strip_dot_slash(bare) {
                Some(rest) => format!("{negated}/{rest}"),
                None => glob.to_string(),
            };
            ob.add(&relative)
                .map_err(|e| ToolError::invalid("grep", invalid_glob(glob, &e)))?;
            let ov = ob
                .build()
                .map_err(|e| ToolError::invalid("grep", invalid_glob(glob, &e)))?;
            wb.overrides(ov);
        }
        wb.build_parallel().run(|| {
            let shared = Arc::clone(&shared);
            let matcher = matcher.clone();
            let mut s = searcher(context);
            Box::new(move |entry| {
                if shared.stop.load(Ordering::Relaxed) || shared.cancel.is_cancelled() {
                    return WalkState::Quit;
                }
                let Ok(entry) = entry else {
                    return WalkState::Continue;
                };
                if entry.file_type().is_some_and(|t| t.is_file()) {
                    search_one(&shared, &matcher, &mut s, entry.path(), context);
                }
                WalkState::Continue
            })
        });
    }
    if cancel.is_cancelled() {
        return Err(ToolError::Aborted);
    }

    let mut files = match shared.files.lock() {
        Ok(mut f) => std::mem::take(&mut *f),
        Err(_) => Vec::new(),
    };
    if files.is_empty() {
        return Ok(ToolOutput::text("No matches found").with_details(json!({ "matches": 0 })));
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));
    let base = super::policy::real_path(&super::policy::normalize_lexically(&env.cwd))
        .unwrap_or_else(|_| env.cwd.clone());
    let mut lines: Vec<String> = Vec::new();
    let mut matches = 0usize;
    for (path, hits) in &files {
        let shown = relative_display(&base, path);
        for h in hits {
            if h.is_match {
                matches += 1;
                lines.push(format!("{shown}:{}: {}", h.line, h.text));
            } else {
                lines.push(format!("{shown}-{}- {}", h.line, h.text));
            }
        }
    }
    let raw = lines.join("\n");
    let t = truncate_head(&raw, usize::MAX, MAX_BYTES);
    let mut out = t.content.clone();
    let mut notices = Vec::new();
    let limit_reached = shared.matches.load(Ordering::Relaxed) >= limit && matches >= limit;
    let mut details = json!({ "matches": matches, "files": files.len() });
    if limit_reached {
        notices.push(format!(
            "{limit} matches limit reached. Use limit={} for more, or refine the pattern",
            limit * 2
        ));
        details["matchLimitReached"] = json!(limit);
    }
    if t.truncated {
        notices.push(format!("{} output limit reached", format_size(MAX_BYTES)));
        details["truncation"] = serde_json::to_value(&t).unwrap_or_default();
    }
    if shared.long_lines.load(Ordering::Relaxed) {
        notices.push(format!(
            "Some lines truncated to {GREP_MAX_LINE_CHARS} characters. Use read to see full lines"
        ));
        details["linesTruncated"] = json!(true);
    }
    if !notices.is_empty() {
        out.push_str(&format!("\n\n[{}]", notices.join(". ")));
    }
    Ok(ToolOutput::text(out).with_details(details))
}
