//! What the running kernel can enforce.

use std::fmt;

/// The kernel features a sandbox can use here.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelSupport {
    /// The Landlock ABI version (`None`: no Landlock, or not enabled).
    pub landlock_abi: Option<u8>,
    /// seccomp filters are available.
    pub seccomp: bool,
    /// macOS: Seatbelt's `sandbox-exec` is available.
    pub seatbelt: bool,
}

impl KernelSupport {
    /// What is missing to enforce a confined policy fully, in words a user can
    /// act on; empty when nothing is.
    pub fn missing(&self, network: bool) -> Vec<String> {
        let mut out = Vec::new();
        if cfg!(target_os = "macos") {
            if !self.seatbelt {
                out.push("/usr/bin/sandbox-exec (Seatbelt) was not found".to_string());
            }
            return out;
        }
        if !cfg!(target_os = "linux") {
            out.push("makai has no sandbox for this operating system".to_string());
            return out;
        }
        match self.landlock_abi {
            None => out.push(
                "Landlock is not available (Linux 5.13 or newer with Landlock enabled, for example `lsm=landlock,...` on the kernel command line)".to_string(),
            ),
            Some(v) if v < crate::MIN_LANDLOCK_ABI => out.push(format!(
                "Landlock ABI {v} cannot stop truncating files outside the writable folders (ABI {} needed: Linux 6.2 or newer)",
                crate::MIN_LANDLOCK_ABI
            )),
            Some(_) => {}
        }
        if !self.seccomp {
            out.push(format!(
                "seccomp filters are not available, so {}ptrace and the other refused system calls cannot be blocked",
                if network { "" } else { "the network and " }
            ));
        }
        out
    }
}

impl fmt::Display for KernelSupport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.seatbelt {
            return f.write_str("Seatbelt (sandbox-exec)");
        }
        match self.landlock_abi {
            Some(v) => write!(f, "Landlock ABI {v}")?,
            None => f.write_str("no Landlock")?,
        }
        f.write_str(if self.seccomp {
            ", seccomp filters"
        } else {
            ", no seccomp filters"
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn missing_features_are_named() {
        let full = KernelSupport {
            landlock_abi: Some(7),
            seccomp: true,
            seatbelt: false,
        };
        assert!(full.missing(false).is_empty());
        assert_eq!(full.to_string(), "Landlock ABI 7, seccomp filters");
        let old = KernelSupport {
            landlock_abi: Some(1),
            seccomp: false,
            seatbelt: false,
        };
        let m = old.missing(false);
        assert_eq!(m.len(), 2);
        assert!(m[0].contains("ABI 1"), "{m:?}");
        assert!(m[1].contains("network"), "{m:?}");
    }
}
