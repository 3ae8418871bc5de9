//! Hooks that panic, through the in-process client over real HTTP to the
//! scripted server: each panic is contained as `AgentHooks` documents, the run
//! ends cleanly or goes on, and the agent is idle and usable afterwards.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use common::*;
use futures::StreamExt;
use makai_agent::makai_ai::{Api, AssistantMessage, Message, Model, RetryPolicy, StopReason};
use makai_agent::{
    Agent, AgentEvent, AgentHooks, AgentLoopConfig, AgentMessage, AgentStatus, CancellationToken,
    EndReason, InProcessClient, InputDecision, RunOutcome, ToolCallDecision, ToolCallInfo,
    ToolOutput, ToolResultOverride, ToolSet, TurnDecision, TurnInfo, TurnSummary, TypedTool,
    agent_loop, default_convert_to_llm,
};
use makai_mockllm::{MockServer, Scenario, ScriptedResponse as Mock};
use serde_json::json;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Hook {
    TransformContext,
    ConvertToLlm,
    BeforeTurn,
    AfterTurn,
    OnError,
    OnModelRequest,
    BeforeToolCall,
    AfterToolCall,
    FilterInput,
    Steering,
    FollowUp,
}

/// Hooks that panic once, in one chosen hook; `filter_input` only on a message
/// containing `only_text`, when set.
struct PanicOnce {
    hook: Hook,
    armed: AtomicBool,
    only_text: Option<&'static str>,
    /// Tool results `after_tool_call` saw.
    seen_results: Mutex<Vec<String>>,
}

impl PanicOnce {
    fn new(hook: Hook) -> Arc<Self> {
        Arc::new(PanicOnce {
            hook,
            armed: AtomicBool::new(true),
            only_text: None,
            seen_results: Mutex::new(Vec::new()),
        })
    }

    fn on_text(hook: Hook, text: &'static str) -> Arc<Self> {
        Arc::new(PanicOnce {
            hook,
            armed: AtomicBool::new(true),
            only_text: Some(text),
            seen_results: Mutex::new(Vec::new()),
        })
    }

    fn trip(&self, hook: Hook) {
        if hook == self.hook && self.armed.swap(false, Ordering::SeqCst) {
            panic!("boom in {hook:?}");
        }
    }
}

#[async_trait]
impl AgentHooks for PanicOnce {
    async fn transform_context(
        &self,
        _messages: &[AgentMessage],
        _cancel: &CancellationToken,
    ) -> Option<Vec<AgentMessage>> {
        self.trip(Hook::TransformContext);
        None
    }
    fn convert_to_llm(&self, messages: &[AgentMessage]) -> Vec<Message> {
        self.trip(Hook::ConvertToLlm);
        default_convert_to_llm(messages)
    }
    async fn before_turn(&self, _turn: &TurnInfo<'_>) -> TurnDecision {
        self.trip(Hook::BeforeTurn);
        TurnDecision::Continue
    }
    async fn after_turn(&self, _turn: &TurnSummary<'_>) {
        self.trip(Hook::AfterTurn);
    }
    fn on_model_request(
        &self,
        _model: &Model,
        _context: &makai_agent::makai_ai::Context,
        _options: &makai_agent::makai_ai::StreamOptions,
    ) {
        self.trip(Hook::OnModelRequest);
    }
    async fn on_error(&self, _message: &AssistantMessage) {
        self.trip(Hook::OnError);
    }
    async fn before_tool_call(&self, _call: &ToolCallInfo<'_>) -> ToolCallDecision {
        self.trip(Hook::BeforeToolCall);
        ToolCallDecision::Allow
    }
    async fn after_tool_call(
        &self,
        _call: &ToolCallInfo<'_>,
        result: &ToolOutput,
        _is_error: bool,
    ) -> Option<ToolResultOverride> {
        self.seen_results
            .lock()
            .unwrap()
            .push(result.text_content());
        self.trip(Hook::AfterToolCall);
        None
    }
    async fn filter_input(&self, message: &AgentMessage) -> InputDecision {
        if self.only_text.is_none_or(|t| message.text().contains(t)) {
            self.trip(Hook::FilterInput);
        }
        InputDecision::Accept
    }
    async fn get_steering_messages(&self) -> Vec<AgentMessage> {
        self.trip(Hook::Steering);
        Vec::new()
    }
    async fn get_follow_up_messages(&self) -> Vec<AgentMessage> {
        self.trip(Hook::FollowUp);
        Vec::new()
    }
}

async fn server(responses: Vec<Mock>) -> MockServer {
    MockServer::start(Scenario::new().extend(responses))
        .await
        .expect("mock server starts")
}

fn http_config(server: &MockServer, api: Api, hooks: Arc<dyn AgentHooks>) -> AgentLoopConfig {
    let model = Model::custom(api, "mock", "mock-model", server.base_url_v1());
    let mut cfg = AgentLoopConfig::new(model, Arc::new(InProcessClient::new()));
    cfg.options.retry = RetryPolicy::none();
    cfg.hooks = hooks;
    cfg
}

fn agent(server: &MockServer, hooks: Arc<dyn AgentHooks>) -> Agent {
    Agent::new(http_config(server, Api::OpenAiCompletions, hooks))
        .with_system_prompt("You are a test.")
        .with_tools(ToolSet::new([echo_tool()]))
}

/// Runs a prompt on `agent`, returning the events a subscriber saw and the outcome.
async fn prompt(agent: &Agent, text: &str) -> (Vec<AgentEvent>, RunOutcome) {
    let mut stream = agent.subscribe_stream();
    let outcome = tokio::time::timeout(Duration::from_secs(20), agent.prompt(text))
        .await
        .expect("the run finished in time")
        .expect("the run started and its task did not fail");
    let mut events = Vec::new();
    while let Some(e) = tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("agent_end reached the subscriber")
    {
        let end = matches!(e, AgentEvent::AgentEnd { .. });
        events.push(e);
        if end {
            break;
        }
    }
    (events, outcome)
}

fn assert_hook_panicked(reason: &EndReason, hook: &str, panic_text: &str) {
    match reason {
        EndReason::HookPanicked { hook: h, message } => {
            assert_eq!(h, hook);
            assert!(message.contains(panic_text), "{message}");
        }
        other => panic!("expected HookPanicked in {hook}, got {other:?}"),
    }
}

/// The agent is idle, and a new prompt runs to completion over HTTP.
async fn assert_usable_again(agent: &Agent, server: &MockServer) {
    assert_eq!(agent.status(), AgentStatus::Idle);
    assert!(!agent.is_running());
    let before = server.requests().len();
    server.push(Mock::text("working again"));
    let (events, outcome) = prompt(agent, "are you there?").await;
    assert_contract(&events);
    assert_eq!(outcome.end_reason, EndReason::Completed);
    assert_eq!(outcome.messages.last().unwrap().text(), "working again");
    assert_eq!(server.requests().len(), before + 1);
    assert_eq!(agent.status(), AgentStatus::Idle);
    server.assert_request_invariants();
}

#[tokio::test]
async fn a_panicking_transform_context_or_convert_to_llm_ends_the_run_before_any_request() {
    let cases = [
        (Hook::TransformContext, "transform_context"),
        (Hook::ConvertToLlm, "convert_to_llm"),
    ];
    for api in [Api::OpenAiCompletions, Api::AnthropicMessages] {
        for (hook, name) in cases {
            let server = server(vec![]).await;
            let agent = Agent::new(http_config(&server, api, PanicOnce::new(hook)));
            let (events, outcome) = prompt(&agent, "hello").await;
            assert_contract(&events);
            assert_hook_panicked(&outcome.end_reason, name, &format!("boom in {hook:?}"));
            assert_eq!(
                outline(&events),
                [
                    "agent_start",
                    "turn_start",
                    "message_start:user",
                    "message_end:user",
                    "message_start:assistant",
                    "message_end:assistant",
                    "turn_end",
                    "agent_end"
                ],
                "{api} {name}"
            );
            let Some(AgentEvent::AgentEnd { end_reason, .. }) = events.last() else {
                panic!("agent_end last")
            };
            assert_eq!(end_reason, &outcome.end_reason);
            assert!(
                server.requests().is_empty(),
                "{api} {name}: no request sent"
            );
            // The turn closes with an aborted, empty assistant message.
            let last = outcome.messages.last().unwrap().as_assistant().unwrap();
            assert_eq!(
                last.stop_reason,
                StopReason::Aborted,
                "{api} {name}: {:?}",
                last.error_message
            );
            assert!(last.content.is_empty());
            let state = agent.state();
            assert!(
                state
                    .error_message
                    .as_deref()
                    .is_some_and(|e| e.contains(&format!("the {name} hook panicked"))),
                "{:?}",
                state.error_message
            );
            assert_eq!(state.messages.len(), 2);
            assert_usable_again(&agent, &server).await;
        }
    }
}

#[tokio::test]
async fn a_panicking_before_turn_ends_the_run_before_the_turn() {
    let server = server(vec![]).await;
    let agent = agent(&server, PanicOnce::new(Hook::BeforeTurn));
    let (events, outcome) = prompt(&agent, "hello").await;
    assert_contract(&events);
    assert_eq!(outline(&events), ["agent_start", "agent_end"]);
    assert_hook_panicked(&outcome.end_reason, "before_turn", "boom in BeforeTurn");
    assert!(server.requests().is_empty());
    assert!(agent.messages().is_empty());
    assert_usable_again(&agent, &server).await;
}

#[tokio::test]
async fn a_panicking_filter_on_the_prompt_ends_the_run_without_using_it() {
    let server = server(vec![]).await;
    let agent = agent(&server, PanicOnce::new(Hook::FilterInput));
    let (events, outcome) = prompt(&agent, "my secret is hunter2").await;
    assert_contract(&events);
    assert_eq!(outline(&events), ["agent_start", "agent_end"]);
    assert_hook_panicked(&outcome.end_reason, "filter_input", "boom in FilterInput");
    assert!(outcome.messages.is_empty() && agent.messages().is_empty());
    assert!(server.requests().is_empty());
    assert_usable_again(&agent, &server).await;
}

#[tokio::test]
async fn a_panicking_filter_on_steering_ends_the_run_before_the_next_call_and_keeps_the_queues() {
    let server = server(vec![
        Mock::tool_call("a", "slow", r#"{"text":"1"}"#).with_tool_call(
            "b",
            "slow",
            r#"{"text":"2"}"#,
        ),
    ])
    .await;
    let slow = TypedTool::new("slow", "Slow.", |a: EchoArgs, _ctx| async move {
        tokio::time::sleep(Duration::from_millis(150)).await;
        Ok(ToolOutput::text(a.text))
    })
    .into_arc();
    let agent = Agent::new(http_config(
        &server,
        Api::OpenAiCompletions,
        PanicOnce::on_text(Hook::FilterInput, "steer"),
    ))
    .with_tools(ToolSet::new([slow]));
    let mut stream = agent.subscribe_stream();
    let handle = agent.start_prompt("go").unwrap();
    while let Some(e) = stream.next().await {
        if matches!(e, AgentEvent::ToolExecutionStart { .. }) {
            break;
        }
    }
    agent.steer("steer: change course");
    agent.follow_up("a later question");
    let outcome = tokio::time::timeout(Duration::from_secs(10), handle)
        .await
        .unwrap()
        .unwrap();
    assert_hook_panicked(&outcome.end_reason, "filter_input", "boom in FilterInput");
    // The calls already under way finished; every call has its result.
    let results: Vec<(String, bool)> = outcome
        .messages
        .iter()
        .filter_map(|m| m.as_tool_result())
        .map(|r| (r.text_content(), r.is_error))
        .collect();
    assert_eq!(results, [("1".into(), false), ("2".into(), false)]);
    assert_eq!(server.requests().len(), 1, "no model call after the panic");
    assert!(
        outcome
            .messages
            .iter()
            .all(|m| !m.text().contains("change course")),
        "the unfiltered message was not used"
    );
    // The follow-up was not taken from the queue while the run was ending.
    assert!(agent.has_queued_messages());
    assert_eq!(agent.status(), AgentStatus::Idle);
    // It is delivered by the next run.
    server.clear_requests();
    server.push(Mock::text("answer"));
    server.push(Mock::text("answer to the later question"));
    let outcome = agent.prompt("next").await.unwrap();
    assert_eq!(outcome.end_reason, EndReason::Completed);
    let texts: Vec<String> = outcome.messages.iter().map(AgentMessage::text).collect();
    assert_eq!(
        texts,
        [
            "next",
            "answer",
            "a later question",
            "answer to the later question"
        ]
    );
    server.assert_request_invariants();
}

#[tokio::test]
async fn a_panicking_before_tool_call_blocks_that_call_and_the_run_goes_on() {
    let server = server(vec![
        Mock::tool_call("a", "counted", r#"{"text":"x"}"#).with_tool_call(
            "b",
            "counted",
            r#"{"text":"y"}"#,
        ),
        Mock::text("handled"),
    ])
    .await;
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let counted = TypedTool::new("counted", "Counts.", move |a: EchoArgs, _ctx| {
        let r = r.clone();
        async move {
            r.fetch_add(1, Ordering::SeqCst);
            Ok(ToolOutput::text(a.text))
        }
    })
    .into_arc();
    let agent = Agent::new(http_config(
        &server,
        Api::AnthropicMessages,
        PanicOnce::new(Hook::BeforeToolCall),
    ))
    .with_tools(ToolSet::new([counted]));
    let (events, outcome) = prompt(&agent, "go").await;
    assert_contract(&events);
    assert_eq!(outcome.end_reason, EndReason::Completed);
    let results = tool_result_texts(&events);
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].0, "a");
    assert!(results[0].2, "the blocked call is an error result");
    assert!(
        results[0].1.contains("before_tool_call hook panicked")
            && results[0].1.contains("boom in BeforeToolCall")
            && results[0].1.contains("'counted'"),
        "{}",
        results[0].1
    );
    assert_eq!(results[1], ("b".into(), "y".into(), false));
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "the blocked call did not run"
    );
    assert_eq!(outcome.messages.last().unwrap().text(), "handled");
    let second = &server.requests()[1].raw_body;
    assert!(second.contains("before_tool_call hook panicked"));
    server.assert_request_invariants();
    assert_usable_again(&agent, &server).await;
}

#[tokio::test]
async fn a_panicking_after_tool_call_keeps_the_original_result() {
    let server = server(vec![
        Mock::tool_call("a", "echo", r#"{"text":"pong"}"#),
        Mock::text("got it"),
    ])
    .await;
    let hooks = PanicOnce::new(Hook::AfterToolCall);
    let agent = agent(&server, hooks.clone());
    let (events, outcome) = prompt(&agent, "ping").await;
    assert_contract(&events);
    assert_eq!(*hooks.seen_results.lock().unwrap(), ["pong"]);
    assert_eq!(
        tool_result_texts(&events),
        [("a".into(), "pong".into(), false)]
    );
    assert_eq!(outcome.end_reason, EndReason::Completed);
    assert!(server.requests()[1].raw_body.contains("pong"));
    assert_usable_again(&agent, &server).await;
}

#[tokio::test]
async fn a_panicking_after_turn_is_logged_and_the_run_goes_on() {
    let server = server(vec![
        Mock::tool_call("a", "echo", r#"{"text":"pong"}"#),
        Mock::text("second turn"),
    ])
    .await;
    let agent = agent(&server, PanicOnce::new(Hook::AfterTurn));
    let (events, outcome) = prompt(&agent, "ping").await;
    assert_contract(&events);
    assert_eq!(outcome.end_reason, EndReason::Completed);
    assert_eq!(outcome.turns, 2);
    assert_eq!(outcome.messages.last().unwrap().text(), "second turn");
    assert_usable_again(&agent, &server).await;
}

#[tokio::test]
async fn a_panicking_on_model_request_is_logged_and_the_request_goes_out() {
    let server = server(vec![
        Mock::tool_call("a", "echo", r#"{"text":"pong"}"#),
        Mock::text("second turn"),
    ])
    .await;
    let agent = agent(&server, PanicOnce::new(Hook::OnModelRequest));
    let (events, outcome) = prompt(&agent, "ping").await;
    assert_contract(&events);
    assert_eq!(outcome.end_reason, EndReason::Completed);
    assert_eq!(outcome.turns, 2);
    assert_eq!(server.requests().len(), 2);
    assert_eq!(outcome.messages.last().unwrap().text(), "second turn");
    assert_usable_again(&agent, &server).await;
}

#[tokio::test]
async fn a_panicking_on_error_leaves_the_error_as_the_end_reason() {
    let server = server(vec![Mock::new().with_status(500)]).await;
    let agent = agent(&server, PanicOnce::new(Hook::OnError));
    let (events, outcome) = prompt(&agent, "hello").await;
    assert_contract(&events);
    assert!(
        matches!(outcome.end_reason, EndReason::Error { ref message } if message.contains("500")),
        "{:?}",
        outcome.end_reason
    );
    assert_eq!(server.requests().len(), 1);
    assert_usable_again(&agent, &server).await;
}

#[tokio::test]
async fn panicking_queue_getters_count_as_no_messages_and_lose_nothing_queued() {
    // Steering: the agent's own queued message is still delivered in the first turn.
    let server1 = server(vec![Mock::text("both seen")]).await;
    let agent1 = agent(&server1, PanicOnce::new(Hook::Steering));
    agent1.steer("also consider this");
    let (events, outcome) = prompt(&agent1, "hello").await;
    assert_contract(&events);
    assert_eq!(outcome.end_reason, EndReason::Completed);
    let texts: Vec<String> = outcome.messages.iter().map(AgentMessage::text).collect();
    assert_eq!(texts, ["hello", "also consider this", "both seen"]);
    assert!(
        server1.requests()[0]
            .raw_body
            .contains("also consider this")
    );
    assert_usable_again(&agent1, &server1).await;

    // Follow-up: the queued follow-up still starts another turn.
    let server2 = server(vec![Mock::text("first"), Mock::text("second")]).await;
    let agent2 = agent(&server2, PanicOnce::new(Hook::FollowUp));
    agent2.follow_up("and more");
    let (events, outcome) = prompt(&agent2, "start").await;
    assert_contract(&events);
    assert_eq!(outcome.end_reason, EndReason::Completed);
    let texts: Vec<String> = outcome.messages.iter().map(AgentMessage::text).collect();
    assert_eq!(texts, ["start", "first", "and more", "second"]);
    assert!(!agent2.has_queued_messages());
    assert_usable_again(&agent2, &server2).await;

    // The low-level loop: no queue, the run simply completes.
    for hook in [Hook::Steering, Hook::FollowUp] {
        let server3 = server(vec![Mock::text("done")]).await;
        let (events, outcome) = agent_loop(
            vec!["hi".into()],
            context(vec![]),
            http_config(&server3, Api::OpenAiCompletions, PanicOnce::new(hook)),
            CancellationToken::new(),
        )
        .collect()
        .await
        .unwrap();
        assert_contract(&events);
        assert_eq!(outcome.end_reason, EndReason::Completed, "{hook:?}");
        assert_eq!(outcome.messages.last().unwrap().text(), "done");
    }
}

#[tokio::test]
async fn the_low_level_loop_reports_a_hook_panic_the_same_way() {
    let server = server(vec![]).await;
    let (events, outcome) = agent_loop(
        vec!["hi".into()],
        context(vec![]),
        http_config(
            &server,
            Api::OpenAiCompletions,
            PanicOnce::new(Hook::TransformContext),
        ),
        CancellationToken::new(),
    )
    .collect()
    .await
    .unwrap();
    assert_contract(&events);
    assert_hook_panicked(
        &outcome.end_reason,
        "transform_context",
        "boom in TransformContext",
    );
    assert!(server.requests().is_empty());
    // pi-style JSON for the end reason.
    let Some(end) = events.last() else { panic!() };
    let v = serde_json::to_value(end).unwrap();
    assert_eq!(
        v["endReason"],
        json!({"type": "hookPanicked", "hook": "transform_context", "message": "boom in TransformContext"})
    );
}
