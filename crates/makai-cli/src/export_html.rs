//! Export of a session to one self-contained HTML file (inline CSS, no scripts,
//! no external resources): the messages of the current branch, tool calls with
//! their arguments and results, thinking, usage and cost.

use std::path::{Path, PathBuf};

use makai_agent::AgentMessage;
use makai_ai::{AssistantContent, Message, UserContent};

use crate::app::AppSession;
use crate::app::stats::total_usage;
use crate::error::CliError;

/// Escapes text for HTML.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:-apple-system,BlinkMacSystemFont,'Segoe UI',sans-serif;max-width:960px;margin:2em auto;padding:0 1em;color:#1d1d1f;background:#fafafa}\
h1{font-size:1.4em}.meta{color:#666;font-size:.9em}\
.msg{border-radius:8px;padding:.6em 1em;margin:1em 0;background:#fff;border:1px solid #e3e3e3}\
.user{border-left:4px solid #2f6fde}.assistant{border-left:4px solid #2a9d5b}.tool{border-left:4px solid #b07d12}\
.error{border-left:4px solid #c62828}.other{border-left:4px solid #888}\
.role{font-weight:600;font-size:.8em;text-transform:uppercase;color:#555;margin-bottom:.3em}\
pre{white-space:pre-wrap;word-wrap:break-word;background:#f4f4f4;padding:.6em;border-radius:6px;font-size:.88em}\
details>summary{cursor:pointer;color:#555}.thinking{color:#777;font-style:italic}\
.usage{color:#777;font-size:.8em;margin-top:.4em}img{max-width:100%}";

fn text_block(out: &mut String, text: &str) {
    out.push_str(&format!("<pre>{}</pre>", escape(text)));
}

fn user_parts(out: &mut String, content: &[UserContent]) {
    for c in content {
        match c {
            UserContent::Text(t) => text_block(out, &t.text),
            UserContent::Image(i) => {
                out.push_str(&format!(
                    "<img alt=\"image\" src=\"data:{};base64,{}\">",
                    escape(&i.mime_type),
                    escape(&i.data)
                ));
            }
            _ => {}
        }
    }
}

/// `text` folded under `title` (opened with a click).
fn folded(out: &mut String, title: &str, text: &str) {
    out.push_str(&format!(
        "<details><summary>{}</summary><pre>{}</pre></details>",
        escape(title),
        escape(text)
    ));
}

fn render_message(out: &mut String, m: &AgentMessage) {
    match m {
        AgentMessage::Llm(Message::User(u)) => {
            out.push_str("<div class=\"msg user\"><div class=\"role\">user</div>");
            // A skill invoked with `/skill:name`: its instructions folded
            // under its name, then what the user typed after it.
            let text = makai_agent::parts_text(&u.content);
            match makai_coding::resources::parse_invocation(&text) {
                Some(skill) if u.content.len() == 1 => {
                    folded(out, &format!("[skill] {}", skill.name), skill.content);
                    if let Some(rest) = skill.rest {
                        text_block(out, rest);
                    }
                }
                _ => user_parts(out, &u.content),
            }
        }
        AgentMessage::CompactionSummary(c) => {
            out.push_str("<div class=\"msg other\"><div class=\"role\">compaction</div>");
            folded(
                out,
                &format!("Compacted from {} tokens", c.tokens_before),
                &c.summary,
            );
        }
        AgentMessage::BranchSummary(b) => {
            out.push_str("<div class=\"msg other\"><div class=\"role\">branch</div>");
            folded(out, "Branch summary", &b.summary);
        }
        AgentMessage::Llm(Message::Assistant(a)) => {
            let failed = a.error_message.is_some();
            out.push_str(&format!(
                "<div class=\"msg {}\"><div class=\"role\">assistant · {}</div>",
                if failed { "error" } else { "assistant" },
                escape(&a.model)
            ));
            for c in &a.content {
                match c {
                    AssistantContent::Text(t) => text_block(out, &t.text),
                    AssistantContent::Thinking(t) => {
                        out.push_str(&format!("<details><summary>thinking</summary><pre class=\"thinking\">{}</pre></details>",
                            escape(&t.thinking)
                        ));
                    }
                    AssistantContent::ToolCall(tc) => {
                        let args = serde_json::to_string_pretty(&tc.arguments).unwrap_or_default();
                        out.push_str(&format!(
                            "<div>tool call <b>{}</b></div><pre>{}</pre>",
                            escape(&tc.name),
                            escape(&args)
                        ));
                    }
                    _ => {}
                }
            }
            if let Some(e) = &a.error_message {
                out.push_str(&format!("<pre>error: {}</pre>", escape(e)));
            }
            let u = &a.usage;
            out.push_str(&format!("<div class=\"usage\">{} in · {} out · {} cache read · {} cache write · ${:.4}</div>",
                u.input, u.output, u.cache_read, u.cache_write, u.cost.total
            ));
        }
        AgentMessage::Llm(Message::ToolResult(r)) => {
            out.push_str(&format!("<div class=\"msg {}\"><div class=\"role\">tool result · {}</div><details open><summary>output</summary>",
                if r.is_error { "error" } else { "tool" },
                escape(&r.tool_name)
            ));
            user_parts(out, &r.content);
            out.push_str("</details>");
        }
        other => {
            out.push_str(&format!(
                "<div class=\"msg other\"><div class=\"role\">{}</div>",
                escape(other.role())
            ));
            let text = match other {
                AgentMessage::Other(v) => serde_json::to_string_pretty(v).unwrap_or_default(),
                AgentMessage::System(s) => {
                    let names = |list: Vec<&str>| list.join(", ");
                    let mut lines = vec![s.content.text()];
                    if let Some(added) = &s.tools_added {
                        lines.push(format!(
                            "tools added: {}",
                            names(added.iter().map(|t| t.name.as_str()).collect())
                        ));
                    }
                    if let Some(removed) = &s.tools_removed {
                        lines.push(format!(
                            "tools removed: {}",
                            names(removed.iter().map(|t| t.name.as_str()).collect())
                        ));
                    }
                    lines.retain(|l| !l.is_empty());
                    lines.join("\n")
                }
                _ => other.text(),
            };
            text_block(out, &text);
        }
    }
    out.push_str("</div>\n");
}

/// What a session page shows.
struct Page<'a> {
    /// The system prompt and the tools (name, description) the model was
    /// given, when known (a session running now; a file alone does not
    /// record them).
    system: Option<(String, Vec<(String, String)>)>,
    messages: &'a [AgentMessage],
    title: String,
    session_id: &'a str,
    cwd: &'a str,
    /// `provider/id` of the model, when known.
    model: String,
}

/// The HTML page of a session.
pub fn render(app: &AppSession) -> String {
    let messages = app.messages();
    let model = app.model();
    let id = app.session_id();
    let cwd = app.cwd().display().to_string();
    let agent = app.agent();
    let tools = agent
        .tools()
        .definitions()
        .iter()
        .map(|d| (d.name.clone(), d.description.clone()))
        .collect();
    render_page(&Page {
        system: Some((agent.system_prompt(), tools)),
        messages: &messages,
        title: app
            .session_name()
            .unwrap_or_else(|| format!("makai session {id}")),
        session_id: &id,
        cwd: &cwd,
        model: format!("{}/{}", model.provider, model.id),
    })
}

fn render_page(page: &Page<'_>) -> String {
    let usage = total_usage(page.messages);
    let mut out = String::with_capacity(16 * 1024);
    out.push_str(&format!("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>{}</title><style>{STYLE}</style></head><body>\n<h1>{}</h1>\
         <p class=\"meta\">session {} · {} · model {} · {} messages · {} tokens in, {} out · ${:.4}</p>\n",
        escape(&page.title),
        escape(&page.title),
        escape(page.session_id),
        escape(page.cwd),
        escape(&page.model),
        page.messages.len(),
        usage.input + usage.cache_read + usage.cache_write,
        usage.output,
        usage.cost.total
    ));
    if let Some((prompt, tools)) = &page.system {
        out.push_str("<div class=\"msg other\"><div class=\"role\">system</div>");
        folded(&mut out, "System prompt", prompt);
        let listed: Vec<String> = tools
            .iter()
            .map(|(name, description)| format!("{name}: {description}"))
            .collect();
        folded(
            &mut out,
            &format!("Tools ({})", tools.len()),
            &listed.join("\n\n"),
        );
        out.push_str("</div>\n");
    }
    for m in page.messages {
        render_message(&mut out, m);
    }
    out.push_str("</body></html>\n");
    out
}

/// `makai --export INPUT [OUTPUT]`: writes the HTML page of the session file
/// `input` (its current branch) to `output`, by default the input's path with
/// `.html`; returns the path written. A damaged file is refused, as when it is
/// opened to continue.
pub fn export_file(input: &Path, output: Option<&Path>) -> Result<String, CliError> {
    let session = makai_coding::Session::open(input)
        .map_err(|e| CliError::failed(format!("--export {}: {e}", input.display())))?;
    let context = session.context();
    let page = Page {
        system: None,
        messages: &context.messages,
        title: session
            .name()
            .map(str::to_string)
            .unwrap_or_else(|| format!("makai session {}", session.id())),
        session_id: session.id(),
        cwd: session.cwd(),
        model: context
            .model
            .as_ref()
            .map(|m| format!("{}/{}", m.provider, m.model_id))
            .unwrap_or_else(|| "unknown".into()),
    };
    let path = output
        .map(Path::to_path_buf)
        .unwrap_or_else(|| input.with_extension("html"));
    write_page(&path, &render_page(&page))?;
    Ok(path.display().to_string())
}

/// Writes `html` to `path`, creating its folder.
fn write_page(path: &Path, html: &str) -> Result<(), CliError> {
    if let Some(dir) = path.parent()
        && !dir.as_os_str().is_empty()
    {
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError::failed(format!("cannot create {}: {e}", dir.display())))?;
    }
    std::fs::write(path, html)
        .map_err(|e| CliError::failed(format!("cannot write {}: {e}", path.display())))
}

/// Writes the export; returns its path. Default: `makai-session-<id>.html` in the
/// working directory.
pub fn export(app: &AppSession, output: Option<&str>) -> Result<String, CliError> {
    let path: PathBuf = match output {
        Some(p) => {
            let p = Path::new(p);
            if p.is_absolute() {
                p.to_path_buf()
            } else {
                app.cwd().join(p)
            }
        }
        None => app
            .cwd()
            .join(format!("makai-session-{}.html", app.session_id())),
    };
    // pi's `/export` writes JSONL for a `.jsonl` path: the session's lines.
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("jsonl"))
    {
        write_page(&path, &session_jsonl(app)?)?;
    } else {
        write_page(&path, &render(app))?;
    }
    Ok(path.display().to_string())
}

/// pi's `/share`: the session's HTML page in a private GitHub gist, made
/// with the GitHub CLI (`gh gist create`, signed in with `gh auth login`).
/// Returns the gist's address. `sessionShareDestination: "radius"` is
/// refused (makai has no Radius support); `auto` and `gist` make a gist.
pub async fn share(app: &AppSession) -> Result<String, CliError> {
    let settings = app.settings();
    let destination = settings
        .extra
        .get("sessionShareDestination")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("auto");
    if destination == "radius" {
        return Err(CliError::failed(
            "/share: sessionShareDestination is \"radius\", which makai does not support; set it to \"gist\" or \"auto\" to share through a private GitHub gist",
        ));
    }
    let dir = tempfile::tempdir().map_err(|e| CliError::failed(format!("/share: {e}")))?;
    let page = dir
        .path()
        .join(format!("makai-session-{}.html", app.session_id()));
    write_page(&page, &render(app))?;
    let out = tokio::process::Command::new("gh")
        .args(["gist", "create", "--desc"])
        .arg(format!("makai session {}", app.session_id()))
        .arg(&page)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .map_err(|e| {
            CliError::failed(format!(
                "/share needs the GitHub CLI (gh) to make a private gist: {e}; install it and run gh auth login"
            ))
        })?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let url = stdout
        .lines()
        .map(str::trim)
        .rfind(|l| l.starts_with("https://"));
    match (out.status.success(), url) {
        (true, Some(url)) => Ok(url.to_string()),
        _ => Err(CliError::failed(format!(
            "/share: gh gist create failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))),
    }
}

/// The session as JSONL: the store's lines as stored, or (without a store)
/// the header and the entries written out.
fn session_jsonl(app: &AppSession) -> Result<String, CliError> {
    let cwd = app.session().lock().cwd().to_string();
    if let Some(store) = app.store() {
        return store
            .export(&cwd, &app.session_id())
            .map(|stored| stored.to_jsonl())
            .map_err(|e| CliError::failed(format!("/export: {e}")));
    }
    let session = app.session().lock();
    let tree = session.tree();
    let mut out = String::new();
    let lines = std::iter::once(serde_json::to_string(tree.header()))
        .chain(tree.entries().iter().map(serde_json::to_string));
    for line in lines {
        out.push_str(&line.map_err(|e| CliError::failed(format!("/export: {e}")))?);
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skills_and_summaries_are_folded_under_their_titles() {
        let mut out = String::new();
        render_message(
            &mut out,
            &AgentMessage::user(
                "<skill name=\"deploy\" location=\"/s/deploy/SKILL.md\">\nRun <make>.\n</skill>\n\nto staging",
            ),
        );
        assert!(
            out.contains(
                "<details><summary>[skill] deploy</summary><pre>Run &lt;make&gt;.</pre></details>"
            ),
            "{out}"
        );
        assert!(out.contains("to staging"), "{out}");
        let mut out = String::new();
        render_message(
            &mut out,
            &AgentMessage::CompactionSummary(makai_agent::CompactionSummaryMessage {
                summary: "We fixed it.".into(),
                tokens_before: 1200,
                timestamp: Default::default(),
            }),
        );
        assert!(
            out.contains("<summary>Compacted from 1200 tokens</summary><pre>We fixed it.</pre>"),
            "{out}"
        );
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(
            escape("<a href='x'>&</a>"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&lt;/a&gt;"
        );
    }
}
