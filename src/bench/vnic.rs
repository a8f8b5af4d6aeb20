//! `vnetlab bench vnic`: vnetlab's device models (paravirt, emulated) beside the kernel bridge,
//! TCP_STREAM 64K at full speed and 8K paced at 250 Mb/s, both ways, with each backend's
//! wake-ups and system calls per frame, and software LRO in the backend on vs off; `vnetlab bench qemu`:
//! QEMU's e1000 and virtio-net beside vnetlab's emulated and paravirt models. Each datapath is
//! built, measured with repeats and removed in turn.

use std::collections::BTreeMap;

use crate::lab::owned::Lab;
use crate::lab::topology::Topology;
use crate::measure::source::Engine;
use crate::measure::{self, Target};
use crate::vocab::{Gro, Mode, PartKind, Role, Senders, Side};

use super::Error;

/// One measured datapath and direction.
#[derive(serde::Serialize, Clone)]
pub struct VnicRow {
    pub lab: String,
    /// The load: "64K max" or "8K 250M".
    pub test: String,
    pub direction: String,
    pub gbps: f64,
    pub host_pct_per_gbps: f64,
    /// The receiving guest's own CPU per Gb/s (client → guest only).
    pub guest_pct_per_gbps: Option<f64>,
    pub backend_pct: Option<f64>,
    pub lro_ratio: Option<f64>,
    /// A QEMU guest's vCPU threads and device emulation, % of a core.
    pub vcpu_pct: Option<f64>,
    pub emulation_pct: Option<f64>,
    /// What bound the point (a saturated core, the client, the wire), if anything.
    pub bound: Option<crate::vocab::Bound>,
    /// The backend's wake-ups and system calls per frame it moved, and how it moves them.
    pub wakeups_per_frame: Option<f64>,
    pub syscalls_per_frame: Option<f64>,
    /// The backend's wake-ups per Gbit of the test's payload direction.
    pub wakeups_per_gbit: Option<f64>,
    /// Bytes per frame the backend moved (64 KB super-frames or MTU frames).
    pub bytes_per_frame: Option<f64>,
    pub io: Option<crate::records::vnic::Io>,
}

/// A load of the bench: its label and what the engine runs.
#[derive(Clone)]
struct Load {
    label: &'static str,
    msg: usize,
    rate: Option<u64>,
}

const MAX_64K: Load = Load {
    label: "64K max",
    msg: 65536,
    rate: None,
};
const PACED_8K: Load = Load {
    label: "8K 250M",
    msg: 8192,
    rate: Some(250_000_000),
};

/// One datapath of the bench: its lab and label, and whether it is measured client → g1 only.
struct Case {
    label: &'static str,
    topology: Topology,
    receive_only: bool,
    loads: Vec<Load>,
}

fn cases() -> Vec<Case> {
    let t = |name: &str, mode, gro, lro| Topology {
        name: name.into(),
        mode,
        gro,
        lro,
        ..Default::default()
    };
    let both = || vec![MAX_64K, PACED_8K];
    vec![
        Case {
            label: "bridge",
            topology: t("bench1", Mode::Bridge, Gro::Both, false),
            receive_only: false,
            loads: both(),
        },
        Case {
            label: "paravirt",
            topology: t("bench2", Mode::Paravirt, Gro::Both, false),
            receive_only: false,
            loads: both(),
        },
        Case {
            label: "emulated",
            topology: t("bench3", Mode::Emulated, Gro::Both, false),
            receive_only: false,
            loads: both(),
        },
        Case {
            label: "paravirt, host GRO off",
            topology: t("bench4", Mode::Paravirt, Gro::Guest, false),
            receive_only: true,
            loads: vec![MAX_64K],
        },
        Case {
            label: "paravirt, host GRO off, LRO guest",
            topology: t("bench5", Mode::Paravirt, Gro::Guest, true),
            receive_only: true,
            loads: vec![MAX_64K],
        },
    ]
}

/// QEMU's devices beside vnetlab's models of them, both ways.
fn qemu_cases() -> Vec<Case> {
    let t = |name: &str, mode| Topology {
        name: name.into(),
        mode,
        ..Default::default()
    };
    [
        ("emulated", "benq1", Mode::Emulated),
        ("paravirt", "benq2", Mode::Paravirt),
        ("qemu-e1000", "benq3", Mode::QemuE1000),
        ("qemu-virtio", "benq4", Mode::QemuVirtio),
    ]
    .into_iter()
    .map(|(label, name, mode)| Case {
        label,
        topology: t(name, mode),
        receive_only: false,
        loads: vec![MAX_64K],
    })
    .collect()
}

/// `bench vnic`'s result: each datapath's rows, and the host's price of one more hop (None with
/// why on a host whose lab has no core apart for the client).
#[derive(serde::Serialize)]
pub struct VnicBench {
    pub rows: Vec<VnicRow>,
    pub hop: Option<super::hop::HopCost>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hop_missing: Option<String>,
}

/// The hop probe's pings: 1,600 per way and round, 250 µs apart (a paced backend's wake-ups come
/// about that far apart at 8 KB and 250 Mb/s), five rounds: about 4 s.
const HOP_GAP_US: f64 = 250.0;
const HOP_PINGS: u32 = 1600;
const HOP_ROUNDS: u32 = 5;

/// `bench vnic`'s datapaths, after the hop probe on the cores a lab would give the host and
/// the client.
pub fn measure(seconds: f64, repeat: u32, progress: &dyn Fn(&str)) -> Result<VnicBench, Error> {
    let cpus = crate::lab::cpus::plan(&crate::sys::online_cpus(), None, None, false, None)?;
    let (hop, hop_missing) = match (cpus.host.0.first(), cpus.client.0.first()) {
        (Some(&h), Some(&c)) if cpus.placed => {
            progress("the host's price of one more hop");
            let setup = super::hop::Setup {
                host_cpu: h,
                client_cpu: c,
                gap_us: HOP_GAP_US,
                pings: HOP_PINGS,
                rounds: HOP_ROUNDS,
            };
            (Some(super::hop::measure(setup)?), None)
        }
        _ => (None, cpus.unplaced_because),
    };
    let rows = run_cases(cases(), seconds, repeat, progress)?;
    Ok(VnicBench {
        rows,
        hop,
        hop_missing,
    })
}

/// `bench qemu`'s datapaths (no hop probe: its comparisons run at full speed).
pub fn measure_qemu(
    seconds: f64,
    repeat: u32,
    progress: &dyn Fn(&str),
) -> Result<VnicBench, Error> {
    Ok(VnicBench {
        rows: run_cases(qemu_cases(), seconds, repeat, progress)?,
        hop: None,
        hop_missing: None,
    })
}

/// Builds every datapath, measures them in turn (`seconds` per run, `repeat` runs each, the
/// median kept) and removes them; `progress` hears what is being measured. The labs stand side by
/// side and each round runs them one after another, the order reversed every other round (A B C,
/// C B A): the host's cost drifts over minutes, and a paced cost moves with it, so labs measured
/// in turn within one round share its spell where labs measured one after the other would not.
fn run_cases(
    cases: Vec<Case>,
    seconds: f64,
    repeat: u32,
    progress: &dyn Fn(&str),
) -> Result<Vec<VnicRow>, Error> {
    let mut labs = Vec::with_capacity(cases.len());
    for case in &cases {
        // A free name: two benches at once never take the same lab.
        labs.push(Lab::build_free("b", |name| Topology {
            name: name.into(),
            ..case.topology.clone()
        })?);
    }
    let result = measure_all(&cases, &labs, seconds, repeat, progress);
    let mut down = Ok(());
    for lab in labs {
        if let Err(e) = lab.remove() {
            down = down.and(Err(e));
        }
    }
    let rows = result?;
    down?;
    Ok(rows)
}

/// Both directions, out of the guest first.
const BOTH_WAYS: [(Role, Role); 2] = [
    (Role::Guest(1), Role::Client),
    (Role::Client, Role::Guest(1)),
];

/// The directions a case is measured in.
fn directions(case: &Case) -> &'static [(Role, Role)] {
    if case.receive_only {
        &BOTH_WAYS[1..]
    } else {
        &BOTH_WAYS
    }
}

/// Every case's loads and directions, rounds interleaving the cases that share a load and a
/// direction; the rows in the cases' order.
fn measure_all(
    cases: &[Case],
    labs: &[Lab],
    seconds: f64,
    repeat: u32,
    progress: &dyn Fn(&str),
) -> Result<Vec<VnicRow>, Error> {
    // Runs per (case, load label, direction), filled round by round.
    let mut runs: BTreeMap<(usize, &str, usize), Vec<measure::Measured>> = BTreeMap::new();
    for load in [MAX_64K, PACED_8K] {
        for (d, &dir) in BOTH_WAYS.iter().enumerate() {
            // The cases that run this load this way.
            let turn: Vec<usize> = (0..cases.len())
                .filter(|&c| {
                    cases[c].loads.iter().any(|x| x.label == load.label)
                        && directions(&cases[c]).contains(&dir)
                })
                .collect();
            for (round, i) in rounds(turn.len(), repeat) {
                let c = turn[i];
                let (from, to) = dir;
                progress(&format!(
                    "{} {} {from} → {to} ({}/{repeat})",
                    cases[c].label,
                    load.label,
                    round + 1
                ));
                let m = once(&labs[c], &load, dir, seconds)?;
                runs.entry((c, load.label, d)).or_default().push(m);
            }
        }
    }
    let mut rows = Vec::new();
    for (c, case) in cases.iter().enumerate() {
        for load in &case.loads {
            for (d, &(from, to)) in BOTH_WAYS.iter().enumerate() {
                let taken = runs.remove(&(c, load.label, d)).unwrap_or_default();
                if let Some(m) = measure::combined(taken, None, None, 1) {
                    rows.push(row(case.label, load.label, from, to, &m));
                }
            }
        }
    }
    Ok(rows)
}

/// The order of `repeat` rounds over `n` labs: (round, lab), each round the last one's order
/// reversed (0 1 2, 2 1 0, 0 1 2, …).
fn rounds(n: usize, repeat: u32) -> Vec<(u32, usize)> {
    (0..repeat)
        .flat_map(|r| (0..n).map(move |i| (r, if r % 2 == 0 { i } else { n - 1 - i })))
        .collect()
}

/// One run of `load` from `dir.0` to `dir.1` in `lab`.
fn once(
    lab: &Lab,
    load: &Load,
    dir: (Role, Role),
    seconds: f64,
) -> Result<measure::Measured, Error> {
    let spec = crate::engine::spec::Spec {
        msg: load.msg,
        rate: load.rate,
        duration: seconds,
        warmup: 0.5,
        ..Default::default()
    };
    let target = Target::Lab {
        rec: Box::new(lab.record().clone()),
        from: Senders::One(dir.0),
        to: dir.1,
        loads: vec![],
        other: None,
    };
    if crate::sys::signals::stop_requested() {
        return Err(Error::Measure(crate::engine::Error::Interrupted.into()));
    }
    Ok(measure::measure(&target, &spec, &Engine)?)
}

fn row(label: &str, test: &str, from: Role, to: Role, m: &measure::Measured) -> VnicRow {
    let g = m.result.throughput_gbps;
    let c = m.cpu.as_ref();
    let g1 = Role::Guest(1);
    let part = |kind: PartKind| {
        c.and_then(|c| {
            c.parts
                .iter()
                .find(|p| p.kind == kind && p.role == Some(g1) && p.side == Side::Host)
                .map(|p| p.busy_pct)
        })
    };
    let v = m.vnic.as_ref().and_then(|v| v.get("g1"));
    let per = v.and_then(|v| v.per_frame());
    let moved =
        v.map(|v| (v.from_guest.bytes + v.to_guest.bytes) as f64 / v.frames_read().max(1) as f64);
    // Headers count as payload here, so this leans low, and so does what is drawn from it.
    let per_gbit = v.and_then(|v| {
        let bytes = if to == g1 {
            v.to_guest.bytes
        } else {
            v.from_guest.bytes
        };
        (bytes > 0).then(|| v.wakeups as f64 / (bytes as f64 * 8.0 / 1e9))
    });
    VnicRow {
        lab: label.to_string(),
        test: test.to_string(),
        direction: format!("{from} → {to}"),
        gbps: g,
        host_pct_per_gbps: c.and_then(|c| c.normalized_pct_per_gbps).unwrap_or(0.0),
        guest_pct_per_gbps: (to == g1).then(|| {
            part(PartKind::Guest)
                .or(part(PartKind::Vcpu))
                .unwrap_or(0.0)
                / g
        }),
        backend_pct: part(PartKind::Backend),
        lro_ratio: m
            .vnic
            .as_ref()
            .and_then(|v| v.get("g1")?.lro.as_ref().map(|l| l.lro_ratio)),
        emulation_pct: part(PartKind::Emulation),
        vcpu_pct: part(PartKind::Vcpu),
        bound: c.and_then(|c| c.bound_by),
        wakeups_per_frame: per.map(|p| p.0),
        syscalls_per_frame: per.map(|p| p.1),
        wakeups_per_gbit: per_gbit,
        bytes_per_frame: moved.filter(|_| per.is_some()),
        io: v.and_then(|v| v.io),
    }
}

/// The bridge's cost per Gb/s plus a hop per backend wake-up, over the bridge's cost.
fn bridge_plus_hops(bridge_pct_per_gbps: f64, wakeups_per_gbit: f64, hop_us: f64) -> f64 {
    let extra = super::hop::extra_pct_per_gbps(wakeups_per_gbit, hop_us);
    (bridge_pct_per_gbps + extra) / bridge_pct_per_gbps.max(f64::MIN_POSITIVE)
}

/// `bench qemu`'s comparisons: each QEMU device against vnetlab's model of it, per direction.
pub fn qemu_ratios(rows: &[VnicRow]) -> Vec<String> {
    let find = |lab: &str, dir: &str| rows.iter().find(|r| r.lab == lab && r.direction == dir);
    let mut out = Vec::new();
    for dir in ["g1 → client", "client → g1"] {
        for (q, model) in [("qemu-e1000", "emulated"), ("qemu-virtio", "paravirt")] {
            if let (Some(q), Some(m)) = (find(q, dir), find(model, dir)) {
                out.push(format!(
                    "{dir}: {}/{model} throughput {:.2}×, host CPU per Gb/s {:.2}×; {} vCPU {:.0} % + emulation {:.0} % of a core",
                    q.lab,
                    q.gbps / m.gbps,
                    q.host_pct_per_gbps / m.host_pct_per_gbps,
                    q.lab,
                    q.vcpu_pct.unwrap_or(0.0),
                    q.emulation_pct.unwrap_or(0.0)
                ));
            }
        }
    }
    out
}

/// The comparisons the bench exists for, one line each: paravirt and emulated against the
/// bridge per load and direction, and LRO on against off. With the host's hop price, each paced
/// line also gives the least a backend that wakes as often as paravirt's did can cost: the
/// bridge's cost plus a hop per wake-up (within the two figures' spreads; at full speed the core
/// does not sleep between frames, so the probe's price does not apply there).
pub fn ratios(rows: &[VnicRow], hop: Option<&super::hop::HopCost>) -> Vec<String> {
    let find = |lab: &str, test: &str, dir: &str| {
        rows.iter()
            .find(|r| r.lab == lab && r.test == test && r.direction == dir)
    };
    let mut out = Vec::new();
    for test in [MAX_64K.label, PACED_8K.label] {
        for dir in ["g1 → client", "client → g1"] {
            if let (Some(b), Some(p), Some(e)) = (
                find("bridge", test, dir),
                find("paravirt", test, dir),
                find("emulated", test, dir),
            ) {
                let hops = hop
                    .filter(|_| test == PACED_8K.label)
                    .zip(p.wakeups_per_gbit)
                    .map(|(h, w)| {
                        let f = bridge_plus_hops(b.host_pct_per_gbps, w, h.hop_us.median);
                        format!(
                            " (the bridge plus a hop per backend wake-up, {w:.0} per Gbit: {f:.2}×)"
                        )
                    })
                    .unwrap_or_default();
                out.push(format!(
                    "{test} {dir}: paravirt/bridge throughput {:.2}×, CPU per Gb/s {:.2}×{hops}; emulated/paravirt CPU per Gb/s {:.2}×",
                    p.gbps / b.gbps,
                    p.host_pct_per_gbps / b.host_pct_per_gbps,
                    e.host_pct_per_gbps / p.host_pct_per_gbps
                ));
            }
        }
    }
    let find = |lab: &str, dir: &str| find(lab, MAX_64K.label, dir);
    if let (Some(off), Some(on)) = (
        find("paravirt, host GRO off", "client → g1"),
        find("paravirt, host GRO off, LRO guest", "client → g1"),
    ) {
        out.push(format!(
            "LRO guest vs off (host GRO off, client → g1): throughput {:.2}×, host CPU per Gb/s {:.2}×, guest receive CPU per Gb/s {:.2}×, LRO ratio {:.1}",
            on.gbps / off.gbps,
            on.host_pct_per_gbps / off.host_pct_per_gbps,
            on.guest_pct_per_gbps.unwrap_or(0.0) / off.guest_pct_per_gbps.unwrap_or(1.0),
            on.lro_ratio.unwrap_or(0.0)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(lab: &str, test: &str, dir: &str, pct: f64, per_gbit: Option<f64>) -> VnicRow {
        VnicRow {
            lab: lab.into(),
            test: test.into(),
            direction: dir.into(),
            gbps: 0.25,
            host_pct_per_gbps: pct,
            guest_pct_per_gbps: None,
            backend_pct: None,
            lro_ratio: None,
            vcpu_pct: None,
            emulation_pct: None,
            bound: None,
            wakeups_per_frame: None,
            syscalls_per_frame: None,
            wakeups_per_gbit: per_gbit,
            bytes_per_frame: None,
            io: None,
        }
    }

    fn hop(us: f64) -> crate::bench::hop::HopCost {
        let s = crate::stats::spread(&[us, us], 95);
        crate::bench::hop::HopCost {
            setup: crate::bench::hop::Setup {
                host_cpu: 0,
                client_cpu: 1,
                gap_us: 250.0,
                pings: 10,
                rounds: 2,
            },
            direct_us: s.clone(),
            relayed_us: s.clone(),
            hop_us: s,
        }
    }

    #[test]
    fn rounds_run_every_lab_once_each_and_reverse_their_order() {
        let r = rounds(3, 3);
        let labs: Vec<usize> = r.iter().map(|x| x.1).collect();
        assert_eq!(labs, [0, 1, 2, 2, 1, 0, 0, 1, 2]);
        assert_eq!(r[3].0, 1);
        assert!(rounds(0, 3).is_empty() && rounds(2, 0).is_empty());
    }

    #[test]
    fn a_paced_line_gives_the_bridge_plus_a_hop_per_wake_up_and_a_full_speed_line_does_not() {
        let mut rows = vec![];
        for test in [MAX_64K.label, PACED_8K.label] {
            let dir = "g1 → client";
            rows.push(row("bridge", test, dir, 40.0, None));
            rows.push(row("paravirt", test, dir, 60.0, Some(20_000.0)));
            rows.push(row("emulated", test, dir, 90.0, Some(40_000.0)));
        }
        // 20,000 wake-ups per Gbit at 6 µs: 12 % per Gb/s over the bridge's 40: 1.30×.
        let lines = ratios(&rows, Some(&hop(6.0)));
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(!lines[0].contains("hop"), "{}", lines[0]);
        assert!(
            lines[1].contains(
                "CPU per Gb/s 1.50× (the bridge plus a hop per backend wake-up, 20000 per Gbit: 1.30×)"
            ),
            "{}",
            lines[1]
        );
        assert!(!ratios(&rows, None)[1].contains("hop"));
    }
}
