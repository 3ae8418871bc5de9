//! What stateless servers coordinate through, against a real PostgreSQL:
//! leases (exclusive, expiring, passed on, fencing the old holder's appends),
//! the inbox (handed to the holder at release, never lost), the feed (every
//! row once, in order, while others write; pruned rows are a gap that says
//! so) and clients' sessions and subscriptions. Each `PgStore` handle plays
//! one instance.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use futures::StreamExt;
use makai_ai::UserMessage;
use makai_coding::session::{Session, SessionStore};
use makai_store_pg::PgStore;
use makai_store_pg::feed::FeedError;
use makai_store_pg::lease::{Acquired, Released};
use makai_store_pg::testing::database_or_skip;

const CWD: &str = "/home/user/project";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Two handles on one fresh database: two instances.
fn two(test: &str) -> Option<(PgStore, PgStore)> {
    let url = database_or_skip(test)?;
    Some((
        PgStore::connect(&url).unwrap(),
        PgStore::connect(&url).unwrap(),
    ))
}

/// A stored session with one message.
fn session(store: &PgStore) -> Session {
    let mut s = store.create(CWD);
    s.append_message(UserMessage::text("first")).unwrap();
    s
}

#[test]
fn a_lease_is_exclusive_until_it_expires_then_passes_on_and_fences_the_old_holder() {
    let Some((a, b)) = two("a_lease_is_exclusive") else {
        return;
    };
    let rt = runtime();
    let mut on_a = session(&a);
    let id = on_a.id().to_string();
    let ttl = Duration::from_millis(400);

    let Acquired::Held { lease, taken_over } = rt.block_on(a.acquire_lease(&id, "a", ttl)).unwrap()
    else {
        panic!("a free lease was not given")
    };
    assert_eq!(taken_over, None);
    assert_eq!(
        rt.block_on(b.acquire_lease(&id, "b", ttl)).unwrap(),
        Acquired::Busy { holder: "a".into() }
    );
    assert!(rt.block_on(a.renew_lease(&lease, ttl)).unwrap());
    assert_eq!(rt.block_on(a.leases_of("a")).unwrap(), vec![id.clone()]);
    a.coord(&id).set_fence(Some(lease.token));
    on_a.append_message(UserMessage::text("under the lease"))
        .unwrap();

    // a stops renewing: b takes the session over, and a can no longer write.
    std::thread::sleep(ttl + Duration::from_millis(150));
    let Acquired::Held {
        lease: b_lease,
        taken_over,
    } = rt.block_on(b.acquire_lease(&id, "b", ttl)).unwrap()
    else {
        panic!("an expired lease was not passed on")
    };
    assert_eq!(taken_over.as_deref(), Some("a"));
    assert!(b_lease.token > lease.token, "tokens grow");
    assert!(!rt.block_on(a.renew_lease(&lease, ttl)).unwrap());
    let e = on_a
        .append_message(UserMessage::text("too late"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("no longer holds the session's lease"), "{e}");
    let stored = b.export(CWD, &id).unwrap();
    assert_eq!(stored.entries.len(), 2, "the fenced append wrote nothing");
    assert_eq!(
        rt.block_on(a.release_lease(&lease)).unwrap(),
        Released::Lost
    );

    assert_eq!(
        rt.block_on(b.release_lease(&b_lease)).unwrap(),
        Released::Released
    );
    assert_eq!(rt.block_on(b.lease_holder(&id)).unwrap(), None);
}

#[test]
fn work_queued_for_a_held_session_is_handed_to_the_holder_at_release_never_lost() {
    let Some((a, b)) = two("work_queued_for_a_held_session") else {
        return;
    };
    let rt = runtime();
    let id = session(&a).id().to_string();
    let ttl = Duration::from_secs(30);
    let Acquired::Held { lease, .. } = rt.block_on(a.acquire_lease(&id, "a", ttl)).unwrap() else {
        panic!()
    };
    let mut woken = a.watch_inbox(&id);
    // Pushed through b: a is told, and gets it when it tries to let go.
    assert_eq!(
        rt.block_on(b.push_inbox(&id, "command", "one")).unwrap(),
        Some("a".into())
    );
    rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(5), woken.changed())
            .await
            .expect("the holder was not notified")
            .unwrap()
    });
    let Released::Queued(items) = rt.block_on(a.release_lease(&lease)).unwrap() else {
        panic!("queued work was not handed over")
    };
    assert_eq!(
        items.iter().map(|i| i.body.as_str()).collect::<Vec<_>>(),
        ["one"]
    );
    assert_eq!(
        rt.block_on(a.lease_holder(&id)).unwrap().as_deref(),
        Some("a")
    );
    assert_eq!(
        rt.block_on(a.release_lease(&lease)).unwrap(),
        Released::Released
    );

    // Nobody holds it: the item waits for whoever takes the lease.
    assert_eq!(
        rt.block_on(b.push_inbox(&id, "command", "two")).unwrap(),
        None
    );
    assert_eq!(
        rt.block_on(b.push_inbox(&id, "command", "three")).unwrap(),
        None
    );
    let Acquired::Held { .. } = rt.block_on(b.acquire_lease(&id, "b", ttl)).unwrap() else {
        panic!()
    };
    let items = rt.block_on(b.take_inbox(&id)).unwrap();
    assert_eq!(
        items.iter().map(|i| i.body.as_str()).collect::<Vec<_>>(),
        ["two", "three"],
        "oldest first"
    );
    assert!(rt.block_on(b.take_inbox(&id)).unwrap().is_empty());
}

#[test]
fn expired_leases_are_swept_once_by_one_instance() {
    let Some((a, b)) = two("expired_leases_are_swept_once") else {
        return;
    };
    let rt = runtime();
    let ids: Vec<String> = (0..3).map(|_| session(&a).id().to_string()).collect();
    for id in &ids {
        let got = rt
            .block_on(a.acquire_lease(id, "a", Duration::from_millis(100)))
            .unwrap();
        assert!(matches!(got, Acquired::Held { .. }));
    }
    assert!(
        rt.block_on(b.take_expired_leases("b", Duration::from_secs(30), 16))
            .unwrap()
            .is_empty(),
        "live leases are not swept"
    );
    std::thread::sleep(Duration::from_millis(250));
    let c = a.clone();
    let (first, second) = rt.block_on(async {
        tokio::join!(
            b.take_expired_leases("b", Duration::from_secs(30), 16),
            c.take_expired_leases("c", Duration::from_secs(30), 16)
        )
    });
    let (first, second) = (first.unwrap(), second.unwrap());
    assert_eq!(first.len() + second.len(), 3, "{first:?} {second:?}");
    let mut swept: Vec<String> = first
        .iter()
        .chain(&second)
        .map(|t| {
            assert_eq!(t.previous, "a");
            t.lease.session.clone()
        })
        .collect();
    swept.sort();
    let mut expected = ids.clone();
    expected.sort();
    assert_eq!(swept, expected, "each once");
}

/// Regression: a follower read the feed's rows, then its head, in two
/// statements; a row committed between them looked like a pruned gap and
/// ended subscriptions under load.
#[test]
fn a_follower_sees_every_feed_row_once_in_order_and_never_a_false_gap_while_others_write() {
    let Some((a, b)) = two("a_follower_sees_every_feed_row_once") else {
        return;
    };
    let rt = runtime();
    let mut writer = session(&a);
    let id = writer.id().to_string();
    let rounds = 150;
    let follower = {
        let id = id.clone();
        let b = b.clone();
        rt.spawn(async move {
            let mut rows = Vec::new();
            let mut feed = Box::pin(b.follow_feed(&id, 0));
            // 1 entry row already, then per round: 2 events + 1 entry.
            while rows.len() < 1 + rounds * 3 {
                let item = tokio::time::timeout(Duration::from_secs(20), feed.next())
                    .await
                    .expect("the follower stalled")
                    .expect("the feed ended");
                rows.push(item.expect("the follower failed"));
            }
            rows
        })
    };
    let coord = a.coord(&id);
    for i in 0..rounds {
        coord.push_event(format!(r#"{{"type":"tick","n":{i}}}"#));
        rt.block_on(a.flush_events(&id)).unwrap();
        coord.push_event(format!(r#"{{"type":"tock","n":{i}}}"#));
        writer
            .append_message(UserMessage::text(format!("message {i}")))
            .unwrap();
    }
    let rows = rt.block_on(follower).unwrap();
    let positions: Vec<i64> = rows.iter().map(|r| r.pos).collect();
    assert_eq!(positions, (1..=positions.len() as i64).collect::<Vec<_>>());
    assert!(
        rows[0]
            .json
            .starts_with(r#"{"type":"entry_appended","entry":{"type":"message""#)
    );
    for (i, round) in rows[1..].chunks(3).enumerate() {
        assert_eq!(round[0].json, format!(r#"{{"type":"tick","n":{i}}}"#));
        // Queued events go in before the entries of the append that carries them.
        assert_eq!(round[1].json, format!(r#"{{"type":"tock","n":{i}}}"#));
        assert!(
            round[2].json.contains(&format!("message {i}")),
            "{}",
            round[2].json
        );
    }
    assert_eq!(
        rt.block_on(b.feed_head(&id)).unwrap(),
        positions.len() as i64
    );
}

#[test]
fn pruned_feed_rows_are_a_gap_that_names_the_positions() {
    let Some((a, _)) = two("pruned_feed_rows_are_a_gap") else {
        return;
    };
    let rt = runtime();
    let mut s = session(&a);
    let id = s.id().to_string();
    s.append_message(UserMessage::text("second")).unwrap();
    assert_eq!(rt.block_on(a.read_feed(&id, 0, 10)).unwrap().len(), 2);
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(rt.block_on(a.prune_feed(Duration::ZERO)).unwrap(), 2);
    s.append_message(UserMessage::text("third")).unwrap();
    let Err(FeedError::Gap(gap)) = rt.block_on(a.read_feed(&id, 0, 10)) else {
        panic!("pruned rows were not reported")
    };
    assert_eq!((gap.after, gap.first), (0, 3));
    let text = gap.to_string();
    assert!(
        text.contains("after position 0") && text.contains("get_entries"),
        "{text}"
    );
    // Reading from the head on works.
    assert_eq!(rt.block_on(a.read_feed(&id, 2, 10)).unwrap().len(), 1);
}

#[test]
fn a_client_keeps_its_session_and_subscriptions_across_instances() {
    let Some((a, b)) = two("a_client_keeps_its_session") else {
        return;
    };
    let rt = runtime();
    let id = session(&a).id().to_string();
    assert!(!rt.block_on(b.knows_client("c1")).unwrap());
    assert_eq!(rt.block_on(b.client_session("c1")).unwrap(), None);
    rt.block_on(a.bind_client("c1", &id)).unwrap();
    rt.block_on(a.record_subscription("c1", 7, &id, 42))
        .unwrap();
    assert!(rt.block_on(b.knows_client("c1")).unwrap());
    assert_eq!(
        rt.block_on(b.client_session("c1")).unwrap(),
        Some(id.clone())
    );
    assert_eq!(
        rt.block_on(b.subscription("c1", 7)).unwrap(),
        Some((id.clone(), 42))
    );
    assert_eq!(rt.block_on(b.subscription("c1", 8)).unwrap(), None);
    // Rebinding moves the client.
    let other = session(&b).id().to_string();
    rt.block_on(b.bind_client("c1", &other)).unwrap();
    assert_eq!(rt.block_on(a.client_session("c1")).unwrap(), Some(other));
}
