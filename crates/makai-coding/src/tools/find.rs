//! `find`: files and folders whose path matches a glob, over a
//! `.gitignore`-aware walk, sorted, with a result limit.

use globset::{GlobBuilder, GlobMatcher};
use ignore::WalkBuilder;
use makai_ai::quote::{bound_echoes, bounded};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::args::opt_count;
use super::truncate::{MAX_BYTES, format_size, truncate_head};
use super::{CallCtx, ToolEnv, ToolError, ToolOutput, relative_display};

/// Results returned when no limit is given.
pub const DEFAULT_LIMIT: u64 = 1000;

/// Arguments of `find`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FindArgs {
    /// Glob pattern to match, e.g. '*.ts', '**/*.json' or 'src/**/*.spec.ts'. A pattern without '/'
    /// matches file names at any depth.
    pub pattern: String,
    /// Directory to search in (default: the working directory).
    #[serde(default)]
    pub path: Option<String>,
    /// Maximum number of results (default: 1000).
    #[serde(default, deserialize_with = "opt_count")]
    pub limit: Option<u64>,
}

/// The tool's description for the model.
pub fn description() -> String {
    format!(
        "Search for files by glob pattern. Returns matching paths relative to the search directory, sorted; folders end with '/'. \
         Respects .gitignore; hidden files are included, .git is not. Output is limited to {DEFAULT_LIMIT} results (change with limit) or {}KB.",
        MAX_BYTES / 1024
    )
}

/// A glob without its leading `./` (one or more): "the folder searched",
/// which no path under it matches literally. `None`: it had none.
pub(crate) fn strip_dot_slash(glob: &str) -> Option<&str> {
    let mut rest = glob.strip_prefix("./")?;
    while let Some(more) = rest.strip_prefix("./") {
        rest = more;
    }
    Some(rest.trim_start_matches('/'))
}

/// Compiles the find pattern: without `/` it matches the file name at any
/// depth; with `/` it matches the path relative to the search folder, at any
/// depth unless it starts with `/` or `./`.
pub fn compile(pattern: &str) -> Result<(GlobMatcher, bool), ToolError> {
    let (glob, on_path) = if pattern.contains('/') {
        let p = if let Some(anchored) = pattern
            .strip_prefix('/')
            .or_else(|| strip_dot_slash(pattern))
        {
            anchored.to_string()
        } else if pattern.starts_with("**/") || pattern == "**" {
            pattern.to_string()
        } else {
            format!("**/{pattern}")
        };
        (p, true)
    } else {
        (pattern.to_string(), false)
    };
    let m = GlobBuilder::new(&glob)
        .literal_separator(true)
        .build()
        .map_err(|e| ToolError::invalid("find", invalid_glob(pattern, &e)))?
        .compile_matcher();
    Ok((m, on_path))
}

/// "invalid glob ..." for a glob that does not compile, the glob quoted
/// [`bounded`] wherever the error echoes it.
pub(crate) fn invalid_glob(glob: &str, error: &dyn std::fmt::Display) -> String {
    format!(
        "invalid glob {:?}: {}",
        bounded(glob),
        bound_echoes(&error.to_string(), glob)
    )
}

/// Runs `find`.
pub async fn find(env: &ToolEnv, args: FindArgs, ctx: &CallCtx) -> Result<ToolOutput, ToolError> {
    ctx.check()?;
    let env = env.clone();
    let ctx2 = ctx.clone();
    let out = tokio::task::spawn_blocking(move || find_blocking(&env, &args, &ctx2))
        .await
        .map_err(|e| ToolError::Failed(format!("The find task failed: {e}")))??;
    ctx.check()?;
    Ok(out)
}

fn find_blocking(env: &ToolEnv, args: &FindArgs, ctx: &CallCtx) -> Result<ToolOutput, ToolError> {
    if args.pattern.is_empty() {
        return Err(ToolError::invalid("find", "pattern is empty"));
    }
    let limit = args.limit.unwrap_or(DEFAULT_LIMIT).max(1) as usize;
    let root = env.resolve(args.path.as_deref().unwrap_or("."))?;
    match std::fs::metadata(&root.path) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(ToolError::Failed(format!(
                "{} is a file, not a directory; find searches folders.",
                bounded(&root.display)
            )));
        }
        Err(_) => {
            return Err(ToolError::NotFound {
                what: "Directory",
                path: root.display.clone(),
                cwd: env.cwd.clone(),
            });
        }
    }
    let (matcher, on_path) = compile(&args.pattern)?;
    let mut wb = WalkBuilder::new(&root.path);
    wb.hidden(false)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|e| e.file_name() != ".git");
    let mut found: Vec<String> = Vec::new();
    let mut limit_reached = false;
    for (i, entry) in wb.build().enumerate() {
        if i.is_multiple_of(4096) {
            ctx.check()?;
        }
        let Ok(entry) = entry else { continue };
        if entry.depth() == 0 {
            continue;
        }
        let rel = relative_display(&root.path, entry.path());
        let hit = if on_path {
            matcher.is_match(&rel)
        } else {
            matcher.is_match(entry.file_name())
        };
        if !hit {
            continue;
        }
        if found.len() >= limit {
            limit_reached = true;
            break;
        }
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        found.push(if is_dir { format!("{rel}/") } else { rel });
    }
    if found.is_empty() {
        return Ok(ToolOutput::text("No files found matching pattern")
            .with_details(json!({ "results": 0 })));
    }
    found.sort();
    let t = truncate_head(&found.join("\n"), usize::MAX, MAX_BYTES);
    let mut out = t.content.clone();
    let mut details = json!({ "results": found.len() });
    let mut notices = Vec::new();
    if limit_reached {
        notices.push(format!(
            "{limit} results limit reached. Use limit={} for more, or refine the pattern",
            limit * 2
        ));
        details["resultLimitReached"] = json!(limit);
    }
    if t.truncated {
        notices.push(format!("{} output limit reached", format_size(MAX_BYTES)));
        details["truncation"] = serde_json::to_value(&t).unwrap_or_default();
    }
    if !notices.is_empty() {
        out.push_str(&format!("\n\n[{}]", notices.join(". ")));
    }
    Ok(ToolOutput::text(out).with_details(details))
}
