//! The store's address: a `postgres://` URL, read once into the driver's
//! configuration, the TLS choice and the pool size; shown everywhere without
//! its password.

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use tokio_postgres::config::SslMode;

use crate::error::StoreError;

/// Connections per store when the URL does not say (`pool_size=N`).
pub const DEFAULT_POOL_SIZE: usize = 16;

/// A parsed store URL.
#[derive(Clone)]
pub(crate) struct Address {
    /// The driver's configuration (password included).
    pub config: tokio_postgres::Config,
    /// The URL with its password replaced by `***`.
    pub shown: String,
    /// TLS through rustls (`sslmode=require`).
    pub tls: bool,
    /// A CA certificate file to trust instead of the system's (`sslrootcert=`).
    pub root_cert: Option<PathBuf>,
    /// Pool size (`pool_size=`).
    pub pool_size: usize,
}

impl std::fmt::Debug for Address {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

/// `url` with the password (if any) replaced by `***`.
pub fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) if u.password().is_some() => {
            if u.set_password(Some("***")).is_err() {
                return "<a PostgreSQL URL>".into();
            }
            u.to_string()
        }
        Ok(u) => u.to_string(),
        Err(_) => "<a PostgreSQL URL>".into(),
    }
}

/// True when `s` names a PostgreSQL store (`postgres://` or `postgresql://`).
pub fn is_postgres_url(s: &str) -> bool {
    let lower = s.trim_start().to_ascii_lowercase();
    lower.starts_with("postgres://") || lower.starts_with("postgresql://")
}

impl Address {
    pub fn parse(url: &str) -> Result<Address, StoreError> {
        let shown = redact(url);
        let bad = |reason: String| StoreError::BadUrl {
            url: shown.clone(),
            reason,
        };
        if !is_postgres_url(url) {
            return Err(bad(
                "it does not start with postgres:// or postgresql://".into()
            ));
        }
        let mut parsed = url::Url::parse(url.trim()).map_err(|e| bad(e.to_string()))?;
        // makai's own parameters; the driver refuses parameters it does not know.
        let mut root_cert = None;
        let mut pool_size = DEFAULT_POOL_SIZE;
        let mut kept: Vec<(String, String)> = Vec::new();
        for (k, v) in parsed.query_pairs() {
            match k.as_ref() {
                "sslrootcert" => root_cert = Some(PathBuf::from(v.as_ref())),
                "pool_size" => {
                    pool_size =
                        v.parse::<usize>().ok().filter(|n| *n > 0).ok_or_else(|| {
                            bad(format!("pool_size={v} is not a positive number"))
                        })?;
                }
                _ => kept.push((k.into_owned(), v.into_owned())),
            }
        }
        if kept.is_empty() {
            parsed.set_query(None);
        } else {
            parsed.query_pairs_mut().clear().extend_pairs(kept);
        }
        let mut config =
            tokio_postgres::Config::from_str(parsed.as_str()).map_err(|e| bad(e.to_string()))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        if config.get_application_name().is_none() {
            config.application_name("makai");
        }
        let tls = config.get_ssl_mode() == SslMode::Require;
        if root_cert.is_some() && !tls {
            return Err(bad("sslrootcert needs sslmode=require".into()));
        }
        Ok(Address {
            config,
            shown,
            tls,
            root_cert,
            pool_size,
        })
    }

    /// The rustls configuration: the given CA file, else the platform's verifier.
    pub fn rustls_config(&self) -> Result<rustls::ClientConfig, StoreError> {
        let tls_err = |message: String| StoreError::Tls {
            url: self.shown.clone(),
            message,
        };
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| tls_err(e.to_string()))?;
        match &self.root_cert {
            Some(path) => {
                use rustls_pki_types::CertificateDer;
                use rustls_pki_types::pem::PemObject;
                let mut roots = rustls::RootCertStore::empty();
                let certs = CertificateDer::pem_file_iter(path).map_err(|e| {
                    tls_err(format!("cannot read sslrootcert {}: {e}", path.display()))
                })?;
                for cert in certs {
                    let cert = cert.map_err(|e| {
                        tls_err(format!("sslrootcert {} is not PEM: {e}", path.display()))
                    })?;
                    roots
                        .add(cert)
                        .map_err(|e| tls_err(format!("sslrootcert {}: {e}", path.display())))?;
                }
                if roots.is_empty() {
                    return Err(tls_err(format!(
                        "sslrootcert {} holds no certificate",
                        path.display()
                    )));
                }
                Ok(builder.with_root_certificates(roots).with_no_client_auth())
            }
            None => {
                use rustls_platform_verifier::BuilderVerifierExt;
                Ok(builder
                    .with_platform_verifier()
                    .map_err(|e| tls_err(e.to_string()))?
                    .with_no_client_auth())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_hidden_and_makai_parameters_taken_out() {
        let a = Address::parse(
            "postgres://me:s3cret@db.example:5433/app?sslmode=require&sslrootcert=/ca.pem&pool_size=4",
        )
        .unwrap();
        assert!(!a.shown.contains("s3cret"), "{}", a.shown);
        assert!(
            a.shown.contains("me:***@db.example:5433/app"),
            "{}",
            a.shown
        );
        assert!(a.tls);
        assert_eq!(a.pool_size, 4);
        assert_eq!(
            a.root_cert.as_deref(),
            Some(std::path::Path::new("/ca.pem"))
        );
        assert!(!format!("{a:?}").contains("s3cret"));
        let plain = Address::parse("postgresql://me@localhost/app").unwrap();
        assert!(!plain.tls);
        assert_eq!(plain.pool_size, DEFAULT_POOL_SIZE);
    }

    #[test]
    fn bad_urls_say_what_is_wrong_without_the_password() {
        let e = Address::parse("mysql://me:pw@h/db")
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not start with postgres://"), "{e}");
        assert!(!e.contains(":pw@"), "{e}");
        let e = Address::parse("postgres://me:pw@h/db?pool_size=0")
            .unwrap_err()
            .to_string();
        assert!(e.contains("pool_size=0"), "{e}");
        let e = Address::parse("postgres://me:pw@h/db?sslrootcert=/x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("sslmode=require"), "{e}");
        let e = Address::parse("postgres://me:pw@h/db?bogus=1")
            .unwrap_err()
            .to_string();
        assert!(e.contains("bogus"), "{e}");
    }
}
