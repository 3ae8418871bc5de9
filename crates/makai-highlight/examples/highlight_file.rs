//! Prints a file with its syntax roles: `cargo run -p makai-highlight
//! --example highlight_file -- src/lib.rs`. Each run is printed as
//! `[role]text`, roles by pi's theme names.

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: highlight_file PATH");
        std::process::exit(2);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    };
    let Some(language) = makai_highlight::Language::from_path(&path) else {
        print!("{text}");
        return;
    };
    eprintln!("{}", language.name());
    for line in makai_highlight::pieces(&language, &text) {
        for (piece, role) in line {
            match role {
                Some(role) => print!("[{}]{piece}", role.name()),
                None => print!("{piece}"),
            }
        }
        println!();
    }
}
