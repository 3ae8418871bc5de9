//! One connection per process that `LISTEN`s for the store's notifications
//! (`makai_feed`: a session's feed grew; `makai_inbox`: work was queued for a
//! session) and wakes whoever in this process follows that session. A lost
//! connection is re-established, and every follower is woken then (it may
//! have missed notifications, so it reads again).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::watch;
use tokio_postgres::AsyncMessage;

use crate::Inner;
use crate::address::Address;
use crate::error::{StoreError, describe};

/// The two channels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Channel {
    Feed,
    Inbox,
}

type Wakers = Mutex<HashMap<(Channel, String), watch::Sender<u64>>>;

/// Routes notifications to per-session watches.
pub(crate) struct Listener {
    wakers: Arc<Wakers>,
}

impl Listener {
    /// Starts listening on the store's runtime.
    pub fn start(inner: &Arc<Inner>) -> Listener {
        let wakers: Arc<Wakers> = Arc::default();
        let routes = wakers.clone();
        // No reference to the store: the task ends with the store's runtime.
        let address = inner.address.clone();
        inner.bridge.spawn(async move {
            let mut delay = Duration::from_millis(100);
            loop {
                match listen(&address, &routes).await {
                    Ok(()) => delay = Duration::from_millis(100),
                    Err(e) => {
                        tracing::warn!(error = %e, "the store's notification connection failed; reconnecting");
                        delay = (delay * 2).min(Duration::from_secs(5));
                    }
                }
                wake_all(&routes);
                tokio::time::sleep(delay).await;
            }
        });
        Listener { wakers }
    }

    /// A watch that changes whenever `session` gets a notification on `channel`.
    pub fn watch(&self, channel: Channel, session: &str) -> watch::Receiver<u64> {
        let mut map = crate::lock(&self.wakers);
        map.retain(|_, tx| tx.receiver_count() > 0);
        map.entry((channel, session.to_string()))
            .or_insert_with(|| watch::channel(0).0)
            .subscribe()
    }
}

fn wake(routes: &Wakers, channel: Channel, session: &str) {
    if let Some(tx) = crate::lock(routes).get(&(channel, session.to_string())) {
        tx.send_modify(|n| *n += 1);
    }
}

fn wake_all(routes: &Wakers) {
    for tx in crate::lock(routes).values() {
        tx.send_modify(|n| *n += 1);
    }
}

/// Listens until the connection ends.
async fn listen(address: &Address, routes: &Wakers) -> Result<(), StoreError> {
    let connect_err = |e: tokio_postgres::Error| StoreError::Connect {
        url: address.shown.clone(),
        message: describe(&e),
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(String, String)>();
    let client = if address.tls {
        let tls = tokio_postgres_rustls::MakeRustlsConnect::new(address.rustls_config()?);
        let (client, mut conn) = address.config.connect(tls).await.map_err(connect_err)?;
        tokio::spawn(async move {
            let mut messages = futures::stream::poll_fn(move |cx| conn.poll_message(cx));
            forward(&mut messages, tx).await
        });
        client
    } else {
        let (client, mut conn) = address
            .config
            .connect(tokio_postgres::NoTls)
            .await
            .map_err(connect_err)?;
        tokio::spawn(async move {
            let mut messages = futures::stream::poll_fn(move |cx| conn.poll_message(cx));
            forward(&mut messages, tx).await
        });
        client
    };
    client
        .batch_execute("LISTEN makai_feed; LISTEN makai_inbox")
        .await
        .map_err(|e| StoreError::Query {
            url: address.shown.clone(),
            action: "listen for notifications",
            message: describe(&e),
        })?;
    // Followers may have missed something before the LISTEN took effect.
    wake_all(routes);
    while let Some((channel, payload)) = rx.recv().await {
        match channel.as_str() {
            "makai_feed" => wake(routes, Channel::Feed, &payload),
            "makai_inbox" => wake(routes, Channel::Inbox, &payload),
            _ => {}
        }
    }
    drop(client);
    Ok(())
}

async fn forward(
    messages: &mut (impl futures::Stream<Item = Result<AsyncMessage, tokio_postgres::Error>> + Unpin),
    tx: tokio::sync::mpsc::UnboundedSender<(String, String)>,
) {
    while let Some(message) = messages.next().await {
        match message {
            Ok(AsyncMessage::Notification(n)) => {
                if tx
                    .send((n.channel().to_string(), n.payload().to_string()))
                    .is_err()
                {
                    return;
                }
            }
            Ok(_) => {}
            Err(e) => {
                tracing::debug!(error = %describe(&e), "the notification connection ended");
                return;
            }
        }
    }
}

impl crate::PgStore {
    /// The process's listener (started on first use).
    pub(crate) fn listener(&self) -> &Listener {
        self.inner()
            .listener
            .get_or_init(|| Listener::start(self.inner()))
    }

    /// A watch that changes when work is queued for `session` (see
    /// [`crate::PgStore::push_inbox`]) or the notification connection was
    /// re-established.
    pub fn watch_inbox(&self, session: &str) -> watch::Receiver<u64> {
        self.listener().watch(Channel::Inbox, session)
    }
}
