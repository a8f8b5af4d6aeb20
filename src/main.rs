//! The `vnetlab` command: everything lives in the library; this only runs the CLI. SIGPIPE stays
//! ignored (Rust's default): a reader going away is a write error the command handles (stop
//! cleanly, remove what it made), never a silent death.

fn main() {
    std::process::exit(vnetlab::cli::main());
}
