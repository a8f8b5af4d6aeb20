//! `vnetlab bench vnic`: vnetlab's device models (paravirt, emulated) beside the kernel bridge,
//! TCP_STREAM 64K at full speed and 8K paced at 250 Mb/s, both ways, with each backend's
//! wake-ups and system calls per frame, and software LRO in the backend on vs off; `vnetlab bench qemu`:
//! QEMU's e1000 and virtio-net beside vnetlab's emulated and paravirt models. Each datapath is
//! built, measured with repeats and removed in turn.

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

/// `bench vnic`'s datapaths.
pub fn measure(seconds: f64, repeat: u32, progress: &dyn Fn(&str)) -> Result<Vec<VnicRow>, Error> {
    run_cases(cases(), seconds, repeat, progress)
}

/// `bench qemu`'s datapaths.
pub fn measure_qemu(
    seconds: f64,
    repeat: u32,
    progress: &dyn Fn(&str),
) -> Result<Vec<VnicRow>, Error> {
    run_cases(qemu_cases(), seconds, repeat, progress)
}

/// Builds each datapath, measures it (`seconds` per run, `repeat` runs, the median kept) and
/// removes it; `progress` hears what is being measured.
fn run_cases(
    cases: Vec<Case>,
    seconds: f64,
    repeat: u32,
    progress: &dyn Fn(&str),
) -> Result<Vec<VnicRow>, Error> {
    let mut rows = Vec::new();
    for case in cases {
        // A free name: two benches at once never take the same lab.
        let lab = Lab::build_free("b", |name| Topology {
            name: name.into(),
            ..case.topology.clone()
        })?;
        let result = measure_case(&case, &lab, seconds, repeat, progress, &mut rows);
        let down = lab.remove();
        result?;
        down?;
    }
    Ok(rows)
}

/// Every load of `case` in each of its directions, in its built lab.
fn measure_case(
    case: &Case,
    lab: &Lab,
    seconds: f64,
    repeat: u32,
    progress: &dyn Fn(&str),
    rows: &mut Vec<VnicRow>,
) -> Result<(), Error> {
    let rec = lab.record();
    let (g1, client) = (Role::Guest(1), Role::Client);
    let dirs: &[(Role, Role)] = if case.receive_only {
        &[(client, g1)]
    } else {
        &[(g1, client), (client, g1)]
    };
    for load in &case.loads {
        let spec = crate::engine::spec::Spec {
            msg: load.msg,
            rate: load.rate,
            duration: seconds,
            warmup: 0.5,
            ..Default::default()
        };
        for &(from, to) in dirs {
            progress(&format!("{} {} {from} → {to}", case.label, load.label));
            let target = Target::Lab {
                rec: Box::new(rec.clone()),
                from: Senders::One(from),
                to,
                loads: vec![],
                other: None,
            };
            let m = measure::repeated(
                &target,
                &spec,
                &Engine,
                &measure::Stopping::fixed(repeat),
                &|_, _| {},
            )
            .map_err(Error::Measure)?;
            rows.push(row(case.label, load.label, from, to, &m));
        }
    }
    Ok(())
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
        bytes_per_frame: moved.filter(|_| per.is_some()),
        io: v.and_then(|v| v.io),
    }
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
/// bridge per load and direction, and LRO on against off.
pub fn ratios(rows: &[VnicRow]) -> Vec<String> {
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
                out.push(format!(
                    "{test} {dir}: paravirt/bridge throughput {:.2}×, CPU per Gb/s {:.2}×; emulated/paravirt CPU per Gb/s {:.2}×",
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
