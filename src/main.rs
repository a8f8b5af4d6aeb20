//! The `vnetlab` command: everything lives in the library; this only runs the CLI.

fn main() {
    std::process::exit(vnetlab::cli::main());
}
