//! `Agent::compact`: manual compaction through the in-process client over real
//! HTTP to the scripted server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures::StreamExt;
use makai_agent::makai_ai::{
    AssistantContent, AssistantMessage, Context, Message, TextContent, UserContent, UserMessage,
};
use makai_agent::{
    Agent, AgentError, AgentEvent, AgentLoopConfig, AgentMessage, AgentStatus, CompactionContext,
    CompactionError, CompactionOutput, CompactionReason, CompactionStrategy, EndReason,
    EventStream,
};
use makai_mockllm::{MockServer, Scenario, ScriptedResponse as Mock};
use serde_json::json;

async fn server(responses: Vec<Mock>) -> MockServer {
    MockServer::start(Scenario::new().extend(responses))
        .await
        .expect("mock server starts")
}

use crate::common::http_config;

/// 20 alternating user and assistant messages of about 100 tokens each.
fn history() -> Vec<AgentMessage> {
    (0..20)
        .map(|i| {
            if i % 2 == 0 {
                AgentMessage::user(format!("question {i} {}", "q".repeat(400)))
            } else {
                AssistantMessage {
                    content: vec![AssistantContent::Text(TextContent {
                        text: format!("answer {i} {}", "a".repeat(400)),
                        text_signature: None,
                    })],
                    ..Default::default()
                }
                .into()
            }
        })
        .collect()
}

fn agent_with_history(cfg: AgentLoopConfig) -> Agent {
    let agent = Agent::new(cfg).with_system_prompt("You are a test.");
    agent.replace_messages(history()).unwrap();
    agent
}

/// Reads `stream` up to and including `compaction_end`.
async fn compaction_events(stream: &mut EventStream) -> Vec<AgentEvent> {
    let mut out = Vec::new();
    loop {
        let e = tokio::time::timeout(Duration::from_secs(5), stream.next())
            .await
            .expect("compaction_end reached the subscriber")
            .expect("the stream is open");
        let end = matches!(e, AgentEvent::CompactionEnd { .. });
        out.push(e);
        if end {
            return out;
        }
    }
}

fn to_json(e: &AgentEvent) -> serde_json::Value {
    serde_json::to_value(e).unwrap()
}

/// Records every status the agent goes through until it is idle again.
fn watch_statuses(agent: &Agent) -> tokio::task::JoinHandle<Vec<AgentStatus>> {
    let mut watch = agent.status_watch();
    let mut seen = vec![*watch.borrow_and_update()];
    tokio::spawn(async move {
        while watch.changed().await.is_ok() {
            let s = *watch.borrow_and_update();
            seen.push(s);
            if s == AgentStatus::Idle {
                break;
            }
        }
        seen
    })
}

async fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn compact_summarizes_through_the_server_and_replaces_the_messages() {
    let server = server(vec![Mock::text("SUMMARY of the session so far")]).await;
    let agent = agent_with_history(http_config(&server));
    let original = agent.messages();
    let mut stream = agent.subscribe_stream();
    let statuses = watch_statuses(&agent);

    let info = agent
        .compact(Some("Focus on the question numbers.".into()))
        .await
        .unwrap();

    assert_eq!(
        statuses.await.unwrap(),
        [
            AgentStatus::Idle,
            AgentStatus::Compacting,
            AgentStatus::Idle
        ]
    );
    // The summary call the scripted server recorded.
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    let body = &reqs[0].raw_body;
    assert!(
        body.contains("You write short, factual summaries"),
        "{body}"
    );
    assert!(body.contains("Focus on the question numbers."));
    assert!(body.contains("question 2 ") && body.contains("answer 9 "));
    assert!(
        !body.contains("question 18 "),
        "recent messages are kept, not summarized"
    );
    server.assert_request_invariants();

    // The transcript: the first message, the summary, the 8 most recent.
    let messages = agent.messages();
    assert_eq!(messages.len(), 10);
    assert_eq!(messages[0].text(), original[0].text());
    assert_eq!(messages[1].role(), "compactionSummary");
    assert!(messages[1].text().contains("SUMMARY of the session so far"));
    assert_eq!(
        messages[2..]
            .iter()
            .map(AgentMessage::text)
            .collect::<Vec<_>>(),
        original[12..]
            .iter()
            .map(AgentMessage::text)
            .collect::<Vec<_>>()
    );
    assert_eq!(info.summary, "SUMMARY of the session so far");
    assert!(info.tokens_before > info.estimated_tokens_after, "{info:?}");
    assert!(info.usage.is_some());
    assert_eq!(info.details["level"], 2);

    // The events, in pi's JSON shape.
    let events = compaction_events(&mut stream).await;
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(
        to_json(&events[0]),
        json!({"type": "compaction_start", "reason": "manual"})
    );
    let end = to_json(&events[1]);
    assert_eq!(end["type"], "compaction_end");
    assert_eq!(end["reason"], "manual");
    assert_eq!(end["aborted"], false);
    assert_eq!(end["willRetry"], false);
    assert_eq!(end["result"]["summary"], "SUMMARY of the session so far");
    assert_eq!(end["result"]["tokensBefore"], info.tokens_before);
    assert!(end.get("errorMessage").is_none());
    let AgentEvent::CompactionEnd {
        messages: Some(m), ..
    } = &events[1]
    else {
        panic!("compaction_end carries the transcript")
    };
    assert_eq!(m.len(), 10);

    // The next prompt builds on the compacted transcript.
    assert_eq!(agent.status(), AgentStatus::Idle);
    server.push(Mock::text("carrying on"));
    let outcome = agent.prompt("next question").await.unwrap();
    assert_eq!(outcome.end_reason, EndReason::Completed);
    let next = &server.requests()[1].raw_body;
    assert!(next.contains("SUMMARY of the session so far"));
    assert!(!next.contains("question 4 "));
    server.assert_request_invariants();
}

#[tokio::test]
async fn compact_works_with_context_management_off() {
    let server = server(vec![Mock::text("short summary")]).await;
    let mut cfg = http_config(&server);
    cfg.context = None;
    let agent = agent_with_history(cfg);
    let info = agent.compact(None).await.unwrap();
    assert_eq!(info.summary, "short summary");
    assert_eq!(server.requests().len(), 1);
    assert!(
        !server.requests()[0]
            .raw_body
            .contains("Additional instructions")
    );
    assert_eq!(agent.messages().len(), 10);
}

#[tokio::test]
async fn a_failed_summary_leaves_the_messages_untouched() {
    let server = server(vec![Mock::new().with_status(500)]).await;
    let agent = agent_with_history(http_config(&server));
    let mut stream = agent.subscribe_stream();
    let err = agent.compact(None).await.unwrap_err();
    match &err {
        AgentError::Compaction(CompactionError::Failed(m)) => {
            assert!(
                m.contains("summary call failed") && m.contains("500"),
                "{m}"
            )
        }
        other => panic!("expected a compaction failure, got {other:?}"),
    }
    assert!(
        err.to_string()
            .contains("the transcript was left unchanged")
    );
    assert_eq!(server.requests().len(), 1);
    let texts: Vec<String> = agent.messages().iter().map(AgentMessage::text).collect();
    let original: Vec<String> = history().iter().map(AgentMessage::text).collect();
    assert_eq!(texts, original);
    let events = compaction_events(&mut stream).await;
    let end = to_json(&events[1]);
    assert_eq!(end["result"], serde_json::Value::Null);
    assert_eq!(end["aborted"], false);
    assert!(end["errorMessage"].as_str().unwrap().contains("500"));
    assert_eq!(agent.status(), AgentStatus::Idle);
    // Still usable.
    server.push(Mock::text("fine"));
    let outcome = agent.prompt("hello").await.unwrap();
    assert_eq!(outcome.end_reason, EndReason::Completed);
}

#[tokio::test]
async fn abort_cancels_a_compaction_and_nothing_else_runs_meanwhile() {
    let server = server(vec![Mock::text("a summary that never ends").stall_after(1)]).await;
    let agent = agent_with_history(http_config(&server));
    let mut stream = agent.subscribe_stream();
    let task = {
        let agent = agent.clone();
        tokio::spawn(async move { agent.compact(None).await })
    };
    wait_until("the summary request arrived", || {
        server.requests().len() == 1
    })
    .await;
    assert_eq!(agent.status(), AgentStatus::Compacting);
    assert!(agent.is_running());

    // Anything that needs an idle agent is refused while compacting.
    assert!(matches!(
        agent.prompt("hi").await,
        Err(AgentError::AlreadyRunning)
    ));
    assert!(matches!(
        agent.continue_().await,
        Err(AgentError::AlreadyRunning)
    ));
    assert!(matches!(
        agent.compact(None).await,
        Err(AgentError::AlreadyRunning)
    ));
    assert!(matches!(
        agent.replace_messages(vec![]),
        Err(AgentError::AlreadyRunning)
    ));

    let started = Instant::now();
    agent.abort();
    assert_eq!(agent.status(), AgentStatus::Aborting);
    let result = tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("abort ends the compaction")
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(
        matches!(
            result,
            Err(AgentError::Compaction(CompactionError::Aborted))
        ),
        "{result:?}"
    );
    assert_eq!(agent.messages().len(), 20, "the transcript is unchanged");
    assert_eq!(agent.status(), AgentStatus::Idle);
    let events = compaction_events(&mut stream).await;
    let end = to_json(&events[1]);
    assert_eq!(end["aborted"], true);
    assert_eq!(end["reason"], "manual");
    assert!(end.get("errorMessage").is_none());

    server.push(Mock::text("back to work"));
    let outcome = agent.prompt("hello").await.unwrap();
    assert_eq!(outcome.end_reason, EndReason::Completed);
}

#[tokio::test]
async fn dropping_the_compaction_future_ends_it_and_leaves_the_agent_idle() {
    let server = server(vec![Mock::text("never finished").stall_after(1)]).await;
    let agent = agent_with_history(http_config(&server));
    let mut stream = agent.subscribe_stream();
    let timed_out = tokio::time::timeout(Duration::from_millis(300), agent.compact(None)).await;
    assert!(timed_out.is_err(), "the summary stalls");
    assert_eq!(server.requests().len(), 1);
    assert_eq!(agent.status(), AgentStatus::Idle);
    assert!(!agent.is_running());
    assert_eq!(agent.messages().len(), 20);
    let events = compaction_events(&mut stream).await;
    assert_eq!(to_json(&events[1])["aborted"], true);
    server.push(Mock::text("fine"));
    assert_eq!(
        agent.prompt("hello").await.unwrap().end_reason,
        EndReason::Completed
    );
}

#[tokio::test]
async fn compact_during_a_run_is_already_running() {
    let server = server(vec![Mock::text("slow reply").stall_after(1)]).await;
    let agent = agent_with_history(http_config(&server));
    let handle = agent.start_prompt("go").unwrap();
    wait_until("the model request arrived", || server.requests().len() == 1).await;
    assert!(matches!(
        agent.compact(None).await,
        Err(AgentError::AlreadyRunning)
    ));
    agent.abort();
    let outcome = handle.await.unwrap();
    assert_eq!(outcome.end_reason, EndReason::Aborted);
    assert_eq!(server.requests().len(), 1, "no summary call was made");
}

#[tokio::test]
async fn an_empty_transcript_is_an_error_without_events() {
    let server = server(vec![]).await;
    let agent = Agent::new(http_config(&server));
    let seen = Arc::new(Mutex::new(0usize));
    let s = seen.clone();
    let _sub = agent.subscribe(move |_| *s.lock().unwrap() += 1).unwrap();
    let err = agent.compact(None).await.unwrap_err();
    assert!(
        matches!(err, AgentError::Compaction(CompactionError::Failed(ref m)) if m.contains("empty")),
        "{err:?}"
    );
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(*seen.lock().unwrap(), 0);
    assert!(server.requests().is_empty());
    assert_eq!(agent.status(), AgentStatus::Idle);
}

/// Keeps the last two messages behind a summary written by the model; records
/// what it was given.
struct KeepTwo {
    seen: Mutex<Vec<(CompactionReason, Option<String>, usize)>>,
}

#[async_trait]
impl CompactionStrategy for KeepTwo {
    async fn compact(
        &self,
        messages: Vec<AgentMessage>,
        cx: &CompactionContext<'_>,
    ) -> Result<CompactionOutput, CompactionError> {
        self.seen.lock().unwrap().push((
            cx.reason,
            cx.custom_instructions.map(str::to_string),
            messages.len(),
        ));
        let context = Context {
            system_prompt: Some("custom summarizer".into()),
            messages: vec![Message::User(UserMessage {
                content: vec![UserContent::text("summarize")],
                timestamp: 0,
            })],
            tools: Vec::new(),
        };
        let reply = cx
            .client
            .stream(cx.model, &context, cx.options.clone())
            .await
            .result()
            .await;
        let mut out = vec![AgentMessage::user(format!("summary: {}", reply.text()))];
        out.extend_from_slice(&messages[messages.len() - 2..]);
        Ok(CompactionOutput {
            messages: out,
            summary: Some(reply.text()),
            usage: Some(*reply.usage),
            details: json!({"strategy": "keep-two"}),
        })
    }
}

struct Panics;

#[async_trait]
impl CompactionStrategy for Panics {
    async fn compact(
        &self,
        _messages: Vec<AgentMessage>,
        _cx: &CompactionContext<'_>,
    ) -> Result<CompactionOutput, CompactionError> {
        panic!("strategy bug")
    }
}

#[tokio::test]
async fn the_configured_strategy_and_client_are_used_and_a_panicking_strategy_is_contained() {
    let server = server(vec![Mock::text("custom words")]).await;
    let strategy = Arc::new(KeepTwo {
        seen: Mutex::new(Vec::new()),
    });
    let mut cfg = http_config(&server);
    cfg.compaction = strategy.clone();
    cfg.options.api_key = Some("sk-compaction-key".into());
    let agent = agent_with_history(cfg);
    let info = agent.compact(Some("only numbers".into())).await.unwrap();
    assert_eq!(
        *strategy.seen.lock().unwrap(),
        [(CompactionReason::Manual, Some("only numbers".into()), 20)]
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    assert!(reqs[0].raw_body.contains("custom summarizer"));
    assert_eq!(
        reqs[0].header("authorization"),
        Some("Bearer sk-compaction-key")
    );
    assert_eq!(info.summary, "custom words");
    assert_eq!(info.details["strategy"], "keep-two");
    let messages = agent.messages();
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[0].text(), "summary: custom words");
    assert!(messages[2].text().starts_with("answer 19"));

    agent.update_config(|c| c.compaction = Arc::new(Panics));
    let err = agent.compact(None).await.unwrap_err();
    assert!(
        matches!(err, AgentError::Compaction(CompactionError::Failed(ref m)) if m.contains("panicked: strategy bug")),
        "{err:?}"
    );
    assert_eq!(agent.messages().len(), 3, "unchanged");
    assert_eq!(agent.status(), AgentStatus::Idle);
}

/// Usage reported before a compaction counted a context that no longer exists:
/// the next run estimates the compacted transcript from its text, so it does not
/// compact again at once.
#[tokio::test]
async fn the_run_after_a_compaction_ignores_usage_reported_before_it() {
    let server = server(vec![Mock::text("SUMMARY"), Mock::text("fresh answer")]).await;
    let mut cfg = http_config(&server);
    cfg.context = Some(makai_agent::ContextConfig {
        budget_tokens: Some(5_000),
        ..Default::default()
    });
    let agent = Agent::new(cfg).with_system_prompt("You are a test.");
    let mut messages = history();
    // The last answer, kept by the compaction, reported a context far over budget.
    if let Some(AgentMessage::Llm(Message::Assistant(a))) = messages.last_mut() {
        a.usage.input = 100_000;
    }
    agent.replace_messages(messages).unwrap();
    agent.compact(None).await.unwrap();
    let kept_stale = agent
        .messages()
        .iter()
        .any(|m| m.as_assistant().is_some_and(|a| a.usage.input == 100_000));
    assert!(kept_stale, "the answer with the stale usage is kept");
    let compacted = agent.messages();

    let mut stream = agent.subscribe_stream();
    let outcome = agent.prompt("next question").await.unwrap();
    assert!(outcome.end_reason.is_completed());
    assert_eq!(outcome.messages.last().unwrap().text(), "fresh answer");
    assert_eq!(
        count_compactions(&mut stream).await,
        0,
        "no second compaction"
    );
    assert_eq!(
        server.requests().len(),
        2,
        "the summary and the answer only"
    );

    // After `replace_messages` the usage is trusted again: the same compacted
    // transcript, its stale usage now the latest, goes through compaction before
    // the call (the default strategy then finds the text under budget and makes
    // no model call; a custom strategy might).
    let second = self::server(vec![Mock::text("answer")]).await;
    let mut cfg = http_config(&second);
    cfg.context = Some(makai_agent::ContextConfig {
        budget_tokens: Some(5_000),
        ..Default::default()
    });
    let fresh = Agent::new(cfg);
    fresh.replace_messages(compacted).unwrap();
    let mut stream = fresh.subscribe_stream();
    fresh.prompt("again").await.unwrap();
    assert_eq!(count_compactions(&mut stream).await, 1);
}

/// Compactions started until `agent_end`.
async fn count_compactions(stream: &mut EventStream) -> usize {
    let mut compactions = 0;
    while let Ok(Some(e)) = tokio::time::timeout(Duration::from_secs(5), stream.next()).await {
        if matches!(e, AgentEvent::CompactionStart { .. }) {
            compactions += 1;
        }
        if matches!(e, AgentEvent::AgentEnd { .. }) {
            break;
        }
    }
    compactions
}

#[tokio::test]
async fn tools_declared_before_a_compaction_stay_declared_through_a_checkpoint() {
    let server = server(vec![Mock::text("SUMMARY")]).await;
    let agent = Agent::new(http_config(&server)).with_system_prompt("You are a test.");
    let mut messages = history();
    // A tool loaded early on (as `tool_search` records it), then dropped.
    let loaded =
        makai_agent::SystemMessage::tools_added(vec![makai_agent::makai_ai::ToolDefinition {
            name: "mcp__s__lookup".into(),
            description: "Looks things up.".into(),
            parameters: json!({"type": "object"}),
        }]);
    messages.insert(2, loaded.into());
    agent.replace_messages(messages).unwrap();
    assert_eq!(agent.declared_tool_changes(), ["mcp__s__lookup"]);
    agent.compact(None).await.unwrap();
    let after = agent.messages();
    assert!(
        after.len() < 21,
        "the middle was summarized: {} messages",
        after.len()
    );
    let AgentMessage::System(checkpoint) = &after[0] else {
        panic!("{:?}", after[0]);
    };
    let added = checkpoint.tools_added.as_ref().unwrap();
    assert_eq!(added[0].name, "mcp__s__lookup");
    assert_eq!(added[0].description, "Looks things up.");
    assert_eq!(agent.declared_tool_changes(), ["mcp__s__lookup"]);
}
