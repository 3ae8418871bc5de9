//! The stateful Agent: runs, queues, status, subscribers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use futures::StreamExt;
use makai_agent::makai_ai::StopReason;
use makai_agent::testing::{ScriptedClient, ScriptedResponse};
use makai_agent::{
    Agent, AgentError, AgentEvent, AgentMessage, AgentStatus, EndReason, QueueMode,
    SKIPPED_TOOL_TEXT, ToolOutput, ToolSet, TypedTool,
};
use serde_json::json;

fn agent(client: Arc<ScriptedClient>, tools: Vec<Arc<dyn makai_agent::Tool>>) -> Agent {
    Agent::new(config(client))
        .with_system_prompt("sys")
        .with_tools(ToolSet::new(tools))
}

fn slow_tool(ms: u64) -> Arc<dyn makai_agent::Tool> {
    TypedTool::new("slow", "Slow.", move |a: EchoArgs, _ctx| async move {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        Ok(ToolOutput::text(a.text))
    })
    .into_arc()
}

#[tokio::test]
async fn prompt_runs_to_the_end_and_updates_state_and_status() {
    let client = ScriptedClient::new([
        ScriptedResponse::tool_call("a", "echo", json!({"text": "x"})),
        ScriptedResponse::text("done"),
    ]);
    let agent = agent(client, vec![echo_tool()]);
    let mut watch = agent.status_watch();
    let seen = Arc::new(Mutex::new(vec![*watch.borrow()]));
    let s = seen.clone();
    let watcher = tokio::spawn(async move {
        while watch.changed().await.is_ok() {
            let v = *watch.borrow_and_update();
            s.lock().unwrap().push(v);
            if v == AgentStatus::Idle {
                break;
            }
        }
    });
    let outcome = agent.prompt("hi").await.unwrap();
    watcher.await.unwrap();
    assert_eq!(outcome.end_reason, EndReason::Completed);
    let state = agent.state();
    assert_eq!(state.messages.len(), 4);
    assert_eq!(state.messages[3].text(), "done");
    assert_eq!(state.status, AgentStatus::Idle);
    assert!(state.pending_tool_calls.is_empty() && state.partial_message.is_none());
    // The parts read one at a time, the transcript in place, agree with
    // the snapshot.
    assert_eq!(agent.message_count(), 4);
    assert_eq!(agent.with_messages(|m| m[3].text()), "done");
    assert_eq!(agent.with_messages(|m| m.to_vec()), state.messages);
    assert_eq!(agent.thinking_level(), state.thinking_level);
    assert_eq!(agent.model(), state.model);
    assert_eq!(agent.tools().names(), state.tools.names());
    assert_eq!(agent.tools().names(), vec!["echo"]);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.first(), Some(&AgentStatus::Idle));
    assert_eq!(seen.last(), Some(&AgentStatus::Idle));
    assert!(seen.contains(&AgentStatus::Streaming), "{seen:?}");
    assert!(seen.contains(&AgentStatus::ExecutingTools), "{seen:?}");
}

#[tokio::test]
async fn prompt_while_running_is_already_running() {
    let client = ScriptedClient::new([
        ScriptedResponse::text("slow reply").with_delay(Duration::from_millis(100))
    ]);
    let agent = agent(client, vec![]);
    let handle = agent.start_prompt("one").unwrap();
    let err = agent.prompt("two").await.unwrap_err();
    assert!(matches!(err, AgentError::AlreadyRunning), "{err}");
    assert!(err.to_string().contains("steer()"));
    assert!(matches!(
        agent.continue_().await.unwrap_err(),
        AgentError::AlreadyRunning
    ));
    assert!(matches!(
        agent.append_message("x").unwrap_err(),
        AgentError::AlreadyRunning
    ));
    assert!(matches!(
        agent.reset().unwrap_err(),
        AgentError::AlreadyRunning
    ));
    handle.await.unwrap();
    agent.wait_for_idle().await;
    assert!(!agent.is_running());
}

#[tokio::test]
async fn a_subscriber_sleeping_a_second_per_event_never_delays_the_run() {
    let client = ScriptedClient::new([
        ScriptedResponse::tool_call("a", "echo", json!({"text": "x"})),
        ScriptedResponse::text("a fairly long answer with many words in it"),
    ]);
    let agent = agent(client, vec![echo_tool()]);
    let slow_seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let s = slow_seen.clone();
    let slow = agent
        .subscribe(move |e| {
            s.lock().unwrap().push(e.kind().to_string());
            std::thread::sleep(Duration::from_secs(1));
        })
        .unwrap();
    let fast_seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let f = fast_seen.clone();
    let _fast = agent
        .subscribe(move |e| f.lock().unwrap().push(e.kind().to_string()))
        .unwrap();
    let started = Instant::now();
    let outcome = agent.prompt("go").await.unwrap();
    let elapsed = started.elapsed();
    assert!(elapsed < Duration::from_millis(800), "{elapsed:?}");
    assert_eq!(outcome.end_reason, EndReason::Completed);
    // The fast subscriber got everything promptly, the slow one is far behind.
    let deadline = Instant::now() + Duration::from_secs(2);
    while fast_seen.lock().unwrap().last().map(String::as_str) != Some("agent_end") {
        assert!(Instant::now() < deadline, "fast subscriber did not finish");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(fast_seen.lock().unwrap().len() > 20);
    assert!(slow_seen.lock().unwrap().len() <= 2);
    assert!(slow.queued() > 15);
    drop(slow);
}

#[tokio::test]
async fn a_panicking_subscriber_is_contained() {
    let client = ScriptedClient::new([ScriptedResponse::text("ok")]);
    let agent = agent(client, vec![]);
    let _bad = agent.subscribe(|_| panic!("subscriber bug")).unwrap();
    let mut stream = agent.subscribe_stream();
    let outcome = agent.prompt("go").await.unwrap();
    assert_eq!(outcome.end_reason, EndReason::Completed);
    let mut kinds = Vec::new();
    while let Some(e) = stream.next().await {
        kinds.push(e.kind());
        if e.kind() == "agent_end" {
            break;
        }
    }
    assert_eq!(kinds.first(), Some(&"agent_start"));
}

#[tokio::test]
async fn steering_from_another_task_skips_remaining_tools() {
    let client = ScriptedClient::new([
        ScriptedResponse::tool_call("a", "slow", json!({"text": "1"})).with_tool_call(
            "b",
            "slow",
            json!({"text": "2"}),
        ),
        ScriptedResponse::text("changed course"),
    ]);
    let agent = agent(client.clone(), vec![slow_tool(200)]);
    let mut stream = agent.subscribe_stream();
    let handle = agent.start_prompt("go").unwrap();
    // Wait until the first tool runs, then steer from this task.
    while let Some(e) = stream.next().await {
        if matches!(e, AgentEvent::ToolExecutionStart { .. }) {
            break;
        }
    }
    assert_eq!(agent.status(), AgentStatus::ExecutingTools);
    agent.steer("stop that");
    assert!(agent.has_queued_messages());
    // Counted at the queue at once, before any subscriber saw queue_update.
    assert_eq!(agent.queued_counts(), (1, 0));
    let outcome = handle.await.unwrap();
    assert_eq!(
        tool_results_of(&outcome.messages),
        [
            ("a".into(), "1".into()),
            ("b".into(), SKIPPED_TOOL_TEXT.into())
        ]
    );
    assert!(!agent.has_queued_messages());
    assert_eq!(agent.queued_counts(), (0, 0));
    let mut queue_updates = Vec::new();
    while let Some(e) = stream.next().await {
        if let AgentEvent::QueueUpdate { steering, .. } = &e {
            queue_updates.push(steering.clone());
        }
        if e.kind() == "agent_end" {
            break;
        }
    }
    assert_eq!(queue_updates, [vec!["stop that".to_string()], vec![]]);
    assert_eq!(
        client.requests()[1].context.messages.last().unwrap().role(),
        "user"
    );
}

#[tokio::test]
async fn follow_ups_queue_modes_and_continue() {
    let client = ScriptedClient::from_fn(|_, i| ScriptedResponse::text(format!("reply {i}")));
    let agent = agent(client.clone(), vec![]);
    agent.set_follow_up_mode(QueueMode::All);
    agent.follow_up("f1");
    agent.follow_up("f2");
    let outcome = agent.prompt("start").await.unwrap();
    // Both follow-ups were delivered together in a second turn.
    assert_eq!(client.calls(), 2);
    assert_eq!(outcome.turns, 2);
    let texts: Vec<String> = agent.messages().iter().map(AgentMessage::text).collect();
    assert_eq!(texts, ["start", "reply 0", "f1", "f2", "reply 1"]);

    // continue on an assistant-terminated transcript needs a queued message.
    let err = agent.continue_().await.unwrap_err();
    assert!(
        matches!(err, AgentError::CannotContinueFromAssistant),
        "{err}"
    );
    agent.steer("s1");
    agent.follow_up("f3");
    let outcome = agent.continue_().await.unwrap();
    // Steering first, then the follow-up after the agent would stop.
    let texts: Vec<String> = outcome.messages.iter().map(AgentMessage::text).collect();
    assert_eq!(texts, ["s1", "reply 2", "f3", "reply 3"]);

    agent.clear_messages().unwrap();
    assert!(matches!(
        agent.continue_().await.unwrap_err(),
        AgentError::NoMessages
    ));
    agent.follow_up("x");
    agent.clear_all_queues();
    assert!(!agent.has_queued_messages());
}

#[tokio::test]
async fn abort_during_stream_and_retry_with_continue() {
    let client = ScriptedClient::new([
        ScriptedResponse::hang(),
        ScriptedResponse::text("second try"),
    ]);
    let agent = agent(client, vec![]);
    let handle = agent.start_prompt("go").unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(agent.state().partial_message.is_some());
    agent.abort();
    assert_eq!(agent.status(), AgentStatus::Aborting);
    let outcome = handle.await.unwrap();
    assert_eq!(outcome.end_reason, EndReason::Aborted);
    assert_eq!(agent.status(), AgentStatus::Idle);
    let state = agent.state();
    let last = state.messages.last().unwrap().as_assistant().unwrap();
    assert_eq!(last.stop_reason, StopReason::Aborted);
    assert!(state.error_message.is_some());
    // The transcript ends with the aborted assistant message: continue needs a queued
    // message; after a new prompt the run works again.
    let outcome = agent.prompt("again").await.unwrap();
    assert_eq!(outcome.end_reason, EndReason::Completed);
    assert!(agent.state().error_message.is_none());
}

#[tokio::test]
async fn a_slow_stream_subscriber_gets_merged_deltas_without_losing_text() {
    let words = 3000;
    let text: String = (0..words).map(|i| format!("w{i} ")).collect();
    let client = ScriptedClient::new([ScriptedResponse::text(text.clone())]);
    let agent = agent(client, vec![]);
    let mut stream = agent.subscribe_stream();
    agent.prompt("go").await.unwrap();
    assert!(stream.queued() < words, "merged: {}", stream.queued());
    let mut got = String::new();
    let mut updates = 0;
    let mut last = "";
    while let Some(e) = stream.next().await {
        if let Some(d) = e.text_delta() {
            got.push_str(d);
        }
        if e.kind() == "message_update" {
            updates += 1;
        }
        last = e.kind();
        if last == "agent_end" {
            break;
        }
    }
    assert_eq!(last, "agent_end");
    assert_eq!(got, text);
    assert!(updates < words, "{updates}");
}

#[tokio::test]
async fn replace_append_and_reset() {
    let client = ScriptedClient::new([ScriptedResponse::text("ok")]);
    let agent = agent(client, vec![]);
    agent
        .replace_messages(vec!["a".into(), "b".into()])
        .unwrap();
    agent.append_message("c").unwrap();
    assert_eq!(agent.messages().len(), 3);
    let outcome = agent.continue_().await.unwrap();
    assert_eq!(outcome.messages.len(), 1);
    assert_eq!(agent.messages().len(), 4);
    agent.steer("x");
    agent.reset().unwrap();
    assert!(agent.messages().is_empty() && !agent.has_queued_messages());
}

/// Every request `on_model_request` was shown.
#[derive(Default)]
struct SeenRequests(Mutex<Vec<makai_agent::makai_ai::Context>>);

impl makai_agent::AgentHooks for SeenRequests {
    fn on_model_request(
        &self,
        _model: &makai_agent::makai_ai::Model,
        context: &makai_agent::makai_ai::Context,
        _options: &makai_agent::makai_ai::StreamOptions,
    ) {
        self.0.lock().unwrap().push(context.clone());
    }
}

#[tokio::test]
async fn on_model_request_sees_each_request_of_a_run_as_sent_and_no_compaction_request() {
    let client = ScriptedClient::from_fn(|_, i| {
        ScriptedResponse::text(format!("answer {i} {}", "a".repeat(400)))
    });
    let hooks = Arc::new(SeenRequests::default());
    let mut cfg = config(client.clone());
    cfg.hooks = hooks.clone();
    let agent = Agent::new(cfg).with_system_prompt("sys");
    for i in 0..10 {
        agent
            .prompt(format!("question {i} {}", "q".repeat(400)))
            .await
            .unwrap();
    }
    let sent: Vec<_> = client.requests().into_iter().map(|r| r.context).collect();
    assert_eq!(*hooks.0.lock().unwrap(), sent);
    assert_eq!(sent.len(), 10);

    // A compaction rewrites the transcript: a mark taken before no longer holds.
    let before = agent.transcript_mark();
    assert!(agent.transcript_continues(before));
    agent.compact(None).await.unwrap();
    assert_eq!(client.calls(), 11, "the summary was asked for");
    assert_eq!(hooks.0.lock().unwrap().len(), 10, "and not reported");
    assert!(!agent.transcript_continues(before));
}

#[tokio::test]
async fn a_transcript_mark_holds_while_messages_are_appended_and_not_once_they_are_rewritten() {
    let client = ScriptedClient::from_fn(|_, _| ScriptedResponse::text("ok"));
    let agent = agent(client, vec![]);
    let empty = agent.transcript_mark();
    agent.prompt("q").await.unwrap();
    agent.append_message("more").unwrap();
    assert!(agent.transcript_continues(empty), "appended only");

    // Replaced by the same messages and more: still a continuation.
    let mark = agent.transcript_mark();
    let mut longer = agent.messages();
    longer.push("and more".into());
    agent.replace_messages(longer).unwrap();
    assert!(agent.transcript_continues(mark));
    // Replaced by other messages, cleared, reset: rewritten.
    let mark = agent.transcript_mark();
    agent
        .replace_messages(vec!["other".into(), "b".into(), "c".into(), "d".into()])
        .unwrap();
    assert!(!agent.transcript_continues(mark));
    let mark = agent.transcript_mark();
    agent.clear_messages().unwrap();
    assert!(!agent.transcript_continues(mark));
    let mark = agent.transcript_mark();
    agent.reset().unwrap();
    assert!(!agent.transcript_continues(mark));
}
