//! Command-line interface: parse, call a stage, print. Errors are one line; bad input exits 2.

mod bench_cmds;
mod exp_cmds;
mod fail;
mod farm_cmds;
mod lab_cmds;
mod peers;
mod plan_cmds;
mod repro_cmds;
mod shared;
mod test_cmds;

use clap::{Parser, Subcommand};

pub use fail::{CmdResult, Fail, PARTIAL};

#[derive(Parser)]
#[command(
    name = "vnetlab",
    version,
    about = "Build the virtual-NIC datapaths of hypervisors on this host, measure them, plan VDI capacity",
    long_about = "vnetlab builds, on one Linux host, the datapaths hypervisors give a VM's NIC (native, bridge, nat, \
macvlan, sriov, and its own userspace device models: emulated and paravirt with software LRO) as network namespaces, \
veth pairs, taps, bridges and NAT; drives netperf-class traffic through them (test, serve); attributes the host's \
CPU to each part (meter); runs experiment matrices into a SQLite store with HTML reports (run, report, compare); \
and turns per-Gbit costs into VDI capacity plans (plan). Every lab object is named vl… and journaled before it is \
made; down and cleanup remove exactly those. Labs need root (CAP_NET_ADMIN). Start with: make demo"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Build a lab and leave it running
    Up(lab_cmds::UpArgs),
    /// Remove a lab (everything its journal names)
    Down(lab_cmds::DownArgs),
    /// List labs, with interfaces, MTU and offloads read back from the kernel
    Status(lab_cmds::StatusArgs),
    /// Run a command inside a guest, the client or the host of a lab (its namespace and cgroup)
    Exec(lab_cmds::ExecArgs),
    /// Check TCP reachability between a lab's endpoints
    Probe(lab_cmds::ProbeArgs),
    /// Remove everything any journal names (labs whose process died, interrupted runs)
    Cleanup(lab_cmds::CleanupArgs),
    /// Run a netperf-class test: standalone against `vnetlab serve` (-H), or in a lab (--from/--to)
    Test(Box<test_cmds::TestArgs>),
    /// Measure where the host's CPU goes in a lab over a window (no traffic of its own)
    Meter(test_cmds::MeterArgs),
    /// Answer tests from `vnetlab test -H` (like netserver)
    Serve(test_cmds::ServeArgs),
    /// Run an experiment file: every point of its matrix, stored, with an HTML report
    Run(exp_cmds::RunArgs),
    /// Show a stored run (table, --json, --html FILE)
    Report(exp_cmds::ReportArgs),
    /// List the runs in the store
    Runs(exp_cmds::RunsArgs),
    /// Export a run's points (--csv) for pandas or a spreadsheet
    Export(exp_cmds::ExportArgs),
    /// Compare two runs point by point (ratios, marked where outside both intervals)
    Compare(exp_cmds::CompareArgs),
    /// Reproduce the papers: run each one's suites, check its claims, write a page per paper
    Reproduce(repro_cmds::ReproduceArgs),
    /// Bring a store written by an older vnetlab up to date (reading never writes)
    Migrate(exp_cmds::MigrateArgs),
    /// Send a farm run's spool (`run --spool DIR`) to the store, each point once
    Import(farm_cmds::ImportArgs),
    /// Capacity plan: host CPU on a VDI server's networks per datapath (paper 1's Eq. 5) and desktops per server
    Plan(plan_cmds::PlanArgs),
    /// Build (or reuse) the QEMU guest image from Debian packages and print its paths
    GuestImage(GuestImageArgs),
    /// Benchmarks side by side with a named peer tool, as ratios
    Bench(bench_cmds::BenchArgs),
    /// (internal) an engine agent speaking the control protocol on stdin/stdout (or, in a QEMU
    /// guest, on its virtio-serial port)
    #[command(hide = true)]
    Agent(test_cmds::AgentArgs),
    /// (internal) a guest's vNIC backend (device model), started by `up`
    #[command(hide = true)]
    Vnic(test_cmds::VnicArgs),
    /// (internal) a CPU burner for `test --load cpu@…` and `--desktop-load`
    #[command(hide = true)]
    Burn(test_cmds::BurnArgs),
}

pub fn main() -> i32 {
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if let Some(why) = peers::foreign(&args) {
        crate::errln!("vnetlab: {why}");
        return 2;
    }
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind::*;
            if matches!(
                e.kind(),
                DisplayHelp | DisplayVersion | DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                let _ = e.print();
                return if e.kind() == DisplayHelpOnMissingArgumentOrSubcommand {
                    2
                } else {
                    0
                };
            }
            let text = e.to_string();
            let mut lines = text.lines();
            let mut first = lines
                .next()
                .unwrap_or("bad arguments")
                .trim_start_matches("error: ")
                .to_string();
            // "the following required arguments were not provided:" names them on the next line.
            if first.ends_with(':') {
                if let Some(next) = lines.next() {
                    first = format!("{first} {}", next.trim());
                }
            }
            crate::errln!("vnetlab: {first} (see --help)");
            return 2;
        }
    };
    let r = match cli.cmd {
        Cmd::Up(a) => lab_cmds::up(a),
        Cmd::Down(a) => lab_cmds::down(a),
        Cmd::Status(a) => lab_cmds::status(a),
        Cmd::Exec(a) => lab_cmds::exec(a),
        Cmd::Probe(a) => lab_cmds::probe(a),
        Cmd::Cleanup(a) => lab_cmds::cleanup(a),
        Cmd::Test(a) => test_cmds::test(*a),
        Cmd::Serve(a) => test_cmds::serve(a),
        Cmd::Meter(a) => test_cmds::meter(a),
        Cmd::Agent(a) => test_cmds::agent(a),
        Cmd::Vnic(a) => test_cmds::vnic(a),
        Cmd::Burn(a) => test_cmds::burn(a),
        Cmd::Bench(a) => bench_cmds::bench(a),
        Cmd::Run(a) => exp_cmds::run(a),
        Cmd::Plan(a) => plan_cmds::plan(a),
        Cmd::GuestImage(a) => guest_image(a),
        Cmd::Report(a) => exp_cmds::report(a),
        Cmd::Runs(a) => exp_cmds::runs(a),
        Cmd::Export(a) => exp_cmds::export(a),
        Cmd::Compare(a) => exp_cmds::compare(a),
        Cmd::Reproduce(a) => repro_cmds::reproduce(a),
        Cmd::Migrate(a) => exp_cmds::migrate(a),
        Cmd::Import(a) => farm_cmds::import(a),
    };
    // The reader of our output went away (`| head`): the command stopped cleanly; end quietly.
    if crate::sys::signals::is_output_closed() {
        return 141;
    }
    match r {
        Ok(()) => 0,
        Err(f) => {
            crate::errln!("vnetlab: {f}");
            f.code()
        }
    }
}

#[derive(clap::Args)]
pub struct GuestImageArgs {
    /// Where the kernel package is extracted and the initramfs kept [default: $VNETLAB_CACHE_DIR/guest, else /var/cache/vnetlab/guest, where `up` looks]
    #[arg(long)]
    cache: Option<std::path::PathBuf>,
    /// The image of a passed-through VF's guest (mode qemu-vfio), which also carries the VF drivers
    #[arg(long)]
    vf: bool,
}

fn guest_image(a: GuestImageArgs) -> CmdResult {
    let cache = a.cache.unwrap_or_else(crate::lab::vms::image_cache);
    std::fs::create_dir_all(&cache)
        .map_err(|e| Fail::Run(format!("cannot make {}: {e}", cache.display())))?;
    let t0 = std::time::Instant::now();
    let img = crate::guest::image::ensure(&cache, a.vf)?;
    crate::outln!("kernel {}", img.kernel.display());
    crate::outln!("initrd {}", img.initrd.display());
    crate::errln!("guest image ready in {:.1} s", t0.elapsed().as_secs_f64());
    Ok(())
}
