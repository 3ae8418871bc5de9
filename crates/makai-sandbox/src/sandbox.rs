//! [`Sandbox`] (one per policy, checked against the kernel once) and
//! [`Confinement`] (one per child process).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use crate::env::EnvFilter;
use crate::support::KernelSupport;
use crate::{Policy, SandboxConfig, SandboxError};

/// A policy checked against what the kernel can enforce. Cheap to share
/// behind an `Arc`; [`Sandbox::confine`] prepares each child.
#[derive(Debug)]
pub struct Sandbox {
    config: SandboxConfig,
    support: KernelSupport,
    env: EnvFilter,
    weaker: Vec<String>,
}

/// What this platform offers.
pub fn probe() -> KernelSupport {
    #[cfg(target_os = "linux")]
    {
        crate::linux::probe()
    }
    #[cfg(target_os = "macos")]
    {
        crate::macos::probe()
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    {
        KernelSupport::default()
    }
}

impl Sandbox {
    /// Checks `config` against the kernel. A confined policy the kernel
    /// cannot fully enforce is refused ([`SandboxError::Unsupported`], naming
    /// what is missing) unless `config.accept_weaker`; then
    /// [`Sandbox::weaker`] lists what is not enforced. `full-access` needs nothing.
    pub fn new(config: SandboxConfig) -> Result<Sandbox, SandboxError> {
        let env = EnvFilter::new(&config.deny_env).map_err(SandboxError::Config)?;
        if config.policy == Policy::FullAccess {
            return Ok(Sandbox {
                config,
                support: KernelSupport::default(),
                env,
                weaker: Vec::new(),
            });
        }
        let support = probe();
        let missing = support.missing(config.network);
        if !missing.is_empty() && !config.accept_weaker {
            return Err(SandboxError::Unsupported {
                policy: config.policy,
                missing: missing.join("; "),
            });
        }
        Ok(Sandbox {
            config,
            support,
            env,
            weaker: missing,
        })
    }

    /// No sandbox: commands run with every right of the user, as makai's own
    /// environment gives them.
    pub fn full_access() -> Sandbox {
        Sandbox {
            config: SandboxConfig::new(Policy::FullAccess),
            support: KernelSupport::default(),
            env: EnvFilter::none(),
            weaker: Vec::new(),
        }
    }

    /// The policy.
    pub fn policy(&self) -> Policy {
        self.config.policy
    }

    /// The whole configuration.
    pub fn config(&self) -> &SandboxConfig {
        &self.config
    }

    /// What the kernel offers (all `false`/`None` under `full-access`, which probes nothing).
    pub fn support(&self) -> KernelSupport {
        self.support
    }

    /// What is not enforced because the kernel lacks it (only when a weaker
    /// sandbox was accepted; empty otherwise).
    pub fn weaker(&self) -> &[String] {
        &self.weaker
    }

    /// One line for users: the policy, the mechanism in use, the network.
    pub fn describe(&self) -> String {
        if self.config.policy == Policy::FullAccess {
            return "full-access (no sandbox)".to_string();
        }
        let net = if self.config.network {
            "network on"
        } else {
            "network off"
        };
        let mut s = format!("{} ({}; {net})", self.config.policy, self.support);
        if !self.weaker.is_empty() {
            s.push_str(&format!(
                "; WEAKER than the policy: {}",
                self.weaker.join("; ")
            ));
        }
        s
    }

    /// Prepares one child started in `cwd`: a private temporary directory,
    /// the scrubbed environment and the kernel rules. Keep the returned value
    /// alive as long as the child runs (it owns the temporary directory).
    pub fn confine(&self, cwd: &Path) -> Result<Confinement, SandboxError> {
        if self.config.policy == Policy::FullAccess {
            return Ok(Confinement {
                policy: Policy::FullAccess,
                temp: None,
                env: None,
                #[cfg(target_os = "linux")]
                prepared: None,
                #[cfg(target_os = "macos")]
                seatbelt: None,
            });
        }
        let temp = tempfile::Builder::new()
            .prefix("makai-sandbox-")
            .tempdir()
            .map_err(|e| SandboxError::Prepare(format!("private temporary directory: {e}")))?;
        let mut writable: Vec<PathBuf> = vec![temp.path().to_path_buf()];
        if self.config.policy == Policy::WorkspaceWrite {
            writable.push(cwd.to_path_buf());
            writable.extend(self.config.writable_roots.iter().cloned());
        }
        let mut env = self.env.filter(std::env::vars_os());
        env.retain(|(k, _)| !matches!(k.to_str(), Some("TMPDIR" | "TMP" | "TEMP")));
        for k in ["TMPDIR", "TMP", "TEMP"] {
            env.push((k.into(), temp.path().as_os_str().to_owned()));
        }
        #[cfg(target_os = "linux")]
        let prepared = Some(
            crate::linux::prepare(crate::linux::Plan {
                support: &self.support,
                writable,
                denied: &self.config.deny_read,
                network: self.config.network,
                strict: !self.config.accept_weaker,
            })
            .map_err(SandboxError::Prepare)?,
        );
        #[cfg(target_os = "macos")]
        let seatbelt = self.support.seatbelt.then(|| {
            crate::macos::arguments(&writable, &self.config.deny_read, self.config.network)
        });
        #[cfg(not(any(target_os = "linux", target_os = "macos")))]
        drop(writable);
        Ok(Confinement {
            policy: self.config.policy,
            temp: Some(temp),
            env: Some(env),
            #[cfg(target_os = "linux")]
            prepared,
            #[cfg(target_os = "macos")]
            seatbelt,
        })
    }
}

/// One child's confinement. [`Confinement::command`] builds the command;
/// the temporary directory is removed when this is dropped.
#[derive(Debug)]
pub struct Confinement {
    policy: Policy,
    temp: Option<tempfile::TempDir>,
    env: Option<Vec<(OsString, OsString)>>,
    #[cfg(target_os = "linux")]
    prepared: Option<std::sync::Arc<crate::linux::Prepared>>,
    #[cfg(target_os = "macos")]
    seatbelt: Option<Vec<OsString>>,
}

impl Confinement {
    /// The policy the child runs under.
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// True unless the policy is `full-access`.
    pub fn is_confined(&self) -> bool {
        self.policy != Policy::FullAccess
    }

    /// The private temporary directory (`TMPDIR` of the child), when confined.
    pub fn temp_dir(&self) -> Option<&Path> {
        self.temp.as_ref().map(|t| t.path())
    }

    /// The environment the child gets when confined (makai's, scrubbed, with
    /// `TMPDIR` pointing at the private directory); `None` under `full-access`.
    pub fn env(&self) -> Option<&[(OsString, OsString)]> {
        self.env.as_deref()
    }

    /// A command running `program` under this confinement: on Linux the
    /// rules are applied in the child between fork and exec; on macOS the
    /// program runs under `sandbox-exec`. Add arguments, working directory,
    /// stdio and process group as usual. A caller that replaces the
    /// environment (`env_clear`) should add [`Confinement::temp_dir`] as `TMPDIR`.
    pub fn command(&self, program: impl AsRef<OsStr>) -> tokio::process::Command {
        #[cfg(target_os = "macos")]
        let mut cmd = match &self.seatbelt {
            Some(args) => {
                let mut c = tokio::process::Command::new(crate::macos::SANDBOX_EXEC);
                c.args(args).arg("--").arg(program);
                c
            }
            None => tokio::process::Command::new(program),
        };
        #[cfg(not(target_os = "macos"))]
        let mut cmd = tokio::process::Command::new(program);
        if let Some(env) = &self.env {
            cmd.env_clear();
            cmd.envs(env.iter().map(|(k, v)| (k, v)));
        }
        #[cfg(target_os = "linux")]
        if let Some(prepared) = &self.prepared {
            let prepared = prepared.clone();
            // SAFETY: the hook only makes system calls (prctl, landlock,
            // seccomp, fcntl to duplicate a descriptor): nothing that
            // allocates or takes a lock, as required between fork and exec.
            unsafe {
                cmd.pre_exec(move || crate::linux::apply_in_child(&prepared));
            }
        }
        cmd
    }
}
