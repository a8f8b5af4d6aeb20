//! `vnetlab bench …`: benchmarks side by side with a named peer, printed as ratios.

use clap::{Args, Subcommand};

use super::fail::{CmdResult, Fail};
use super::shared::{need_root, print_json};
use crate::bench::engine::{self, Path, Row};
use crate::bench::vnic;
use crate::vocab::Mode;

#[derive(Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    what: BenchWhat,
}

#[derive(Subcommand)]
enum BenchWhat {
    /// The engine beside iperf3 (TCP_STREAM 1K, 128K) and sockperf ping-pong (TCP_RR)
    Engine(EngineArgs),
    /// The store and report: time to store a point (vs a point's length) and to report 1 000 points
    Store(StoreArgs),
    /// The vNIC device models beside the bridge: TCP_STREAM 64K at full speed and 8K paced at 250 Mb/s, both ways, labs side by side and run in turn each round, with wake-ups and system calls per frame; LRO on vs off; first, the host's price of one more task on its core per event, and at paced loads the bridge plus that price per backend wake-up
    Vnic(VnicBenchArgs),
    /// QEMU's e1000 and virtio-net beside vnetlab's emulated and paravirt: TCP_STREAM 64K both
    /// ways; with --boot, the time from `up` to a guest whose agent answers
    Qemu(QemuArgs),
    /// `up` and `down` of labs of many guests (200 of bridge and of paravirt), timed for this
    /// build and, with --against, another one side by side
    Labs(LabsArgs),
    /// The meter's own CPU beside crowds of host tasks (half asleep on a timer, half blocked),
    /// as ratios to its cost on the quiet host, with the files it reads per sample and per edge
    Meter(MeterBenchArgs),
    /// Start a crowd of light tasks (and CPU hogs) in a cgroup of its own and hold it until
    /// stopped (Ctrl-C or SIGTERM): the other tenants of a farm host, made by hand
    Crowd(CrowdArgs),
}

#[derive(Args)]
struct MeterBenchArgs {
    /// Crowds to measure beside, in tasks (the quiet host is measured first)
    #[arg(
        long,
        value_name = "N,N,...",
        default_value = "100,1000,3000,10000",
        value_delimiter = ','
    )]
    tasks: Vec<usize>,
    /// Seconds per meter window
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// Windows per crowd; the median is compared
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// One JSON document on stdout, for scripts
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct CrowdArgs {
    /// Light tasks: half asleep on a timer, half blocked without one
    #[arg(long, default_value_t = 10_000)]
    tasks: usize,
    /// Each hog's share of its core, %
    #[arg(long, default_value_t = 30.0)]
    hog_pct: f64,
    /// Cores that get a hog each, e.g. 0,1 [default: none]
    #[arg(long, value_name = "CPU,CPU,...", value_delimiter = ',')]
    hog_cores: Vec<usize>,
}

#[derive(Args)]
struct VnicBenchArgs {
    /// Measured seconds per run
    #[arg(long, default_value_t = 3.0, allow_negative_numbers = true)]
    seconds: f64,
    /// Runs per point; the median is compared
    #[arg(long, default_value_t = 3, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=50))]
    repeat: u32,
    /// One JSON document on stdout, for scripts
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct QemuArgs {
    #[command(flatten)]
    v: VnicBenchArgs,
    /// Time `up --mode qemu-virtio --guests 1` to a working agent instead (each run boots a guest)
    #[arg(long)]
    boot: bool,
    /// With --boot: another build of vnetlab (the previous one) timed the same way, side by side
    #[arg(long, value_name = "BIN")]
    against: Option<std::path::PathBuf>,
}

#[derive(Args)]
struct LabsArgs {
    /// Guests per lab
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..=250))]
    guests: u32,
    /// Datapaths, comma-separated
    #[arg(long, default_value = "bridge,paravirt")]
    modes: String,
    /// Timed runs per build and lab (after one untimed)
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=20))]
    repeat: u32,
    /// Another build of vnetlab (the previous one) timed the same way, side by side
    #[arg(long, value_name = "BIN")]
    against: Option<std::path::PathBuf>,
    /// One JSON document on stdout, for scripts
    #[arg(long)]
    json: bool,
}

/// The machine's lock, for a bench whose flags are checked.
fn hold() -> Result<Option<crate::fleet::lock::HostLock>, Fail> {
    super::shared::hold_machine("vnetlab bench", std::time::Duration::ZERO)
}

/// This build and, if named, the other one.
fn builds(against: Option<std::path::PathBuf>) -> Result<Vec<crate::bench::labs::Build>, Fail> {
    use crate::bench::labs::Build;
    let this = std::env::current_exe()
        .map_err(|e| Fail::Run(format!("cannot find vnetlab's own binary: {e}")))?;
    let mut v = vec![Build {
        label: "this build".into(),
        bin: this,
    }];
    if let Some(bin) = against {
        if !bin.is_file() {
            return Err(Fail::Input(format!(
                "--against {}: no such file; name a vnetlab binary",
                bin.display()
            )));
        }
        let label = bin
            .file_name()
            .map(|n| crate::text::clip(&n.to_string_lossy()))
            .unwrap_or_default();
        v.push(Build { label, bin });
    }
    Ok(v)
}

fn bench_labs(a: LabsArgs) -> CmdResult {
    need_root("vnetlab bench labs")?;
    let modes = a
        .modes
        .split(',')
        .map(|m| {
            m.trim().parse::<Mode>().map_err(|_| {
                Fail::Input(format!(
                    "--modes: unknown mode '{}': {}",
                    crate::text::clip(m),
                    Mode::names()
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let cases: Vec<(Mode, u32)> = modes.into_iter().map(|m| (m, a.guests)).collect();
    let builds = builds(a.against)?;
    let _machine = hold()?;
    timed(builds, &cases, a.repeat, a.json)
}

fn timed(
    builds: Vec<crate::bench::labs::Build>,
    cases: &[(Mode, u32)],
    repeat: u32,
    json: bool,
) -> CmdResult {
    let progress = |what: &str| crate::errln!("bench: {what}");
    let rows = crate::bench::labs::measure(&builds, cases, repeat, &progress)?;
    if json {
        print_json(&rows);
        return Ok(());
    }
    for l in crate::bench::labs::table(&rows) {
        crate::outln!("{l}");
    }
    Ok(())
}

fn bench_qemu(a: QemuArgs) -> CmdResult {
    if !a.boot {
        if a.against.is_some() {
            return Err(Fail::Input("--against goes with --boot".into()));
        }
        return bench_vnic(a.v, true);
    }
    need_root("vnetlab bench qemu --boot")?;
    if let Some(why) = crate::lab::vms::missing(Mode::QemuVirtio) {
        return Err(Fail::Skipped(why));
    }
    let builds = builds(a.against)?;
    let _machine = hold()?;
    timed(builds, &[(Mode::QemuVirtio, 1)], a.v.repeat, a.v.json)
}

fn bench_vnic(a: VnicBenchArgs, qemu: bool) -> CmdResult {
    need_root("vnetlab bench")?;
    if !(0.5..=600.0).contains(&a.seconds) || !(1..=50).contains(&a.repeat) {
        return Err(Fail::Input("--seconds 0.5…600 and --repeat 1…50".into()));
    }
    let _machine = hold()?;
    let progress = |what: &str| crate::errln!("bench: {what}");
    let bench = if qemu {
        vnic::measure_qemu(a.seconds, a.repeat, &progress)?
    } else {
        vnic::measure(a.seconds, a.repeat, &progress)?
    };
    if a.json {
        print_json(&bench);
        return Ok(());
    }
    if let Some(why) = &bench.hop_missing {
        crate::outln!("no hop probe: {why}");
    }
    crate::bench::table::vnic_table(&bench.rows, qemu, bench.hop.as_ref());
    Ok(())
}

#[derive(Args)]
struct StoreArgs {
    /// Points to store and report
    #[arg(long, default_value_t = 1000)]
    points: u32,
    /// One JSON document on stdout, for scripts
    #[arg(long)]
    json: bool,
}

/// Times storing and reporting `--points` synthetic points (`bench::store`).
fn bench_store(a: StoreArgs) -> CmdResult {
    if !(1..=100_000).contains(&a.points) {
        return Err(Fail::Input("--points 1…100000".into()));
    }
    let _machine = hold()?;
    let b = crate::bench::store::measure(a.points)?;
    if a.json {
        print_json(&b);
    } else {
        crate::outln!(
            "store: {:.3} ms per point = {:.3} % of a default 2.5 s point",
            b.store_ms_per_point,
            b.store_pct_of_default_point
        );
        crate::outln!(
            "report of {} points (read back + HTML with charts): {:.3} s, {} KB",
            b.points,
            b.report_s,
            b.report_bytes / 1024
        );
    }
    Ok(())
}

#[derive(Args)]
struct EngineArgs {
    /// Measured seconds per run
    #[arg(long, default_value_t = 5.0, allow_negative_numbers = true)]
    seconds: f64,
    /// Runs per tool and test; the median is compared [default: 3; paced: 5, so that a median
    /// outvotes two runs a disturbed spell of the host moved: runs alternate A B B A, and two
    /// neighbours of one tool share a spell]
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=50))]
    repeat: Option<u32>,
    /// Paths: loopback, veth (the wire between the host's and the client's namespaces), bridge
    /// (a guest through a bridge lab to the client); in a lab both tools run placed the same way.
    /// With --paced: bridge and macvlan [default: loopback,veth,bridge; paced: bridge,macvlan]
    #[arg(long)]
    paths: Option<String>,
    /// Paced streams instead: g1 → client at 1K/200 Mb/s, 8K/500 Mb/s and 64K/500 Mb/s, vnetlab's
    /// host CPU per Gb/s beside iperf3's at the same delivered rate, both measured by the meter
    #[arg(long)]
    paced: bool,
    /// With --paced: which pacing to compare: app (vs iperf3 -b), kernel (vs iperf3 --fq-rate),
    /// or both, comma-separated
    #[arg(long, default_value = "app")]
    pacing: String,
    /// One JSON document on stdout, for scripts
    #[arg(long)]
    json: bool,
}

pub fn bench(a: BenchArgs) -> CmdResult {
    // Each bench holds the machine once its flags are checked (a bad flag is refused at once,
    // never after a wait); a crowd measures nothing: it is what others measure beside.
    match a.what {
        BenchWhat::Engine(e) => bench_engine(e),
        BenchWhat::Store(s) => bench_store(s),
        BenchWhat::Vnic(v) => bench_vnic(v, false),
        BenchWhat::Qemu(q) => bench_qemu(q),
        BenchWhat::Labs(l) => bench_labs(l),
        BenchWhat::Meter(m) => bench_meter(m),
        BenchWhat::Crowd(c) => bench_crowd(c),
    }
}

fn bench_meter(a: MeterBenchArgs) -> CmdResult {
    need_root("vnetlab bench meter")?;
    if !(1.0..=600.0).contains(&a.seconds) || !(1..=50).contains(&a.repeat) {
        return Err(Fail::Input("--seconds 1…600 and --repeat 1…50".into()));
    }
    let _machine = hold()?;
    let plan = crate::bench::meter::Plan {
        tasks: a.tasks,
        seconds: a.seconds,
        repeat: a.repeat,
    };
    let progress = |what: &str| crate::errln!("bench: {what}");
    let rows = crate::bench::meter::run(&plan, &progress)?;
    if a.json {
        print_json(&rows);
    } else {
        crate::out!("{}", crate::bench::meter::table(&rows, &plan));
    }
    Ok(())
}

fn bench_crowd(a: CrowdArgs) -> CmdResult {
    need_root("vnetlab bench crowd")?;
    let online = crate::sys::online_cpus();
    if let Some(c) = a.hog_cores.iter().find(|c| !online.contains(c)) {
        return Err(Fail::Input(format!("--hog-cores: CPU {c} is not online")));
    }
    crate::sys::signals::install();
    let crowd = crate::bench::crowd::Crowd::start(&crate::bench::crowd::Spec {
        tasks: a.tasks,
        hog_pct: a.hog_pct,
        hog_cores: a.hog_cores,
    })?;
    let shield = crowd
        .cpuset()
        .and_then(|d| d.file_name())
        .map(|n| {
            format!(
                "; a lab moves it off its cores with `up --shield --shield-root {}`",
                n.to_string_lossy()
            )
        })
        .unwrap_or_default();
    crate::outln!(
        "vnetlab: a crowd of {} tasks is running (pid {}){shield}; stop it with Ctrl-C or SIGTERM",
        crowd.pids().len(),
        std::process::id()
    );
    while !crate::sys::signals::stop_requested() {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    drop(crowd);
    Ok(())
}

fn bench_engine(a: EngineArgs) -> CmdResult {
    let repeat = a.repeat.unwrap_or(if a.paced { 5 } else { 3 });
    if !(1.0..=600.0).contains(&a.seconds) || !(1..=50).contains(&repeat) {
        return Err(Fail::Input("--seconds 1…600 and --repeat 1…50".into()));
    }
    if a.paced {
        return bench_paced(a, repeat);
    }
    let paths = a.paths.as_deref().unwrap_or("loopback,veth,bridge");
    let paths: Vec<&str> = paths.split(',').map(str::trim).collect();
    if let Some(p) = paths
        .iter()
        .find(|p| !matches!(**p, "loopback" | "veth" | "bridge"))
    {
        return Err(Fail::Input(format!(
            "unknown path '{}': use loopback, veth, bridge or a list of them",
            crate::text::clip(p)
        )));
    }
    for tool in ["iperf3", "sockperf"] {
        if crate::lab::hostcmd::read(&["sh", "-c", &format!("command -v {tool}")]).is_err() {
            return Err(Fail::Input(format!(
                "{tool} is not installed: `make deps` installs it"
            )));
        }
    }
    let _machine = hold()?;
    let mut progress = |s: &str| crate::errln!("bench: {s}");
    let mut rows: Vec<Row> = Vec::new();
    if paths.contains(&"loopback") {
        rows.extend(engine::compare(
            &Path::Loopback,
            a.seconds,
            repeat,
            &mut progress,
        )?);
    }
    if paths.iter().any(|p| *p != "loopback") {
        need_root("vnetlab bench engine (lab paths)")?;
    }
    rows.extend(engine::lab_paths(&paths, a.seconds, repeat, &mut progress)?);
    if a.json {
        print_json(&rows);
        return Ok(());
    }
    crate::bench::table::engine_table(&rows);
    Ok(())
}

fn need_tool(tool: &str) -> Result<(), Fail> {
    crate::lab::hostcmd::read(&["sh", "-c", &format!("command -v {tool}")])
        .map(|_| ())
        .map_err(|_| Fail::Input(format!("{tool} is not installed: `make deps` installs it")))
}

/// `bench engine --paced`: a lab per path, the paced points on each, then the table.
fn bench_paced(a: EngineArgs, repeat: u32) -> CmdResult {
    use crate::bench::paced;
    let paths = a.paths.as_deref().unwrap_or("bridge,macvlan");
    let mut labs = Vec::new();
    for p in paths.split(',').map(str::trim) {
        labs.push(match p {
            "bridge" => (p, Mode::Bridge),
            "macvlan" => (p, Mode::Macvlan),
            _ => {
                return Err(Fail::Input(format!(
                    "--paced measures in labs: use --paths bridge, macvlan or both, not '{}'",
                    crate::text::clip(p)
                )))
            }
        });
    }
    let pacings = a
        .pacing
        .split(',')
        .map(|s| s.trim().parse::<crate::vocab::Pacing>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Fail::Input(e.to_string()))?;
    need_tool("iperf3")?;
    need_root("vnetlab bench engine --paced")?;
    let _machine = hold()?;
    crate::sys::signals::install();
    let mut progress = |s: &str| crate::errln!("bench: {s}");
    let rows = paced::in_labs(&labs, &pacings, a.seconds, repeat, &mut progress)?;
    if a.json {
        print_json(&rows);
        return Ok(());
    }
    crate::bench::table::paced_table(&rows, repeat);
    Ok(())
}
