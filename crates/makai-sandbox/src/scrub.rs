//! Hiding makai's own secrets from `/proc/PID/environ`.
//!
//! The kernel serves `/proc/PID/environ` from the memory the process started
//! with, and on the kernels tested Landlock does not refuse reading it to a
//! confined process of the same user (it does refuse `/proc/PID/mem`). So the
//! values of makai's denied variables (provider keys) are moved: each is set
//! again (the C library copies it to the heap, where `std::env` keeps finding
//! it) and the original bytes are overwritten with `*`.

use crate::EnvFilter;

/// Overwrites, in the environment block makai started with, the values of
/// the variables `filter` denies; `std::env` still returns them. Returns how
/// many were hidden. Linux with glibc only (elsewhere 0).
///
/// # Safety
///
/// Call at the very start of `main`, before any other thread exists: it
/// changes the process environment and writes to the memory the C library's
/// `environ` pointed at.
pub unsafe fn hide_own_environment(filter: &EnvFilter) -> usize {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::ffi::OsString;
        use std::os::unix::ffi::OsStringExt;
        // (where the value's bytes are, how many, name, value)
        let mut found: Vec<(*mut u8, usize, OsString, OsString)> = Vec::new();
        // SAFETY: single-threaded (the caller's contract); `environ` is a
        // NULL-terminated array of NUL-terminated strings.
        unsafe {
            let mut p = libc::environ;
            while !p.is_null() && !(*p).is_null() {
                let entry = std::ffi::CStr::from_ptr(*p).to_bytes();
                if let Some(eq) = entry.iter().position(|&b| b == b'=') {
                    let (name, value) = (&entry[..eq], &entry[eq + 1..]);
                    if std::str::from_utf8(name).is_ok_and(|n| filter.denies(n))
                        && !value.is_empty()
                    {
                        found.push((
                            (*p as *mut u8).add(eq + 1),
                            value.len(),
                            OsString::from_vec(name.to_vec()),
                            OsString::from_vec(value.to_vec()),
                        ));
                    }
                }
                p = p.add(1);
            }
            for (at, len, name, value) in &found {
                // The C library stores a fresh copy and points `environ` at it;
                // the original bytes are no longer referenced by anyone.
                std::env::set_var(name, value);
                std::ptr::write_bytes(*at, b'*', *len);
            }
        }
        found.len()
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        let _unused: &EnvFilter = filter;
        0
    }
}
