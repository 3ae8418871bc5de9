//! Summaries of a branch being left (pi's branch summarization): when the
//! conversation moves to another branch of its session tree, the work of the
//! branch left can be summarized, and the summary joins the branch entered.
//!
//! The summary follows pi's branch format (its sections: Goal, Constraints
//! & Preferences, Progress, Key Decisions, Next Steps), and the files the
//! branch's tool calls read and changed are listed after it, as pi lists
//! them (also kept apart: [`BranchSummary::read_files`],
//! [`BranchSummary::modified_files`]).

use makai_ai::Usage;

use super::CompactionError;
use super::default::{SummaryRequest, summary_call};
use crate::message::AgentMessage;

const BRANCH_SYSTEM: &str = "You write short, factual summaries of work an assistant did on one branch of a conversation, so the conversation can go on elsewhere knowing what that branch found.";
const BRANCH_REQUEST: &str = "The conversation is leaving the branch whose transcript follows. Summarize what happened on it in Markdown with these sections, each brief: ## Goal, ## Constraints & Preferences, ## Progress, ## Key Decisions, ## Next Steps. Keep file names, commands, identifiers and results that matter; leave out what does not.";

/// A branch's summary.
#[derive(Clone, Debug, PartialEq)]
pub struct BranchSummary {
    /// The summary, the files' lists after it.
    pub summary: String,
    /// Usage of the model call that wrote it.
    pub usage: Usage,
    /// Files the branch's `read` calls read (and that no call changed).
    pub read_files: Vec<String>,
    /// Files the branch's `write` and `edit` calls changed.
    pub modified_files: Vec<String>,
}

/// The files `messages`' tool calls read and changed, each once, in the
/// order first met: `read` reads, `write` and `edit` change (a file read
/// and changed counts as changed). The nested calls a tool result records
/// (a codemode script's, say) count as the model's own. Earlier branch summaries' lists
/// (`details` of pi's `BranchSummaryDetails`, given in `carried`) come
/// first.
pub fn branch_files(
    messages: &[AgentMessage],
    carried: &[(Vec<String>, Vec<String>)],
) -> (Vec<String>, Vec<String>) {
    let mut read: Vec<String> = Vec::new();
    let mut modified: Vec<String> = Vec::new();
    let add = |list: &mut Vec<String>, path: &str| {
        if !path.is_empty() && !list.iter().any(|p| p == path) {
            list.push(path.to_string());
        }
    };
    for (r, m) in carried {
        r.iter().for_each(|p| add(&mut read, p));
        m.iter().for_each(|p| add(&mut modified, p));
    }
    let mut note = |name: &str, arguments: Option<&serde_json::Map<String, serde_json::Value>>| {
        let path = arguments
            .and_then(|a| a.get("path").or_else(|| a.get("file_path")))
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default();
        match name {
            "read" => add(&mut read, path),
            "write" | "edit" => add(&mut modified, path),
            _ => {}
        }
    };
    for m in messages {
        match m {
            AgentMessage::Llm(makai_ai::Message::Assistant(a)) => {
                for call in a.tool_calls() {
                    note(&call.name, Some(&call.arguments));
                }
            }
            AgentMessage::Llm(makai_ai::Message::ToolResult(r)) => {
                for call in r.nested_calls.iter().flat_map(|n| &n.calls) {
                    note(&call.name, call.arguments.as_ref());
                }
            }
            _ => {}
        }
    }
    read.retain(|p| !modified.contains(p));
    (read, modified)
}

/// `summary` with the files' lists after it (each list only when it has
/// files).
fn with_files(summary: &str, read: &[String], modified: &[String]) -> String {
    let mut out = summary.trim_end().to_string();
    for (title, files) in [("Read files", read), ("Modified files", modified)] {
        if files.is_empty() {
            continue;
        }
        out.push_str(&format!("\n\n## {title}\n"));
        for f in files {
            out.push_str(&format!("\n- {f}"));
        }
    }
    out
}

/// Summarizes the branch left (`messages`, oldest first) with one model call.
pub(crate) async fn summarize_branch(
    messages: &[AgentMessage],
    carried: &[(Vec<String>, Vec<String>)],
    custom_instructions: Option<&str>,
    model: &makai_ai::Model,
    client: &std::sync::Arc<dyn makai_ai::ProtocolClient>,
    options: makai_ai::StreamOptions,
    max_tokens: u64,
) -> Result<BranchSummary, CompactionError> {
    let (summary, usage) = summary_call(
        SummaryRequest {
            system: BRANCH_SYSTEM,
            request: BRANCH_REQUEST,
            custom_instructions,
            model,
            client,
            options,
            max_tokens,
            failures: false,
        },
        messages,
    )
    .await?;
    let (read_files, modified_files) = branch_files(messages, carried);
    Ok(BranchSummary {
        summary: with_files(&summary, &read_files, &modified_files),
        usage,
        read_files,
        modified_files,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use makai_ai::{AssistantContent, AssistantMessage, ToolCall};

    fn calls(calls: &[(&str, &str)]) -> AgentMessage {
        let mut a = AssistantMessage::default();
        for (i, (name, path)) in calls.iter().enumerate() {
            let mut args = serde_json::Map::new();
            args.insert("path".into(), serde_json::json!(path));
            a.content.push(AssistantContent::ToolCall(ToolCall {
                id: format!("c{i}"),
                name: name.to_string(),
                arguments: args,
                ..Default::default()
            }));
        }
        a.into()
    }

    #[test]
    fn files_read_and_changed_are_listed_once_a_changed_one_as_changed() {
        let messages = [
            calls(&[("read", "a.rs"), ("read", "b.rs"), ("bash", "")]),
            calls(&[("edit", "b.rs"), ("write", "c.rs"), ("read", "a.rs")]),
        ];
        let carried = [(vec!["old.md".to_string()], vec!["z.rs".to_string()])];
        let (read, modified) = branch_files(&messages, &carried);
        assert_eq!(read, ["old.md", "a.rs"]);
        assert_eq!(modified, ["z.rs", "b.rs", "c.rs"]);
        assert_eq!(
            with_files("## Goal\nFix it.\n", &read, &modified),
            "## Goal\nFix it.\n\n## Read files\n\n- old.md\n- a.rs\n\n## Modified files\n\n- z.rs\n- b.rs\n- c.rs"
        );
        assert_eq!(with_files("Nothing.", &[], &[]), "Nothing.");
    }
}
