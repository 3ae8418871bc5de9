//! `makai serve [options]`: the server's own flags plus the session flags of a
//! normal run (model, provider, tools, session, ...).

use std::ffi::OsString;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use clap::{CommandFactory, FromArgMatches, Parser};

use crate::cli::{Args, Invocation, clap_message, validate};
use crate::error::CliError;

/// Run flags that mean nothing to a server: hidden from `makai serve --help`
/// and refused when given.
const NOT_FOR_SERVE: [(&str, &str); 6] = [
    ("print", "-p/--print"),
    ("mode", "--mode"),
    ("messages", "messages"),
    ("list_models", "--list-models"),
    ("version", "--version"),
    ("resume", "--resume"),
];

/// The options of `makai serve`.
#[derive(Clone, Debug, Parser)]
#[command(
    name = "makai serve",
    about = "Serve an agent session (the RPC mode's commands and events) and provider streaming \
             to remote clients over the makai protocol (WebSocket)",
    disable_version_flag = true,
    after_help = SERVE_AFTER_HELP
)]
pub struct ServeArgs {
    /// Address to listen on (an IP address; `localhost` means 127.0.0.1).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1")]
    pub bind: String,
    /// Port to listen on; 0 picks a free one (the URL is printed on stdout).
    #[arg(long, value_name = "N", default_value_t = makai_protocol::DEFAULT_PORT)]
    pub port: u16,
    /// The bearer-token file (default `${MAKAI_HOME:-~/.makai}/serve-token`;
    /// created with mode 0600 at first start).
    #[arg(long = "token-file", value_name = "PATH")]
    pub token_file: Option<PathBuf>,
    /// Allow a non-loopback --bind address. The protocol has no TLS: prefer
    /// 127.0.0.1 with an SSH tunnel or a TLS proxy.
    #[arg(long = "allow-non-loopback")]
    pub allow_non_loopback: bool,
    /// With `--store postgres://...`: how long a session's lease lasts without
    /// renewal, so how long after an instance dies another takes its
    /// sessions over (seconds, fractions allowed).
    #[arg(long = "lease-ttl", value_name = "SECS", default_value_t = 15.0)]
    pub lease_ttl: f64,
    /// With `--store postgres://...`: this instance's name in leases (default
    /// host name, process id and a random suffix; must differ between instances).
    #[arg(long, value_name = "NAME")]
    pub instance: Option<String>,
    /// The session served (model, provider, tools, session file, ...).
    #[command(flatten)]
    pub run: Args,
}

const SERVE_AFTER_HELP: &str = "\
The first line on stdout is the server's URL (ws://ADDR:PORT/). The bearer token
is generated at first start, stored with mode 0600 and printed once on stderr.
Clients connect with makai_protocol::RemoteProtocolClient::connect(URL, TOKEN),
or any WebSocket client sending `Authorization: Bearer TOKEN` and the envelopes
of docs/protocol.md. Ctrl-C or SIGTERM stops the server gracefully.

With --store postgres://... (or the store setting) the server is stateless: any
number of instances serve any session of that database, each client on its own
session, and a client resumes on another instance (docs/scale-out.md).";

/// Parses `makai serve ...` (`rest` are the words after `serve`).
pub fn parse(rest: &[OsString]) -> Result<Invocation, CliError> {
    let mut command = ServeArgs::command();
    for (id, _) in NOT_FOR_SERVE {
        command = command.mut_arg(id, |a| a.hide(true));
    }
    let argv = std::iter::once(OsString::from("makai serve")).chain(rest.iter().cloned());
    let matches = match command.try_get_matches_from(argv) {
        Ok(m) => m,
        Err(e) => {
            return match e.kind() {
                clap::error::ErrorKind::DisplayHelp
                | clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                    Ok(Invocation::Help(e.render().to_string()))
                }
                _ => Err(CliError::Usage(
                    clap_message(&e).replace("`makai --help`", "`makai serve --help`"),
                )),
            };
        }
    };
    let args =
        ServeArgs::from_arg_matches(&matches).map_err(|e| CliError::Usage(clap_message(&e)))?;
    for (id, flag) in NOT_FOR_SERVE {
        if matches.value_source(id) == Some(clap::parser::ValueSource::CommandLine) {
            return Err(CliError::Usage(format!(
                "makai serve does not take {flag}: clients send prompts and commands over the protocol"
            )));
        }
    }
    validate(&args.run)?;
    args.bind_addr()?;
    args.lease_ttl()?;
    Ok(Invocation::Serve(Box::new(args)))
}

impl ServeArgs {
    /// `--lease-ttl` as a duration; a usage error unless 0.2 to 3600 seconds.
    pub fn lease_ttl(&self) -> Result<std::time::Duration, CliError> {
        if !(0.2..=3600.0).contains(&self.lease_ttl) {
            return Err(CliError::Usage(format!(
                "--lease-ttl {} is out of range: give 0.2 to 3600 seconds",
                self.lease_ttl
            )));
        }
        Ok(std::time::Duration::from_secs_f64(self.lease_ttl))
    }

    /// The address to listen on; a usage error when it is not an IP address,
    /// or not loopback without `--allow-non-loopback`.
    pub fn bind_addr(&self) -> Result<SocketAddr, CliError> {
        let ip: IpAddr = if self.bind.eq_ignore_ascii_case("localhost") {
            IpAddr::V4(Ipv4Addr::LOCALHOST)
        } else {
            self.bind
                .trim_matches(|c| c == '[' || c == ']')
                .parse()
                .map_err(|_| {
                    CliError::Usage(format!(
                        "--bind '{}' is not an IP address (e.g. 127.0.0.1 or ::1); give the port with --port",
                        self.bind
                    ))
                })?
        };
        if !ip.is_loopback() && !self.allow_non_loopback {
            return Err(CliError::Usage(format!(
                "--bind {ip} is not a loopback address and the protocol has no TLS, so anyone on the \
                 network could read the traffic. Use 127.0.0.1 with an SSH tunnel \
                 (ssh -L {port}:127.0.0.1:{port} HOST), or add --allow-non-loopback behind a TLS proxy",
                port = self.port
            )));
        }
        Ok(SocketAddr::new(ip, self.port))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Result<Invocation, CliError> {
        let v: Vec<OsString> = args.iter().map(OsString::from).collect();
        parse(&v)
    }

    #[test]
    fn defaults_and_session_flags() {
        let Invocation::Serve(a) =
            run(&["--port", "0", "--no-session", "--tools", "read"]).unwrap()
        else {
            panic!()
        };
        assert_eq!(a.bind_addr().unwrap().to_string(), "127.0.0.1:0");
        assert!(a.run.no_session);
        assert_eq!(a.run.tools.as_deref(), Some("read"));
        let Invocation::Serve(a) = run(&[]).unwrap() else {
            panic!()
        };
        assert_eq!(a.port, makai_protocol::DEFAULT_PORT);
        let Invocation::Serve(a) = run(&["--bind", "::1", "--port", "9"]).unwrap() else {
            panic!()
        };
        assert_eq!(a.bind_addr().unwrap().to_string(), "[::1]:9");
    }

    #[test]
    fn non_loopback_needs_the_flag() {
        let e = run(&["--bind", "0.0.0.0"]).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("--allow-non-loopback"), "{e}");
        assert!(run(&["--bind", "0.0.0.0", "--allow-non-loopback"]).is_ok());
        let e = run(&["--bind", "example.com"]).unwrap_err();
        assert!(e.to_string().contains("not an IP address"), "{e}");
    }

    #[test]
    fn the_lease_ttl_is_checked() {
        let Invocation::Serve(a) = run(&["--lease-ttl", "2.5", "--instance", "a"]).unwrap() else {
            panic!()
        };
        assert_eq!(
            a.lease_ttl().unwrap(),
            std::time::Duration::from_millis(2500)
        );
        assert_eq!(a.instance.as_deref(), Some("a"));
        for bad in ["0", "0.1", "7200", "nan"] {
            let e = run(&["--lease-ttl", bad]).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}");
            assert!(e.to_string().contains("--lease-ttl"), "{e}");
        }
    }

    #[test]
    fn run_only_flags_are_refused() {
        for argv in [
            &["-p"][..],
            &["--mode", "json"],
            &["hello"],
            &["--list-models"],
        ] {
            let e = run(argv).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{argv:?}");
            assert!(e.to_string().contains("makai serve does not take"), "{e}");
        }
        let e = run(&["--bogus"]).unwrap_err();
        assert!(e.to_string().contains("--bogus"), "{e}");
        assert!(
            matches!(run(&["--help"]).unwrap(), Invocation::Help(t) if t.contains("--token-file") && !t.contains("--list-models"))
        );
    }
}
