//! Regenerates makai's built-in model catalog from pi's.
//!
//! `cargo run -p makai-ai --example gen_catalog [PI_CATALOG_DIR]` (default: the
//! `shared/reference/pi-1.5.2/model-catalog` folder beside the repository) writes
//! `crates/makai-ai/src/catalog/builtin.json` and `docs/catalog.md`.

#![allow(clippy::print_stderr)]

mod generate;

use std::path::PathBuf;

fn main() -> std::process::ExitCode {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let source = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest.join("../../../shared/reference/pi-1.5.2/model-catalog"));
    let generated = match generate::generate(&source) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("gen_catalog: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let catalog = manifest.join("src/catalog/builtin.json");
    let report = manifest.join("../../docs/catalog.md");
    for (path, text) in [(&catalog, &generated.catalog), (&report, &generated.report)] {
        if let Err(e) = std::fs::write(path, text) {
            eprintln!("gen_catalog: cannot write {}: {e}", path.display());
            return std::process::ExitCode::FAILURE;
        }
        eprintln!("wrote {}", path.display());
    }
    std::process::ExitCode::SUCCESS
}
