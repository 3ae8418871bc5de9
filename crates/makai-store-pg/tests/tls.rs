//! TLS to PostgreSQL through rustls, against the real test server (which
//! speaks TLS with a certificate signed by a throwaway CA): `sslmode=require`
//! with the CA as `sslrootcert` encrypts the connection and the store works
//! over it; a CA that did not sign the server's certificate is refused with a
//! TLS error before anything is sent; without `sslmode`, no TLS.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use makai_ai::UserMessage;
use makai_coding::session::SessionStore;
use makai_store_pg::PgStore;
use makai_store_pg::testing::{in_ci, server_or_skip};

const CWD: &str = "/home/user/project";

/// Whether the store's own connection is encrypted (PostgreSQL's view).
fn connection_is_tls(store: &PgStore) -> bool {
    store.connection_encrypted().unwrap()
}

#[test]
fn sslmode_require_with_the_server_s_ca_encrypts_and_another_ca_is_refused() {
    let Some(server) = server_or_skip("tls") else {
        return;
    };
    let Some(ca) = server.ca_file() else {
        assert!(
            !in_ci(),
            "the test server in CI is started by scripts/pg-test.sh, which gives it a TLS certificate"
        );
        eprintln!("SKIPPED tls: the test server was not started with a TLS certificate");
        return;
    };
    let url = server.create_database().unwrap();

    let tls_url = format!("{url}?sslmode=require&sslrootcert={}", ca.display());
    let store = PgStore::connect(&tls_url).unwrap();
    assert!(connection_is_tls(&store), "the connection is encrypted");
    let mut session = store.create(CWD);
    session
        .append_message(UserMessage::text("over TLS"))
        .unwrap();
    let again = store.open(CWD, session.id()).unwrap();
    assert_eq!(again.entries(), session.entries());
    // The name in the certificate is checked: localhost is in it as well.
    let by_name = tls_url.replace("127.0.0.1", "localhost");
    assert!(connection_is_tls(&PgStore::connect(&by_name).unwrap()));

    let other = ca.with_file_name("other-ca.pem");
    let wrong = format!("{url}?sslmode=require&sslrootcert={}", other.display());
    let Err(err) = PgStore::connect(&wrong) else {
        panic!("a CA that did not sign the server's certificate was accepted");
    };
    let text = err.to_string();
    assert!(text.contains("cannot connect"), "{text}");
    assert!(
        text.to_lowercase().contains("certificate") || text.contains("UnknownIssuer"),
        "{text}"
    );
    assert!(!text.contains(password(&url)), "no password in {text}");

    // No sslmode: a plain connection, as before.
    assert!(!connection_is_tls(&PgStore::connect(&url).unwrap()));
}

/// The password of a test URL.
fn password(url: &str) -> &str {
    let after = url.split("://").nth(1).unwrap();
    let userinfo = after.split('@').next().unwrap();
    userinfo.split(':').nth(1).unwrap()
}
