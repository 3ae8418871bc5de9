//! `ls`: one folder's entries, sorted case-insensitively, folders marked `/`,
//! dotfiles included, with an entry limit.

use makai_ai::quote::bounded;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::args::opt_count;
use super::truncate::{MAX_BYTES, format_size, truncate_head};
use super::{CallCtx, ToolEnv, ToolError, ToolOutput};

/// Entries returned when no limit is given.
pub const DEFAULT_LIMIT: u64 = 500;

/// Arguments of `ls`.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LsArgs {
    /// Directory to list (default: the working directory).
    #[serde(default)]
    pub path: Option<String>,
    /// Maximum number of entries to return (default: 500).
    #[serde(default, deserialize_with = "opt_count")]
    pub limit: Option<u64>,
}

/// The tool's description for the model.
pub fn description() -> String {
    format!(
        "List directory contents. Returns entries sorted alphabetically (case-insensitive), with a '/' suffix for directories. \
         Includes dotfiles. Output is limited to {DEFAULT_LIMIT} entries (change with limit) or {}KB.",
        MAX_BYTES / 1024
    )
}

/// Runs `ls`.
pub async fn ls(env: &ToolEnv, args: LsArgs, ctx: &CallCtx) -> Result<ToolOutput, ToolError> {
    ctx.check()?;
    let env = env.clone();
    let out = tokio::task::spawn_blocking(move || ls_blocking(&env, &args))
        .await
        .map_err(|e| ToolError::Failed(format!("The ls task failed: {e}")))??;
    ctx.check()?;
    Ok(out)
}

fn ls_blocking(env: &ToolEnv, args: &LsArgs) -> Result<ToolOutput, ToolError> {
    let limit = args.limit.unwrap_or(DEFAULT_LIMIT).max(1) as usize;
    let dir = env.resolve(args.path.as_deref().unwrap_or("."))?;
    let shown = dir.display.clone();
    match std::fs::metadata(&dir.path) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(ToolError::Failed(format!(
                "Not a directory: {}. Use read to view a file.",
                bounded(&shown)
            )));
        }
        Err(_) => {
            return Err(ToolError::NotFound {
                what: "Directory",
                path: shown,
                cwd: env.cwd.clone(),
            });
        }
    }
    let rd = std::fs::read_dir(&dir.path).map_err(|e| ToolError::io("list", shown.clone(), e))?;
    let mut names: Vec<(String, std::path::PathBuf)> = rd
        .flatten()
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect();
    names.sort_by(|a, b| {
        a.0.to_lowercase()
            .cmp(&b.0.to_lowercase())
            .then_with(|| a.0.cmp(&b.0))
    });
    let total = names.len();
    let mut entries = Vec::with_capacity(total.min(limit));
    for (name, path) in names.iter().take(limit) {
        // Follows symbolic links: a link to a folder is listed as a folder.
        let is_dir = std::fs::metadata(path).is_ok_and(|m| m.is_dir());
        entries.push(if is_dir {
            format!("{name}/")
        } else {
            name.clone()
        });
    }
    if entries.is_empty() {
        return Ok(ToolOutput::text("(empty directory)").with_details(json!({ "entries": 0 })));
    }
    let t = truncate_head(&entries.join("\n"), usize::MAX, MAX_BYTES);
    let mut out = t.content.clone();
    let mut details = json!({ "entries": entries.len(), "totalEntries": total });
    let mut notices = Vec::new();
    if total > limit {
        notices.push(format!(
            "{limit} entries limit reached ({total} entries in total). Use limit={} for more",
            limit * 2
        ));
        details["entryLimitReached"] = json!(limit);
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
