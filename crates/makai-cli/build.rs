//! Link options of the `makai` binary.

include!("../../build/pack_relative_relocs.rs");

fn main() {
    pack_relative_relocs(&["bins"]);
}
