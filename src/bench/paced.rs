//! `vnetlab bench engine --paced`: vnetlab's paced streams beside iperf3's at the same size and
//! rate, g1 → client in one lab per datapath, both placed the same way (the sender in g1's cgroup
//! and cpuset on the host's cores, the receiver in the client's) and both measured by the same
//! meter over a steady window. The figure compared is the host's CPU per Gb/s delivered, the
//! cost every plan and paper verdict inherits; the host end's NAPI thread (the client's ACKs
//! arriving) is shown beside it, since that is where a sender's wire pattern shows. Runs
//! alternate (ours, iperf3, iperf3, ours, …) and the medians are compared.

use serde::Serialize;

use super::Error;
use crate::engine::spec::Spec;
use crate::lab::state::LabRecord;
use crate::measure::iperf3::Iperf3;
use crate::measure::source::Engine;
use crate::measure::{self, Target, TrafficSource};
use crate::records::cpu::CpuReport;
use crate::stats::{self, Spread};
use crate::vocab::{Pacing, PartId, PartKind, Role, Senders, Side};

/// The comparison's points: (message, rate) as issue-level acceptance names them.
pub const POINTS: [(&str, u64); 3] = [
    ("1K", 200_000_000),
    ("8K", 500_000_000),
    ("64K", 500_000_000),
];
/// The most vnetlab's host CPU per Gb/s may exceed iperf3's.
pub const TARGET_RATIO: f64 = 1.05;
/// A delivered rate this close to the asked one counts as the same load.
const RATE_TOLERANCE: f64 = 0.03;
const PORT_IPERF: u16 = 15214;
/// Warm-up left out of both tools' windows (iperf3's -O takes whole seconds).
const WARMUP_S: f64 = 1.0;

/// One tool's repeats at one point.
#[derive(Serialize, Clone, Debug)]
pub struct ToolRuns {
    pub gbps: Spread,
    pub pct_per_gbps: Spread,
    /// The host end of the wire's NAPI thread, % of the host's cores.
    pub napi_pct: Spread,
    /// The sender's own part (g1's cgroup: the process and what its system calls do), % of the
    /// host's cores: where a difference in how a tool writes shows.
    pub sender_pct: Spread,
    /// Every repeat delivered the asked rate within 3 %.
    pub at_rate: bool,
}

#[derive(Serialize, Clone, Debug)]
pub struct PacedRow {
    pub path: String,
    pub message: String,
    pub rate_bps: u64,
    pub pacing: Pacing,
    /// The peer's command line, e.g. `iperf3 -l 8K -b 500000000 -C cubic`.
    pub peer: String,
    pub vnetlab: ToolRuns,
    pub iperf3: ToolRuns,
    /// vnetlab's median host CPU per Gb/s ÷ iperf3's.
    pub ratio: f64,
    /// Both delivered the rate and the ratio is at most 1.05.
    pub within_target: bool,
}

/// One run's figures.
struct Run {
    gbps: f64,
    pct_per_gbps: f64,
    napi_pct: f64,
    sender_pct: f64,
}

/// The host's parts that `is` picks, summed, % of the host's cores.
fn host_parts(c: &CpuReport, is: impl Fn(PartId) -> bool) -> f64 {
    c.parts
        .iter()
        .filter(|p| p.side == Side::Host && is(p.id()))
        .map(|p| p.busy_pct)
        .sum()
}

fn run_of(gbps: f64, c: &CpuReport) -> Result<Run, Error> {
    Ok(Run {
        gbps,
        pct_per_gbps: c
            .normalized_pct_per_gbps
            .ok_or_else(|| Error::Failed("no traffic was delivered".into()))?,
        napi_pct: host_parts(c, |p| p.kind == PartKind::Napi),
        sender_pct: host_parts(c, |p| {
            p.kind == PartKind::Guest && p.role == Some(Role::Guest(1))
        }),
    })
}

fn target(rec: &LabRecord) -> Target {
    Target::Lab {
        rec: Box::new(rec.clone()),
        from: Senders::One(Role::Guest(1)),
        to: Role::Client,
        loads: vec![],
        other: None,
    }
}

/// One run of `source` at `msg` bytes and `rate`, g1 → client, through the measuring core: both
/// tools get the same placement, the same kernel pacing (fq on g1's device) and the same meter.
/// iperf3's flags are its pacing (`-b` or `--fq-rate`) and the engine's congestion control (`-C`),
/// so both tools' TCP is the same algorithm in the same kind of state.
fn one(
    rec: &LabRecord,
    source: &dyn TrafficSource,
    msg: usize,
    rate: u64,
    pacing: Pacing,
    secs: f64,
) -> Result<Run, Error> {
    let spec = Spec {
        msg,
        rate: Some(rate),
        pacing,
        duration: secs,
        warmup: WARMUP_S,
        ..Default::default()
    };
    let m = measure::measure(&target(rec), &spec, source)?;
    let c = m
        .cpu
        .ok_or_else(|| Error::Failed(m.cpu_error.unwrap_or_default()))?;
    run_of(m.result.throughput_gbps, &c)
}

/// iperf3's pacing flags for `pacing`, as the row names its command line.
fn iperf_pacing(pacing: Pacing, rate: u64) -> Vec<String> {
    let cc = crate::vocab::Congestion::default().to_string();
    match pacing {
        Pacing::App => vec!["-b".into(), rate.to_string(), "-C".into(), cc],
        Pacing::Kernel => vec!["--fq-rate".into(), rate.to_string(), "-C".into(), cc],
    }
}

fn side(runs: &[Run], rate: u64) -> ToolRuns {
    let f = |k: fn(&Run) -> f64| stats::spread(&runs.iter().map(k).collect::<Vec<_>>(), 95);
    ToolRuns {
        gbps: f(|r| r.gbps),
        pct_per_gbps: f(|r| r.pct_per_gbps),
        napi_pct: f(|r| r.napi_pct),
        sender_pct: f(|r| r.sender_pct),
        at_rate: runs
            .iter()
            .all(|r| (r.gbps * 1e9 / rate as f64 - 1.0).abs() <= RATE_TOLERANCE),
    }
}

/// The row for one point from both tools' repeats.
fn row(path: &str, size: &str, rate: u64, pacing: Pacing, ours: &[Run], peer: &[Run]) -> PacedRow {
    let (o, p) = (side(ours, rate), side(peer, rate));
    let ratio = o.pct_per_gbps.median / p.pct_per_gbps.median;
    PacedRow {
        path: path.into(),
        message: size.into(),
        rate_bps: rate,
        pacing,
        peer: format!("iperf3 -l {size} {}", iperf_pacing(pacing, rate).join(" ")),
        within_target: o.at_rate && p.at_rate && ratio <= TARGET_RATIO,
        ratio,
        vnetlab: o,
        iperf3: p,
    }
}

/// Runs every point on one lab (`path` names it): `repeat` alternating runs of each tool.
pub fn compare(
    path: &str,
    rec: &LabRecord,
    pacings: &[Pacing],
    secs: f64,
    repeat: u32,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<PacedRow>, Error> {
    let peer_tool = Iperf3 { port: PORT_IPERF };
    let mut rows = Vec::new();
    for &pacing in pacings {
        for (size, rate) in POINTS {
            let msg = crate::units::parse_size(size).expect("a fixed size");
            let (mut o, mut p) = (Vec::new(), Vec::new());
            for i in 0..repeat {
                if crate::sys::signals::stop_requested() {
                    return Err(measure::Error::from(crate::engine::Error::Interrupted).into());
                }
                progress(&format!(
                    "{path} {size} at {} ({pacing} pacing): run {}/{repeat}",
                    crate::units::Rate(rate),
                    i + 1
                ));
                // ABBA: neither tool always runs first.
                if i % 2 == 0 {
                    o.push(one(rec, &Engine, msg, rate, pacing, secs)?);
                    p.push(one(rec, &peer_tool, msg, rate, pacing, secs)?);
                } else {
                    p.push(one(rec, &peer_tool, msg, rate, pacing, secs)?);
                    o.push(one(rec, &Engine, msg, rate, pacing, secs)?);
                }
            }
            rows.push(row(path, size, rate, pacing, &o, &p));
        }
    }
    Ok(rows)
}

/// The paced points in a lab per `(path, mode)`, each under a free name and removed after.
pub fn in_labs(
    labs: &[(&str, crate::vocab::Mode)],
    pacings: &[Pacing],
    secs: f64,
    repeat: u32,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<PacedRow>, Error> {
    let mut rows = Vec::new();
    for &(name, mode) in labs {
        let lab = super::one_guest_lab(mode)?;
        let r = compare(name, lab.record(), pacings, secs, repeat, progress);
        let down = lab.remove();
        rows.extend(r?);
        down?;
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(gbps: f64, pct: f64) -> Run {
        Run {
            gbps,
            pct_per_gbps: pct,
            napi_pct: 1.0,
            sender_pct: 2.0,
        }
    }

    #[test]
    fn a_row_compares_medians_and_needs_both_at_rate() {
        let ours = [r(0.5, 30.0), r(0.5, 31.0), r(0.499, 29.0)];
        let peer = [r(0.5, 40.0), r(0.5, 38.0), r(0.5, 41.0)];
        let x = row("bridge", "8K", 500_000_000, Pacing::App, &ours, &peer);
        assert!((x.ratio - 30.0 / 40.0).abs() < 1e-9);
        assert!(x.within_target);
        assert_eq!(x.peer, "iperf3 -l 8K -b 500000000 -C cubic");
        // Cheaper, but short of the rate: not the same load, so not within the target.
        let short = [r(0.45, 20.0), r(0.5, 20.0), r(0.5, 20.0)];
        let x = row("bridge", "8K", 500_000_000, Pacing::App, &short, &peer);
        assert!(!x.vnetlab.at_rate && !x.within_target);
        // Dearer than 1.05×: outside.
        let dear = [r(0.5, 43.0), r(0.5, 43.0), r(0.5, 43.0)];
        assert!(!row("macvlan", "8K", 500_000_000, Pacing::App, &dear, &peer).within_target);
    }
}
