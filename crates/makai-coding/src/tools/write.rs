//! `write`: create or overwrite a file atomically, creating parent folders.

use makai_ai::quote::bounded;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::fsutil::atomic_write;
use super::{CallCtx, ToolEnv, ToolError, ToolOutput};

/// Arguments of `write`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WriteArgs {
    /// Path to the file to write (relative to the working directory, or absolute).
    #[serde(alias = "file_path")]
    pub path: String,
    /// The complete content to write.
    pub content: String,
}

/// The tool's description for the model.
pub fn description() -> String {
    "Write content to a file. Creates the file if it does not exist and overwrites it if it does; \
     parent folders are created as needed. The write is atomic. Use edit for targeted changes to existing files."
        .to_string()
}

/// Runs `write`.
pub async fn write(env: &ToolEnv, args: WriteArgs, ctx: &CallCtx) -> Result<ToolOutput, ToolError> {
    ctx.check()?;
    let resolved = env.resolve(&args.path)?;
    let shown = resolved.display.clone();
    let existing = match std::fs::metadata(&resolved.path) {
        Ok(m) if m.is_dir() => {
            return Err(ToolError::Failed(format!(
                "{} is a directory; write needs a file path.",
                bounded(&shown)
            )));
        }
        Ok(m) => Some(m.len()),
        Err(_) => None,
    };
    let bytes = args.content.len();
    if env.dry_run {
        let missing_parents = resolved.path.parent().is_some_and(|p| !p.exists());
        let what = match existing {
            Some(old) => format!("overwrite {shown} (currently {old} bytes) with {bytes} bytes"),
            None => format!("create {shown} with {bytes} bytes"),
        };
        let parents = if missing_parents {
            ", creating its parent folders"
        } else {
            ""
        };
        return Ok(ToolOutput::text(format!(
            "Dry run: would {what}{parents}. Nothing was written."
        ))
        .with_details(json!({
            "dryRun": true,
            "path": shown,
            "bytes": bytes,
            "created": existing.is_none(),
            "previousBytes": existing,
        })));
    }
    let path = resolved.path.clone();
    let content = args.content;
    tokio::task::spawn_blocking(move || atomic_write(&path, content.as_bytes()))
        .await
        .map_err(|e| ToolError::Failed(format!("The write task failed: {e}")))?
        .map_err(|e| ToolError::io("write", shown.clone(), e))?;
    let verb = if existing.is_some() {
        "overwrote"
    } else {
        "created"
    };
    Ok(ToolOutput::text(format!(
        "Successfully wrote {bytes} bytes to {shown} ({verb})."
    ))
    .with_details(json!({ "path": shown, "bytes": bytes, "created": existing.is_none() })))
}
