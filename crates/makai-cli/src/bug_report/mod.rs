//! `/bug [description]`: a private bug report, as pi 1.5.2 prepares one, kept
//! as a zip archive in the working directory for the user to review and
//! send (makai has no upload service). The archive holds:
//!
//! - `report.json`: makai's version, the system and terminal, the session,
//!   the model and its provider, the MCP servers and the settings, without
//!   credentials ([`metadata`]);
//! - `diagnostics.json`: the failed and retried answers of the whole
//!   session, without their content, and the recorded crashes
//!   ([`diagnostics`], [`crate::crash_log`]);
//! - `session.jsonl`: the current branch, when the user includes it;
//! - `summary.md`: the model's account of the problem, when the user asks
//!   for one instead of the transcript.
//!
//! Every file is cut of the values under credential-like keys and of every
//! known secret ([`redact`]). The session records the report as a
//! `pi.bug-report` entry (pi's type and fields).

mod diagnostics;
mod metadata;
pub mod redact;

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::app::AppSession;
use crate::error::CliError;
use crate::logging::Redactor;

pub use diagnostics::{AnswerDiagnostics, Diagnostics};

/// The version of the report's files.
pub const SCHEMA_VERSION: u32 = 1;

/// The `customType` of the session entry that records a report (pi's).
pub const SESSION_ENTRY_TYPE: &str = "pi.bug-report";

/// What the report tells of the conversation besides its diagnostics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Content {
    /// The current branch as `session.jsonl`.
    Transcript,
    /// Nothing: settings, environment and diagnostics only.
    Nothing,
    /// The model's summary of the problem (`summary.md`); the transcript is
    /// sent to the provider for it, and only the summary is kept.
    Summary,
}

/// A report written.
#[derive(Clone, Debug)]
pub struct Written {
    /// Its id (a UUID).
    pub id: String,
    /// The archive.
    pub path: PathBuf,
    /// How many crash records it took (the crash file is then removed).
    pub crashes: usize,
}

/// The archive's file name for report `id`.
pub fn archive_name(id: &str) -> String {
    format!("makai-bug-report-{id}.zip")
}

/// What the model is asked for a report's summary.
const SUMMARY_PROMPT: makai_agent::SummaryPrompt<'static> = makai_agent::SummaryPrompt {
    system: "You write bug reports for the developers of makai, a coding agent in the terminal. You report what the user and the agent experienced, factually, without guessing at causes you cannot see.",
    request: "The user is reporting a problem with makai in the conversation whose transcript follows. Write a bug report in Markdown with these sections, each brief: ## What happened, ## What was expected, ## Steps that led to it, ## Errors (quote error messages exactly). Leave out file contents, code and personal details the report does not need.",
    failures: true,
};

/// Prepares the report and writes its archive to the working directory;
/// `hint` is what the user said of the problem. `home` holds the crash
/// file; its records go into the report and the file is removed.
pub async fn prepare(
    app: &AppSession,
    hint: Option<&str>,
    content: Content,
    home: Option<&Path>,
) -> Result<Written, CliError> {
    let hint = hint.map(str::trim).filter(|h| !h.is_empty());
    let id = uuid::Uuid::new_v4().to_string();
    let created_at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let summary = match content {
        Content::Summary => {
            let focus = hint.map(|h| format!("The user describes the problem so: {h}"));
            Some(
                app.summarize_messages(SUMMARY_PROMPT, focus.as_deref())
                    .await
                    .map_err(|e| CliError::failed(format!("the summary was not written: {e}")))?,
            )
        }
        _ => None,
    };
    let crashes = match home.map(crate::crash_log::read) {
        Some(Ok(records)) => records,
        // A damaged crash file is no reason to lose the report.
        Some(Err(_)) | None => Vec::new(),
    };
    let crash_count = crashes.len();
    let (session_id, diagnostics, transcript) = {
        let s = app.session().lock();
        let diagnostics = diagnostics::collect(s.id(), s.entries(), crashes);
        let transcript = (content == Content::Transcript).then(|| {
            let mut out = serde_json::to_string(s.header()).unwrap_or_default();
            out.push('\n');
            for entry in s.current_path() {
                out.push_str(&serde_json::to_string(entry).unwrap_or_default());
                out.push('\n');
            }
            out
        });
        (s.id().to_string(), diagnostics, transcript)
    };
    let facts = metadata::SessionFacts {
        id: &id,
        created_at: &created_at,
        hint,
        include_session: transcript.is_some(),
        include_summary: summary.is_some(),
    };
    let report = metadata::collect(app, &facts, home).await;
    let redactor = secrets(app, home).await;
    let mut files: Vec<(&str, String)> = vec![
        ("report.json", pretty(&report)),
        ("diagnostics.json", pretty(&diagnostics)),
    ];
    if let Some(t) = transcript {
        files.push(("session.jsonl", t));
    }
    if let Some(s) = summary {
        files.push(("summary.md", s));
    }
    let files: Vec<(&str, String)> = files
        .into_iter()
        .map(|(name, text)| (name, redactor.redact(&text).into_owned()))
        .collect();
    let path = app.cwd().join(archive_name(&id));
    write_archive(&path, &files)?;
    let entry = json!({
        "id": id,
        "createdAt": created_at,
        "hint": hint,
        "sessionIncluded": facts.include_session,
        "summaryIncluded": facts.include_summary,
        "delivery": "zip",
        "path": path.display().to_string(),
    });
    if !app
        .shared()
        .record_entry(|s| s.append_custom(SESSION_ENTRY_TYPE, Some(entry)))
    {
        return Err(CliError::failed(format!(
            "the report was written to {} but the session could not record it",
            path.display()
        )));
    }
    if crash_count > 0
        && let Some(home) = home
    {
        crate::crash_log::clear(home).map_err(CliError::failed)?;
    }
    tracing::debug!(session = %session_id, report = %id, "bug report written");
    Ok(Written {
        id,
        path,
        crashes: crash_count,
    })
}

/// `value` as pretty-printed JSON (`null` if it cannot be written).
fn pretty<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| "null".into())
}

/// The secrets to cut out of every file: the environment's provider keys,
/// `auth.json`'s values, and the key of `--api-key` or `models.json`.
async fn secrets(app: &AppSession, home: Option<&Path>) -> Redactor {
    let mut values = Redactor::environment_secrets();
    if let Some(home) = home
        && let Ok(text) = std::fs::read_to_string(makai_auth::AuthStore::file_in(home))
        && let Ok(v) = serde_json::from_str::<serde_json::Value>(&text)
    {
        values.extend(redact::secret_strings(&v));
    }
    let provider = app.model().provider;
    if matches!(
        app.keys().source(&provider).await,
        Ok(Some(
            makai_auth::KeySource::Flag | makai_auth::KeySource::ModelsJson
        ))
    ) && let Ok(Some((key, _))) = app.keys().resolve(&provider).await
    {
        values.push(key.expose().to_string());
    }
    Redactor::new(values)
}

/// Writes `files` into a zip archive at `path` (through a temporary file
/// beside it, so a failure leaves no partial archive).
fn write_archive(path: &Path, files: &[(&str, String)]) -> Result<(), CliError> {
    let fail = |e: &dyn std::fmt::Display| {
        CliError::failed(format!(
            "the report could not be written to {}: {e}",
            path.display()
        ))
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let temp = tempfile::NamedTempFile::new_in(dir).map_err(|e| fail(&e))?;
    let mut zip = zip::ZipWriter::new(temp);
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .unix_permissions(0o600);
    for (name, text) in files {
        zip.start_file(*name, options).map_err(|e| fail(&e))?;
        zip.write_all(text.as_bytes()).map_err(|e| fail(&e))?;
    }
    let temp = zip.finish().map_err(|e| fail(&e))?;
    temp.persist(path).map_err(|e| fail(&e.error))?;
    Ok(())
}

/// Whether a failed answer may be makai's fault, so that the UI points at
/// `/bug` (once per session): a failure no cancellation, full context
/// window, failure worth retrying (an overloaded or unreachable provider)
/// or refusal of the account (a key refused, no credit, a model not found,
/// a rate limit) explains. A request the provider could not read (400) may
/// be makai's.
pub fn suggests_report(answer: &makai_ai::AssistantMessage) -> bool {
    if answer.stop_reason != makai_ai::StopReason::Error {
        return false;
    }
    if makai_agent::is_context_overflow(answer.error_message.as_deref().unwrap_or_default()) {
        return false;
    }
    let failure = answer
        .diagnostics
        .iter()
        .rev()
        .find(|d| d.kind == makai_ai::AssistantMessageDiagnostic::PROVIDER_ERROR);
    match failure {
        Some(d) if d.retryable() => false,
        Some(d) => !matches!(d.http_status(), Some(401 | 402 | 403 | 404 | 429)),
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use makai_ai::{
        AssistantMessage, AssistantMessageDiagnostic, DiagnosticCode, DiagnosticError, StopReason,
    };

    fn failed(status: Option<u16>, retryable: bool, error: &str) -> AssistantMessage {
        let mut details = serde_json::Map::new();
        details.insert("retryable".into(), retryable.into());
        AssistantMessage {
            stop_reason: StopReason::Error,
            error_message: Some(error.into()),
            diagnostics: vec![AssistantMessageDiagnostic {
                kind: AssistantMessageDiagnostic::PROVIDER_ERROR.into(),
                error: Some(DiagnosticError {
                    message: error.into(),
                    code: status.map(|s| DiagnosticCode::Number(s.into())),
                    ..Default::default()
                }),
                details: Some(details),
                ..Default::default()
            }]
            .into(),
            ..Default::default()
        }
    }

    #[test]
    fn only_failures_nothing_else_explains_point_at_a_report() {
        // A request the provider could not read, a stream makai could not.
        assert!(suggests_report(&failed(Some(400), false, "bad request")));
        assert!(suggests_report(&AssistantMessage {
            stop_reason: StopReason::Error,
            error_message: Some("the stream ended mid-event".into()),
            ..Default::default()
        }));
        // The provider's or the account's.
        assert!(!suggests_report(&failed(Some(503), true, "overloaded")));
        assert!(!suggests_report(&failed(None, true, "connection refused")));
        for status in [401, 402, 403, 404, 429] {
            assert!(
                !suggests_report(&failed(Some(status), false, "no")),
                "{status}"
            );
        }
        // A full window, a cancellation, an answer.
        assert!(!suggests_report(&failed(
            Some(400),
            false,
            "prompt is too long: 210000 tokens > 200000 maximum"
        )));
        assert!(!suggests_report(&AssistantMessage {
            stop_reason: StopReason::Aborted,
            ..Default::default()
        }));
        assert!(!suggests_report(&AssistantMessage::default()));
    }
}
