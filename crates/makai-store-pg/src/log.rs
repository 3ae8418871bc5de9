//! [`PgLog`]: one session's appends, each one transaction.
//!
//! The transaction: lock the session's row (creating it with the header on
//! the first append), check the lease token when this process fences the
//! session, read the entries other writers appended since this log last saw
//! the session ([`Foreign`]), let the caller build its entries from that,
//! insert them with the next sequence numbers together with their feed rows
//! (and the events queued for the feed before them), update the listing
//! columns, notify listeners, commit. The caller's thread builds the entries
//! while the transaction waits, so the tree and the rows never disagree.
//! Everything or nothing is stored: a failure anywhere rolls back.

use makai_coding::session::{
    BuildEntries, Durability, Foreign, LoadWarning, Session, SessionEntry, SessionError,
    SessionHeader, SessionLog, UnknownEntry,
};
use tokio::sync::oneshot;

use crate::bridge::{finish, wait};
use crate::error::StoreError;
use crate::summary::Summary;
use crate::{Inner, PgStore};

/// One session's appends (see the module docs).
pub(crate) struct PgLog {
    store: PgStore,
    session: String,
    known_seq: i64,
    /// The session's row exists (as far as this log knows).
    stored: bool,
    durability: Durability,
}

impl std::fmt::Debug for PgLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgLog")
            .field("location", &self.location())
            .field("known_seq", &self.known_seq)
            .finish()
    }
}

impl PgLog {
    /// A log for `session`, which has `known_seq` entries in the store
    /// (`stored`: its row exists).
    pub fn new(store: PgStore, session: String, known_seq: i64, stored: bool) -> PgLog {
        PgLog {
            store,
            session,
            known_seq,
            stored,
            durability: Durability::default(),
        }
    }
}

/// Reads one stored entry line. A line of a known type whose fields do not
/// fit is kept as it is (as an unknown entry) with a warning, as the files do.
pub(crate) fn parse_entry(
    line: &str,
    seq: i64,
) -> Result<(SessionEntry, Option<LoadWarning>), String> {
    match serde_json::from_str::<SessionEntry>(line) {
        Ok(entry) => Ok((entry, None)),
        Err(typed) => {
            let map = serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(line)
                .map_err(|e| format!("entry {seq} is not a JSON object: {e}"))?;
            let u = UnknownEntry::from_object(map)
                .ok_or_else(|| format!("entry {seq} has no string \"type\" and \"id\""))?;
            let warning = LoadWarning {
                line: Some(seq as usize),
                message: format!(
                    "entry {} of type \"{}\" does not match the format ({typed}); kept as it is \
                     but left out of the model's context",
                    u.id, u.kind
                ),
            };
            Ok((SessionEntry::Unknown(u), Some(warning)))
        }
    }
}

/// What the first half of the transaction hands the caller.
struct Seen {
    foreign: Foreign,
}

/// The rows the caller built.
struct Batch {
    rows: Vec<Row>,
    summary: Summary,
}

struct Row {
    entry_id: String,
    parent_id: Option<String>,
    kind: String,
    line: String,
}

impl SessionLog for PgLog {
    fn location(&self) -> String {
        format!("{}#{}", self.store.url(), self.session)
    }

    fn durability(&self) -> Durability {
        self.durability
    }

    fn set_durability(&mut self, durability: Durability) {
        self.durability = durability;
    }

    fn append(
        &mut self,
        header: &SessionHeader,
        build: &mut BuildEntries<'_>,
    ) -> Result<(Foreign, Vec<SessionEntry>), SessionError> {
        let header_line = if self.stored {
            None
        } else {
            Some(serde_json::to_string(header)?)
        };
        let job = Job {
            inner: self.store.inner().clone(),
            session: self.session.clone(),
            header: header.clone(),
            header_line,
            known_seq: self.known_seq,
            synced: self.durability == Durability::Fsync,
        };
        let (seen_tx, seen_rx) = oneshot::channel();
        let (batch_tx, batch_rx) = oneshot::channel();
        let task = self
            .store
            .inner()
            .bridge
            .start(transaction(job, seen_tx, batch_rx));
        let seen = match wait(seen_rx) {
            Ok(Ok(seen)) => seen,
            Ok(Err(e)) => return Err(e.into()),
            Err(_) => {
                // The task ended without reading: its result says why.
                return Err(finish(task)
                    .err()
                    .unwrap_or_else(|| StoreError::Internal("an append ended early".into()))
                    .into());
            }
        };
        let built = build(&seen.foreign).and_then(|entries| {
            let rows = entries
                .iter()
                .map(|e| {
                    Ok(Row {
                        entry_id: e.id().to_string(),
                        parent_id: e.parent_id().map(str::to_string),
                        kind: e.kind().to_string(),
                        line: serde_json::to_string(e)?,
                    })
                })
                .collect::<Result<Vec<Row>, SessionError>>()?;
            Ok((entries, rows))
        });
        match built {
            Ok((entries, rows)) => {
                let summary = Summary::of(&entries);
                // A task that already failed reports it below.
                let _ = batch_tx.send(Some(Batch { rows, summary }));
                let last = finish(task)?;
                self.known_seq = last.unwrap_or(self.known_seq);
                self.stored = true;
                Ok((seen.foreign, entries))
            }
            Err(e) => {
                // Nothing is written: the transaction rolls back.
                let _ = batch_tx.send(None);
                if let Err(db) = finish(task) {
                    tracing::debug!(error = %db, "rolling back a refused append failed");
                }
                Err(e)
            }
        }
    }

    fn sibling(&self, header: &SessionHeader) -> Box<dyn SessionLog> {
        let mut log = PgLog::new(self.store.clone(), header.id.clone(), 0, false);
        log.durability = self.durability;
        Box::new(log)
    }

    fn revision(&self) -> u64 {
        self.known_seq as u64
    }

    fn open_related(&self, location: &str) -> Result<Session, SessionError> {
        // `location()` of a session of this store: its address, `#`, its id.
        match location
            .strip_prefix(self.store.url())
            .and_then(|rest| rest.strip_prefix('#'))
        {
            Some(id) if !id.is_empty() => self.store.open_id(id),
            _ => Err(SessionError::NotFound {
                query: location.to_string(),
                searched: Vec::new(),
            }),
        }
    }
}

struct Job {
    inner: std::sync::Arc<Inner>,
    session: String,
    header: SessionHeader,
    header_line: Option<String>,
    known_seq: i64,
    synced: bool,
}

/// The append transaction; returns the new last sequence (`None`: nothing
/// written, the caller's build failed or the first half failed and said so).
async fn transaction(
    job: Job,
    seen_tx: oneshot::Sender<Result<Seen, StoreError>>,
    batch_rx: oneshot::Receiver<Option<Batch>>,
) -> Result<Option<i64>, StoreError> {
    let inner = job.inner.clone();
    let mut client = match inner.client().await {
        Ok(c) => c,
        Err(e) => {
            // The caller waits for this message first.
            let _ = seen_tx.send(Err(e));
            return Ok(None);
        }
    };
    let tx = match client.transaction().await {
        Ok(tx) => tx,
        Err(e) => {
            let _ = seen_tx.send(Err(inner.query("start an append")(e)));
            return Ok(None);
        }
    };
    let (last_seq, feed_pos, seen) = match first_half(&job, &tx).await {
        Ok(v) => v,
        Err(e) => {
            let _ = seen_tx.send(Err(e));
            return Ok(None);
        }
    };
    if seen_tx.send(Ok(seen)).is_err() {
        return Ok(None);
    }
    let Ok(Some(batch)) = batch_rx.await else {
        return Ok(None);
    };
    if batch.rows.is_empty() {
        tx.commit().await.map_err(inner.query("commit an append"))?;
        return Ok(Some(last_seq));
    }
    let coord = crate::lock(&inner.coords).get(&job.session).cloned();
    let events = coord.as_ref().map(|c| c.take_events()).unwrap_or_default();
    let written = second_half(&job, &tx, batch, last_seq, feed_pos, &events).await;
    let written = match written {
        Ok(last) => tx
            .commit()
            .await
            .map(|()| last)
            .map_err(inner.query("commit an append")),
        Err(e) => Err(e),
    };
    if written.is_err()
        && let Some(coord) = coord
    {
        coord.restore_events(events);
    }
    written.map(Some)
}

/// Creates the row if needed, locks it, checks the fence, reads what others appended.
async fn first_half(
    job: &Job,
    tx: &tokio_postgres::Transaction<'_>,
) -> Result<(i64, i64, Seen), StoreError> {
    let inner = &job.inner;
    if !job.synced {
        tx.batch_execute("SET LOCAL synchronous_commit = off")
            .await
            .map_err(inner.query("set the append's durability"))?;
    }
    if let Some(line) = &job.header_line {
        tx.execute(
            "INSERT INTO makai_sessions (id, cwd, created, parent_session, header) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING",
            &[
                &job.session,
                &job.header.cwd,
                &job.header.timestamp,
                &job.header.parent_session,
                line,
            ],
        )
        .await
        .map_err(inner.query("create a session"))?;
    }
    let row = tx
        .query_opt(
            "SELECT s.last_seq, s.feed_pos, s.header, \
               (SELECT l.token FROM makai_leases l \
                 WHERE l.session_id = s.id AND l.expires_at > now()) \
             FROM makai_sessions s WHERE s.id = $1 FOR UPDATE OF s",
            &[&job.session],
        )
        .await
        .map_err(inner.query("lock a session for an append"))?
        .ok_or_else(|| StoreError::Deleted {
            session: job.session.clone(),
            url: inner.address.shown.clone(),
        })?;
    let last_seq: i64 = row.get(0);
    let feed_pos: i64 = row.get(1);
    let stored_header: String = row.get(2);
    let lease: Option<i64> = row.get(3);
    let fence = crate::lock(&inner.coords)
        .get(&job.session)
        .and_then(|c| c.fence());
    if let Some(token) = fence
        && lease != Some(token)
    {
        return Err(StoreError::LeaseLost {
            session: job.session.clone(),
        });
    }
    let mut foreign = Foreign::default();
    if job.header_line.as_deref() != Some(stored_header.as_str()) && job.header_line.is_some() {
        foreign.header = serde_json::from_str(&stored_header).ok();
    }
    if last_seq > job.known_seq {
        let rows = tx
            .query(
                "SELECT seq, line FROM makai_entries WHERE session_id = $1 AND seq > $2 \
                 ORDER BY seq",
                &[&job.session, &job.known_seq],
            )
            .await
            .map_err(inner.query("read entries other writers appended"))?;
        for r in rows {
            let seq: i64 = r.get(0);
            let line: &str = r.get(1);
            let (entry, warning) = parse_entry(line, seq).map_err(|message| StoreError::Query {
                url: inner.address.shown.clone(),
                action: "read entries other writers appended",
                message,
            })?;
            foreign.entries.push(entry);
            foreign.entry_lines.push(seq as usize);
            foreign.warnings.extend(warning);
        }
    }
    Ok((last_seq, feed_pos, Seen { foreign }))
}

/// Inserts the entries, their feed rows (after the queued events), updates the row.
async fn second_half(
    job: &Job,
    tx: &tokio_postgres::Transaction<'_>,
    batch: Batch,
    last_seq: i64,
    feed_pos: i64,
    events: &[String],
) -> Result<i64, StoreError> {
    let inner = &job.inner;
    let n = batch.rows.len() as i64;
    let seqs: Vec<i64> = (last_seq + 1..=last_seq + n).collect();
    let mut ids = Vec::with_capacity(batch.rows.len());
    let mut parents = Vec::with_capacity(batch.rows.len());
    let mut kinds = Vec::with_capacity(batch.rows.len());
    let mut lines = Vec::with_capacity(batch.rows.len());
    for r in batch.rows {
        ids.push(r.entry_id);
        parents.push(r.parent_id);
        kinds.push(r.kind);
        lines.push(r.line);
    }
    tx.execute(
        "INSERT INTO makai_entries (session_id, seq, entry_id, parent_id, kind, line) \
         SELECT $1, * FROM unnest($2::int8[], $3::text[], $4::text[], $5::text[], $6::text[])",
        &[&job.session, &seqs, &ids, &parents, &kinds, &lines],
    )
    .await
    .map_err(inner.query("insert entries"))?;
    let feed_end = write_feed(inner, tx, &job.session, feed_pos, events, &seqs).await?;
    let s = &batch.summary;
    tx.execute(
        "UPDATE makai_sessions SET last_seq = $2, feed_pos = $3, \
           entry_count = entry_count + $4, message_count = message_count + $5, \
           name = CASE WHEN $6 THEN $7 ELSE name END, \
           first_message = CASE WHEN first_message = '' THEN $8 ELSE first_message END, \
           updated_at = now() \
         WHERE id = $1",
        &[
            &job.session,
            &(last_seq + n),
            &feed_end,
            &n,
            &s.messages,
            &s.name.is_some(),
            &s.name.clone().flatten(),
            &s.first_message,
        ],
    )
    .await
    .map_err(inner.query("update a session"))?;
    Ok(last_seq + n)
}

/// Writes feed rows after `feed_pos`: the events, then one per entry
/// sequence; notifies listeners (at commit). Returns the new feed position.
pub(crate) async fn write_feed(
    inner: &Inner,
    tx: &tokio_postgres::Transaction<'_>,
    session: &str,
    feed_pos: i64,
    events: &[String],
    entry_seqs: &[i64],
) -> Result<i64, StoreError> {
    let total = (events.len() + entry_seqs.len()) as i64;
    if total == 0 {
        return Ok(feed_pos);
    }
    let positions: Vec<i64> = (feed_pos + 1..=feed_pos + total).collect();
    let mut refs: Vec<Option<i64>> = vec![None; events.len()];
    refs.extend(entry_seqs.iter().copied().map(Some));
    let mut texts: Vec<Option<&str>> = events.iter().map(|e| Some(e.as_str())).collect();
    texts.extend(std::iter::repeat_n(None, entry_seqs.len()));
    tx.execute(
        "INSERT INTO makai_feed (session_id, pos, entry_seq, event) \
         SELECT $1, * FROM unnest($2::int8[], $3::int8[], $4::text[])",
        &[&session, &positions, &refs, &texts],
    )
    .await
    .map_err(inner.query("write the session's feed"))?;
    tx.execute("SELECT pg_notify('makai_feed', $1)", &[&session])
        .await
        .map_err(inner.query("notify the session's followers"))?;
    Ok(feed_pos + total)
}
