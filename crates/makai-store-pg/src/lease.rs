//! Leases: which instance runs a session now, and until when.
//!
//! An instance takes a session's lease before it runs anything that appends
//! (a prompt, a compaction, a command) and renews it while it runs; it lets
//! it go when the session is idle and its inbox is empty. A lease that is not
//! renewed (its instance died or stalled) expires after its time to live and
//! passes to the next instance that asks ([`PgStore::acquire_lease`]) or
//! sweeps ([`PgStore::take_expired_leases`]). Every lease gets a new token
//! from one database sequence, and appends made under a lease are fenced
//! with it ([`crate::Coord::set_fence`]): an instance that lost its lease
//! cannot write any more, even if it wakes up later.

use std::time::Duration;

use crate::PgStore;
use crate::error::StoreError;
use crate::inbox::InboxItem;

/// A lease this instance holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    /// The session.
    pub session: String,
    /// The lease's token (fences appends).
    pub token: i64,
}

/// What [`PgStore::acquire_lease`] got.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Acquired {
    /// The lease is ours. `taken_over` names the holder whose lease had
    /// expired: its run was interrupted.
    Held {
        /// The lease.
        lease: Lease,
        /// The previous holder, when its lease expired unreleased.
        taken_over: Option<String>,
    },
    /// Another instance (or this one, under another token) holds it.
    Busy {
        /// Who holds it.
        holder: String,
    },
}

/// What [`PgStore::release_lease`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Released {
    /// The lease is gone; the session is idle.
    Released,
    /// Work was queued for the session meanwhile: the lease is kept and the
    /// items (oldest first) must be run.
    Queued(Vec<InboxItem>),
    /// The lease was no longer ours.
    Lost,
}

/// A lease taken over from an instance that let it expire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TakenOver {
    /// The lease, now ours.
    pub lease: Lease,
    /// Who held it.
    pub previous: String,
}

fn millis(d: Duration) -> i64 {
    d.as_millis().min(i64::MAX as u128) as i64
}

impl PgStore {
    /// Takes `session`'s lease for `holder` for `ttl`, unless another live
    /// lease exists. An expired lease is taken over (see [`Acquired::Held`]).
    pub async fn acquire_lease(
        &self,
        session: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<Acquired, StoreError> {
        let inner = self.inner().clone();
        let (session, holder) = (session.to_string(), holder.to_string());
        let ttl = millis(ttl);
        self.inner()
            .bridge
            .run(async move {
                let mut client = inner.client().await?;
                let tx = client
                    .transaction()
                    .await
                    .map_err(inner.query("take a lease"))?;
                let current = tx
                    .query_opt(
                        "SELECT holder, expires_at > now() FROM makai_leases \
                         WHERE session_id = $1 FOR UPDATE",
                        &[&session],
                    )
                    .await
                    .map_err(inner.query("take a lease"))?;
                let (token, taken_over) = match current {
                    Some(row) if row.get::<_, bool>(1) => {
                        return Ok(Acquired::Busy { holder: row.get(0) });
                    }
                    Some(row) => {
                        let token: i64 = tx
                            .query_one(
                                "UPDATE makai_leases SET holder = $2, \
                                   token = nextval('makai_lease_tokens'), \
                                   expires_at = now() + $3::int8 * interval '1 millisecond' \
                                 WHERE session_id = $1 RETURNING token",
                                &[&session, &holder, &ttl],
                            )
                            .await
                            .map_err(inner.query("take over an expired lease"))?
                            .get(0);
                        (token, Some(row.get::<_, String>(0)))
                    }
                    None => {
                        let row = tx
                            .query_opt(
                                "INSERT INTO makai_leases (session_id, holder, token, expires_at) \
                                 VALUES ($1, $2, nextval('makai_lease_tokens'), \
                                   now() + $3::int8 * interval '1 millisecond') \
                                 ON CONFLICT (session_id) DO NOTHING RETURNING token",
                                &[&session, &holder, &ttl],
                            )
                            .await
                            .map_err(inner.query("take a lease"))?;
                        match row {
                            Some(r) => (r.get(0), None),
                            None => {
                                return Ok(Acquired::Busy {
                                    holder: "another instance".into(),
                                });
                            }
                        }
                    }
                };
                tx.commit().await.map_err(inner.query("take a lease"))?;
                Ok(Acquired::Held {
                    lease: Lease { session, token },
                    taken_over,
                })
            })
            .await
    }

    /// Extends a lease to `ttl` from now; false when it is no longer ours.
    pub async fn renew_lease(&self, lease: &Lease, ttl: Duration) -> Result<bool, StoreError> {
        let inner = self.inner().clone();
        let lease = lease.clone();
        let ttl = millis(ttl);
        self.inner()
            .bridge
            .run(async move {
                let client = inner.client().await?;
                let n = client
                    .execute(
                        "UPDATE makai_leases \
                         SET expires_at = now() + $3::int8 * interval '1 millisecond' \
                         WHERE session_id = $1 AND token = $2",
                        &[&lease.session, &lease.token, &ttl],
                    )
                    .await
                    .map_err(inner.query("renew a lease"))?;
                Ok(n == 1)
            })
            .await
    }

    /// Lets a lease go unless work was queued for the session meanwhile (then
    /// the lease is kept and the work handed back). Atomic with
    /// [`PgStore::push_inbox`]: an item is either seen here or pushed after
    /// the lease is gone (and its pusher then runs it).
    pub async fn release_lease(&self, lease: &Lease) -> Result<Released, StoreError> {
        let inner = self.inner().clone();
        let lease = lease.clone();
        self.inner()
            .bridge
            .run(async move {
                let mut client = inner.client().await?;
                let tx = client
                    .transaction()
                    .await
                    .map_err(inner.query("release a lease"))?;
                let ours = tx
                    .query_opt(
                        "SELECT 1 FROM makai_leases WHERE session_id = $1 AND token = $2 \
                         FOR UPDATE",
                        &[&lease.session, &lease.token],
                    )
                    .await
                    .map_err(inner.query("release a lease"))?;
                if ours.is_none() {
                    return Ok(Released::Lost);
                }
                let items = crate::inbox::take(&inner, &tx, &lease.session).await?;
                if !items.is_empty() {
                    tx.commit().await.map_err(inner.query("take queued work"))?;
                    return Ok(Released::Queued(items));
                }
                tx.execute(
                    "DELETE FROM makai_leases WHERE session_id = $1 AND token = $2",
                    &[&lease.session, &lease.token],
                )
                .await
                .map_err(inner.query("release a lease"))?;
                tx.commit().await.map_err(inner.query("release a lease"))?;
                Ok(Released::Released)
            })
            .await
    }

    /// Takes over (for `holder`, for `ttl`) up to `limit` leases that expired
    /// unreleased: their instances died or stalled mid-run.
    pub async fn take_expired_leases(
        &self,
        holder: &str,
        ttl: Duration,
        limit: i64,
    ) -> Result<Vec<TakenOver>, StoreError> {
        let inner = self.inner().clone();
        let holder = holder.to_string();
        let ttl = millis(ttl);
        self.inner()
            .bridge
            .run(async move {
                let client = inner.client().await?;
                let rows = client
                    .query(
                        "UPDATE makai_leases l SET holder = $1, \
                           token = nextval('makai_lease_tokens'), \
                           expires_at = now() + $2::int8 * interval '1 millisecond' \
                         FROM (SELECT session_id, holder FROM makai_leases \
                               WHERE expires_at < now() ORDER BY expires_at LIMIT $3 \
                               FOR UPDATE SKIP LOCKED) old \
                         WHERE l.session_id = old.session_id \
                         RETURNING l.session_id, l.token, old.holder",
                        &[&holder, &ttl, &limit],
                    )
                    .await
                    .map_err(inner.query("take over expired leases"))?;
                Ok(rows
                    .iter()
                    .map(|r| TakenOver {
                        lease: Lease {
                            session: r.get(0),
                            token: r.get(1),
                        },
                        previous: r.get(2),
                    })
                    .collect())
            })
            .await
    }

    /// Who holds `session`'s lease now (live leases only).
    pub async fn lease_holder(&self, session: &str) -> Result<Option<String>, StoreError> {
        let inner = self.inner().clone();
        let session = session.to_string();
        self.inner()
            .bridge
            .run(async move {
                let client = inner.client().await?;
                let row = client
                    .query_opt(
                        "SELECT holder FROM makai_leases \
                         WHERE session_id = $1 AND expires_at > now()",
                        &[&session],
                    )
                    .await
                    .map_err(inner.query("read a lease"))?;
                Ok(row.map(|r| r.get(0)))
            })
            .await
    }

    /// The sessions whose live lease `holder` holds (what an instance runs now).
    pub async fn leases_of(&self, holder: &str) -> Result<Vec<String>, StoreError> {
        let inner = self.inner().clone();
        let holder = holder.to_string();
        self.inner()
            .bridge
            .run(async move {
                let client = inner.client().await?;
                let rows = client
                    .query(
                        "SELECT session_id FROM makai_leases \
                         WHERE holder = $1 AND expires_at > now() ORDER BY session_id",
                        &[&holder],
                    )
                    .await
                    .map_err(inner.query("read an instance's leases"))?;
                Ok(rows.iter().map(|r| r.get(0)).collect())
            })
            .await
    }
}
