//! `makai serve --store postgres://...`: a stateless instance. Sessions live
//! in PostgreSQL and any instance serves any of them (docs/scale-out.md).
//!
//! - Each protocol client (its id is the `welcome`'s session id, kept across
//!   reconnects and across instances) works on one agent session, recorded in
//!   the store: a new one at its first command, another after `new_session`
//!   or `switch_session` (by id).
//! - Commands that only read are answered by this instance from the session
//!   as stored (loaded again when another instance appended since).
//! - Commands that start work need the session's lease ([`run`]): this
//!   instance takes it, runs the command and lets the lease go once the
//!   session is idle. When another instance holds it, `prompt`, `steer`,
//!   `follow_up` and the aborts go to the session's inbox (answered
//!   `queued`) and the holder runs them as if they were sent there (a
//!   `prompt` without `streamingBehavior` that finds the session streaming
//!   fails there, and that response reaches the subscribers as an event);
//!   other commands are refused with the holder's name.
//! - A subscription follows the session's feed (its events and entries as
//!   the instance running it wrote them), numbered from where it started, so
//!   a client resumes it on any instance at the same sequence number.
//! - A lease not renewed (its instance died) is taken over by a live
//!   instance, which tells the session's clients the run was interrupted.

mod loaded;
mod run;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::BoxStream;
use makai_coding::session::{SessionHeader, StoredSession, new_session_id};
use makai_coding::{SessionStore, session::SessionError};
use makai_protocol::{ErrorCode, Refusal, SessionHandler};
use makai_rpc::{Record, ResponseData, RpcCommand, RpcRequest, RpcResponse};
use makai_store_pg::PgStore;
use makai_store_pg::feed::FeedError;
use serde_json::value::RawValue;

use crate::app::setup::{BuildOptions, build_with};
use crate::cli::Args;
use crate::error::CliError;
use crate::serve::ServedSession;

pub(crate) use loaded::Loaded;

/// How a stateless instance runs.
#[derive(Clone, Debug)]
pub struct SharedConfig {
    /// This instance's name in leases (unique among the instances).
    pub instance: String,
    /// How long a lease lasts without renewal: how long after an instance
    /// dies its sessions wait for another.
    pub lease_ttl: Duration,
    /// How long a running prompt may take to finish at shutdown.
    pub grace: Duration,
}

/// The [`SessionHandler`] of a stateless `makai serve`.
pub struct SharedSessions {
    store: PgStore,
    dyn_store: Arc<dyn SessionStore>,
    args: Args,
    config: SharedConfig,
    /// The sessions this instance loaded.
    loaded: tokio::sync::Mutex<HashMap<String, Arc<Loaded>>>,
    draining: AtomicBool,
    /// Itself, for the tasks it starts.
    this: Weak<SharedSessions>,
}

impl std::fmt::Debug for SharedSessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedSessions")
            .field("store", &self.store)
            .field("instance", &self.config.instance)
            .finish_non_exhaustive()
    }
}

/// A command with its text, for the inbox of another instance.
pub struct Command {
    record: Record,
    text: String,
}

/// One event as the feed holds it (JSON text, sent as is).
pub type FeedEvent = Box<RawValue>;

fn failure(request: &RpcRequest, message: impl Into<String>) -> RpcResponse {
    RpcResponse::failure(request.id.clone(), request.command.name(), message)
}

fn unavailable(e: impl std::fmt::Display) -> Refusal {
    Refusal {
        code: ErrorCode::Unavailable,
        message: format!("{e}; try again once the database is back"),
    }
}

/// How a command is served.
enum Kind {
    /// Answered from the session as stored.
    Read,
    /// Needs the lease; queued for the holder when another instance has it.
    Queueable,
    /// Needs the lease; refused while another instance has it.
    Exclusive,
    /// Changes which session the client uses.
    Rebind,
}

fn kind(command: &RpcCommand) -> Kind {
    match command {
        RpcCommand::GetState
        | RpcCommand::GetMessages
        | RpcCommand::GetAvailableModels
        | RpcCommand::GetAvailableThinkingLevels
        | RpcCommand::GetSessionStats
        | RpcCommand::ExportHtml(_)
        | RpcCommand::GetForkMessages
        | RpcCommand::GetEntries(_)
        | RpcCommand::GetTree
        | RpcCommand::GetLastAssistantText
        | RpcCommand::GetCommands => Kind::Read,
        RpcCommand::Prompt(_)
        | RpcCommand::Steer(_)
        | RpcCommand::FollowUp(_)
        | RpcCommand::Abort
        | RpcCommand::AbortRetry
        | RpcCommand::AbortBash => Kind::Queueable,
        RpcCommand::NewSession(_) | RpcCommand::SwitchSession(_) => Kind::Rebind,
        _ => Kind::Exclusive,
    }
}

impl SharedSessions {
    /// A handler over `store` for sessions built from `args`.
    pub fn new(store: PgStore, args: Args, config: SharedConfig) -> Arc<SharedSessions> {
        let dyn_store: Arc<dyn SessionStore> = Arc::new(store.clone());
        Arc::new_cyclic(|this| SharedSessions {
            store,
            dyn_store,
            args,
            config,
            loaded: tokio::sync::Mutex::new(HashMap::new()),
            draining: AtomicBool::new(false),
            this: this.clone(),
        })
    }

    /// The store.
    pub fn store(&self) -> &PgStore {
        &self.store
    }

    /// Blocking store calls, off the async workers.
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(Arc<dyn SessionStore>) -> Result<T, SessionError> + Send + 'static,
    ) -> Result<T, CliError> {
        let store = self.dyn_store.clone();
        match tokio::task::spawn_blocking(move || f(store)).await {
            Ok(r) => r.map_err(|e| CliError::failed(e.to_string())),
            Err(e) => Err(CliError::failed(format!("a store task failed: {e}"))),
        }
    }

    /// A new, empty session stored now (so every instance can open it).
    async fn create_session(&self, parent: Option<String>) -> Result<String, CliError> {
        let cwd = crate::app::setup::working_dir(&self.args)?
            .display()
            .to_string();
        let mut header = SessionHeader::new(new_session_id(), cwd);
        header.parent_session = parent;
        let header_line = serde_json::to_string(&header)
            .map_err(|e| CliError::failed(format!("cannot encode a session header: {e}")))?;
        let id = header.id.clone();
        let stored = StoredSession {
            header,
            header_line,
            entries: Vec::new(),
            lines: Vec::new(),
        };
        self.blocking(move |s| s.import(&stored)).await?;
        Ok(id)
    }

    /// The session `client` works on (a new one on first use).
    async fn session_of(&self, client: &str) -> Result<String, CliError> {
        if let Some(id) = self
            .store
            .client_session(client)
            .await
            .map_err(|e| CliError::config(e.to_string()))?
        {
            return Ok(id);
        }
        let id = self.create_session(None).await?;
        self.store
            .bind_client(client, &id)
            .await
            .map_err(|e| CliError::config(e.to_string()))?;
        Ok(id)
    }

    /// The session loaded on this instance, loaded (again) when missing or
    /// stale. `running` sessions are never reloaded: they are the newest.
    pub(crate) async fn load(&self, id: &str) -> Result<Arc<Loaded>, CliError> {
        let revision = self
            .store
            .revision(id)
            .await
            .map_err(|e| CliError::config(e.to_string()))?;
        let Some(revision) = revision else {
            return Err(CliError::failed(format!(
                "session {id} is not in {}; it was deleted",
                self.store.url()
            )));
        };
        let mut loaded = self.loaded.lock().await;
        if let Some(l) = loaded.get(id) {
            let running = l.tenure.try_lock().map(|t| t.is_some()).unwrap_or(true);
            if running || !l.is_stale(revision) {
                l.touch();
                return Ok(l.clone());
            }
        }
        let query = id.to_string();
        let session = self
            .blocking(move |s| s.open(&query.clone(), &query))
            .await?;
        let options = BuildOptions {
            store: Some(self.dyn_store.clone()),
            session: Some(session),
            ..BuildOptions::default()
        };
        let app = build_with(&self.args, options).await?;
        let served = ServedSession::new(app, self.config.grace);
        let l = Loaded::start(&self.store, id, served);
        loaded.insert(id.to_string(), l.clone());
        Ok(l)
    }

    /// Runs a command of `client`.
    async fn command(&self, client: &str, command: Command) -> RpcResponse {
        let request = match command.record {
            Record::Command(request) => request,
            Record::UiResponse(answer) => {
                let id = Some(serde_json::Value::String(answer.id.clone()));
                if let Ok(Ok(session)) =
                    tokio::time::timeout(Duration::from_secs(5), self.session_of(client)).await
                    && let Some(l) = self.loaded.lock().await.get(&session).cloned()
                {
                    let record = Record::UiResponse(answer);
                    return l.served.handle_command(record).await;
                }
                return RpcResponse::success(id, "extension_ui_response", None);
            }
        };
        if self.draining.load(Ordering::Acquire) && request.command.starts_work() {
            return failure(
                &request,
                "this makai server is shutting down; send the command again (it reaches another instance)",
            );
        }
        let session = match self.session_of(client).await {
            Ok(s) => s,
            Err(e) => return failure(&request, e.to_string()),
        };
        match kind(&request.command) {
            Kind::Read => match self.load(&session).await {
                Ok(l) => l.served.handle_command(Record::Command(request)).await,
                Err(e) => failure(&request, e.to_string()),
            },
            Kind::Rebind => self.rebind(client, request).await,
            Kind::Queueable => self.run_or_queue(&session, request, &command.text).await,
            Kind::Exclusive => self.run_exclusive(&session, request).await,
        }
    }

    /// `new_session` / `switch_session` (by id or id prefix).
    async fn rebind(&self, client: &str, request: RpcRequest) -> RpcResponse {
        let target = match &request.command {
            RpcCommand::NewSession(n) => self.create_session(n.parent_session.clone()).await,
            RpcCommand::SwitchSession(s) => {
                let query = s.session_path.clone();
                self.blocking(move |st| st.open(&query.clone(), &query).map(|s| s.id().to_string()))
                    .await
            }
            _ => Err(CliError::failed("not a session change")),
        };
        let id = match target {
            Ok(id) => id,
            Err(e) => return failure(&request, e.to_string()),
        };
        if let Err(e) = self.store.bind_client(client, &id).await {
            return failure(&request, e.to_string());
        }
        RpcResponse::success(
            request.id.clone(),
            request.command.name(),
            Some(ResponseData::Cancelled { cancelled: false }),
        )
    }

    /// The events of `session` after feed position `after`, live.
    fn follow(&self, session: &str, after: i64) -> BoxStream<'static, FeedEvent> {
        let session_id = session.to_string();
        self.store
            .follow_feed(session, after)
            .scan(false, move |ended, item| {
                if *ended {
                    return futures::future::ready(None);
                }
                let json = match item {
                    Ok(item) => item.json,
                    Err(e) => {
                        *ended = true;
                        let message = match e {
                            FeedError::Gap(gap) => gap.to_string(),
                            FeedError::Store(e) => format!(
                                "the events of session {session_id} cannot be read: {e}; \
                                 subscribe again once the database is back"
                            ),
                        };
                        serde_json::json!({"type": "subscription_error", "message": message})
                            .to_string()
                    }
                };
                futures::future::ready(Some(json))
            })
            .filter_map(|json| async move {
                match RawValue::from_string(json) {
                    Ok(raw) => Some(raw),
                    Err(e) => {
                        tracing::warn!(error = %e, "a feed row is not JSON; skipped");
                        None
                    }
                }
            })
            .boxed()
    }

    /// Stops taking work; lets running sessions finish (up to the grace
    /// period) and gives their leases back.
    pub async fn drain(&self) {
        self.draining.store(true, Ordering::Release);
        let loaded: Vec<Arc<Loaded>> = self.loaded.lock().await.values().cloned().collect();
        for l in loaded {
            if l.tenure.lock().await.is_some() {
                l.served.drain().await;
            }
        }
        // The tenures release their leases once idle.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            let mut holding = false;
            for l in self.loaded.lock().await.values() {
                holding |= l.tenure.try_lock().map(|t| t.is_some()).unwrap_or(true);
            }
            if !holding || tokio::time::Instant::now() >= deadline {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

#[async_trait]
impl SessionHandler for SharedSessions {
    type Command = Command;
    type Response = RpcResponse;
    type Event = FeedEvent;

    fn parse_command(&self, payload: &str) -> Result<Command, RpcResponse> {
        let record = Record::parse(payload.as_bytes()).map_err(RpcResponse::from)?;
        Ok(Command {
            record,
            text: payload.to_string(),
        })
    }

    async fn handle_command(&self, command: Command) -> RpcResponse {
        drop(command);
        RpcResponse::failure(
            None,
            "unknown",
            "this server needs the client's id for every command; this is a makai bug, please report it",
        )
    }

    async fn handle_command_from(&self, client: &str, command: Command) -> RpcResponse {
        self.command(client, command).await
    }

    fn subscribe(&self) -> BoxStream<'static, FeedEvent> {
        futures::stream::empty().boxed()
    }

    async fn subscribe_from(
        &self,
        client: &str,
        stream: u64,
    ) -> Result<BoxStream<'static, FeedEvent>, Refusal> {
        let session = self.session_of(client).await.map_err(unavailable)?;
        let start = self.store.feed_head(&session).await.map_err(unavailable)?;
        self.store
            .record_subscription(client, stream, &session, start)
            .await
            .map_err(unavailable)?;
        tracing::debug!(client, stream, session = %session, start, "subscription");
        Ok(self.follow(&session, start))
    }

    async fn knows_client(&self, client: &str) -> bool {
        match self.store.knows_client(client).await {
            Ok(known) => known,
            Err(e) => {
                tracing::warn!(error = %e, "cannot look a client up; it gets a new id");
                false
            }
        }
    }

    async fn resume_subscription(
        &self,
        client: &str,
        stream: u64,
        last_seq: u64,
    ) -> Option<Result<BoxStream<'static, FeedEvent>, Refusal>> {
        match self.store.subscription(client, stream).await {
            Ok(Some((session, start))) => {
                let after = start.saturating_add(i64::try_from(last_seq).unwrap_or(i64::MAX));
                tracing::debug!(client, stream, session = %session, start, last_seq, "subscription resumed");
                Some(Ok(self.follow(&session, after)))
            }
            Ok(None) => None,
            Err(e) => Some(Err(unavailable(e))),
        }
    }

    async fn shutdown(&self) {
        self.drain().await;
    }
}
