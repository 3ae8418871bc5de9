//! Schema migrations against a real PostgreSQL: instances starting at once
//! apply each version exactly once, and starting again changes nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Barrier};

use makai_store_pg::testing::database_or_skip;
use makai_store_pg::{PgStore, SCHEMA_VERSION};

/// (version, applied_by) rows of `makai_schema`, in order.
fn versions(url: &str) -> Vec<(i32, String)> {
    let url = url.to_string();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(conn);
            client
                .query(
                    "SELECT version, applied_by FROM makai_schema ORDER BY version",
                    &[],
                )
                .await
                .unwrap()
                .iter()
                .map(|r| (r.get(0), r.get(1)))
                .collect()
        })
    })
    .join()
    .unwrap()
}

#[test]
fn instances_starting_at_once_apply_each_migration_once_and_again_changes_nothing() {
    let Some(url) = database_or_skip("instances_starting_at_once_apply_each_migration_once") else {
        return;
    };
    let starting = 6;
    let barrier = Arc::new(Barrier::new(starting));
    let handles: Vec<_> = (0..starting)
        .map(|_| {
            let (url, barrier) = (url.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                PgStore::connect(&url).map(|_| ())
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap().expect("an instance failed to start");
    }
    let applied = versions(&url);
    let numbers: Vec<i32> = applied.iter().map(|(v, _)| *v).collect();
    assert_eq!(numbers, (1..=SCHEMA_VERSION).collect::<Vec<_>>());
    assert!(
        applied.iter().all(|(_, by)| by.starts_with("makai ")),
        "{applied:?}"
    );
    PgStore::connect(&url).unwrap();
    assert_eq!(versions(&url), applied, "a second start changed the schema");
}
