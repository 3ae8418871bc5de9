//! Link options of the examples (the agent-loop benchmark is measured as the
//! `makai` binary is linked).

include!("../../build/pack_relative_relocs.rs");

fn main() {
    pack_relative_relocs(&["examples"]);
}
