//! `vnetlab bench …`: benchmarks side by side with a named peer, printed as ratios.

use clap::{Args, Subcommand};

use super::{input, need_root, print_json, running, CmdResult, Fail};
use crate::bench::engine::{self, Path, Row};
use crate::lab::{build, topology::{Mode, Topology}};

#[derive(Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    what: BenchWhat,
}

#[derive(Subcommand)]
enum BenchWhat {
    /// The engine beside iperf3 (TCP_STREAM 1K, 128K) and sockperf ping-pong (TCP_RR)
    Engine(EngineArgs),
}

#[derive(Args)]
struct EngineArgs {
    /// Measured seconds per run
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// Runs per tool and test; the median is compared
    #[arg(long, default_value_t = 3)]
    repeat: u32,
    /// Paths: loopback, veth (a pair between two lab namespaces), or both
    #[arg(long, default_value = "loopback,veth")]
    paths: String,
    #[arg(long)]
    json: bool,
}

pub fn bench(a: BenchArgs) -> CmdResult {
    match a.what {
        BenchWhat::Engine(e) => bench_engine(e),
    }
}

fn bench_engine(a: EngineArgs) -> CmdResult {
    if !(1.0..=600.0).contains(&a.seconds) || !(1..=50).contains(&a.repeat) {
        return Err(Fail::Input("--seconds 1…600 and --repeat 1…50".into()));
    }
    let paths: Vec<&str> = a.paths.split(',').map(str::trim).collect();
    if let Some(p) = paths.iter().find(|p| !matches!(**p, "loopback" | "veth")) {
        return Err(Fail::Input(format!("unknown path '{p}': use loopback, veth or both")));
    }
    for tool in ["iperf3", "sockperf"] {
        if crate::lab::hostcmd::read(&["sh", "-c", &format!("command -v {tool}")]).is_err() {
            return Err(Fail::Input(format!("{tool} is not installed: `make deps` installs it")));
        }
    }
    let mut progress = |s: &str| eprintln!("bench: {s}");
    let mut rows: Vec<Row> = Vec::new();
    if paths.contains(&"loopback") {
        rows.extend(running(engine::compare(&Path::Loopback, a.seconds, a.repeat, &mut progress))?);
    }
    if paths.contains(&"veth") {
        need_root("vnetlab bench engine (veth path)")?;
        let t = Topology { name: "bench".into(), mode: Mode::Native, guests: 1, ..Default::default() };
        let plan = input(build::prepare(&t))?;
        running(build::build(&plan, false))?;
        let r = engine::compare(&Path::Veth(&plan.record), a.seconds, a.repeat, &mut progress);
        let down = build::teardown("bench");
        rows.extend(running(r)?);
        running(down)?;
    }
    if a.json {
        print_json(&rows);
        return Ok(());
    }
    println!("{:<9} {:<16} {:<12} {:>14} {:>14} {:>9} {:>12}", "path", "test", "peer", "vnetlab", "peer", "ratio", "CPU/unit ×");
    for r in &rows {
        let fmt = |m: &engine::Measure| match m.tps {
            Some(t) => format!("{:.0} tps", t),
            None => format!("{:.2} Gb/s", m.gbps),
        };
        println!(
            "{:<9} {:<16} {:<12} {:>14} {:>14} {:>8.2}× {:>11.2}×{}",
            r.path,
            r.test,
            r.peer,
            fmt(&r.vnetlab),
            fmt(&r.peer_result),
            r.throughput_ratio,
            r.cpu_per_unit_ratio,
            r.p50_ratio.map(|x| format!("   p50 latency {x:.2}×")).unwrap_or_default()
        );
    }
    println!("ratio = vnetlab ÷ peer (throughput or transactions/s); CPU/unit = host cores per Gb/s (per 100k tps for RR), vnetlab ÷ peer");
    Ok(())
}
