//! `edit`: exact text replacements in one file, with a unified diff.

use makai_ai::quote::bounded;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::args::opt_bool;
use super::edit_apply::{Framed, Replacement, apply, unified_diff};
use super::fsutil::{atomic_write, first_nul};
use super::{CallCtx, ToolEnv, ToolError, ToolOutput};

/// One replacement in an `edit` call.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EditSpec {
    /// Exact text to replace. It must occur exactly once in the original file (unless replaceAll)
    /// and must not overlap any other edit's oldText.
    pub old_text: String,
    /// The replacement text.
    pub new_text: String,
    /// Replace every occurrence of oldText instead of requiring exactly one (default: false).
    #[serde(default, deserialize_with = "opt_bool")]
    pub replace_all: Option<bool>,
}

/// Arguments of `edit`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EditArgs {
    /// Path to the file to edit (relative to the working directory, or absolute).
    #[serde(alias = "file_path")]
    pub path: String,
    /// One or more replacements. Each is matched against the original file, not after earlier
    /// edits; do not include overlapping edits; merge nearby changes into one edit.
    pub edits: Vec<EditSpec>,
}

/// The tool's description for the model.
pub fn description() -> String {
    "Edit a single file with exact text replacement. Every edits[].oldText must match exactly one region of the original file \
     (whitespace and line breaks included; set replaceAll to change every occurrence) and edits must not overlap. \
     Keep oldText small but unique. The result shows a unified diff."
        .to_string()
}

/// Parses `edit` arguments leniently: `edits` may arrive as a JSON string, and
/// a single top-level `oldText`/`newText` (with optional `replaceAll`) is
/// accepted as one more edit.
pub fn parse_edit_args(args: Value) -> Result<EditArgs, ToolError> {
    let Value::Object(mut map) = args else {
        return Err(ToolError::invalid(
            "edit",
            "arguments must be a JSON object",
        ));
    };
    if let Some(Value::String(s)) = map.get("edits")
        && let Ok(parsed @ Value::Array(_)) = serde_json::from_str::<Value>(s)
    {
        map.insert("edits".to_string(), parsed);
    }
    let old = map.remove("oldText").or_else(|| map.remove("old_text"));
    let new = map.remove("newText").or_else(|| map.remove("new_text"));
    let all = map
        .remove("replaceAll")
        .or_else(|| map.remove("replace_all"));
    match (old, new) {
        (Some(old @ Value::String(_)), Some(new @ Value::String(_))) => {
            let mut one = serde_json::Map::new();
            one.insert("oldText".into(), old);
            one.insert("newText".into(), new);
            if let Some(a) = all {
                one.insert("replaceAll".into(), a);
            }
            let edits = map
                .entry("edits")
                .or_insert_with(|| Value::Array(Vec::new()));
            match edits {
                Value::Array(list) => list.push(Value::Object(one)),
                _ => {
                    return Err(ToolError::invalid(
                        "edit",
                        "edits must be an array of {oldText, newText}",
                    ));
                }
            }
        }
        (None, None) => {}
        _ => {
            return Err(ToolError::invalid(
                "edit",
                "oldText and newText must both be strings when given at the top level",
            ));
        }
    }
    let parsed: EditArgs = super::args::parse_args("edit", Value::Object(map))?;
    if parsed.edits.is_empty() {
        return Err(ToolError::invalid(
            "edit",
            "edits must contain at least one replacement ({oldText, newText})",
        ));
    }
    Ok(parsed)
}

/// Runs `edit`.
pub async fn edit(env: &ToolEnv, args: EditArgs, ctx: &CallCtx) -> Result<ToolOutput, ToolError> {
    ctx.check()?;
    let resolved = env.resolve(&args.path)?;
    let shown = resolved.display.clone();
    let q = bounded(&shown);
    match std::fs::metadata(&resolved.path) {
        Ok(m) if m.is_file() => {}
        Ok(m) if m.is_dir() => {
            return Err(ToolError::Failed(format!(
                "{q} is a directory; edit needs a file."
            )));
        }
        Ok(_) => {
            return Err(ToolError::Failed(format!(
                "{q} is not a regular file (it is a device, socket or pipe); edit only changes files."
            )));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ToolError::NotFound {
                what: "File",
                path: shown,
                cwd: env.cwd.clone(),
            });
        }
        Err(e) => return Err(ToolError::io("read", shown, e)),
    }
    let bytes =
        std::fs::read(&resolved.path).map_err(|e| ToolError::io("read", shown.clone(), e))?;
    if first_nul(&bytes[..bytes.len().min(8192)]).is_some() {
        return Err(ToolError::Failed(format!(
            "{q} is a binary file; edit only changes text files. Use write to replace it entirely."
        )));
    }
    let raw = String::from_utf8(bytes).map_err(|e| {
        ToolError::Failed(format!(
            "{q} is not valid UTF-8 (invalid byte at offset {}); edit only changes UTF-8 text. Use write or bash instead.",
            e.utf8_error().valid_up_to()
        ))
    })?;
    let framed = Framed::parse(&raw);
    let replacements: Vec<Replacement> = args
        .edits
        .iter()
        .map(|e| Replacement {
            old_text: e.old_text.replace("\r\n", "\n"),
            new_text: e.new_text.replace("\r\n", "\n"),
            replace_all: e.replace_all.unwrap_or(false),
        })
        .collect();
    let applied = apply(&framed.body, &replacements, &shown)?;
    let (diff, first_changed) = unified_diff(&shown, &framed.body, &applied.body);
    let count = replacements.len();
    let mut details = json!({
        "path": shown,
        "diff": diff,
        "firstChangedLine": first_changed,
    });
    if env.dry_run {
        details["dryRun"] = Value::Bool(true);
        return Ok(ToolOutput::text(format!(
            "Dry run: would apply {count} edit(s) to {shown}. Nothing was written. The change would be:\n\n{diff}"
        ))
        .with_details(details));
    }
    ctx.check()?;
    let out = framed.render(&applied.splices);
    let path = resolved.path.clone();
    tokio::task::spawn_blocking(move || atomic_write(&path, out.as_bytes()))
        .await
        .map_err(|e| ToolError::Failed(format!("The edit task failed: {e}")))?
        .map_err(|e| ToolError::io("write", shown.clone(), e))?;
    Ok(ToolOutput::text(format!(
        "Successfully replaced {count} block(s) in {shown}.\n\n{diff}"
    ))
    .with_details(details))
}
