//! Runs [`makai_rpc::RpcCommand`]s against an [`AppSession`] (RPC mode and
//! `makai serve`). Quick commands are answered in order; `prompt` answers once
//! the prompt is accepted, before its run's first event; `bash` and `compact`
//! run in the background so `abort_bash` and `abort` can reach them.

use std::sync::{Arc, Mutex};

use tokio::task::JoinHandle;

use makai_ai::ImageContent;
use makai_rpc::{
    ExtensionUiResponse, ForkMessage, ImagePart, InputDisposition, PromptCommand, ResponseData,
    RpcCommand, RpcRequest, RpcResponse, SessionEvent, StreamingBehavior,
};
use serde_json::Value;

use crate::app::AppSession;
use crate::error::CliError;

/// Where a command's answer goes: its one response, and the session events
/// it produces on the way (`bash_execution_update`).
pub(crate) struct Reply {
    respond: Box<dyn FnOnce(RpcResponse) + Send>,
    events: Arc<dyn Fn(SessionEvent) + Send + Sync>,
}

impl Reply {
    /// A reply delivering the response to `respond` and events to `events`.
    pub(crate) fn new(
        respond: impl FnOnce(RpcResponse) + Send + 'static,
        events: Arc<dyn Fn(SessionEvent) + Send + Sync>,
    ) -> Self {
        Reply {
            respond: Box::new(respond),
            events,
        }
    }

    /// Sends the response.
    pub(crate) fn respond(self, response: RpcResponse) {
        (self.respond)(response)
    }
}

/// Runs commands (RPC mode and `makai serve`).
pub(crate) struct Handler {
    app: AppSession,
    background: Mutex<Vec<JoinHandle<()>>>,
    /// The dialogs this session asks (RPC mode's approval questions).
    dialogs: std::sync::OnceLock<super::ui::Dialogs>,
}

type Outcome = Result<Option<ResponseData>, CliError>;

fn images(parts: Option<Vec<ImagePart>>) -> Vec<ImageContent> {
    parts.into_iter().flatten().map(|p| p.0).collect()
}

fn cancelled_false() -> Option<ResponseData> {
    Some(ResponseData::Cancelled { cancelled: false })
}

impl Handler {
    pub(crate) fn new(app: AppSession) -> Self {
        Handler {
            app,
            background: Mutex::new(Vec::new()),
            dialogs: std::sync::OnceLock::new(),
        }
    }

    /// Waits for background commands (bash, compact) to finish.
    pub(crate) async fn wait_background(&self) {
        let tasks: Vec<JoinHandle<()>> =
            std::mem::take(&mut *self.background.lock().unwrap_or_else(|e| e.into_inner()));
        for t in tasks {
            if let Err(e) = t.await {
                eprintln!("makai: a background command failed: {e}");
            }
        }
    }

    fn spawn(&self, f: impl std::future::Future<Output = ()> + Send + 'static) {
        let mut bg = self.background.lock().unwrap_or_else(|e| e.into_inner());
        bg.retain(|t| !t.is_finished());
        bg.push(tokio::spawn(f));
    }

    /// Routes answers to `dialogs` (set once; RPC mode).
    pub(crate) fn attach_dialogs(&self, dialogs: super::ui::Dialogs) {
        if self.dialogs.set(dialogs).is_err() {
            tracing::warn!("dialogs attached twice; the first are kept");
        }
    }

    /// An answer to a dialog this session asked (`extension_ui_response`).
    /// An answer that matches no open dialog (a late one, or in a session
    /// that asks none) is ignored, as pi ignores answers to unknown requests.
    pub(crate) fn answer_dialog(&self, answer: ExtensionUiResponse) {
        match self.dialogs.get() {
            Some(d) => d.answer(answer),
            None => {
                tracing::debug!(id = %answer.id, "extension_ui_response for no pending request")
            }
        }
    }

    /// Runs one command; its response goes to `reply` (now, or later for
    /// background commands).
    pub(crate) async fn handle(&self, request: RpcRequest, reply: Reply) {
        let RpcRequest { id, command } = request;
        let name = command.name();
        let outcome = match command {
            RpcCommand::Prompt(p) => return self.prompt(id, p, reply).await,
            RpcCommand::Compact(c) => {
                let app = self.app.clone();
                self.spawn(async move {
                    let outcome = app
                        .compact(c.custom_instructions.as_deref())
                        .await
                        .map(|info| Some(ResponseData::Compaction(Box::new(info))));
                    reply.respond(response(id, "compact", outcome));
                });
                return;
            }
            RpcCommand::Bash(b) => {
                let app = self.app.clone();
                self.spawn(async move {
                    let events = reply.events.clone();
                    let update_id = id.clone();
                    let on_output = move |delta: &str| {
                        events(SessionEvent::BashExecutionUpdate {
                            id: update_id.clone(),
                            delta: delta.to_string(),
                        })
                    };
                    let exclude = b.exclude_from_context.unwrap_or(false);
                    let outcome = app
                        .execute_bash(&b.command, exclude, on_output)
                        .await
                        .map(|r| Some(ResponseData::Bash(r)));
                    reply.respond(response(id, "bash", outcome));
                });
                return;
            }
            other => self.run(other).await,
        };
        reply.respond(response(id, name, outcome));
    }

    /// The commands answered at once.
    async fn run(&self, command: RpcCommand) -> Outcome {
        let app = &self.app;
        Ok(match command {
            RpcCommand::Steer(q) => {
                let imgs = app.fit_images_aside(images(q.images)).await?;
                app.steer(q.message, imgs)?;
                Some(queued())
            }
            RpcCommand::FollowUp(q) => {
                let imgs = app.fit_images_aside(images(q.images)).await?;
                app.follow_up(q.message, imgs)?;
                Some(queued())
            }
            RpcCommand::Abort => {
                app.abort().await;
                None
            }
            RpcCommand::ClearQueue => {
                let (steering, follow_up) = app.clear_queue();
                Some(ResponseData::Queue {
                    steering,
                    follow_up,
                })
            }
            RpcCommand::NewSession(n) => {
                app.new_session(n.parent_session.as_deref()).await?;
                cancelled_false()
            }
            RpcCommand::GetState => Some(ResponseData::State(Box::new(app.state()))),
            RpcCommand::GetMessages => Some(ResponseData::Messages {
                messages: app.messages(),
            }),
            RpcCommand::SetModel(m) => {
                let model = app.find_model(&m.provider, &m.model_id).await?;
                app.set_model(model.clone());
                Some(ResponseData::Model(Box::new(model)))
            }
            RpcCommand::CycleModel => Some(match app.cycle_model().await {
                Some((model, thinking_level)) => ResponseData::CycledModel {
                    model: Box::new(model),
                    thinking_level,
                    is_scoped: !app.scoped_models().is_empty(),
                },
                None => ResponseData::Null(()),
            }),
            RpcCommand::GetAvailableModels => Some(ResponseData::Models {
                models: app.available_models().await,
            }),
            RpcCommand::SetThinkingLevel(t) => {
                app.set_thinking_level(t.level);
                None
            }
            RpcCommand::CycleThinkingLevel => Some(match app.cycle_thinking_level() {
                Some(level) => ResponseData::Level { level },
                None => ResponseData::Null(()),
            }),
            RpcCommand::GetAvailableThinkingLevels => Some(ResponseData::Levels {
                levels: app.available_thinking_levels(),
            }),
            RpcCommand::SetSteeringMode(m) => {
                app.set_steering_mode(m.mode);
                if let Some(delivery) = m.delivery {
                    app.set_steering_delivery(delivery);
                }
                None
            }
            RpcCommand::SetFollowUpMode(m) => {
                app.set_follow_up_mode(m.mode);
                None
            }
            RpcCommand::SetAutoCompaction(e) => {
                app.set_auto_compaction(e.enabled);
                None
            }
            RpcCommand::SetAutoRetry(e) => {
                app.set_auto_retry(e.enabled);
                None
            }
            RpcCommand::AbortRetry => {
                app.abort_retry();
                None
            }
            RpcCommand::AbortBash => {
                app.abort_bash();
                None
            }
            RpcCommand::GetSessionStats => Some(ResponseData::Stats(Box::new(app.session_stats()))),
            RpcCommand::ExportHtml(e) => {
                let path = crate::export_html::export(app, e.output_path.as_deref())?;
                Some(ResponseData::Path { path })
            }
            RpcCommand::SwitchSession(s) => {
                app.switch_session(&s.session_path).await?;
                cancelled_false()
            }
            RpcCommand::Fork(f) => {
                let text = app.fork(&f.entry_id).await?;
                Some(ResponseData::Fork {
                    text,
                    cancelled: false,
                })
            }
            RpcCommand::Clone => {
                app.clone_branch().await?;
                cancelled_false()
            }
            RpcCommand::GetForkMessages => Some(ResponseData::ForkMessages {
                messages: app
                    .fork_messages()
                    .into_iter()
                    .map(|(entry_id, text)| ForkMessage { entry_id, text })
                    .collect(),
            }),
            RpcCommand::GetEntries(g) => {
                let (entries, leaf_id) = app.entries(g.since.as_deref())?;
                Some(ResponseData::Entries { entries, leaf_id })
            }
            RpcCommand::GetTree => {
                let (tree, leaf_id) = app.tree();
                Some(ResponseData::Tree { tree, leaf_id })
            }
            RpcCommand::GetLastAssistantText => Some(ResponseData::Text {
                text: app.last_assistant_text(),
            }),
            RpcCommand::SetSessionName(n) => {
                let name = n.name.trim();
                if name.is_empty() {
                    return Err(CliError::failed("Session name cannot be empty"));
                }
                app.set_session_name(name)?;
                None
            }
            RpcCommand::SetLimits(limits) => {
                app.set_limits(limits)?;
                None
            }
            RpcCommand::GetCommands => Some(ResponseData::Commands {
                commands: app.commands(),
            }),
            // Handled by `handle` (they answer later).
            RpcCommand::Prompt(_) | RpcCommand::Compact(_) | RpcCommand::Bash(_) => {
                return Err(CliError::failed(
                    "this command is answered by the dispatcher; this is a makai bug, please report it",
                ));
            }
            other => {
                return Err(CliError::failed(format!(
                    "Unknown command: {}",
                    other.name()
                )));
            }
        })
    }

    /// `prompt`: answers `started` once the run is accepted (before its first
    /// event), `queued` when the agent is running and `streamingBehavior` says
    /// where it goes.
    async fn prompt(&self, id: Option<Value>, p: PromptCommand, reply: Reply) {
        let text = p.message;
        let imgs = images(p.images);
        if self.app.is_streaming() {
            let outcome = match p.streaming_behavior {
                Some(StreamingBehavior::Steer) => {
                    self.app.steer(text, imgs).map(|()| Some(queued()))
                }
                Some(StreamingBehavior::FollowUp) => {
                    self.app.follow_up(text, imgs).map(|()| Some(queued()))
                }
                None => Err(CliError::failed(
                    "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.",
                )),
            };
            return reply.respond(response(id, "prompt", outcome));
        }
        if let Err(e) = self.app.prepare_prompt().await {
            return reply.respond(response(id, "prompt", Err(e)));
        }
        // An image that cannot be sent fails the prompt before it is accepted.
        let imgs = match self.app.fit_images_aside(imgs).await {
            Ok(imgs) => imgs,
            Err(e) => return reply.respond(response(id, "prompt", Err(e))),
        };
        // The acceptance goes out before the run's first event.
        let started = Some(ResponseData::Disposition {
            disposition: InputDisposition::Started,
        });
        reply.respond(response(id, "prompt", Ok(started)));
        if let Err(e) = self.app.start_prompt(text.clone(), imgs.clone()) {
            // Only possible when another run started between the check and
            // here (an abort's queued messages continuing): the prompt waits
            // for it as a follow-up rather than being lost.
            tracing::warn!(error = %e, "an accepted prompt is queued behind a run that started meanwhile");
            if let Err(e) = self.app.follow_up(text, imgs) {
                tracing::warn!(error = %e, "an accepted prompt could not be queued");
            }
        }
    }
}

fn queued() -> ResponseData {
    ResponseData::Disposition {
        disposition: InputDisposition::Queued,
    }
}

fn response(id: Option<Value>, command: &str, outcome: Outcome) -> RpcResponse {
    match outcome {
        Ok(data) => RpcResponse::success(id, command, data),
        Err(e) => RpcResponse::failure(id, command, e.to_string()),
    }
}
