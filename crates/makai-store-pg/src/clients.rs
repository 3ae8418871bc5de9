//! Which session each protocol client uses, and where each of its
//! subscriptions started in the session's feed: what lets a client that
//! reconnects to another instance carry on (its commands reach the same
//! session, its event stream resumes at the same sequence number).

use std::time::Duration;

use crate::PgStore;
use crate::error::StoreError;

impl PgStore {
    /// Records that `client` uses `session`.
    pub async fn bind_client(&self, client: &str, session: &str) -> Result<(), StoreError> {
        let inner = self.inner().clone();
        let (client_id, session) = (client.to_string(), session.to_string());
        self.inner()
            .bridge
            .run(async move {
                let client = inner.client().await?;
                client
                    .execute(
                        "INSERT INTO makai_clients (client_id, session_id) VALUES ($1, $2) \
                         ON CONFLICT (client_id) DO UPDATE \
                         SET session_id = EXCLUDED.session_id, updated_at = now()",
                        &[&client_id, &session],
                    )
                    .await
                    .map_err(inner.query("record a client's session"))?;
                Ok(())
            })
            .await
    }

    /// The session `client` uses, if it chose or was given one.
    pub async fn client_session(&self, client: &str) -> Result<Option<String>, StoreError> {
        let inner = self.inner().clone();
        let client_id = client.to_string();
        self.inner()
            .bridge
            .run(async move {
                let client = inner.client().await?;
                let row = client
                    .query_opt(
                        "UPDATE makai_clients SET updated_at = now() WHERE client_id = $1 \
                         RETURNING session_id",
                        &[&client_id],
                    )
                    .await
                    .map_err(inner.query("read a client's session"))?;
                Ok(row.map(|r| r.get(0)))
            })
            .await
    }

    /// Records that `client`'s stream `stream` follows `session`'s feed from
    /// after position `start` (its message 1 is the row at `start + 1`).
    pub async fn record_subscription(
        &self,
        client: &str,
        stream: u64,
        session: &str,
        start: i64,
    ) -> Result<(), StoreError> {
        let inner = self.inner().clone();
        let (client_id, session) = (client.to_string(), session.to_string());
        let stream = stream as i64;
        self.inner()
            .bridge
            .run(async move {
                let client = inner.client().await?;
                client
                    .execute(
                        "INSERT INTO makai_subscriptions (client_id, stream_id, session_id, start_pos) \
                         VALUES ($1, $2, $3, $4) ON CONFLICT (client_id, stream_id) DO UPDATE \
                         SET session_id = EXCLUDED.session_id, start_pos = EXCLUDED.start_pos",
                        &[&client_id, &stream, &session, &start],
                    )
                    .await
                    .map_err(inner.query("record a subscription"))?;
                Ok(())
            })
            .await
    }

    /// Where `client`'s stream `stream` started: (session, start position).
    pub async fn subscription(
        &self,
        client: &str,
        stream: u64,
    ) -> Result<Option<(String, i64)>, StoreError> {
        let inner = self.inner().clone();
        let client_id = client.to_string();
        let stream = stream as i64;
        self.inner()
            .bridge
            .run(async move {
                let client = inner.client().await?;
                let row = client
                    .query_opt(
                        "SELECT session_id, start_pos FROM makai_subscriptions \
                         WHERE client_id = $1 AND stream_id = $2",
                        &[&client_id, &stream],
                    )
                    .await
                    .map_err(inner.query("read a subscription"))?;
                Ok(row.map(|r| (r.get(0), r.get(1))))
            })
            .await
    }

    /// True when the store knows `client` (it used a session through some instance).
    pub async fn knows_client(&self, client: &str) -> Result<bool, StoreError> {
        let inner = self.inner().clone();
        let client_id = client.to_string();
        self.inner()
            .bridge
            .run(async move {
                let client = inner.client().await?;
                let row = client
                    .query_opt(
                        "SELECT 1 FROM makai_clients WHERE client_id = $1 \
                         UNION ALL SELECT 1 FROM makai_subscriptions WHERE client_id = $1 LIMIT 1",
                        &[&client_id],
                    )
                    .await
                    .map_err(inner.query("look a client up"))?;
                Ok(row.is_some())
            })
            .await
    }

    /// Forgets clients (and their subscriptions) not seen for `age`.
    pub async fn prune_clients(&self, age: Duration) -> Result<u64, StoreError> {
        let inner = self.inner().clone();
        let ms = age.as_millis().min(i64::MAX as u128) as i64;
        self.inner()
            .bridge
            .run(async move {
                let client = inner.client().await?;
                let a = client
                    .execute(
                        "DELETE FROM makai_clients \
                         WHERE updated_at < now() - $1::int8 * interval '1 millisecond'",
                        &[&ms],
                    )
                    .await
                    .map_err(inner.query("prune old clients"))?;
                let b = client
                    .execute(
                        "DELETE FROM makai_subscriptions s \
                         WHERE created_at < now() - $1::int8 * interval '1 millisecond' \
                         AND NOT EXISTS (SELECT 1 FROM makai_clients c \
                                         WHERE c.client_id = s.client_id)",
                        &[&ms],
                    )
                    .await
                    .map_err(inner.query("prune old subscriptions"))?;
                Ok(a + b)
            })
            .await
    }
}
