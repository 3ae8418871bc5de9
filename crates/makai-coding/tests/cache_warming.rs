//! [`CacheWarmer`] through its public API, with a host the test controls and a
//! scripted client: a model whose cache entry lives 11 s is refreshed a
//! second after its request, with the request's context and a one-token cap,
//! until the host says the conversation moved on; requests that cannot be
//! kept warm, the `streaming` mode and refreshes that do not pay stop it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use makai_agent::testing::{ScriptedClient, ScriptedResponse};
use makai_agent::{Agent, AgentLoopConfig, TranscriptMark};
use makai_ai::{
    Api, AssistantMessage, CacheRetention, Context, Model, PromptCacheLifetimes, StreamOptions,
    ThinkingLevel, UserMessage,
};
use makai_coding::cache_warming::{
    CacheWarmer, CacheWarmingMode, WarmingHost, WarmingState, WarmingStatus,
};

/// A host whose answers the test sets; the transcript marks come from an
/// idle agent the test never runs.
struct Host {
    mode: Mutex<CacheWarmingMode>,
    current: AtomicBool,
    prompt_tokens: AtomicU64,
    warmed: Mutex<Vec<AssistantMessage>>,
    agent: Agent,
}

impl Host {
    fn new(mode: CacheWarmingMode) -> Arc<Host> {
        let client = ScriptedClient::new([]);
        Arc::new(Host {
            mode: Mutex::new(mode),
            current: AtomicBool::new(true),
            prompt_tokens: AtomicU64::new(100_000),
            warmed: Mutex::new(Vec::new()),
            agent: Agent::new(AgentLoopConfig::new(model(), client)),
        })
    }
}

impl WarmingHost for Host {
    fn mode(&self) -> CacheWarmingMode {
        *self.mode.lock().unwrap()
    }
    fn transcript_mark(&self) -> TranscriptMark {
        self.agent.transcript_mark()
    }
    fn is_current(&self, _model: &Model, mark: TranscriptMark) -> bool {
        self.current.load(Ordering::SeqCst) && self.agent.transcript_continues(mark)
    }
    fn last_prompt_tokens(&self) -> u64 {
        self.prompt_tokens.load(Ordering::SeqCst)
    }
    fn warmed(&self, message: &AssistantMessage) {
        self.warmed.lock().unwrap().push(message.clone());
    }
}

/// Sonnet's prices with a $30 cache write: even idle, a 100k-token prompt
/// is worth a refresh.
fn model() -> Model {
    let mut m = Model::custom(
        Api::AnthropicMessages,
        "anthropic",
        "claude-sonnet-4-5",
        "http://127.0.0.1:9",
    );
    m.cost.input = 3.0;
    m.cost.output = 15.0;
    m.cost.cache_read = 0.3;
    m.cost.cache_write = 30.0;
    m.prompt_cache = Some(PromptCacheLifetimes {
        short: Some(11),
        long: None,
    });
    m
}

fn context() -> Context {
    Context {
        system_prompt: Some("sys".into()),
        messages: vec![makai_ai::Message::User(UserMessage {
            content: vec![makai_ai::UserContent::text("a long question")],
            timestamp: 0,
        })],
        tools: Vec::new(),
    }
}

fn options() -> StreamOptions {
    StreamOptions {
        max_tokens: Some(8192),
        cache_retention: CacheRetention::Short,
        ..StreamOptions::default()
    }
}

fn warmer(host: &Arc<Host>, client: Arc<ScriptedClient>) -> Arc<CacheWarmer> {
    let warmer = CacheWarmer::new(client);
    let weak: std::sync::Weak<dyn WarmingHost> = Arc::downgrade(host) as _;
    warmer.set_host(weak);
    warmer
}

fn inactive_reason(status: &WarmingStatus) -> Option<&str> {
    match &status.state {
        WarmingState::Inactive(reason) => Some(reason),
        _ => None,
    }
}

#[tokio::test]
async fn the_request_is_sent_again_with_a_one_token_cap_until_the_conversation_moves_on() {
    let client = ScriptedClient::from_fn(|_, _| ScriptedResponse::text(".").with_usage(0, 1));
    let host = Host::new(CacheWarmingMode::Idle);
    let warmer = warmer(&host, client.clone());
    let started = Instant::now();
    warmer.start(&model(), &context(), &options());
    match warmer.status().state {
        WarmingState::Scheduled(at) => {
            let wait = at.duration_since(started);
            assert!(wait < Duration::from_millis(1100), "due in {wait:?}");
            assert!(wait > Duration::from_millis(900), "due in {wait:?}");
        }
        other => panic!("not scheduled: {other:?}"),
    }
    assert!(
        warmer
            .status()
            .describe(Instant::now())
            .contains("100% continuation probability while agent is running"),
        "{}",
        warmer.status().describe(Instant::now())
    );
    tokio::time::sleep(Duration::from_millis(1400)).await;
    let requests = client.requests();
    assert_eq!(requests.len(), 1, "one refresh after a second");
    assert_eq!(requests[0].context, context());
    assert_eq!(host.warmed.lock().unwrap().len(), 1);

    // Idle, the refreshes go on (the idle chance still pays for them).
    warmer.on_agent_settled();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(client.calls(), 2);
    assert!(
        warmer
            .status()
            .describe(Instant::now())
            .contains("15% continuation probability"),
        "{}",
        warmer.status().describe(Instant::now())
    );

    // The conversation moved on: the next refresh is not sent.
    host.current.store(false, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(client.calls(), 2);
    assert_eq!(
        inactive_reason(&warmer.status()),
        Some("conversation context changed")
    );
}

#[tokio::test]
async fn requests_that_cannot_be_kept_warm_stop_it_with_pis_reasons() {
    let client = ScriptedClient::from_fn(|_, _| ScriptedResponse::text("."));
    let host = Host::new(CacheWarmingMode::Idle);
    let warmer = warmer(&host, client.clone());

    let mut no_lifetime = model();
    no_lifetime.prompt_cache = None;
    warmer.start(&no_lifetime, &context(), &options());
    assert_eq!(
        inactive_reason(&warmer.status()),
        Some("cache lifetime unavailable")
    );

    let no_cache = StreamOptions {
        cache_retention: CacheRetention::None,
        ..options()
    };
    warmer.start(&model(), &context(), &no_cache);
    assert_eq!(
        inactive_reason(&warmer.status()),
        Some("request disabled prompt caching")
    );

    // No long lifetime declared for this model.
    let long = StreamOptions {
        cache_retention: CacheRetention::Long,
        ..options()
    };
    warmer.start(&model(), &context(), &long);
    assert_eq!(
        inactive_reason(&warmer.status()),
        Some("cache lifetime unavailable")
    );

    // Claude Sonnet 4.5 thinks within a budget: a replay could think it all.
    let mut reasoning = model();
    reasoning.reasoning = true;
    let thinking = StreamOptions {
        thinking: ThinkingLevel::High,
        ..options()
    };
    warmer.start(&reasoning, &context(), &thinking);
    assert_eq!(
        inactive_reason(&warmer.status()),
        Some("request cannot be replayed safely")
    );
    // Adaptive thinking (Opus 4.6 and later) replays as it was.
    reasoning.id = "claude-opus-4-6".into();
    warmer.start(&reasoning, &context(), &thinking);
    assert!(matches!(warmer.status().state, WarmingState::Scheduled(_)));

    *host.mode.lock().unwrap() = CacheWarmingMode::Off;
    warmer.start(&model(), &context(), &options());
    assert_eq!(
        inactive_reason(&warmer.status()),
        Some("cache warming disabled")
    );
    tokio::time::sleep(Duration::from_millis(1300)).await;
    assert_eq!(client.calls(), 0, "nothing was ever sent");
}

#[tokio::test]
async fn streaming_mode_stops_when_the_run_settles_and_unprofitable_refreshes_stop() {
    let client = ScriptedClient::from_fn(|_, _| ScriptedResponse::text("."));
    let host = Host::new(CacheWarmingMode::Streaming);
    let warmer = warmer(&host, client.clone());
    warmer.start(&model(), &context(), &options());
    warmer.on_agent_settled();
    assert_eq!(inactive_reason(&warmer.status()), Some("agent run settled"));

    // Idle, a 2 000-token prompt does not pay for a refresh.
    *host.mode.lock().unwrap() = CacheWarmingMode::Idle;
    host.prompt_tokens.store(2_000, Ordering::SeqCst);
    warmer.start(&model(), &context(), &options());
    warmer.on_agent_settled();
    tokio::time::sleep(Duration::from_millis(1300)).await;
    assert_eq!(client.calls(), 0);
    let status = warmer.status();
    assert_eq!(
        inactive_reason(&status),
        Some("expected savings below threshold")
    );
    assert!(
        status
            .describe(Instant::now())
            .starts_with("Stopped (15% continuation probability, expected savings"),
        "{}",
        status.describe(Instant::now())
    );
}

#[tokio::test]
async fn a_dropped_warmer_sends_nothing_more() {
    let client = ScriptedClient::from_fn(|_, _| ScriptedResponse::text("."));
    let host = Host::new(CacheWarmingMode::Idle);
    let warmer = warmer(&host, client.clone());
    warmer.start(&model(), &context(), &options());
    drop(warmer);
    tokio::time::sleep(Duration::from_millis(1300)).await;
    assert_eq!(client.calls(), 0);
}
