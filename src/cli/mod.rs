//! Command-line interface: parse, call a stage, print. Errors are one line; bad input exits 2.

mod bench_cmds;
mod exp_cmds;
mod lab_cmds;
mod plan_cmds;
mod repro_cmds;
mod test_cmds;

use clap::{Parser, Subcommand};

/// How a command failed: bad input (exit 2), a failure while doing the work (exit 1), or stopped
/// by SIGINT/SIGTERM after cleaning up (exit 130).
#[derive(Debug, thiserror::Error)]
pub enum Fail {
    #[error("{0}")]
    Input(String),
    #[error("{0}")]
    Run(String),
    #[error("{0}")]
    Interrupted(String),
    /// The command ran to its end and stored what it measured, but some points failed: exit 3,
    /// so a script notices the holes.
    #[error("{0}")]
    Partial(String),
}

pub type CmdResult = Result<(), Fail>;

/// Each stage's error decides the exit code by its variant: what was asked (2), stopped (130),
/// failed (1).
impl From<crate::lab::Error> for Fail {
    fn from(e: crate::lab::Error) -> Fail {
        use crate::lab::Error;
        match e {
            Error::Interrupted(m) => Fail::Interrupted(m),
            e if e.is_input() => Fail::Input(e.to_string()),
            e => Fail::Run(e.to_string()),
        }
    }
}

impl From<crate::engine::Error> for Fail {
    fn from(e: crate::engine::Error) -> Fail {
        use crate::engine::Error;
        match e {
            Error::Input(m) => Fail::Input(m),
            Error::Failed(m) => Fail::Run(m),
            Error::Io(e) => Fail::Run(e.to_string()),
            Error::Interrupted => Fail::Interrupted(e.to_string()),
        }
    }
}

impl From<crate::measure::Error> for Fail {
    fn from(e: crate::measure::Error) -> Fail {
        use crate::measure::Error;
        match e {
            Error::Input(m) => Fail::Input(m),
            Error::Lab(e) => e.into(),
            Error::Engine(e) => e.into(),
            e @ (Error::Failed(_) | Error::Meter(_)) => Fail::Run(e.to_string()),
        }
    }
}

impl From<crate::experiment::Error> for Fail {
    fn from(e: crate::experiment::Error) -> Fail {
        use crate::experiment::Error;
        match e {
            Error::Input(m) => Fail::Input(m),
            Error::Measure(e) => e.into(),
            Error::Lab(e) => e.into(),
            Error::Engine(e) => e.into(),
            Error::Store(e) => e.into(),
            e @ (Error::Failed(_) | Error::Meter(_)) => Fail::Run(e.to_string()),
        }
    }
}

impl From<crate::bench::Error> for Fail {
    fn from(e: crate::bench::Error) -> Fail {
        use crate::bench::Error;
        match e {
            Error::Input(m) => Fail::Input(m),
            Error::Lab(e) => e.into(),
            Error::Experiment(e) => e.into(),
            Error::Measure(e) => e.into(),
            Error::Store(e) => e.into(),
            e @ (Error::Failed(_) | Error::Host(_) | Error::Meter(_) | Error::Report(_)) => {
                Fail::Run(e.to_string())
            }
        }
    }
}

/// Errors that are always about what the user wrote (exit 2).
macro_rules! input_errors {
    ($($t:ty),*) => {$(
        impl From<$t> for Fail {
            fn from(e: $t) -> Fail {
                Fail::Input(e.to_string())
            }
        }
    )*};
}
input_errors!(
    crate::units::Error,
    crate::vocab::Error,
    crate::text::Error,
    crate::stats::Error,
    crate::records::Error,
    crate::capacity::Error
);

impl From<crate::reproduce::Error> for Fail {
    fn from(e: crate::reproduce::Error) -> Fail {
        use crate::reproduce::Error;
        match e {
            Error::Input(m) => Fail::Input(m),
            Error::Interrupted(m) => Fail::Interrupted(m),
            Error::Failed(m) => Fail::Run(m),
            Error::Store(e) => e.into(),
            Error::Experiment(e) => e.into(),
            Error::Report(e) => e.into(),
        }
    }
}

/// Errors of work that failed on the host (exit 1).
macro_rules! run_errors {
    ($($t:ty),*) => {$(
        impl From<$t> for Fail {
            fn from(e: $t) -> Fail {
                Fail::Run(e.to_string())
            }
        }
    )*};
}
impl From<crate::vnic::Error> for Fail {
    fn from(e: crate::vnic::Error) -> Fail {
        match e {
            crate::vnic::Error::Input(m) => Fail::Input(m),
            e => Fail::Run(e.to_string()),
        }
    }
}

run_errors!(
    crate::guest::Error,
    crate::report::Error,
    crate::meter::Error,
    crate::lab::hostcmd::Error
);

impl From<crate::store::Error> for Fail {
    fn from(e: crate::store::Error) -> Fail {
        if e.is_bad_input() {
            Fail::Input(e.to_string())
        } else {
            Fail::Run(e.to_string())
        }
    }
}

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
            let first = e.to_string();
            let first = first
                .lines()
                .next()
                .unwrap_or("bad arguments")
                .trim_start_matches("error: ");
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
    };
    // The reader of our output went away (`| head`): the command stopped cleanly; end quietly.
    if crate::sys::signals::is_output_closed() {
        return 141;
    }
    match r {
        Ok(()) => 0,
        Err(Fail::Input(m)) => {
            crate::errln!("vnetlab: {m}");
            2
        }
        Err(Fail::Run(m)) => {
            crate::errln!("vnetlab: {m}");
            1
        }
        Err(Fail::Interrupted(m)) => {
            crate::errln!("vnetlab: {m}");
            130
        }
        Err(Fail::Partial(m)) => {
            crate::errln!("vnetlab: {m}");
            PARTIAL
        }
    }
}

/// The exit code of a run (or reproduce) that finished with failed points.
pub const PARTIAL: i32 = 3;

/// Refuses early when not root, naming the fix.
pub fn need_root(what: &str) -> CmdResult {
    if !crate::sys::is_root() {
        return Err(Fail::Input(format!(
            "{what} needs root (CAP_NET_ADMIN): run it as root, e.g. with sudo"
        )));
    }
    Ok(())
}

/// A JSON document on stdout. serde_json leaves DEL and the C1 controls raw in strings: they are
/// written as `\u00XX` escapes, so the document stays valid and a terminal obeys none of them.
pub fn print_json<T: serde::Serialize>(v: &T) {
    let text = serde_json::to_string_pretty(v).unwrap();
    let text: String = text
        .chars()
        .map(|c| match c as u32 {
            0x7f..=0x9f => format!("\\u{:04x}", c as u32),
            _ => c.to_string(),
        })
        .collect();
    crate::outln!("{text}");
}

#[derive(clap::Args)]
pub struct GuestImageArgs {
    /// Where the kernel package is extracted and the initramfs kept [default: $VNETLAB_CACHE_DIR/guest, else /var/cache/vnetlab/guest, where `up` looks]
    #[arg(long)]
    cache: Option<std::path::PathBuf>,
}

fn guest_image(a: GuestImageArgs) -> CmdResult {
    let cache = a.cache.unwrap_or_else(crate::lab::vms::image_cache);
    std::fs::create_dir_all(&cache)
        .map_err(|e| Fail::Run(format!("cannot make {}: {e}", cache.display())))?;
    let t0 = std::time::Instant::now();
    let img = crate::guest::image::ensure(&cache)?;
    crate::outln!("kernel {}", img.kernel.display());
    crate::outln!("initrd {}", img.initrd.display());
    crate::errln!("guest image ready in {:.1} s", t0.elapsed().as_secs_f64());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Fail;

    fn code(f: Fail) -> &'static str {
        match f {
            Fail::Input(_) => "input",
            Fail::Run(_) => "run",
            Fail::Interrupted(_) => "interrupted",
            Fail::Partial(_) => "partial",
        }
    }

    /// A token from a file others may read is refused; one from the file's first line is taken.
    #[test]
    fn a_token_comes_from_the_flag_a_private_file_or_the_environment() {
        use std::os::unix::fs::PermissionsExt;
        let f = std::env::temp_dir().join(format!("vnetlab-token-{}", std::process::id()));
        std::fs::write(&f, "0123456789abcdef0123\nrest\n").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = super::resolve_token(&None, &Some(f.clone())).unwrap_err();
        assert!(matches!(e, Fail::Input(ref m) if m.contains("chmod 600")));
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(
            super::resolve_token(&None, &Some(f.clone()))
                .unwrap()
                .as_deref(),
            Some("0123456789abcdef0123")
        );
        assert_eq!(
            super::resolve_token(&Some("given-on-the-line".into()), &None)
                .unwrap()
                .as_deref(),
            Some("given-on-the-line")
        );
        std::fs::remove_file(&f).unwrap();
    }

    #[test]
    fn the_exit_code_follows_the_error_variant_not_its_text() {
        let quantity = "9zbit".parse::<crate::units::Rate>().unwrap_err();
        assert!(matches!(quantity, crate::units::Error::Malformed { .. }));
        let lab = crate::lab::Error::from(quantity);
        assert_eq!(code(lab.into()), "input");
        let host = crate::lab::hostcmd::Error::Run("ip did not finish".into());
        assert_eq!(code(crate::lab::Error::from(host).into()), "run");
        let stopped = crate::experiment::Error::from(crate::engine::Error::Interrupted);
        assert_eq!(code(stopped.into()), "interrupted");
        let refused = crate::experiment::Error::from(crate::lab::Error::Input("x".into()));
        assert_eq!(code(refused.into()), "input");
        let bench = crate::bench::Error::from(crate::lab::Error::Failed("y".into()));
        assert_eq!(code(bench.into()), "run");
        // A failed build whose record cannot be read is reported as the user's input.
        assert!(crate::lab::Error::Failed("z".into()).as_input().is_input());
    }
}

/// How many units a point takes and when it stops: vnetlab's --confidence/--iterations and
/// netperf's -I/-i (shared by `test` and `run`).
#[derive(clap::Args, Clone, Debug, Default)]
pub struct StopArgs {
    /// Repeat until the median's LEVEL % confidence interval of throughput and of host CPU is
    /// within ±HALF-WIDTH % of it, e.g. 95,5 (between --iterations' least and most; alone: at
    /// least the units that reach the level, 6 at 95 %, at most 30)
    #[arg(long, value_name = "LEVEL,HALF-WIDTH")]
    pub confidence: Option<String>,
    /// netperf's -I LEVEL,WIDTH: as --confidence with the whole interval WIDTH % wide (±WIDTH/2)
    #[arg(short = 'I', value_name = "LEVEL,WIDTH", conflicts_with = "confidence")]
    pub netperf_confidence: Option<String>,
    /// Units (runs, or rounds in fresh labs) as MIN,MAX, or one number for both: with a
    /// confidence goal, a point stops between them once it is met
    #[arg(long, value_name = "MIN,MAX")]
    pub iterations: Option<String>,
    /// netperf's -i MAX,MIN: as --iterations, most first
    #[arg(short = 'i', value_name = "MAX,MIN", conflicts_with = "iterations")]
    pub netperf_iterations: Option<String>,
}

impl StopArgs {
    /// Whether any of these was given.
    pub fn given(&self) -> bool {
        self.confidence.is_some()
            || self.netperf_confidence.is_some()
            || self.iterations.is_some()
            || self.netperf_iterations.is_some()
    }

    /// The stopping rule these flags give; `fixed` where they give no count and no goal.
    pub fn stopping(
        &self,
        fixed: crate::stats::Iterations,
    ) -> Result<crate::measure::Stopping, Fail> {
        use crate::stats;
        let goal = match (&self.confidence, &self.netperf_confidence) {
            (Some(c), _) => Some(stats::parse_confidence(c)?),
            (None, Some(c)) => Some(stats::parse_netperf_confidence(c)?),
            (None, None) => None,
        };
        let iterations = match (&self.iterations, &self.netperf_iterations, goal) {
            (Some(i), _, _) => stats::parse_iterations(i)?,
            (None, Some(i), _) => stats::parse_netperf_iterations(i)?,
            (None, None, Some(g)) if fixed.max <= 1 => {
                crate::measure::Stopping::default_iterations(g)
            }
            (None, None, _) => fixed,
        };
        Ok(crate::measure::Stopping { goal, iterations })
    }
}

/// The serve token, from --token, else --token-file (its first line, refused if others may read
/// it), else VNETLAB_TOKEN; None where none is given.
pub fn resolve_token(
    token: &Option<String>,
    file: &Option<std::path::PathBuf>,
) -> Result<Option<String>, Fail> {
    use std::os::unix::fs::MetadataExt;
    if let Some(t) = token {
        return Ok(Some(t.clone()));
    }
    if let Some(f) = file {
        let name = crate::text::clip(&f.display().to_string());
        let text = crate::text::read_capped(f, 4096)?;
        let mode = std::fs::metadata(f).map(|m| m.mode()).unwrap_or(0);
        if mode & 0o077 != 0 {
            return Err(Fail::Input(format!(
                "--token-file {name} may be read by others (mode {:o}): `chmod 600 {name}` first",
                mode & 0o777
            )));
        }
        let t = text.lines().next().unwrap_or("").trim().to_string();
        return Ok(Some(t));
    }
    Ok(std::env::var("VNETLAB_TOKEN")
        .ok()
        .filter(|t| !t.is_empty()))
}
