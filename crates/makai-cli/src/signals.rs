//! [`StopSignals`]: the signals that ask makai to stop (Ctrl-C, SIGTERM,
//! SIGHUP), registered once, up front, so a signal that arrives between
//! start-up and the first wait is not lost (or fatal).

/// The stop signals of this process, registered when created.
pub struct StopSignals {
    #[cfg(unix)]
    unix: Option<(
        tokio::signal::unix::Signal,
        tokio::signal::unix::Signal,
        tokio::signal::unix::Signal,
    )>,
}

impl std::fmt::Debug for StopSignals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StopSignals").finish_non_exhaustive()
    }
}

impl StopSignals {
    /// Registers the handlers now (needs a Tokio runtime). Where they cannot
    /// be registered, [`StopSignals::next`] falls back to Ctrl-C alone.
    pub fn install() -> StopSignals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let registered = (|| {
                Ok::<_, std::io::Error>((
                    signal(SignalKind::interrupt())?,
                    signal(SignalKind::terminate())?,
                    signal(SignalKind::hangup())?,
                ))
            })();
            match registered {
                Ok(unix) => StopSignals { unix: Some(unix) },
                Err(e) => {
                    eprintln!(
                        "makai: signal handlers could not be installed ({e}); only Ctrl-C stops makai gracefully"
                    );
                    StopSignals { unix: None }
                }
            }
        }
        #[cfg(not(unix))]
        {
            StopSignals {}
        }
    }

    /// The next stop signal; returns the conventional exit code (130 for
    /// Ctrl-C, 143 for SIGTERM, 129 for SIGHUP).
    pub async fn next(&mut self) -> i32 {
        #[cfg(unix)]
        if let Some((int, term, hup)) = &mut self.unix {
            return tokio::select! {
                _ = int.recv() => 130,
                _ = term.recv() => 143,
                _ = hup.recv() => 129,
            };
        }
        match tokio::signal::ctrl_c().await {
            Ok(()) => 130,
            Err(e) => {
                eprintln!("makai: cannot wait for Ctrl-C ({e})");
                std::future::pending().await
            }
        }
    }
}
