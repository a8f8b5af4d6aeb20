//! `vnetlab bench …`: benchmarks side by side with a named peer, printed as ratios.

use clap::{Args, Subcommand};

use super::{need_root, print_json, CmdResult, Fail};
use crate::bench::engine::{self, Path, Row};
use crate::bench::vnic;
use crate::lab::topology::Topology;
use crate::measure::lab::Lab;
use crate::vocab::{Mode, Role};

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
    /// The vNIC device models beside the bridge: TCP_STREAM 64K both ways, and LRO on vs off
    Vnic(VnicBenchArgs),
    /// QEMU's e1000 and virtio-net beside vnetlab's emulated and paravirt: TCP_STREAM 64K both ways
    Qemu(VnicBenchArgs),
}

#[derive(Args)]
struct VnicBenchArgs {
    /// Measured seconds per run
    #[arg(long, default_value_t = 3.0, allow_negative_numbers = true)]
    seconds: f64,
    /// Runs per point; the median is compared
    #[arg(long, default_value_t = 3, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=50))]
    repeat: u32,
    #[arg(long)]
    json: bool,
}

fn bench_vnic(a: VnicBenchArgs, qemu: bool) -> CmdResult {
    need_root("vnetlab bench")?;
    if !(0.5..=600.0).contains(&a.seconds) || !(1..=50).contains(&a.repeat) {
        return Err(Fail::Input("--seconds 0.5…600 and --repeat 1…50".into()));
    }
    let progress = |what: &str| crate::errln!("bench: {what}");
    let rows = if qemu {
        vnic::measure_qemu(a.seconds, a.repeat, &progress)?
    } else {
        vnic::measure(a.seconds, a.repeat, &progress)?
    };
    if a.json {
        print_json(&rows);
        return Ok(());
    }
    crate::outln!(
        "{:<36} {:<16} {:>8} {:>12} {:>12} {:>10} {:>9} {:>7} {:>8}  bound by",
        "datapath",
        "direction",
        "Gb/s",
        "host %/Gb/s",
        "guest %/Gb/s",
        "backend %",
        "LRO ratio",
        "vCPU %",
        "emul. %"
    );
    for r in &rows {
        let o = |v: Option<f64>, p: usize| v.map(|x| format!("{x:.p$}")).unwrap_or("-".into());
        crate::outln!(
            "{:<36} {:<16} {:>8.2} {:>12.3} {:>12} {:>10} {:>9} {:>7} {:>8}  {}",
            r.lab,
            r.direction,
            r.gbps,
            r.host_pct_per_gbps,
            o(r.guest_pct_per_gbps, 3),
            o(r.backend_pct, 1),
            o(r.lro_ratio, 1),
            o(r.vcpu_pct, 1),
            o(r.emulation_pct, 1),
            r.bound
                .as_ref()
                .map(|b| b.to_string())
                .unwrap_or("nothing".into())
        );
    }
    crate::outln!();
    let lines = if qemu {
        vnic::qemu_ratios(&rows)
    } else {
        vnic::ratios(&rows)
    };
    for line in lines {
        crate::outln!("{line}");
    }
    if qemu {
        crate::outln!("QEMU guests run under the acceleration `vnetlab status` names; under TCG the guest's CPU is emulated, so QEMU rows bound by the host core are bound by emulation (device and host-side costs are still real)");
    }
    Ok(())
}

#[derive(Args)]
struct StoreArgs {
    /// Points to store and report
    #[arg(long, default_value_t = 1000)]
    points: u32,
    #[arg(long)]
    json: bool,
}

/// Stores `n` synthetic points (load for timing only, in a temporary database that is removed)
/// the way a run does, one transaction each, then reads them back and renders the HTML report.
fn bench_store(a: StoreArgs) -> CmdResult {
    use crate::records::{HostFacts, PointKey, PointRecord, RunRef};
    use crate::store::Store;
    use crate::vocab::{Direction, Gro, Mode, PartKind, TestKind};
    use std::time::Instant;
    if !(1..=100_000).contains(&a.points) {
        return Err(Fail::Input("--points 1…100000".into()));
    }
    let path =
        std::env::temp_dir().join(format!("vnetlab-bench-store-{}.sqlite", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let store = Store::open(&path, false)?;
    let run = store.begin_run(
        "bench",
        "synthetic points for timing",
        "",
        "",
        &HostFacts::default(),
        a.points,
    )?;
    let modes = [
        Mode::Native,
        Mode::Bridge,
        Mode::Nat,
        Mode::Macvlan,
        Mode::Emulated,
        Mode::Paravirt,
    ];
    let sizes = [64u64, 256, 1024, 4096, 8192, 16384, 32768, 65536];
    // Each point carries a real stored result (a paravirt stream's, from a quick run): the
    // document's size is part of what storing costs.
    let measured = crate::records::measured::Measured::decode(include_str!(
        "../../tests/fixtures/measured-v1/stream-paravirt.json"
    ))
    .map_err(|e| Fail::Run(e.to_string()))?;
    let t0 = Instant::now();
    for i in 0..a.points {
        let p = PointRecord {
            seq: i + 1,
            key: PointKey {
                mode: modes[i as usize % modes.len()],
                guests: 1 + i / 48,
                direction: Direction::GuestToClient,
                test: TestKind::TcpStream,
                message_bytes: sizes[(i as usize / modes.len()) % sizes.len()],
                gro: Gro::Both,
                ..Default::default()
            },
            duration_s: 1.0,
            repeat: 1,
            throughput_gbps: Some(1.0 + (i % 17) as f64 / 3.0),
            host_busy_pct: Some(20.0 + (i % 13) as f64),
            normalized_pct_per_gbps: Some(5.0 + (i % 11) as f64),
            sd_host: Some(1.0),
            sd_send: Some(0.5),
            sd_recv: Some(0.4),
            samples: (1..=10).map(|k| (k as f64 * 0.1, 1.0)).collect(),
            parts: [
                "g1",
                "client",
                "host",
                "vnetlab driver",
                "other processes",
                "kernel threads",
                "kernel (unattributed)",
            ]
            .iter()
            .map(|n| (n.to_string(), PartKind::Guest, 5.0, 0.1))
            .collect(),
            result: Some(Box::new(measured.clone())),
            ..Default::default()
        };
        store.add_point(run, &p)?;
    }
    let store_s = t0.elapsed().as_secs_f64();
    let r = store.find_run(RunRef::Id(run))?;
    let t1 = Instant::now();
    let pts: Vec<PointRecord> = store.points(run)?.into_iter().map(|(_, p)| p).collect();
    let html = crate::report::html::page(&r, &pts, &crate::report::capacity::sections(&r, &pts))?;
    let report_s = t1.elapsed().as_secs_f64();
    drop(store);
    for s in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{s}", path.display()));
    }
    let per_point_ms = store_s * 1e3 / a.points as f64;
    // The shortest point vnetlab runs by default: 0.5 s warm-up + 2 s.
    let share = per_point_ms / 2500.0 * 100.0;
    let v = serde_json::json!({"points": a.points, "store_ms_per_point": per_point_ms, "store_pct_of_default_point": share,
        "report_s": report_s, "report_bytes": html.len()});
    if a.json {
        print_json(&v);
    } else {
        crate::outln!(
            "store: {per_point_ms:.3} ms per point = {share:.3} % of a default 2.5 s point"
        );
        crate::outln!(
            "report of {} points (read back + HTML with charts): {report_s:.3} s, {} KB",
            a.points,
            html.len() / 1024
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
    #[arg(long)]
    json: bool,
}

pub fn bench(a: BenchArgs) -> CmdResult {
    match a.what {
        BenchWhat::Engine(e) => bench_engine(e),
        BenchWhat::Store(s) => bench_store(s),
        BenchWhat::Vnic(v) => bench_vnic(v, false),
        BenchWhat::Qemu(v) => bench_vnic(v, true),
    }
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
    // The lab paths: the bare wire (host → client) and through a bridge (g1 → client).
    for (name, mode, from) in [
        ("veth", Mode::Native, Role::Host),
        ("bridge", Mode::Bridge, Role::Guest(1)),
    ] {
        if !paths.contains(&name) {
            continue;
        }
        need_root(&format!("vnetlab bench engine ({name} path)"))?;
        let t = Topology {
            name: "bench".into(),
            mode,
            guests: 1,
            ..Default::default()
        };
        let lab = Lab::build(&t)?;
        crate::measure::place_driver(Some(&lab.record().cpus));
        let r = engine::compare(
            &Path::Lab {
                name,
                rec: lab.record(),
                from,
            },
            a.seconds,
            repeat,
            &mut progress,
        );
        let down = lab.remove();
        rows.extend(r?);
        down?;
    }
    if a.json {
        print_json(&rows);
        return Ok(());
    }
    crate::outln!(
        "{:<9} {:<16} {:<12} {:>14} {:>14} {:>9} {:>12}",
        "path",
        "test",
        "peer",
        "vnetlab",
        "peer",
        "ratio",
        "CPU/unit ×"
    );
    for r in &rows {
        let fmt = |m: &engine::Measure| match m.tps {
            Some(t) => format!("{:.0} tps", t),
            None => format!("{:.2} Gb/s", m.gbps),
        };
        crate::outln!(
            "{:<9} {:<16} {:<12} {:>14} {:>14} {:>8.2}× {:>11.2}×{}",
            r.path,
            r.test,
            r.peer,
            fmt(&r.vnetlab),
            fmt(&r.peer_result),
            r.throughput_ratio,
            r.cpu_per_unit_ratio,
            r.p50_ratio
                .map(|x| format!("   p50 latency {x:.2}×"))
                .unwrap_or_default()
        );
    }
    crate::outln!("ratio = vnetlab ÷ peer (throughput or transactions/s); CPU/unit = host cores per Gb/s (per 100k tps for RR), vnetlab ÷ peer");
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
    crate::sys::signals::install();
    let mut progress = |s: &str| crate::errln!("bench: {s}");
    let mut rows = Vec::new();
    for (name, mode) in labs {
        let t = Topology {
            name: "bench".into(),
            mode,
            guests: 1,
            ..Default::default()
        };
        let lab = Lab::build(&t)?;
        let r = paced::compare(
            name,
            lab.record(),
            &pacings,
            a.seconds,
            repeat,
            &mut progress,
        );
        let down = lab.remove();
        rows.extend(r?);
        down?;
    }
    if a.json {
        print_json(&rows);
        return Ok(());
    }
    print_paced(&rows, repeat);
    Ok(())
}

fn print_paced(rows: &[crate::bench::paced::PacedRow], repeat: u32) {
    use crate::stats::Spread;
    let s = |x: &Spread, p: usize| format!("{:.p$} ({:.p$}–{:.p$})", x.median, x.min, x.max);
    crate::outln!(
        "{:<8} {:>4} {:>8} {:<7} {:>22} {:>22} {:>7}  {:>16}  {:>17}  {:>15}",
        "path",
        "msg",
        "rate",
        "pacing",
        "vnetlab %/Gb/s",
        "iperf3 %/Gb/s",
        "ratio",
        "NAPI % ours/iperf3",
        "sender % ours/iperf3",
        "Gb/s ours/iperf3"
    );
    for r in rows {
        crate::outln!(
            "{:<8} {:>4} {:>8} {:<7} {:>22} {:>22} {:>6.2}×{}  {:>7.1} / {:<7.1}  {:>8.1} / {:<7.1}  {:>6.3} / {:<6.3}{}",
            r.path,
            r.message,
            crate::units::Rate(r.rate_bps).to_string(),
            r.pacing.name(),
            s(&r.vnetlab.pct_per_gbps, 1),
            s(&r.iperf3.pct_per_gbps, 1),
            r.ratio,
            if r.within_target { " " } else { "!" },
            r.vnetlab.napi_pct.median,
            r.iperf3.napi_pct.median,
            r.vnetlab.sender_pct.median,
            r.iperf3.sender_pct.median,
            r.vnetlab.gbps.median,
            r.iperf3.gbps.median,
            match (r.vnetlab.at_rate, r.iperf3.at_rate) {
                (true, true) => "",
                (false, _) => "  vnetlab short of the rate",
                (_, false) => "  iperf3 short of the rate",
            }
        );
    }
    let ok = rows.iter().filter(|r| r.within_target).count();
    crate::outln!(
        "host CPU per Gb/s (median of {repeat}, min–max): ratio = vnetlab ÷ iperf3, target ≤ {:.2}× at the same delivered rate: {ok} of {} rows within (! marks the others)",
        crate::bench::paced::TARGET_RATIO,
        rows.len()
    );
    crate::outln!("both tools: sender in g1's cgroup on the host's cores, receiver in the client's; NAPI = the host end of the wire (the client's ACKs arriving); sender = g1's cgroup (the sending process and its system calls)");
}
