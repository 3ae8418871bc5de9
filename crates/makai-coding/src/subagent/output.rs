//! What a `task` call shows: progress updates while children run, and the
//! result when they are done.

use std::sync::{Arc, Mutex};

use makai_agent::budget::dollars;
use makai_agent::{ToolContext, ToolError, ToolOutput};
use makai_ai::{Usage, UserContent};

use super::args::TaskItem;
use super::child::ChildEnd;
use super::plan::ChildPlan;
use super::{SubagentReport, SubagentStatus, TaskDetails};
use crate::agent_spec::WORKER_AGENT;

/// Longest task line kept in a report.
const TASK_LINE_CHARS: usize = 120;

/// The children's reports, sent to the parent's stream on every change.
#[derive(Clone)]
pub(super) struct Progress {
    reports: Arc<Mutex<Vec<SubagentReport>>>,
    ctx: ToolContext,
}

fn first_line(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    match line.char_indices().nth(TASK_LINE_CHARS) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_string(),
    }
}

impl Progress {
    pub(super) fn new(
        items: &[TaskItem],
        plans: &[Result<ChildPlan, String>],
        ctx: ToolContext,
    ) -> Progress {
        let reports = items
            .iter()
            .zip(plans)
            .map(|(item, plan)| {
                let mut r = SubagentReport {
                    agent: item.agent.clone().unwrap_or_else(|| WORKER_AGENT.into()),
                    task: first_line(&item.task),
                    ..Default::default()
                };
                match plan {
                    Ok(p) => {
                        r.agent = p.agent.clone();
                        r.session_file = p.session.path().map(|p| p.display().to_string());
                    }
                    Err(e) => {
                        r.status = SubagentStatus::Failed;
                        r.error = Some(e.clone());
                    }
                }
                r
            })
            .collect();
        let progress = Progress {
            reports: Arc::new(Mutex::new(reports)),
            ctx,
        };
        progress.send();
        progress
    }

    /// Changes one child's report and sends the new state.
    pub(super) fn update(&self, index: usize, f: impl FnOnce(&mut SubagentReport)) {
        {
            let mut reports = self.reports.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(r) = reports.get_mut(index) {
                f(r);
            }
        }
        self.send();
    }

    fn reports(&self) -> Vec<SubagentReport> {
        self.reports
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn send(&self) {
        self.ctx.update(render(&self.reports(), None));
    }
}

/// One line per child: `explore: running · turn 2 · $0.0012 · read`.
pub fn status_line(r: &SubagentReport) -> String {
    let status = match r.status {
        SubagentStatus::Running => "running",
        SubagentStatus::Completed => "done",
        SubagentStatus::Failed => "failed",
        SubagentStatus::Aborted => "aborted",
    };
    let mut line = format!(
        "{}: {status} · {} turn{} · {} · {} tokens",
        r.agent,
        r.turns,
        if r.turns == 1 { "" } else { "s" },
        dollars(r.usage.cost.total),
        r.usage.total_tokens
    );
    if let Some(tool) = &r.tool {
        line.push_str(&format!(" · {tool}"));
    }
    line
}

fn render(reports: &[SubagentReport], usage: Option<Usage>) -> ToolOutput {
    let text = reports
        .iter()
        .map(status_line)
        .collect::<Vec<_>>()
        .join("\n");
    let details = TaskDetails {
        agents: reports.to_vec(),
    };
    ToolOutput {
        content: vec![UserContent::text(text)],
        details: serde_json::to_value(&details).unwrap_or_default(),
        usage: usage.map(Box::new),
        nested_calls: None,
    }
}

/// The call's result: each child's answer (and structured result), the
/// total usage, the final reports. An error result when every child failed.
pub(super) fn finish(
    items: &[TaskItem],
    ends: Vec<ChildEnd>,
    progress: &Progress,
) -> Result<ToolOutput, ToolError> {
    let mut reports = progress.reports();
    let mut usage = Usage::default();
    for (r, end) in reports.iter_mut().zip(&ends) {
        r.status = end.status;
        r.turns = end.turns;
        r.usage = end.usage;
        r.tool = None;
        r.answer = end.answer.clone();
        r.result = end.result.clone();
        if end.error.is_some() {
            r.error = end.error.clone();
        }
        usage.add(&end.usage);
    }
    let sections: Vec<String> = reports
        .iter()
        .map(|r| {
            let mut s = String::new();
            if r.status != SubagentStatus::Completed {
                s.push_str(&format!(
                    "The sub-agent '{}' did not finish: {}.",
                    r.agent,
                    r.error.as_deref().unwrap_or("no answer")
                ));
                if let Some(a) = &r.answer {
                    s.push_str(&format!("\nThe last thing it wrote:\n{a}"));
                }
            } else if let Some(a) = &r.answer {
                s.push_str(a.trim());
            } else {
                s.push_str("(The sub-agent finished without a text answer.)");
            }
            if let Some(v) = &r.result {
                s.push_str(&format!(
                    "\n\nResult:\n```json\n{}\n```",
                    serde_json::to_string_pretty(v).unwrap_or_default()
                ));
            }
            if r.status != SubagentStatus::Completed
                && let Some(f) = &r.session_file
            {
                s.push_str(&format!("\n(Its transcript: {f})"));
            }
            s
        })
        .collect();
    let text = if items.len() == 1 {
        sections.join("")
    } else {
        sections
            .iter()
            .zip(&reports)
            .enumerate()
            .map(|(i, (s, r))| {
                format!(
                    "## Task {} ({}, {})\n\n{s}",
                    i + 1,
                    r.agent,
                    status_name(r.status)
                )
            })
            .collect::<Vec<_>>()
            .join("\n\n")
    };
    let mut out = render(&reports, Some(usage));
    out.content = vec![UserContent::text(text)];
    if reports
        .iter()
        .all(|r| r.status != SubagentStatus::Completed)
    {
        Err(ToolError::Output(out))
    } else {
        Ok(out)
    }
}

fn status_name(s: SubagentStatus) -> &'static str {
    match s {
        SubagentStatus::Running => "running",
        SubagentStatus::Completed => "done",
        SubagentStatus::Failed => "failed",
        SubagentStatus::Aborted => "aborted",
    }
}
