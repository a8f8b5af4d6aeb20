//! vnetlab: builds hypervisor virtual-NIC datapaths on one Linux host, drives traffic through
//! them, attributes the host's CPU to each part, and plans VDI capacity. See DESIGN.md.

mod bench;
mod cli;
mod engine;
mod lab;
mod meter;

fn main() {
    std::process::exit(cli::main());
}
