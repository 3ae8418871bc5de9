//! The `makai` binary.

fn main() {
    let code = makai_cli::main_with_args(std::env::args_os());
    std::process::exit(code);
}
