// Shared by the build scripts of the crates whose binaries makai ships or
// measures (`include!`d: makai-cli's `makai`, makai-agent's examples).
//
// Packed relative relocations (DT_RELR, `-z pack-relative-relocs`): a
// position-independent binary's relocation table, read whole at start-up,
// shrinks from about 500 KB to about 9 KB, so the process keeps half a
// megabyte less of the binary resident, with ASLR kept (BENCHMARKS.md).
//
// Only when both ends support it: the linker knows the option (GNU ld 2.38,
// lld 15), and the C library linked against defines `GLIBC_ABI_DT_RELR`
// (glibc 2.36). The linker makes such a binary depend on that version, so on
// an older glibc (Ubuntu 22.04's 2.35 with its binutils 2.38) the flag would
// give binaries, build scripts included, that refuse to start; there it is
// left out. Not when cross-compiling: the host's C library says nothing of
// the target's.

/// Adds `-z pack-relative-relocs` to the link of this package's targets of
/// the kinds `kinds` (`bins`, `examples`, ...) when supported (see above).
fn pack_relative_relocs(kinds: &[&str]) {
    println!("cargo:rerun-if-changed=build.rs");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    if var("CARGO_CFG_TARGET_OS") != "linux"
        || var("CARGO_CFG_TARGET_ENV") != "gnu"
        || var("HOST") != var("TARGET")
    {
        return;
    }
    let cc = |arg: &str| {
        std::process::Command::new("cc")
            .arg(arg)
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    };
    let linker_knows_it = cc("-Wl,--help").contains("pack-relative-relocs");
    let libc = cc("-print-file-name=libc.so.6");
    let libc = std::path::Path::new(libc.trim());
    let libc_supports_it = libc.is_absolute()
        && std::fs::read(libc).is_ok_and(|bytes| {
            bytes
                .windows(b"GLIBC_ABI_DT_RELR".len())
                .any(|w| w == b"GLIBC_ABI_DT_RELR")
        });
    if linker_knows_it && libc_supports_it {
        for kind in kinds {
            println!("cargo:rustc-link-arg-{kind}=-Wl,-z,pack-relative-relocs");
        }
    }
}
