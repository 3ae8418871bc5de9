//! Running one child: the agent loop on its own task, its transcript written
//! to its session file as messages end, its progress reported to the parent.

use std::sync::Arc;

use makai_agent::{
    AgentContext, AgentEvent, AgentMessage, AgentRun, CancellationToken, EndReason, RunOutcome,
    agent_loop,
};
use makai_ai::{StopReason, Usage};
use serde_json::Value;

use super::SubagentStatus;
use super::gate::Gate;
use super::output::Progress;
use super::plan::{ChildPlan, SUBMIT_RESULT};
use crate::session::{Session, SessionError};

/// How one child ended.
#[derive(Clone, Debug, Default)]
pub(super) struct ChildEnd {
    pub status: SubagentStatus,
    pub answer: Option<String>,
    pub result: Option<Value>,
    pub usage: Usage,
    pub turns: u32,
    pub error: Option<String>,
}

impl ChildEnd {
    /// A child that never started because its task could not be planned.
    pub(super) fn refused(error: String) -> ChildEnd {
        ChildEnd {
            status: SubagentStatus::Failed,
            error: Some(error),
            ..Default::default()
        }
    }
}

/// Runs a planned child to its end (after waiting for its turn at the gate).
pub(super) async fn run(
    plan: ChildPlan,
    index: usize,
    gate: Arc<Gate>,
    progress: Progress,
    cancel: CancellationToken,
) -> ChildEnd {
    let pass = tokio::select! {
        pass = gate.enter(plan.read_only) => pass,
        _ = cancel.cancelled() => None,
    };
    if pass.is_none() || cancel.is_cancelled() {
        return ChildEnd {
            status: SubagentStatus::Aborted,
            error: Some("aborted before it started".into()),
            ..Default::default()
        };
    }
    let ChildPlan {
        agent: _,
        prompt,
        system_prompt,
        tools,
        read_only: _,
        config,
        session,
        result,
    } = plan;
    let model = (config.model.provider.clone(), config.model.id.clone());
    let thinking = config.options.thinking;
    let context = AgentContext::new(system_prompt).with_tools(tools);
    let run = agent_loop(
        vec![AgentMessage::user(prompt)],
        context,
        config,
        cancel.child_token(),
    );
    let recorder = Recorder {
        session,
        started: false,
        model,
        thinking,
        failed: None,
    };
    // The child's events are read on a task of their own: its transcript is
    // written to the end even when the parent stops waiting for the tool.
    let driven = tokio::spawn(drive(run, recorder, progress, index));
    let end = match driven.await {
        Ok((Ok(outcome), session_error)) => end_of(&outcome, result.as_deref(), session_error),
        Ok((Err(e), _)) => ChildEnd::refused(format!("the sub-agent's run failed: {e}")),
        Err(e) => ChildEnd::refused(format!("the sub-agent's task failed: {e}")),
    };
    drop(pass);
    end
}

/// Writes a child's messages to its session as they end.
struct Recorder {
    session: Session,
    started: bool,
    model: (String, String),
    thinking: makai_ai::ThinkingLevel,
    failed: Option<String>,
}

impl Recorder {
    fn record(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::MessageEnd { message } => {
                let message = (**message).clone();
                self.write(|s| s.append_message(message).map(|_| ()));
            }
            AgentEvent::CompactionEnd {
                result: Some(info), ..
            } => {
                if let Some(usage) = info.usage {
                    let (provider, model) = self.model.clone();
                    self.write(|s| {
                        s.append_usage("compaction", provider, model, usage)
                            .map(|_| ())
                    });
                }
            }
            _ => {}
        }
    }

    fn write(&mut self, f: impl FnOnce(&mut Session) -> Result<(), SessionError>) {
        if self.failed.is_some() {
            return;
        }
        let mut result = Ok(());
        if !self.started {
            let (provider, model) = self.model.clone();
            result = self
                .session
                .append_model_change(provider, model)
                .and_then(|_| self.session.append_thinking_level(self.thinking))
                .map(|_| ());
            self.started = true;
        }
        if let Err(e) = result.and_then(|_| f(&mut self.session)) {
            tracing::warn!(error = %e, "the sub-agent's session file could not be written");
            self.failed = Some(e.to_string());
        }
    }
}

async fn drive(
    mut run: AgentRun,
    mut recorder: Recorder,
    progress: Progress,
    index: usize,
) -> (Result<RunOutcome, makai_agent::AgentError>, Option<String>) {
    while let Some(event) = run.next_event().await {
        recorder.record(&event);
        match &event {
            AgentEvent::ToolExecutionStart { tool_name, .. } => {
                let name = tool_name.clone();
                progress.update(index, |r| r.tool = Some(name));
            }
            AgentEvent::ToolExecutionEnd { .. } => progress.update(index, |r| r.tool = None),
            AgentEvent::MessageEnd { message } => {
                if let Some(a) = message.as_assistant() {
                    let text = a.text();
                    let usage = *a.usage;
                    progress.update(index, |r| {
                        r.usage.add(&usage);
                        if !text.trim().is_empty() {
                            r.answer = Some(text);
                        }
                    });
                } else if let Some(u) = message
                    .as_tool_result()
                    .and_then(|t| t.usage.as_deref().copied())
                {
                    progress.update(index, |r| r.usage.add(&u));
                }
            }
            AgentEvent::CompactionEnd {
                result: Some(info), ..
            } => {
                if let Some(u) = info.usage {
                    progress.update(index, |r| r.usage.add(&u));
                }
            }
            AgentEvent::TurnEnd { .. } => progress.update(index, |r| r.turns += 1),
            _ => {}
        }
    }
    (run.join().await, recorder.failed)
}

/// The child's end from its run's outcome.
fn end_of(
    outcome: &RunOutcome,
    result: Option<&std::sync::Mutex<Option<Value>>>,
    session_error: Option<String>,
) -> ChildEnd {
    let mut usage = outcome.usage;
    for m in &outcome.messages {
        if let Some(u) = m.as_tool_result().and_then(|r| r.usage.as_deref().copied()) {
            usage.add(&u);
        }
    }
    let answer = outcome.messages.iter().rev().find_map(|m| {
        let a = m.as_assistant()?;
        let text = a.text();
        (!matches!(a.stop_reason, StopReason::Error | StopReason::Aborted)
            && !text.trim().is_empty())
        .then_some(text)
    });
    let submitted = result.and_then(|slot| slot.lock().unwrap_or_else(|e| e.into_inner()).clone());
    let (status, mut error) = match &outcome.end_reason {
        EndReason::Completed if result.is_some() && submitted.is_none() => (
            SubagentStatus::Failed,
            Some(format!(
                "it ended without submitting the structured result (it never called {SUBMIT_RESULT})"
            )),
        ),
        EndReason::Completed => (SubagentStatus::Completed, None),
        EndReason::Aborted => (SubagentStatus::Aborted, Some("aborted".to_string())),
        other => (SubagentStatus::Failed, Some(other.describe())),
    };
    if let Some(e) = session_error {
        let note = format!("its session file could not be written: {e}");
        error = Some(match error {
            Some(prev) => format!("{prev}; {note}"),
            None => note,
        });
    }
    ChildEnd {
        status,
        answer,
        result: submitted,
        usage,
        turns: outcome.turns,
        error,
    }
}
