//! HTTPS through the provider client: certificates are verified.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use makai_ai::{Api, Context, Model, RetryPolicy, StopReason, StreamOptions, UserMessage};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A TLS server on 127.0.0.1 with a self-signed certificate no trust store has.
/// Reports whether any client completed the handshake.
async fn untrusted_tls_server() -> (std::net::SocketAddr, tokio::task::JoinHandle<bool>) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tls");
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_file_iter(format!("{dir}/cert.pem"))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
    let key = PrivateKeyDer::from_pem_file(format!("{dir}/key.pem")).unwrap();
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let Ok((socket, _)) = listener.accept().await else {
            return false;
        };
        match acceptor.accept(socket).await {
            Ok(mut tls) => {
                let mut buf = [0u8; 1024];
                let _ = tls.read(&mut buf).await;
                let _ = tls
                    .write_all(b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\n\r\n")
                    .await;
                true
            }
            Err(_) => false,
        }
    });
    (addr, task)
}

#[tokio::test]
async fn an_untrusted_certificate_is_refused_with_a_clear_error() {
    let (addr, server) = untrusted_tls_server().await;
    let model = Model::custom(
        Api::OpenAiCompletions,
        "local",
        "m",
        format!("https://127.0.0.1:{}/v1", addr.port()),
    );
    let context = Context {
        system_prompt: None,
        messages: vec![UserMessage::text("hi").into()],
        tools: vec![],
    };
    let options = StreamOptions {
        retry: RetryPolicy::none(),
        ..Default::default()
    };
    let message = makai_ai::complete(&model, &context, options).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    let error = message.error_message.unwrap_or_default();
    eprintln!("error: {error}");
    assert!(
        error.to_lowercase().contains("certificate"),
        "the error should name the certificate problem: {error}"
    );
    assert!(!server.await.unwrap(), "the handshake must not complete");
}
