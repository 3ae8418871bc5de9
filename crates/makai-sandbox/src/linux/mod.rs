//! Linux: Landlock for the file system (and, from ABI 6, signals and abstract
//! Unix sockets), seccomp for the rest, `PR_SET_NO_NEW_PRIVS`. Everything is
//! prepared in makai (rules opened, filter compiled) and applied in the child
//! between fork and exec with system calls only: no allocation, no lock.

pub mod rules;
mod seccomp;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use landlock::{
    ABI, Access, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd,
    RestrictionStatus, Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetStatus,
    Scope,
};
use seccompiler::BpfProgram;

use crate::support::KernelSupport;
use rules::{Grant, Rule};

/// `LANDLOCK_CREATE_RULESET_VERSION`.
const LANDLOCK_VERSION_FLAG: libc::c_uint = 1;
/// `SECCOMP_GET_ACTION_AVAIL`.
const SECCOMP_GET_ACTION_AVAIL: libc::c_uint = 2;
/// `SECCOMP_RET_ERRNO`.
const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;

/// What this kernel offers. The landlock crate keeps its own probe private, so
/// the ABI is asked for here with the documented version query.
pub fn probe() -> KernelSupport {
    // SAFETY: the version query takes no pointer (NULL, size 0) and only returns a number.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_VERSION_FLAG,
        )
    };
    let action = SECCOMP_RET_ERRNO;
    // SAFETY: SECCOMP_GET_ACTION_AVAIL reads one u32 through the pointer, which lives on this stack.
    let seccomp = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            SECCOMP_GET_ACTION_AVAIL,
            0,
            &action as *const u32,
        )
    } == 0;
    KernelSupport {
        landlock_abi: (abi > 0).then(|| abi.min(u8::MAX as libc::c_long) as u8),
        seccomp,
        seatbelt: false,
    }
}

/// Everything the child applies to itself before exec.
#[derive(Debug)]
pub struct Prepared {
    ruleset: Option<RulesetCreated>,
    filter: Option<BpfProgram>,
    /// Fail in the child unless Landlock reports the ruleset fully enforced.
    require_full: bool,
}

/// What [`prepare`] needs.
pub struct Plan<'a> {
    /// The kernel's support.
    pub support: &'a KernelSupport,
    /// Writable directories (already including the private temp directory).
    pub writable: Vec<PathBuf>,
    /// Paths to keep out of reach.
    pub denied: &'a [PathBuf],
    /// Network allowed.
    pub network: bool,
    /// Refuse anything less than full enforcement.
    pub strict: bool,
}

/// Device files every command may read and write.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

fn landlock_rights(abi: ABI, grant: Grant, is_dir: bool) -> BitFlags<AccessFs> {
    let rights = match grant {
        Grant::List => BitFlags::from(AccessFs::ReadDir),
        Grant::Read => AccessFs::from_read(abi),
        // Device ioctls are for the few device files below, never a tree.
        Grant::Write => AccessFs::from_all(abi) & !AccessFs::IoctlDev,
    };
    if is_dir {
        rights
    } else {
        rights & AccessFs::from_file(abi)
    }
}

/// Builds the Landlock ruleset and the seccomp filter for one confinement.
pub fn prepare(plan: Plan<'_>) -> Result<Arc<Prepared>, String> {
    let mut ruleset = None;
    if let Some(v) = plan.support.landlock_abi {
        let abi = ABI::from(i32::from(v));
        let level = if plan.strict {
            CompatLevel::HardRequirement
        } else {
            CompatLevel::BestEffort
        };
        let fail = |what: &str, e: &dyn std::fmt::Display| format!("Landlock {what}: {e}");
        let mut base = Ruleset::default()
            .set_compatibility(level)
            .handle_access(AccessFs::from_all(abi))
            .map_err(|e| fail("ruleset", &e))?;
        let scopes = Scope::from_all(abi);
        if !scopes.is_empty() {
            base = base.scope(scopes).map_err(|e| fail("scopes", &e))?;
        }
        let mut created = base.create().map_err(|e| fail("ruleset", &e))?;
        let mut roots: Vec<(PathBuf, Grant)> = vec![(PathBuf::from("/"), Grant::Read)];
        roots.extend(plan.writable.iter().map(|p| (p.clone(), Grant::Write)));
        let mut all: Vec<Rule> = rules::plan(&roots, plan.denied);
        all.extend(DEVICES.iter().map(|d| Rule {
            path: PathBuf::from(d),
            grant: Grant::Write,
        }));
        for rule in all {
            created = add_rule(created, abi, &rule, plan.strict)?;
        }
        ruleset = Some(created);
    }
    let filter = if plan.support.seccomp {
        Some(seccomp::compile(plan.network)?)
    } else {
        None
    };
    Ok(Arc::new(Prepared {
        ruleset,
        filter,
        require_full: plan.strict,
    }))
}

fn add_rule(
    created: RulesetCreated,
    abi: ABI,
    rule: &Rule,
    strict: bool,
) -> Result<RulesetCreated, String> {
    let Ok(meta) = std::fs::metadata(&rule.path) else {
        // Gone since it was listed: nothing to grant.
        return Ok(created);
    };
    let fd = match PathFd::new(&rule.path) {
        Ok(fd) => fd,
        Err(e) if !strict => {
            tracing::debug!(path = %rule.path.display(), error = %e, "sandbox: path skipped");
            return Ok(created);
        }
        Err(e) => return Err(format!("Landlock cannot open {}: {e}", rule.path.display())),
    };
    let access = landlock_rights(abi, rule.grant, meta.is_dir());
    // A device file may also take the device ioctls (terminal size and the like).
    let access = if DEVICES.iter().any(|d| Path::new(d) == rule.path) {
        access | (AccessFs::from_file(abi) & AccessFs::IoctlDev)
    } else {
        access
    };
    created
        .add_rule(PathBeneath::new(fd, access))
        .map_err(|e| format!("Landlock rule for {}: {e}", rule.path.display()))
}

/// Applies the confinement to the calling process. Called in the child
/// between fork and exec: only system calls, no allocation, no lock.
pub fn apply_in_child(prepared: &Prepared) -> io::Result<()> {
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if let Some(ruleset) = &prepared.ruleset {
        // A duplicate of the descriptor: restrict_self consumes its ruleset.
        let own = ruleset.try_clone()?;
        let status: RestrictionStatus = own
            .restrict_self()
            .map_err(|_| io::Error::from_raw_os_error(libc::EPERM))?;
        if prepared.require_full && status.ruleset != RulesetStatus::FullyEnforced {
            return Err(io::Error::from_raw_os_error(libc::EPERM));
        }
    }
    if let Some(filter) = &prepared.filter {
        seccompiler::apply_filter(filter).map_err(|_| io::Error::from_raw_os_error(libc::EPERM))?;
    }
    Ok(())
}
