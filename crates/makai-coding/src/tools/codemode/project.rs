//! What a script's tool call resolves to, from the tool's result:
//!
//! - `bash`: `{ output, truncated, full_output_path?, exit_code,
//!   wall_time_seconds }`, also for a non-zero exit code. `output` holds up
//!   to 1 MiB (read back from the saved full output when the model's view
//!   was cut); longer output keeps its first and last 512 KiB.
//! - `read`: the file's text, or for an image an image block
//!   `{ type: "image", data, mimeType, note }`.
//! - an MCP tool: its `CallToolResult` (`content`, `isError`,
//!   `structuredContent`).
//! - the MCP resource tools: their details (`list_mcp_resources`'
//!   `{resources, nextCursor?}`, `read_mcp_resource`'s `{server, uri,
//!   contents}`).
//! - any other tool: its text.
//!
//! A failed call is `Err` with the tool's error text, but for `bash`'s
//! non-zero exit and an MCP tool's `isError` result, which resolve.

use std::io::{Read, Seek, SeekFrom};

use makai_agent::ToolOutput;
use makai_ai::UserContent;
use serde_json::{Value, json};

/// The most output a script's `bash` call gets.
pub const BASH_OUTPUT_MAX: u64 = 1024 * 1024;

/// How a tool's results are handed to scripts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Projection {
    /// The built-in `bash`.
    Bash,
    /// The built-in `read`.
    Read,
    /// A tool of an MCP server.
    Mcp,
    /// An MCP resource tool (`list_mcp_resources`,
    /// `list_mcp_resource_templates`, `read_mcp_resource`).
    McpResources,
    /// Text.
    Text,
}

impl Projection {
    /// The projection of the tool called `name` (MCP tools are named
    /// `mcp__<server>__<tool>`).
    pub fn of(name: &str) -> Projection {
        match name {
            "bash" => Projection::Bash,
            "read" => Projection::Read,
            n if n.starts_with(MCP_PREFIX) => Projection::Mcp,
            "list_mcp_resources" => Projection::McpResources,
            "list_mcp_resource_templates" => Projection::McpResources,
            "read_mcp_resource" => Projection::McpResources,
            _ => Projection::Text,
        }
    }

    /// The TypeScript type a call resolves to.
    pub fn result_type(self) -> &'static str {
        match self {
            Projection::Bash => "BashResult",
            Projection::Read => "string | ImageBlock",
            Projection::Mcp => "CallToolResult",
            Projection::McpResources => "Record<string, any>",
            Projection::Text => "string",
        }
    }
}

/// What MCP tools' names start with (`mcp__<server>__<tool>`, makai-mcp's
/// naming, pi's).
pub const MCP_PREFIX: &str = "mcp__";

/// The separator of the server and the tool in MCP tool names.
pub const MCP_SEPARATOR: &str = "__";

/// The TypeScript types the result types name.
pub const RESULT_TYPES: &str = r#"interface BashResult {
  /** Up to 1 MiB; longer output keeps its first and last 512 KiB around a marker. */
  output: string;
  truncated: boolean;
  /** The whole output, when it was cut. */
  full_output_path?: string;
  /** null when the command was killed, timed out or aborted. */
  exit_code: number | null;
  wall_time_seconds: number;
}
type ImageBlock = { type: "image"; data: string; mimeType: string; note?: string };
interface CallToolResult {
  content: ({ type: "text"; text: string } | ImageBlock)[];
  isError?: boolean;
  structuredContent?: unknown;
}"#;

fn text_of(output: &ToolOutput) -> String {
    output.text_content()
}

/// The value a script gets for a call's result, or the error it rejects with.
pub fn project(
    projection: Projection,
    output: &ToolOutput,
    is_error: bool,
    wall_seconds: f64,
) -> Result<Value, String> {
    match projection {
        Projection::Bash if output.details.get("exitCode").is_some() || !is_error => {
            Ok(bash_result(output, wall_seconds))
        }
        Projection::Mcp
            if !is_error || output.details.get("isError") == Some(&Value::Bool(true)) =>
        {
            Ok(call_tool_result(output))
        }
        _ if is_error => Err(non_empty(text_of(output))),
        Projection::Read => Ok(read_result(output)),
        Projection::McpResources => Ok(output.details.clone()),
        _ => Ok(Value::String(text_of(output))),
    }
}

fn non_empty(text: String) -> String {
    if text.trim().is_empty() {
        "the tool call failed".into()
    } else {
        text
    }
}

/// The status line `bash` appends to its output, from its details.
fn bash_status(details: &Value) -> Option<String> {
    if let Some(code) = details.get("exitCode").and_then(Value::as_i64) {
        return (code != 0).then(|| format!("Command exited with code {code}"));
    }
    if let Some(sig) = details.get("signal").and_then(Value::as_i64) {
        return Some(format!("Command was killed by signal {sig}"));
    }
    if details.get("aborted") == Some(&Value::Bool(true)) {
        return Some("Command aborted".into());
    }
    None
}

fn bash_result(output: &ToolOutput, wall_seconds: f64) -> Value {
    let details = &output.details;
    let exit_code = details.get("exitCode").and_then(Value::as_i64);
    let full_path = details
        .get("fullOutputPath")
        .and_then(Value::as_str)
        .map(str::to_string);
    let (text, truncated) = match full_path.as_deref().and_then(|p| read_capped(p).ok()) {
        Some(read) => read,
        None => (model_view_output(output), false),
    };
    let mut v = json!({
        "output": text,
        "truncated": truncated,
        "exit_code": exit_code,
        "wall_time_seconds": (wall_seconds * 1000.0).round() / 1000.0,
    });
    if truncated && let Some(p) = full_path {
        v["full_output_path"] = Value::String(p);
    }
    v
}

/// The command's output as the model read it, without the lines `bash`
/// adds after it (its status and notices).
fn model_view_output(output: &ToolOutput) -> String {
    let mut text = text_of(output);
    const LEFTOVERS: &str = "\n\nProcesses the command left running in the background were stopped: under the sandbox a command cannot outlive its call.";
    if let Some(stripped) = text.strip_suffix(LEFTOVERS) {
        text = stripped.to_string();
    }
    if let Some(status) = bash_status(&output.details) {
        if text == status {
            return String::new();
        }
        if let Some(stripped) = text.strip_suffix(&format!("\n\n{status}")) {
            text = stripped.to_string();
        }
    }
    if text == "(no output)" {
        return String::new();
    }
    text
}

/// The file's text, whole up to [`BASH_OUTPUT_MAX`], else its first and
/// last halves around a marker; and whether it was cut.
fn read_capped(path: &str) -> std::io::Result<(String, bool)> {
    let mut f = std::fs::File::open(path)?;
    let len = f.metadata()?.len();
    if len <= BASH_OUTPUT_MAX {
        let mut bytes = Vec::with_capacity(len as usize);
        f.read_to_end(&mut bytes)?;
        return Ok((String::from_utf8_lossy(&bytes).into_owned(), false));
    }
    let half = BASH_OUTPUT_MAX / 2;
    let mut head = vec![0; half as usize];
    f.read_exact(&mut head)?;
    f.seek(SeekFrom::Start(len - half))?;
    let mut tail = vec![0; half as usize];
    f.read_exact(&mut tail)?;
    Ok((
        format!(
            "{}\n\n[... {} bytes omitted; the whole output is in {path} ...]\n\n{}",
            String::from_utf8_lossy(&head),
            len - 2 * half,
            String::from_utf8_lossy(&tail)
        ),
        true,
    ))
}

fn read_result(output: &ToolOutput) -> Value {
    let image = output.content.iter().find_map(|c| match c {
        UserContent::Image(i) => Some(i),
        _ => None,
    });
    match image {
        Some(i) => json!({
            "type": "image",
            "data": i.data,
            "mimeType": i.mime_type,
            "note": text_of(output),
        }),
        None => Value::String(text_of(output)),
    }
}

/// The whole text of content part `index`, when the model read it cut
/// (an MCP text part over 20 KB: `details.fullText`).
fn full_text(output: &ToolOutput, index: usize) -> Option<String> {
    output
        .details
        .get("fullText")?
        .as_array()?
        .iter()
        .find(|f| f.get("index").and_then(Value::as_u64) == Some(index as u64))
        .and_then(|f| f.get("path")?.as_str())
        .and_then(|p| std::fs::read_to_string(p).ok())
}

fn call_tool_result(output: &ToolOutput) -> Value {
    let content: Vec<Value> = output
        .content
        .iter()
        .enumerate()
        .filter_map(|(i, c)| match c {
            UserContent::Text(t) => {
                let text = full_text(output, i).unwrap_or_else(|| t.text.clone());
                Some(json!({"type": "text", "text": text}))
            }
            UserContent::Image(i) => {
                Some(json!({"type": "image", "data": i.data, "mimeType": i.mime_type}))
            }
            _ => None,
        })
        .collect();
    let mut v = json!({ "content": content });
    if output.details.get("isError") == Some(&Value::Bool(true)) {
        v["isError"] = Value::Bool(true);
    }
    if let Some(s) = output.details.get("structuredContent") {
        v["structuredContent"] = s.clone();
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bash_resolves_for_a_non_zero_exit_without_its_status_line() {
        let out = ToolOutput::text("oops\n\nCommand exited with code 2")
            .with_details(json!({"exitCode": 2}));
        let v = project(Projection::Bash, &out, true, 0.25).unwrap();
        assert_eq!(
            v,
            json!({"output": "oops", "truncated": false, "exit_code": 2, "wall_time_seconds": 0.25})
        );
        let timed_out = ToolOutput::text("Command timed out after 1 seconds")
            .with_details(json!({"timedOut": true}));
        assert!(project(Projection::Bash, &timed_out, true, 1.0).is_err());
    }

    #[test]
    fn bash_reads_a_saved_output_back_capped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("full.log");
        let body = "y".repeat(BASH_OUTPUT_MAX as usize + 10);
        std::fs::write(&path, &body).unwrap();
        let out = ToolOutput::text("tail only")
            .with_details(json!({"exitCode": 0, "fullOutputPath": path.display().to_string()}));
        let v = project(Projection::Bash, &out, false, 1.0).unwrap();
        assert_eq!(v["truncated"], json!(true));
        assert_eq!(v["full_output_path"], json!(path.display().to_string()));
        assert!(v["output"].as_str().unwrap().contains("10 bytes omitted"));
    }

    #[test]
    fn mcp_results_cut_for_the_model_reach_scripts_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("full.txt");
        std::fs::write(&path, "the whole text").unwrap();
        let out = ToolOutput::text("the wh…5 chars truncated…text").with_details(json!({
            "server": "s", "tool": "t",
            "fullText": [{"index": 0, "path": path.display().to_string()}]
        }));
        let v = project(Projection::Mcp, &out, false, 0.0).unwrap();
        assert_eq!(v["content"][0]["text"], "the whole text");
    }

    #[test]
    fn mcp_error_results_resolve_and_failures_reject() {
        let out = ToolOutput::text("not found")
            .with_details(json!({"server": "s", "tool": "t", "isError": true}));
        let v = project(Projection::Mcp, &out, true, 0.0).unwrap();
        assert_eq!(
            v,
            json!({"content": [{"type": "text", "text": "not found"}], "isError": true})
        );
        let down = ToolOutput::text("MCP server 's' is not running")
            .with_details(json!({"server": "s", "tool": "t"}));
        assert_eq!(
            project(Projection::Mcp, &down, true, 0.0).unwrap_err(),
            "MCP server 's' is not running"
        );
    }

    #[test]
    fn resource_tools_resolve_to_their_details() {
        assert_eq!(
            Projection::of("read_mcp_resource"),
            Projection::McpResources
        );
        assert_eq!(Projection::of("mcp__fs__read"), Projection::Mcp);
        let details =
            json!({"server": "s", "uri": "u://a", "contents": [{"uri": "u://a", "text": "hi"}]});
        let out = ToolOutput::text("hi").with_details(details.clone());
        assert_eq!(
            project(Projection::McpResources, &out, false, 0.0).unwrap(),
            details
        );
        let refused = ToolOutput::text("There is no MCP server 'x'");
        assert_eq!(
            project(Projection::McpResources, &refused, true, 0.0).unwrap_err(),
            "There is no MCP server 'x'"
        );
    }
}
