//! Running a session under its lease: taking the lease (or queueing the
//! command for the instance that has it), the tenure that renews it, runs
//! what is queued and lets it go once the session is idle, and the sweep
//! that takes over the leases of dead instances.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use makai_protocol::SessionHandler;
use makai_rpc::{InputDisposition, Record, ResponseData, RpcCommand, RpcRequest, RpcResponse};
use makai_store_pg::inbox::InboxItem;
use makai_store_pg::lease::{Acquired, Lease, Released};
use tokio::sync::OwnedMutexGuard;
use tokio_util::sync::CancellationToken;

use super::{Loaded, SharedSessions, failure};

/// The inbox item kind of a queued RPC command.
const COMMAND: &str = "command";

/// How often the sweep looks for expired leases, at most.
const SWEEP_MAX: Duration = Duration::from_secs(5);

/// How often the sweep also prunes the feed and the clients, and lets idle
/// sessions go from memory.
const HOUSEKEEPING: Duration = Duration::from_secs(60);

/// How long feed rows are kept: a client away longer reads the session anew.
pub const FEED_RETENTION: Duration = Duration::from_secs(24 * 3600);

/// How long a client unseen keeps its session binding and subscriptions.
const CLIENT_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

/// How long a session nobody used stays loaded on an instance.
const IDLE_UNLOAD: Duration = Duration::from_secs(600);

/// The tenure lock, held: the lease is this instance's while it is held.
type Held = OwnedMutexGuard<Option<Lease>>;

impl SharedSessions {
    /// A command that may wait in the inbox of the instance running the session.
    pub(super) async fn run_or_queue(
        &self,
        session: &str,
        request: RpcRequest,
        text: &str,
    ) -> RpcResponse {
        match self.hold(session).await {
            Ok(Some((l, held))) => return self.run_held(&l, held, request).await,
            Ok(None) => {}
            Err(e) => return failure(&request, e),
        }
        // Another instance holds the session (running it, about to let it
        // go, or dead with its lease not yet expired): the command waits in
        // the inbox and the holder, or whoever takes the lease next, runs it
        // as if sent there. A `prompt` without `streamingBehavior` that finds
        // the session streaming fails there; that response reaches the
        // session's subscribers as an event.
        match self.store.push_inbox(session, COMMAND, text).await {
            // Its runner takes it from the inbox.
            Ok(Some(_holder)) => queued(&request),
            // The lease went meanwhile: the item waits for whoever runs the
            // session next; this instance takes the lease now (its tenure
            // starts with the inbox).
            Ok(None) => match self.hold(session).await {
                Ok(_) => queued(&request),
                Err(e) => failure(&request, e),
            },
            Err(e) => failure(&request, e.to_string()),
        }
    }

    /// A command that needs the lease and is not queued for another instance.
    pub(super) async fn run_exclusive(&self, session: &str, request: RpcRequest) -> RpcResponse {
        match self.hold(session).await {
            Ok(Some((l, held))) => self.run_held(&l, held, request).await,
            Ok(None) => {
                let holder = match self.store.lease_holder(session).await {
                    Ok(Some(h)) => h,
                    Ok(None) | Err(_) => "another instance".into(),
                };
                failure(
                    &request,
                    format!(
                        "session {session} is running on makai instance {holder}; send {} again once its run ends",
                        request.command.name()
                    ),
                )
            }
            Err(e) => failure(&request, e),
        }
    }

    /// The session with this instance holding its lease (taken now when
    /// free), or `None` when another instance holds it.
    async fn hold(&self, session: &str) -> Result<Option<(Arc<Loaded>, Held)>, String> {
        // A few tries while a tenure of this instance starts or ends.
        for _ in 0..50 {
            let here = self.loaded.lock().await.get(session).cloned();
            if let Some(l) = here {
                let held = l.tenure.clone().lock_owned().await;
                if held.is_some() {
                    return Ok(Some((l, held)));
                }
            }
            let acquired = self
                .store
                .acquire_lease(session, &self.config.instance, self.config.lease_ttl)
                .await
                .map_err(|e| e.to_string())?;
            match acquired {
                Acquired::Busy { holder } if holder == self.config.instance => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Acquired::Busy { .. } => return Ok(None),
                Acquired::Held { lease, taken_over } => {
                    let l = match self.load(session).await {
                        Ok(l) => l,
                        Err(e) => {
                            if let Err(r) = self.store.release_lease(&lease).await {
                                tracing::warn!(error = %r, "a lease could not be given back; it expires");
                            }
                            return Err(e.to_string());
                        }
                    };
                    if let Some(previous) = taken_over {
                        self.interrupted(&l, &previous).await;
                    }
                    let held = self.start_tenure(&l, lease).await;
                    return Ok(Some((l, held)));
                }
            }
        }
        Ok(None)
    }

    /// Runs `request` on a session this instance holds.
    async fn run_held(&self, l: &Arc<Loaded>, held: Held, request: RpcRequest) -> RpcResponse {
        let response = l.served.handle_command(Record::Command(request)).await;
        if matches!(
            response.outcome,
            Ok(Some(ResponseData::Disposition {
                disposition: InputDisposition::Started
            }))
        ) {
            l.expected_starts.fetch_add(1, Ordering::AcqRel);
        }
        drop(held);
        l.changed.notify_waiters();
        response
    }

    /// Marks `l` as run here under `lease` and starts its tenure task; the
    /// tenure waits until the returned lock is let go.
    async fn start_tenure(&self, l: &Arc<Loaded>, lease: Lease) -> Held {
        let mut held = l.tenure.clone().lock_owned().await;
        l.coord.set_fence(Some(lease.token));
        *held = Some(lease.clone());
        if let Some(me) = self.this.upgrade() {
            let l = l.clone();
            tokio::spawn(async move { me.tenure(l, lease).await });
        }
        held
    }

    /// Holds the lease while the session works: renews it, runs what other
    /// instances queue, gives it back once the session is idle and nothing is queued.
    async fn tenure(self: Arc<Self>, l: Arc<Loaded>, lease: Lease) {
        let ttl = self.config.lease_ttl;
        // Renewal runs on the store's own runtime, so neither a slow step
        // below nor a busy runtime here lets the lease lapse.
        let stop = CancellationToken::new();
        let lost = CancellationToken::new();
        self.store.spawn(renew(
            self.store.clone(),
            lease.clone(),
            ttl,
            stop.clone(),
            lost.clone(),
        ));
        let _stop_renewing = stop.drop_guard();
        let mut inbox = self.store.watch_inbox(&l.id);
        // Work queued before the lease was ours.
        self.take_inbox(&l).await;
        loop {
            tokio::select! {
                () = lost.cancelled() => {
                    tracing::warn!(session = %l.id, "the lease was lost; the run here is stopped");
                    eprintln!("makai serve: session {}: this instance no longer holds the lease; the run here was stopped", l.id);
                    l.served.app().abort().await;
                    // The fence keeps the lost token: the stopped run's
                    // last appends are refused, not written unfenced.
                    *l.tenure.lock().await = None;
                    return;
                }
                changed = inbox.changed() => {
                    if changed.is_err() {
                        inbox = self.store.watch_inbox(&l.id);
                    }
                    self.take_inbox(&l).await;
                }
                () = l.wait_idle() => {
                    let mut tenure = l.tenure.lock().await;
                    if !l.is_idle() {
                        continue;
                    }
                    if let Err(e) = self.store.flush_events(&l.id).await {
                        tracing::warn!(session = %l.id, error = %e, "events wait for the database");
                        drop(tenure);
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        continue;
                    }
                    match self.store.release_lease(&lease).await {
                        Ok(Released::Released) | Ok(Released::Lost) => {
                            *tenure = None;
                            l.coord.set_fence(None);
                            return;
                        }
                        Ok(Released::Queued(items)) => {
                            drop(tenure);
                            self.run_items(&l, items).await;
                        }
                        Err(e) => {
                            tracing::warn!(session = %l.id, error = %e, "a lease could not be given back");
                            drop(tenure);
                            tokio::time::sleep(Duration::from_millis(200)).await;
                        }
                    }
                }
            }
        }
    }

    async fn take_inbox(&self, l: &Arc<Loaded>) {
        match self.store.take_inbox(&l.id).await {
            Ok(items) => self.run_items(l, items).await,
            Err(e) => tracing::warn!(session = %l.id, error = %e, "queued work cannot be read"),
        }
    }

    /// Runs queued commands in order; a failure goes to the session's
    /// clients as the command's response on the event stream.
    async fn run_items(&self, l: &Arc<Loaded>, items: Vec<InboxItem>) {
        let mut rest = items.into_iter();
        while let Some(item) = rest.next() {
            let record = match Record::parse(item.body.as_bytes()) {
                Ok(Record::Command(request)) if item.kind == COMMAND => request,
                _ => {
                    tracing::warn!(session = %l.id, kind = %item.kind, "an inbox item this makai does not know was skipped");
                    continue;
                }
            };
            let held = l.tenure.clone().lock_owned().await;
            if held.is_none() {
                // The lease was lost meanwhile: the work goes back to the
                // inbox for whoever runs the session next.
                drop(held);
                self.requeue(l, std::iter::once(item).chain(rest.by_ref()))
                    .await;
                return;
            }
            let response = self.run_held(l, held, record).await;
            if !response.is_success() {
                match serde_json::to_string(&response) {
                    Ok(json) => l.coord.push_event(json),
                    Err(e) => tracing::warn!(error = %e, "a response could not be encoded"),
                }
                if let Err(e) = self.store.flush_events(&l.id).await {
                    tracing::warn!(session = %l.id, error = %e, "events wait for the database");
                }
            }
        }
    }

    /// Puts taken items back in the inbox, in order.
    async fn requeue(&self, l: &Arc<Loaded>, items: impl Iterator<Item = InboxItem>) {
        for item in items {
            if let Err(e) = self.store.push_inbox(&l.id, &item.kind, &item.body).await {
                eprintln!(
                    "makai serve: session {}: a queued command could not be put back after the lease was lost, so it is dropped: {e}",
                    l.id
                );
            }
        }
    }

    /// Tells the session's clients that the instance running it stopped.
    async fn interrupted(&self, l: &Arc<Loaded>, previous: &str) {
        let event = serde_json::json!({
            "type": "run_interrupted",
            "instance": previous,
            "message": format!(
                "the makai instance running this session ({previous}) stopped answering, so its \
                 run was interrupted; the entries it committed are kept. Send the next prompt to \
                 continue the session"
            ),
        });
        l.coord.push_event(event.to_string());
        if let Err(e) = self.store.flush_events(&l.id).await {
            tracing::warn!(session = %l.id, error = %e, "events wait for the database");
        }
    }

    /// Takes over the leases dead instances left, every `lease_ttl / 2`
    /// (at most [`SWEEP_MAX`]); runs until the handler is dropped.
    pub fn start_sweep(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        let every = (self.config.lease_ttl / 2).clamp(Duration::from_millis(100), SWEEP_MAX);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            let mut housekept = tokio::time::Instant::now();
            loop {
                tick.tick().await;
                let Some(me) = weak.upgrade() else { return };
                if me.draining.load(Ordering::Acquire) {
                    return;
                }
                if housekept.elapsed() >= HOUSEKEEPING {
                    housekept = tokio::time::Instant::now();
                    me.housekeeping().await;
                }
                let taken = me
                    .store
                    .take_expired_leases(&me.config.instance, me.config.lease_ttl, 16)
                    .await;
                match taken {
                    Ok(taken) => {
                        for t in taken {
                            me.adopt(t.lease, &t.previous).await;
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "expired leases cannot be swept"),
                }
            }
        });
    }

    /// Prunes old feed rows and clients; unloads sessions idle for long.
    async fn housekeeping(&self) {
        if let Err(e) = self.store.prune_feed(FEED_RETENTION).await {
            tracing::warn!(error = %e, "old feed rows cannot be pruned");
        }
        if let Err(e) = self.store.prune_clients(CLIENT_RETENTION).await {
            tracing::warn!(error = %e, "old clients cannot be pruned");
        }
        self.loaded.lock().await.retain(|_, l| {
            let running = l.tenure.try_lock().map(|t| t.is_some()).unwrap_or(true);
            running || !l.is_idle() || l.unused_for() < IDLE_UNLOAD
        });
    }

    /// A lease taken over from `previous`: the session is loaded as
    /// committed, its clients told, and its queued work run.
    async fn adopt(&self, lease: Lease, previous: &str) {
        match self.load(&lease.session).await {
            Ok(l) => {
                self.interrupted(&l, previous).await;
                drop(self.start_tenure(&l, lease).await);
            }
            Err(e) => {
                tracing::warn!(session = %lease.session, error = %e, "a session taken over cannot be loaded");
                if let Err(e) = self.store.release_lease(&lease).await {
                    tracing::warn!(error = %e, "a lease could not be given back; it expires");
                }
            }
        }
    }
}

/// Renews `lease` every third of `ttl` until `stop`; cancels `lost` when it
/// is no longer ours. A failed renewal (the database is away) is retried
/// until the lease would have expired.
async fn renew(
    store: makai_store_pg::PgStore,
    lease: Lease,
    ttl: Duration,
    stop: CancellationToken,
    lost: CancellationToken,
) {
    let mut tick = tokio::time::interval((ttl / 3).max(Duration::from_millis(50)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut renewed = tokio::time::Instant::now();
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        // A renewal that cannot finish before the lease would expire counts
        // as lost: the run stops here before another instance may start it.
        let left = ttl.saturating_sub(renewed.elapsed());
        match tokio::time::timeout(left, store.renew_lease(&lease, ttl)).await {
            Ok(Ok(true)) => renewed = tokio::time::Instant::now(),
            Ok(Ok(false)) => {
                eprintln!(
                    "makai serve: session {}: another instance took the session's lease over (this one did not renew it in time)",
                    lease.session
                );
                lost.cancel();
                return;
            }
            Ok(Err(e)) if renewed.elapsed() < ttl => {
                tracing::warn!(session = %lease.session, error = %e, "a lease could not be renewed");
            }
            Ok(Err(e)) => {
                eprintln!(
                    "makai serve: session {}: the lease could not be renewed before it expired: {e}",
                    lease.session
                );
                lost.cancel();
                return;
            }
            Err(_) => {
                eprintln!(
                    "makai serve: session {}: renewing the lease took longer than --lease-ttl ({ttl:?}); the database is too slow or away",
                    lease.session
                );
                lost.cancel();
                return;
            }
        }
    }
}

fn queued(request: &RpcRequest) -> RpcResponse {
    let data = match request.command {
        RpcCommand::Prompt(_) | RpcCommand::Steer(_) | RpcCommand::FollowUp(_) => {
            Some(ResponseData::Disposition {
                disposition: InputDisposition::Queued,
            })
        }
        _ => None,
    };
    RpcResponse::success(request.id.clone(), request.command.name(), data)
}
