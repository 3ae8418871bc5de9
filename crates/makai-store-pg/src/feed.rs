//! A session's feed: everything a client of the session sees, in one order,
//! numbered by position (1, 2, 3, ... per session, no holes).
//!
//! Two kinds of rows: every appended entry (written by the append's own
//! transaction, so an entry is in the feed exactly when it is committed) and
//! the events a server publishes (the agent's events, written in batches by
//! [`PgStore::flush_events`] or with the next append, in the order they were
//! queued). An entry row reads as `{"type":"entry_appended","entry":ENTRY}`.
//!
//! Any instance can replay the feed from a position and follow it live
//! ([`PgStore::follow_feed`]): it reads the rows after its position, then
//! waits for a notification of the session (or at most a second) and reads
//! again. Old rows are pruned after a retention time
//! ([`PgStore::prune_feed`]); reading from a pruned position is a
//! [`FeedGap`].

use std::time::Duration;

use futures::Stream;

use crate::PgStore;
use crate::error::StoreError;
use crate::listen::Channel;

/// One feed row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FeedItem {
    /// Its position in the session's feed.
    pub pos: i64,
    /// The event's JSON.
    pub json: String,
}

/// A read from a position whose rows were pruned.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "the feed of session {session} no longer has the events after position {after} (the first \
     kept is {first}); they were pruned after the retention time. Subscribe again and read the \
     session with get_messages / get_entries"
)]
pub struct FeedGap {
    /// The session.
    pub session: String,
    /// The position asked for.
    pub after: i64,
    /// The first position still kept.
    pub first: i64,
}

/// What a follower gets: rows, or the reason it cannot go on.
#[derive(Debug, thiserror::Error)]
pub enum FeedError {
    /// The rows asked for were pruned.
    #[error(transparent)]
    Gap(#[from] FeedGap),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Rows read at most per query.
const PAGE: i64 = 512;

/// How long a follower waits for a notification before reading anyway.
const POLL: Duration = Duration::from_secs(1);

fn entry_event(line: &str) -> String {
    let mut json = String::with_capacity(line.len() + 40);
    json.push_str(r#"{"type":"entry_appended","entry":"#);
    json.push_str(line);
    json.push('}');
    json
}

impl PgStore {
    /// Writes the events queued for `session` ([`crate::Coord::push_event`])
    /// to its feed, in order. Events of a session not stored yet wait for its
    /// first append.
    pub async fn flush_events(&self, session: &str) -> Result<(), StoreError> {
        let coord = crate::lock(&self.inner().coords).get(session).cloned();
        let Some(coord) = coord else { return Ok(()) };
        let inner = self.inner().clone();
        let session = session.to_string();
        self.inner()
            .bridge
            .run(async move {
                let mut client = inner.client().await?;
                let tx = client
                    .transaction()
                    .await
                    .map_err(inner.query("publish events"))?;
                let row = tx
                    .query_opt(
                        "SELECT feed_pos FROM makai_sessions WHERE id = $1 FOR UPDATE",
                        &[&session],
                    )
                    .await
                    .map_err(inner.query("publish events"))?;
                let Some(row) = row else { return Ok(()) };
                // Taken under the row lock: appends take theirs the same way.
                let events = coord.take_events();
                if events.is_empty() {
                    return Ok(());
                }
                let written = async {
                    let end =
                        crate::log::write_feed(&inner, &tx, &session, row.get(0), &events, &[])
                            .await?;
                    tx.execute(
                        "UPDATE makai_sessions SET feed_pos = $2 WHERE id = $1",
                        &[&session, &end],
                    )
                    .await
                    .map_err(inner.query("publish events"))?;
                    tx.commit().await.map_err(inner.query("publish events"))
                }
                .await;
                if written.is_err() {
                    coord.restore_events(events);
                }
                written
            })
            .await
    }

    /// The session's last feed position (0 when it has none or does not exist).
    pub async fn feed_head(&self, session: &str) -> Result<i64, StoreError> {
        let inner = self.inner().clone();
        let session = session.to_string();
        self.inner()
            .bridge
            .run(async move {
                let client = inner.client().await?;
                let row = client
                    .query_opt(
                        "SELECT feed_pos FROM makai_sessions WHERE id = $1",
                        &[&session],
                    )
                    .await
                    .map_err(inner.query("read a feed position"))?;
                Ok(row.map_or(0, |r| r.get(0)))
            })
            .await
    }

    /// Up to `limit` rows after position `after`, in order.
    pub async fn read_feed(
        &self,
        session: &str,
        after: i64,
        limit: i64,
    ) -> Result<Vec<FeedItem>, FeedError> {
        let inner = self.inner().clone();
        let session_id = session.to_string();
        let rows = self
            .inner()
            .bridge
            .run(async move {
                let client = inner.client().await?;
                // The head first: every row up to it is committed, so the
                // rows read next (a later snapshot) include them. Read the
                // other way round, a row committed between the two reads
                // would look like a gap.
                let head: i64 = client
                    .query_opt(
                        "SELECT feed_pos FROM makai_sessions WHERE id = $1",
                        &[&session_id],
                    )
                    .await
                    .map_err(inner.query("read a feed position"))?
                    .map_or(0, |r| r.get(0));
                let rows = client
                    .query(
                        "SELECT f.pos, f.event, e.line FROM makai_feed f \
                         LEFT JOIN makai_entries e \
                           ON e.session_id = f.session_id AND e.seq = f.entry_seq \
                         WHERE f.session_id = $1 AND f.pos > $2 ORDER BY f.pos LIMIT $3",
                        &[&session_id, &after, &limit],
                    )
                    .await
                    .map_err(inner.query("read a session's feed"))?;
                Ok((rows, head))
            })
            .await?;
        let (rows, head) = rows;
        let items: Vec<FeedItem> = rows
            .iter()
            .map(|r| {
                let event: Option<String> = r.get(1);
                let line: Option<String> = r.get(2);
                FeedItem {
                    pos: r.get(0),
                    json: event.unwrap_or_else(|| entry_event(line.as_deref().unwrap_or("null"))),
                }
            })
            .collect();
        let first = items.first().map(|i| i.pos).unwrap_or(head + 1);
        if first != after + 1 && (!items.is_empty() || head > after) {
            return Err(FeedGap {
                session: session.to_string(),
                after,
                first,
            }
            .into());
        }
        Ok(items)
    }

    /// The session's feed after position `after`, live: every row once, in
    /// order, forever (until the stream is dropped or fails).
    pub fn follow_feed(
        &self,
        session: &str,
        after: i64,
    ) -> impl Stream<Item = Result<FeedItem, FeedError>> + Send + 'static {
        let store = self.clone();
        let session = session.to_string();
        let woken = self.listener().watch(Channel::Feed, &session);
        futures::stream::unfold(
            (store, session, after, woken, Vec::<FeedItem>::new(), false),
            |(store, session, mut after, mut woken, mut ready, failed)| async move {
                if failed {
                    return None;
                }
                loop {
                    if !ready.is_empty() {
                        let item = ready.remove(0);
                        after = item.pos;
                        return Some((Ok(item), (store, session, after, woken, ready, false)));
                    }
                    woken.borrow_and_update();
                    match store.read_feed(&session, after, PAGE).await {
                        Ok(items) if !items.is_empty() => ready = items,
                        Ok(_) => {
                            // Nothing new: wait for a notification, or read again anyway.
                            let _ = tokio::time::timeout(POLL, woken.changed()).await;
                        }
                        Err(e) => {
                            return Some((Err(e), (store, session, after, woken, ready, true)));
                        }
                    }
                }
            },
        )
    }

    /// Deletes feed rows older than `age` (every session). Returns how many.
    pub async fn prune_feed(&self, age: Duration) -> Result<u64, StoreError> {
        let inner = self.inner().clone();
        let ms = age.as_millis().min(i64::MAX as u128) as i64;
        self.inner()
            .bridge
            .run(async move {
                let client = inner.client().await?;
                client
                    .execute(
                        "DELETE FROM makai_feed \
                         WHERE created_at < now() - $1::int8 * interval '1 millisecond'",
                        &[&ms],
                    )
                    .await
                    .map_err(inner.query("prune old feed rows"))
            })
            .await
    }
}
