//! The agent through the in-process client over real HTTP to the scripted server
//! (makai-mockllm on 127.0.0.1), for both OpenAI Chat Completions and Anthropic.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use makai_agent::makai_ai::{Api, Model, RetryPolicy, StopReason};
use makai_agent::{
    Agent, AgentError, AgentEvent, AgentLoopConfig, AgentMessage, AgentRun, CancellationToken,
    CompactionReason, EndReason, InProcessClient, RunOutcome, SKIPPED_TOOL_TEXT, ToolExecution,
    ToolOutput, ToolSet, TypedTool, agent_loop,
};
use makai_mockllm::{BenchPacing, MockServer, Scenario, ScriptedResponse as Mock, bench_responder};

const APIS: [Api; 2] = [Api::OpenAiCompletions, Api::AnthropicMessages];

fn http_model(server: &MockServer, api: Api) -> Model {
    Model::custom(api, "mock", "mock-model", server.base_url_v1())
}

fn http_config(server: &MockServer, api: Api) -> AgentLoopConfig {
    let mut cfg = AgentLoopConfig::new(http_model(server, api), Arc::new(InProcessClient::new()));
    cfg.options.retry = RetryPolicy::none();
    cfg
}

async fn collect(run: AgentRun) -> (Vec<AgentEvent>, RunOutcome) {
    tokio::time::timeout(Duration::from_secs(20), run.collect())
        .await
        .expect("the run finished in time")
        .expect("the loop task did not fail")
}

async fn server(responses: Vec<Mock>) -> MockServer {
    MockServer::start(Scenario::new().extend(responses))
        .await
        .expect("mock server starts")
}

#[tokio::test]
async fn text_reply_event_order_over_http() {
    for api in APIS {
        let server = server(vec![Mock::text("Hello world")]).await;
        let run = agent_loop(
            vec!["hi".into()],
            context(vec![]),
            http_config(&server, api),
            CancellationToken::new(),
        );
        let (events, outcome) = collect(run).await;
        assert_contract(&events);
        assert_eq!(
            outline(&events),
            [
                "agent_start",
                "turn_start",
                "message_start:user",
                "message_end:user",
                "message_start:assistant",
                "updates",
                "message_end:assistant",
                "turn_end",
                "agent_end"
            ],
            "{api}"
        );
        let deltas: String = events.iter().filter_map(|e| e.text_delta()).collect();
        assert_eq!(deltas, "Hello world", "{api}");
        assert_eq!(outcome.end_reason, EndReason::Completed, "{api}");
        assert_eq!(outcome.messages[1].text(), "Hello world");
        let reqs = server.requests();
        assert_eq!(reqs.len(), 1);
        assert!(reqs[0].raw_body.contains("You are a test."), "{api}");
    }
}

#[tokio::test]
async fn one_tool_round_over_http() {
    for api in APIS {
        let server = server(vec![
            Mock::tool_call("call_1", "echo", r#"{"text":"pong"}"#),
            Mock::text("got it"),
        ])
        .await;
        let run = agent_loop(
            vec!["ping".into()],
            context(vec![echo_tool()]),
            http_config(&server, api),
            CancellationToken::new(),
        );
        let (events, outcome) = collect(run).await;
        assert_contract(&events);
        let o = outline(&events);
        let i = o
            .iter()
            .position(|l| l.starts_with("tool_execution_start"))
            .unwrap();
        assert_eq!(
            &o[i..],
            [
                "tool_execution_start:call_1",
                "tool_execution_end:call_1",
                "message_start:toolResult",
                "message_end:toolResult",
                "turn_end",
                "turn_start",
                "message_start:assistant",
                "updates",
                "message_end:assistant",
                "turn_end",
                "agent_end"
            ],
            "{api}"
        );
        assert_eq!(
            tool_result_texts(&events),
            [("call_1".into(), "pong".into(), false)]
        );
        assert_eq!(outcome.turns, 2);
        // The second request carried the tool result back over the wire.
        assert!(server.requests()[1].raw_body.contains("pong"), "{api}");
    }
}

#[tokio::test]
async fn parallel_tools_over_http() {
    let active = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let peak = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let server = server(vec![
        Mock::tool_call("a", "look", r#"{"ms":200}"#)
            .with_tool_call("b", "look", r#"{"ms":200}"#)
            .with_tool_call("c", "look", r#"{"ms":200}"#),
        Mock::text("done"),
    ])
    .await;
    let mut cfg = http_config(&server, Api::OpenAiCompletions);
    cfg.tool_execution = ToolExecution::Parallel;
    let started = Instant::now();
    let (events, _) = collect(agent_loop(
        vec!["go".into()],
        context(vec![sleep_tool("look", true, active, peak.clone())]),
        cfg,
        CancellationToken::new(),
    ))
    .await;
    assert_contract(&events);
    assert!(
        started.elapsed() < Duration::from_millis(550),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(peak.load(std::sync::atomic::Ordering::SeqCst), 3);
    assert_eq!(tool_result_texts(&events).len(), 3);
}

#[tokio::test]
async fn steering_mid_tools_over_http_skips_with_the_exact_text() {
    for api in APIS {
        let server = server(vec![
            Mock::tool_call("a", "slow", r#"{"text":"1"}"#)
                .with_tool_call("b", "slow", r#"{"text":"2"}"#)
                .with_tool_call("c", "slow", r#"{"text":"3"}"#),
            Mock::text("ok, changing course"),
        ])
        .await;
        let slow = TypedTool::new("slow", "Slow.", |a: EchoArgs, _ctx| async move {
            tokio::time::sleep(Duration::from_millis(150)).await;
            Ok(ToolOutput::text(a.text))
        })
        .into_arc();
        let agent = Agent::new(http_config(&server, api)).with_tools(ToolSet::new([slow]));
        let mut stream = agent.subscribe_stream();
        let handle = agent.start_prompt("go").unwrap();
        use futures::StreamExt;
        while let Some(e) = stream.next().await {
            if matches!(e, AgentEvent::ToolExecutionStart { .. }) {
                break;
            }
        }
        agent.steer("stop, summarize instead");
        let outcome = handle.await.unwrap();
        let results: Vec<(String, String, bool)> = outcome
            .messages
            .iter()
            .filter_map(|m| m.as_tool_result())
            .map(|r| (r.tool_call_id.clone(), r.text_content(), r.is_error))
            .collect();
        assert_eq!(
            results,
            [
                ("a".into(), "1".into(), false),
                ("b".into(), SKIPPED_TOOL_TEXT.into(), true),
                ("c".into(), SKIPPED_TOOL_TEXT.into(), true),
            ],
            "{api}"
        );
        let second = &server.requests()[1].raw_body;
        assert!(second.contains("stop, summarize instead"), "{api}");
        assert!(second.contains(SKIPPED_TOOL_TEXT), "{api}");
        assert_eq!(
            outcome.messages.last().unwrap().text(),
            "ok, changing course"
        );
    }
}

#[tokio::test]
async fn follow_up_over_http() {
    let server = server(vec![Mock::text("first"), Mock::text("second")]).await;
    let agent = Agent::new(http_config(&server, Api::AnthropicMessages));
    agent.follow_up("and more");
    let outcome = agent.prompt("start").await.unwrap();
    let texts: Vec<String> = outcome.messages.iter().map(AgentMessage::text).collect();
    assert_eq!(texts, ["start", "first", "and more", "second"]);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn abort_during_stream_over_http() {
    for api in APIS {
        let server = server(vec![Mock::text("one two three four five").stall_after(3)]).await;
        let agent = Agent::new(http_config(&server, api));
        let handle = agent.start_prompt("go").unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        agent.abort();
        let outcome = tokio::time::timeout(Duration::from_secs(5), handle)
            .await
            .expect("abort ends the run")
            .unwrap();
        assert_eq!(outcome.end_reason, EndReason::Aborted, "{api}");
        let last = outcome.messages.last().unwrap().as_assistant().unwrap();
        assert_eq!(last.stop_reason, StopReason::Aborted, "{api}");
    }
}

#[tokio::test]
async fn abort_during_a_tool_over_http() {
    let server = server(vec![
        Mock::tool_call("a", "wait", r#"{"text":""}"#).with_tool_call(
            "b",
            "wait",
            r#"{"text":""}"#,
        ),
        Mock::text("never reached"),
    ])
    .await;
    let saw_cancel = Arc::new(Mutex::new(false));
    let s = saw_cancel.clone();
    let wait = TypedTool::new("wait", "Waits.", move |_a: EchoArgs, ctx| {
        let s = s.clone();
        async move {
            ctx.cancel_token().cancelled().await;
            *s.lock().unwrap() = true;
            Ok(ToolOutput::text("stopped early"))
        }
    })
    .into_arc();
    let agent =
        Agent::new(http_config(&server, Api::OpenAiCompletions)).with_tools(ToolSet::new([wait]));
    let handle = agent.start_prompt("go").unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    agent.abort();
    let outcome = handle.await.unwrap();
    assert!(*saw_cancel.lock().unwrap());
    assert_eq!(outcome.end_reason, EndReason::Aborted);
    let results: Vec<String> = outcome
        .messages
        .iter()
        .filter_map(|m| m.as_tool_result())
        .map(|r| r.text_content())
        .collect();
    assert_eq!(
        results,
        ["stopped early", "Not executed: the run was aborted."]
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn panicking_unknown_and_invalid_tool_calls_over_http() {
    let server = server(vec![
        Mock::tool_call("a", "boom", r#"{"text":"x"}"#)
            .with_tool_call("b", "nope", r#"{}"#)
            .with_tool_call("c", "echo", r#"{"wrong":1}"#)
            .with_tool_call("d", "echo", r#"{"text":"fine"}"#),
        Mock::text("recovered"),
    ])
    .await;
    let boom = TypedTool::new("boom", "Panics.", |_a: EchoArgs, _ctx| async move {
        if true {
            panic!("tool bug");
        }
        Ok(ToolOutput::text(""))
    })
    .into_arc();
    let (events, outcome) = collect(agent_loop(
        vec!["go".into()],
        context(vec![boom, echo_tool()]),
        http_config(&server, Api::AnthropicMessages),
        CancellationToken::new(),
    ))
    .await;
    assert_contract(&events);
    let r = tool_result_texts(&events);
    assert!(r[0].2 && r[0].1.contains("crashed: tool bug"), "{r:?}");
    assert_eq!(
        r[1].1,
        "Tool 'nope' not found. Available tools: boom, echo."
    );
    assert!(
        r[2].2 && r[2].1.contains("\"text\" is a required property"),
        "{r:?}"
    );
    assert_eq!(r[3], ("d".into(), "fine".into(), false));
    assert_eq!(outcome.end_reason, EndReason::Completed);
    assert_eq!(outcome.messages.last().unwrap().text(), "recovered");
}

#[tokio::test]
async fn limits_over_http() {
    let looping = |server: &MockServer| {
        server.set_responder(Some(Arc::new(|_req: &makai_mockllm::RecordedRequest| {
            Mock::tool_call("x", "echo", r#"{"text":"again"}"#)
                .usage(makai_mockllm::Usage::new(100, 10))
        })));
    };
    let s = server(vec![]).await;
    looping(&s);
    let mut cfg = http_config(&s, Api::OpenAiCompletions);
    cfg.limits.max_turns = Some(2);
    let (_, o) = collect(agent_loop(
        vec!["go".into()],
        context(vec![echo_tool()]),
        cfg,
        CancellationToken::new(),
    ))
    .await;
    assert_eq!(o.end_reason, EndReason::MaxTurns { limit: 2 });
    assert_eq!(s.requests().len(), 2);

    let s = server(vec![]).await;
    looping(&s);
    let mut cfg = http_config(&s, Api::OpenAiCompletions);
    cfg.limits.max_total_tokens = Some(150);
    let (_, o) = collect(agent_loop(
        vec!["go".into()],
        context(vec![echo_tool()]),
        cfg,
        CancellationToken::new(),
    ))
    .await;
    assert!(
        matches!(o.end_reason, EndReason::MaxTotalTokens { limit: 150, used } if used >= 150),
        "{:?}",
        o.end_reason
    );
    assert_eq!(s.requests().len(), 2);

    let s = server(vec![Mock::text("a b c d").stall_after(2)]).await;
    let mut cfg = http_config(&s, Api::OpenAiCompletions);
    cfg.limits.max_wall_time = Some(Duration::from_millis(300));
    let started = Instant::now();
    let (_, o) = collect(agent_loop(
        vec!["go".into()],
        context(vec![]),
        cfg,
        CancellationToken::new(),
    ))
    .await;
    assert_eq!(o.end_reason, EndReason::MaxWallTime { limit_ms: 300 });
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn context_overflow_then_compaction_and_retry_over_http() {
    for api in APIS {
        let server = server(vec![
            Mock::new().with_status(400).with_body(
                r#"{"error":{"type":"invalid_request_error","message":"prompt is too long: 250000 tokens > 200000 maximum"}}"#,
            ),
            Mock::text("summary of the early work"),
            Mock::text("answer after compaction"),
        ])
        .await;
        let history: Vec<AgentMessage> = (0..24)
            .map(|i| AgentMessage::user(format!("message {i} {}", "x".repeat(300))))
            .collect();
        let (events, outcome) = collect(agent_loop(
            vec!["final question".into()],
            context(vec![]).with_messages(history),
            http_config(&server, api),
            CancellationToken::new(),
        ))
        .await;
        assert_contract(&events);
        let kinds: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::CompactionStart { reason } => Some(format!("start:{reason:?}")),
                AgentEvent::CompactionEnd {
                    will_retry, result, ..
                } => Some(format!(
                    "end:{will_retry}:{}",
                    result.as_ref().map(|r| r.summary.as_str()).unwrap_or("-")
                )),
                _ => None,
            })
            .collect();
        assert_eq!(
            kinds,
            [
                format!("start:{:?}", CompactionReason::Overflow),
                "end:true:summary of the early work".to_string()
            ],
            "{api}"
        );
        assert_eq!(outcome.end_reason, EndReason::Completed, "{api}");
        assert_eq!(
            outcome.messages.last().unwrap().text(),
            "answer after compaction"
        );
        let reqs = server.requests();
        assert_eq!(reqs.len(), 3);
        assert!(reqs[2].raw_body.contains("summary of the early work"));
        assert!(reqs[2].raw_body.len() < reqs[0].raw_body.len() / 2, "{api}");
    }
}

#[tokio::test]
async fn slow_subscriber_and_prompt_while_running_over_http() {
    let server = MockServer::start(Scenario::from_responder(bench_responder(
        50,
        2,
        BenchPacing::Replay,
    )))
    .await
    .unwrap();
    let echo = TypedTool::new("echo", "Echo.", |a: EchoArgs, _ctx| async move {
        Ok(ToolOutput::text(a.text))
    })
    .into_arc();
    let agent =
        Agent::new(http_config(&server, Api::OpenAiCompletions)).with_tools(ToolSet::new([echo]));
    let seen = Arc::new(Mutex::new(0usize));
    let s = seen.clone();
    let sleeper = agent
        .subscribe(move |_e| {
            *s.lock().unwrap() += 1;
            std::thread::sleep(Duration::from_secs(1));
        })
        .unwrap();
    let started = Instant::now();
    let handle = agent.start_prompt("go").unwrap();
    assert!(matches!(
        agent.prompt("again").await,
        Err(AgentError::AlreadyRunning)
    ));
    let outcome = handle.await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(outcome.end_reason, EndReason::Completed);
    assert!(outcome.messages.last().unwrap().text().ends_with("[final]"));
    assert!(*seen.lock().unwrap() <= 3);
    assert!(sleeper.queued() > 100);
}

#[tokio::test]
async fn provider_retries_become_auto_retry_events() {
    for api in APIS {
        let server = server(vec![
            Mock::text("one two three four five")
                .error_after(3, makai_mockllm::ErrorKind::Overloaded),
            Mock::text("second attempt"),
        ])
        .await;
        let mut cfg = http_config(&server, api);
        cfg.options.retry = RetryPolicy {
            max_retries: 2,
            initial_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(50),
        };
        let (events, outcome) = collect(agent_loop(
            vec!["go".into()],
            context(vec![]),
            cfg,
            CancellationToken::new(),
        ))
        .await;
        assert_contract(&events);
        let retry: Vec<serde_json::Value> = events
            .iter()
            .filter(|e| e.kind().starts_with("auto_retry"))
            .map(|e| serde_json::to_value(e).unwrap())
            .collect();
        assert_eq!(retry.len(), 2, "{api}: {retry:?}");
        assert_eq!(retry[0]["type"], "auto_retry_start");
        assert_eq!(retry[0]["attempt"], 1);
        assert_eq!(retry[0]["maxAttempts"], 2);
        assert_eq!(retry[1]["type"], "auto_retry_end");
        assert_eq!(retry[1]["success"], true);
        assert_eq!(
            outcome.messages.last().unwrap().text(),
            "second attempt",
            "{api}"
        );
        assert_eq!(server.requests().len(), 2);
    }
}

/// Regression: a retry before any byte streamed (429, 503) emitted
/// `auto_retry_start` ahead of the assistant `message_start` it belongs to.
#[tokio::test]
async fn auto_retry_start_before_any_byte_follows_message_start() {
    for status in [429u16, 503] {
        let server = server(vec![
            Mock::new().with_status(status),
            Mock::text("after the retry"),
        ])
        .await;
        let mut cfg = http_config(&server, Api::OpenAiCompletions);
        cfg.options.retry = RetryPolicy {
            max_retries: 2,
            initial_delay: Duration::from_millis(5),
            max_delay: Duration::from_millis(20),
        };
        let (events, outcome) = collect(agent_loop(
            vec!["go".into()],
            context(vec![]),
            cfg,
            CancellationToken::new(),
        ))
        .await;
        assert_contract(&events);
        let kinds: Vec<&str> = events.iter().map(AgentEvent::kind).collect();
        let start = kinds.iter().rposition(|k| *k == "message_start").unwrap();
        let retry = kinds.iter().position(|k| *k == "auto_retry_start").unwrap();
        assert!(start < retry, "{status}: {kinds:?}");
        assert_eq!(outcome.messages.last().unwrap().text(), "after the retry");
        assert_eq!(server.requests().len(), 2);
    }
}

/// Waits (at most 5 s) until `server` has accepted `n` connections: it
/// counts one when it accepts it, a moment after the client connected.
async fn wait_for_connections(server: &MockServer, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while server.connections() != n && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(server.connections(), n);
}

/// The agent opens its model's connection before the prompt, and the
/// prompt's request goes out on it; after a model switch, on the new one's.
#[tokio::test]
async fn preconnect_opens_the_connection_the_next_prompt_takes() {
    let first = server(vec![Mock::text("one")]).await;
    let second = server(vec![Mock::text("two")]).await;
    let agent = Agent::new(http_config(&first, Api::OpenAiCompletions));
    agent.preconnect().await;
    wait_for_connections(&first, 1).await;
    assert_eq!(first.served(), 0, "nothing is sent to the model");
    let outcome = agent.prompt("hi").await.unwrap();
    assert_eq!(outcome.messages.last().unwrap().text(), "one");
    assert_eq!(first.connections(), 1);

    agent.set_model(http_model(&second, Api::AnthropicMessages));
    agent.preconnect().await;
    wait_for_connections(&second, 1).await;
    let outcome = agent.prompt("again").await.unwrap();
    assert_eq!(outcome.messages.last().unwrap().text(), "two");
    assert_eq!(second.connections(), 1);
    assert_eq!(first.connections(), 1);
}
