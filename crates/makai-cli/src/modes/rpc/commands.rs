//! The RPC commands (pi's names and fields). Quick commands are answered in
//! order; `bash` and `compact` run in the background so `abort_bash` and
//! `abort` can reach them.

use std::sync::Mutex;

use serde_json::{Value, json};
use tokio::task::JoinHandle;

use makai_agent::QueueMode;
use makai_ai::{ImageContent, ThinkingLevel};

use super::{Output, failure, success};
use crate::app::AppSession;
use crate::error::CliError;

/// Handles command lines (RPC mode) and command values (`makai serve`).
pub(crate) struct Handler {
    app: AppSession,
    out: Output,
    background: Mutex<Vec<JoinHandle<()>>>,
}

type Reply = Result<Option<Value>, CliError>;

fn field_str<'a>(cmd: &'a Value, command: &str, name: &str) -> Result<&'a str, CliError> {
    cmd.get(name).and_then(Value::as_str).ok_or_else(|| {
        CliError::failed(format!("command '{command}' needs a string field '{name}'"))
    })
}

fn field_bool(cmd: &Value, command: &str, name: &str) -> Result<bool, CliError> {
    cmd.get(name).and_then(Value::as_bool).ok_or_else(|| {
        CliError::failed(format!(
            "command '{command}' needs a boolean field '{name}'"
        ))
    })
}

fn images(cmd: &Value) -> Result<Vec<ImageContent>, CliError> {
    match cmd.get("images") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(v) => {
            let parts: Vec<makai_ai::UserContent> =
                serde_json::from_value(v.clone()).map_err(|e| {
                    CliError::failed(format!("'images' must be a list of image contents: {e}"))
                })?;
            Ok(parts
                .into_iter()
                .filter_map(|p| match p {
                    makai_ai::UserContent::Image(i) => Some(i),
                    _ => None,
                })
                .collect())
        }
    }
}

fn queue_mode(cmd: &Value, command: &str) -> Result<QueueMode, CliError> {
    let mode = field_str(cmd, command, "mode")?;
    serde_json::from_value(Value::String(mode.to_string())).map_err(|_| {
        CliError::failed(format!(
            "unknown mode '{mode}' (expected \"all\" or \"one-at-a-time\")"
        ))
    })
}

impl Handler {
    pub(crate) fn new(app: AppSession, out: Output) -> Self {
        Handler {
            app,
            out,
            background: Mutex::new(Vec::new()),
        }
    }

    /// Waits for background commands (bash, compact) to finish.
    pub(crate) async fn wait_background(&self) {
        let tasks: Vec<JoinHandle<()>> =
            std::mem::take(&mut *self.background.lock().unwrap_or_else(|e| e.into_inner()));
        for t in tasks {
            let _ = t.await;
        }
    }

    fn spawn(&self, f: impl std::future::Future<Output = ()> + Send + 'static) {
        let mut bg = self.background.lock().unwrap_or_else(|e| e.into_inner());
        bg.retain(|t| !t.is_finished());
        bg.push(tokio::spawn(f));
    }

    /// Handles one input record.
    pub(super) async fn handle_line(&self, raw: &[u8]) {
        if raw.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let parsed: Result<Value, String> = std::str::from_utf8(raw)
            .map_err(|e| format!("the line is not valid UTF-8: {e}"))
            .and_then(|s| serde_json::from_str(s).map_err(|e| e.to_string()));
        match parsed {
            Ok(cmd) => self.handle_value(cmd, &self.out).await,
            Err(e) => {
                self.out.send(&failure(
                    &None,
                    "parse",
                    format!("Failed to parse command: {e}"),
                ));
            }
        }
    }

    /// Handles one parsed command; its response (now or, for background
    /// commands, later) and its side events go to `out`.
    pub(crate) async fn handle_value(&self, cmd: Value, out: &Output) {
        let id = cmd.get("id").filter(|v| !v.is_null()).cloned();
        let Some(kind) = cmd.get("type").and_then(Value::as_str).map(str::to_string) else {
            out.send(&failure(
                &id,
                "parse",
                "Failed to parse command: a command is a JSON object with a string field \"type\"",
            ));
            return;
        };
        if kind == "extension_ui_response" {
            return;
        }
        match self.dispatch(&kind, &cmd, &id, out).await {
            Some(Ok(data)) => out.send(&success(&id, &kind, data)),
            Some(Err(e)) => out.send(&failure(&id, &kind, e)),
            None => {}
        }
    }

    /// Runs a command; `None` when the reply is sent later (background commands).
    async fn dispatch(
        &self,
        kind: &str,
        cmd: &Value,
        id: &Option<Value>,
        out: &Output,
    ) -> Option<Reply> {
        let app = &self.app;
        let reply: Reply = match kind {
            "prompt" => return self.prompt(cmd, id, out).await,
            "steer" | "follow_up" => (|| {
                let text = field_str(cmd, kind, "message")?.to_string();
                let imgs = images(cmd)?;
                if kind == "steer" {
                    app.steer(text, imgs);
                } else {
                    app.follow_up(text, imgs);
                }
                Ok(None)
            })(),
            "abort" => {
                app.abort().await;
                Ok(None)
            }
            "new_session" => {
                let parent = cmd.get("parentSession").and_then(Value::as_str);
                app.new_session(parent)
                    .await
                    .map(|_| Some(json!({"cancelled": false})))
            }
            "get_state" => Ok(Some(app.state_json())),
            "get_messages" => Ok(Some(json!({"messages": app.messages()}))),
            "set_model" => self.set_model(cmd).await,
            "cycle_model" => Ok(Some(match app.cycle_model().await {
                Some((model, level)) => {
                    json!({"model": model, "thinkingLevel": level, "isScoped": false})
                }
                None => Value::Null,
            })),
            "get_available_models" => Ok(Some(json!({"models": app.available_models().await}))),
            "set_thinking_level" => field_str(cmd, kind, "level").and_then(|l| {
                let level: ThinkingLevel = l.parse().map_err(CliError::failed)?;
                app.set_thinking_level(level);
                Ok(None)
            }),
            "cycle_thinking_level" => Ok(Some(match app.cycle_thinking_level() {
                Some(level) => json!({"level": level}),
                None => Value::Null,
            })),
            "get_available_thinking_levels" => {
                Ok(Some(json!({"levels": app.available_thinking_levels()})))
            }
            "set_steering_mode" => queue_mode(cmd, kind).map(|m| {
                app.set_steering_mode(m);
                None
            }),
            "set_follow_up_mode" => queue_mode(cmd, kind).map(|m| {
                app.set_follow_up_mode(m);
                None
            }),
            "compact" => {
                let app = app.clone();
                let out = out.clone();
                let id = id.clone();
                let instructions = cmd
                    .get("customInstructions")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                self.spawn(async move {
                    let reply = match app.compact(instructions.as_deref()).await {
                        Ok(data) => success(&id, "compact", Some(data)),
                        Err(e) => failure(&id, "compact", e),
                    };
                    out.send(&reply);
                });
                return None;
            }
            "set_auto_compaction" => field_bool(cmd, kind, "enabled").map(|on| {
                app.set_auto_compaction(on);
                None
            }),
            "set_auto_retry" => field_bool(cmd, kind, "enabled").map(|on| {
                app.set_auto_retry(on);
                None
            }),
            "abort_retry" => {
                app.abort_retry();
                Ok(None)
            }
            "bash" => {
                let command = match field_str(cmd, kind, "command") {
                    Ok(c) => c.to_string(),
                    Err(e) => return Some(Err(e)),
                };
                let exclude = cmd
                    .get("excludeFromContext")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                let app = app.clone();
                let out = out.clone();
                let id = id.clone();
                self.spawn(async move {
                    let updates = out.clone();
                    let update_id = id.clone();
                    let on_output = move |delta: &str| {
                        let mut ev = json!({"type": "bash_execution_update", "delta": delta});
                        if let Some(i) = &update_id {
                            ev["id"] = i.clone();
                        }
                        updates.send(&ev);
                    };
                    let reply = match app.execute_bash(&command, exclude, on_output).await {
                        Ok(r) => success(&id, "bash", serde_json::to_value(r).ok()),
                        Err(e) => failure(&id, "bash", e),
                    };
                    out.send(&reply);
                });
                return None;
            }
            "abort_bash" => {
                app.abort_bash();
                Ok(None)
            }
            "get_session_stats" => Ok(serde_json::to_value(app.session_stats()).ok()),
            "export_html" => {
                let path = cmd.get("outputPath").and_then(Value::as_str);
                crate::export_html::export(app, path).map(|p| Some(json!({"path": p})))
            }
            "switch_session" => match field_str(cmd, kind, "sessionPath") {
                Ok(p) => app
                    .switch_session(p)
                    .await
                    .map(|_| Some(json!({"cancelled": false}))),
                Err(e) => Err(e),
            },
            "fork" => match field_str(cmd, kind, "entryId") {
                Ok(e) => app
                    .fork(e)
                    .await
                    .map(|text| Some(json!({"text": text, "cancelled": false}))),
                Err(e) => Err(e),
            },
            "clone" => app
                .clone_branch()
                .await
                .map(|_| Some(json!({"cancelled": false}))),
            "get_fork_messages" => {
                let messages: Vec<Value> = app
                    .fork_messages()
                    .into_iter()
                    .map(|(entry_id, text)| json!({"entryId": entry_id, "text": text}))
                    .collect();
                Ok(Some(json!({"messages": messages})))
            }
            "get_entries" => {
                let since = cmd.get("since").and_then(Value::as_str);
                app.entries(since)
                    .map(|(entries, leaf)| Some(json!({"entries": entries, "leafId": leaf})))
            }
            "get_tree" => {
                let (tree, leaf) = app.tree();
                Ok(Some(json!({"tree": tree, "leafId": leaf})))
            }
            "get_last_assistant_text" => Ok(Some(json!({"text": app.last_assistant_text()}))),
            "set_session_name" => match field_str(cmd, kind, "name") {
                Ok(name) if name.trim().is_empty() => {
                    Err(CliError::failed("Session name cannot be empty"))
                }
                Ok(name) => app.set_session_name(name.trim()).map(|_| None),
                Err(e) => Err(e),
            },
            "get_commands" => Ok(Some(json!({"commands": []}))),
            other => Err(CliError::failed(format!("Unknown command: {other}"))),
        };
        Some(reply)
    }

    async fn set_model(&self, cmd: &Value) -> Reply {
        let provider = field_str(cmd, "set_model", "provider")?;
        let model_id = field_str(cmd, "set_model", "modelId")?;
        let current = self.app.model();
        let found = if current.provider == provider && current.id == model_id {
            Some(current)
        } else {
            self.app
                .available_models()
                .await
                .into_iter()
                .find(|m| m.provider == provider && m.id == model_id)
        };
        let model = found
            .ok_or_else(|| CliError::failed(format!("Model not found: {provider}/{model_id}")))?;
        self.app.set_model(model.clone());
        Ok(serde_json::to_value(model).ok())
    }

    /// `prompt`; `None` when the reply was already sent (the run started).
    async fn prompt(&self, cmd: &Value, id: &Option<Value>, out: &Output) -> Option<Reply> {
        let parsed = field_str(cmd, "prompt", "message")
            .map(str::to_string)
            .and_then(|t| images(cmd).map(|i| (t, i)));
        let (text, imgs) = match parsed {
            Ok(p) => p,
            Err(e) => return Some(Err(e)),
        };
        if self.app.is_streaming() {
            return Some(match cmd.get("streamingBehavior").and_then(Value::as_str) {
                Some("steer") => {
                    self.app.steer(text, imgs);
                    Ok(None)
                }
                Some("followUp") => {
                    self.app.follow_up(text, imgs);
                    Ok(None)
                }
                Some(other) => Err(CliError::failed(format!(
                    "unknown streamingBehavior '{other}' (expected \"steer\" or \"followUp\")"
                ))),
                None => Err(CliError::failed(
                    "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.",
                )),
            });
        }
        if let Err(e) = self.app.prepare_prompt().await {
            return Some(Err(e));
        }
        // The acceptance goes out before the run's first event.
        out.send(&success(id, "prompt", None));
        if let Err(e) = self.app.start_prompt(text, imgs) {
            out.send(&failure(id, "prompt", e));
        }
        None
    }
}
