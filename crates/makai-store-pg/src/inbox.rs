//! The inbox: work queued for the instance that runs a session (a prompt
//! sent to a busy session through another instance, a steering message, an
//! abort). Items are opaque to the store: a kind and a body its server reads.

use crate::error::StoreError;
use crate::{Inner, PgStore};

/// One queued item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InboxItem {
    /// Its order (oldest first).
    pub id: i64,
    /// What it is, in the server's words.
    pub kind: String,
    /// Its data, in the server's words.
    pub body: String,
}

/// Takes every item of `session` (oldest first) inside `tx`.
pub(crate) async fn take(
    inner: &Inner,
    tx: &tokio_postgres::Transaction<'_>,
    session: &str,
) -> Result<Vec<InboxItem>, StoreError> {
    let rows = tx
        .query(
            "DELETE FROM makai_inbox WHERE session_id = $1 RETURNING id, kind, body",
            &[&session],
        )
        .await
        .map_err(inner.query("take queued work"))?;
    let mut items: Vec<InboxItem> = rows
        .iter()
        .map(|r| InboxItem {
            id: r.get(0),
            kind: r.get(1),
            body: r.get(2),
        })
        .collect();
    items.sort_by_key(|i| i.id);
    Ok(items)
}

impl PgStore {
    /// Queues an item for `session` and tells its runner. Returns the holder
    /// of the session's live lease, or `None` when nobody runs the session
    /// (the item waits for the next run; a caller that wants it run now takes
    /// the lease itself).
    pub async fn push_inbox(
        &self,
        session: &str,
        kind: &str,
        body: &str,
    ) -> Result<Option<String>, StoreError> {
        let inner = self.inner().clone();
        let (session, kind, body) = (session.to_string(), kind.to_string(), body.to_string());
        self.inner()
            .bridge
            .run(async move {
                let mut client = inner.client().await?;
                let tx = client
                    .transaction()
                    .await
                    .map_err(inner.query("queue work"))?;
                // Shares the row lock a release takes exclusively: a push
                // either lands before the release looks, or after the lease is gone.
                let holder: Option<String> = tx
                    .query_opt(
                        "SELECT holder FROM makai_leases \
                         WHERE session_id = $1 AND expires_at > now() FOR SHARE",
                        &[&session],
                    )
                    .await
                    .map_err(inner.query("queue work"))?
                    .map(|r| r.get(0));
                tx.execute(
                    "INSERT INTO makai_inbox (session_id, kind, body) VALUES ($1, $2, $3)",
                    &[&session, &kind, &body],
                )
                .await
                .map_err(inner.query("queue work"))?;
                if holder.is_some() {
                    tx.execute("SELECT pg_notify('makai_inbox', $1)", &[&session])
                        .await
                        .map_err(inner.query("notify a session's runner"))?;
                }
                tx.commit().await.map_err(inner.query("queue work"))?;
                Ok(holder)
            })
            .await
    }

    /// Takes the items queued for `session`, oldest first (its runner does).
    pub async fn take_inbox(&self, session: &str) -> Result<Vec<InboxItem>, StoreError> {
        let inner = self.inner().clone();
        let session = session.to_string();
        self.inner()
            .bridge
            .run(async move {
                let mut client = inner.client().await?;
                let tx = client
                    .transaction()
                    .await
                    .map_err(inner.query("take queued work"))?;
                let items = take(&inner, &tx, &session).await?;
                tx.commit().await.map_err(inner.query("take queued work"))?;
                Ok(items)
            })
            .await
    }
}
