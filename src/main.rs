//! The `vnetlab` command: everything lives in the library; this only runs the CLI.

fn main() {
    // Like other Unix tools, end quietly when the reader of our output goes away (`| head`).
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    std::process::exit(vnetlab::cli::main());
}
