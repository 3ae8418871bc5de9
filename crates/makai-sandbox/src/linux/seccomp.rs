//! The seccomp filter: what Landlock cannot express. Every listed system
//! call fails with `EPERM`; everything else is allowed.
//!
//! - Always: `ptrace` and `process_vm_readv`/`writev` (reading or steering
//!   another process), `setsid`/`setpgid` (leaving the process group that is
//!   killed when the call ends), io_uring (its operations bypass this filter),
//!   `bpf`, `perf_event_open`, `userfaultfd`, the kernel keyring, namespaces
//!   and mounts, and the terminal ioctls that type into another program's
//!   terminal (`TIOCSTI`, `TIOCLINUX`).
//! - Network off: `socket` for any family but `AF_UNIX` (local sockets stay,
//!   build tools and language servers use them).

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// System calls refused under every confined policy.
const DENIED: &[libc::c_long] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_setsid,
    libc::SYS_setpgid,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_keyctl,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
];

/// Compiles the filter for this machine's architecture.
pub fn compile(network: bool) -> Result<BpfProgram, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|e| format!("seccomp does not support this architecture: {e}"))?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for nr in DENIED {
        rules.insert(*nr, Vec::new());
    }
    let cond = |arg: u8, op: SeccompCmpOp, value: u64| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value)
            .map_err(|e| format!("seccomp condition: {e}"))
    };
    let ioctl = [libc::TIOCSTI, libc::TIOCLINUX]
        .into_iter()
        .map(|req| {
            SeccompRule::new(vec![cond(1, SeccompCmpOp::Eq, req)?])
                .map_err(|e| format!("seccomp rule: {e}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    rules.insert(libc::SYS_ioctl, ioctl);
    if !network {
        let not_unix = SeccompRule::new(vec![cond(0, SeccompCmpOp::Ne, libc::AF_UNIX as u64)?])
            .map_err(|e| format!("seccomp rule: {e}"))?;
        rules.insert(libc::SYS_socket, vec![not_unix]);
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| format!("seccomp filter: {e}"))?;
    BpfProgram::try_from(filter).map_err(|e| format!("seccomp filter: {e}"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn compiles_both_ways() {
        assert!(super::compile(false).unwrap().len() > super::compile(true).unwrap().len());
    }
}
