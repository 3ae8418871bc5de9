//! One model call: build the LLM context, stream the response, forward its events.

use std::sync::Arc;

use futures::StreamExt;

use makai_ai::{
    AssistantMessage, AssistantMessageEvent as E, Context, MessageAccumulator, StopReason,
};

use super::orphans::answer_orphans;
use super::run::Run;
use crate::event::{AgentEvent, RunPhase};
use crate::message::AgentMessage;

fn empty_message(run: &Run) -> AssistantMessage {
    let model = &run.cfg.model;
    AssistantMessage {
        api: model.api.as_str().to_string(),
        provider: model.provider.clone(),
        model: model.id.clone(),
        stop_reason: StopReason::Pending,
        timestamp: makai_ai::now_ms(),
        ..Default::default()
    }
}

/// Streams one assistant response: emits `message_start`, one `message_update` per
/// content event, `message_end`; appends the final message to the transcript and
/// returns it, with the shared copy the events carry. Failures come back as a
/// message with stop reason `error`/`aborted`.
pub(super) async fn stream_response(
    run: &mut Run,
    first_call: bool,
) -> (AssistantMessage, Arc<AgentMessage>) {
    run.sink.phase(RunPhase::Streaming);
    let cfg = run.cfg.clone();
    let hooks = run.hooks.clone();
    let transformed = hooks.transform_context(&run.transcript, &run.cancel).await;
    let mut llm = hooks.convert_to_llm(transformed.as_deref().unwrap_or(&run.transcript));
    answer_orphans(&mut llm);
    let context = Context {
        system_prompt: (!run.ctx.system_prompt.is_empty()).then(|| run.ctx.system_prompt.clone()),
        messages: llm,
        tools: run.ctx.tools.definitions().to_vec(),
    };
    let mut options = cfg.options.clone();
    // A child token: dropping the stream cancels its token, which must not end the run.
    options.cancel = run.cancel.child_token();
    options.tool_choice = if first_call || !cfg.tool_choice_first_turn_only {
        cfg.tool_choice.clone()
    } else {
        None
    };

    hooks.on_model_request(&cfg.model, &context, &options);
    let mut stream = cfg.client.stream(&cfg.model, &context, options).await;
    // The copies of the transcript made for the request are not needed while
    // the response streams.
    drop(context);
    drop(transformed);
    let mut acc = cfg.partial_snapshots.then(|| {
        MessageAccumulator::new(cfg.model.api.as_str(), &cfg.model.provider, &cfg.model.id)
    });
    let mut started = false;
    let mut retry_attempt: Option<u32> = None;
    let mut final_message: Option<AssistantMessage> = None;
    while let Some(event) = stream.next().await {
        match event {
            E::Start => {
                if !started {
                    started = true;
                    run.emit(AgentEvent::MessageStart {
                        message: Arc::new(empty_message(run).into()),
                    });
                }
            }
            E::Retry {
                attempt,
                delay_ms,
                error_message,
            } => {
                // A retry before any byte streamed (429, 5xx, refused
                // connection) still comes after the message it retries began.
                if !started {
                    started = true;
                    run.emit(AgentEvent::MessageStart {
                        message: Arc::new(empty_message(run).into()),
                    });
                }
                if let Some(acc) = acc.as_mut() {
                    acc.apply(&E::Start);
                }
                retry_attempt = Some(attempt);
                run.emit(AgentEvent::AutoRetryStart {
                    attempt,
                    max_attempts: cfg.options.retry.max_retries,
                    delay_ms,
                    error_message,
                });
            }
            E::Done { message, .. } => {
                final_message = Some(*message);
                break;
            }
            E::Error { error, .. } => {
                final_message = Some(*error);
                break;
            }
            other => {
                if !started {
                    started = true;
                    run.emit(AgentEvent::MessageStart {
                        message: Arc::new(empty_message(run).into()),
                    });
                }
                let snapshot = acc.as_mut().map(|acc| {
                    acc.apply(&other);
                    if matches!(other, E::ToolcallDelta { .. }) {
                        acc.refresh_partial_arguments();
                    }
                    Arc::new(AgentMessage::from(acc.message().clone()))
                });
                run.emit(AgentEvent::MessageUpdate {
                    message: snapshot,
                    assistant_message_event: other,
                });
                // No yield of our own: makai-ai's stream returns to the
                // runtime at every network read (and a channel-fed stream spends
                // Tokio's cooperative budget), which lets the subscribers' tasks
                // run; their queues never block the loop. A yield wakes another
                // worker of a multi-thread runtime each time (BENCHMARKS.md).
            }
        }
    }
    let message = final_message.unwrap_or_else(|| {
        let mut m = empty_message(run);
        if run.cancel.is_cancelled() {
            m.stop_reason = StopReason::Aborted;
            m.error_message = Some("the request was aborted".into());
        } else {
            m.stop_reason = StopReason::Error;
            m.error_message = Some(
                "the model stream ended without a final message (the protocol client broke its contract)"
                    .into(),
            );
        }
        m
    });
    if let Some(attempt) = retry_attempt {
        let success = !matches!(message.stop_reason, StopReason::Error | StopReason::Aborted);
        run.emit(AgentEvent::AutoRetryEnd {
            success,
            attempt,
            final_error: if success {
                None
            } else {
                message.error_message.clone()
            },
        });
    }
    let shared = Arc::new(AgentMessage::from(message.clone()));
    if !started {
        run.emit(AgentEvent::MessageStart {
            message: shared.clone(),
        });
    }
    run.emit(AgentEvent::MessageEnd {
        message: shared.clone(),
    });
    run.push_message(message.clone().into());
    (message, shared)
}
