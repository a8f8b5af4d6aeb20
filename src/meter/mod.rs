//! The meter: where the host's CPU went while traffic flowed. A sampler thread reads each CPU's
//! idle nanoseconds, steal and scheduler run time (`busy` says what they mean together) and each
//! part's cgroup (per CPU where the hierarchy offers it) at 10 Hz for the time series, and takes
//! full snapshots (adding a scan of every process, interrupt counts and hardware counters) exactly
//! at the measured window's edges, keeping the kernel's texts of those two (`raw`). The host and
//! the client are sets of cores: host CPU is the busy time of the host's cores. It knows parts
//! (names, sides, cgroup folders, PIDs) and cores, never labs or workloads.

pub mod account;
pub mod busy;
pub mod cgroupstat;
pub mod counters;
pub mod error;
pub mod irqstat;
pub mod kernel;
pub mod procs;
pub mod procstat;
pub mod raw;
pub mod sched;
pub mod threads;

pub use error::Error;

pub use crate::vocab::Side;
use serde::Serialize;
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use crate::vocab::{PartId, PartKind};

/// Something whose CPU is measured: a cgroup (guest, host, client, backend) or a process, and
/// the side it belongs to.
#[derive(Clone, Debug)]
pub struct Part {
    /// Shown in reports; the part is found by `id`.
    pub name: String,
    pub id: PartId,
    pub cgroups: Vec<PathBuf>,
    pub pid: Option<u32>,
    /// Some of a QEMU's threads (then `cgroups` and `pid` are empty: the VM's cgroup is in here).
    pub threads: Option<threads::Threads>,
    /// An endpoint's network namespace (its inode, held by the lab): a task in it that left the
    /// endpoint's cgroups is still the endpoint's work, billed as "NAME, outside its cgroup".
    pub netns: Option<u64>,
}

/// The host's and the client's cores (disjoint) when the lab is placed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Sides {
    pub host: Vec<usize>,
    pub client: Vec<usize>,
}

/// What the meter measures: the parts and the two sides' cores (None: unplaced, so the host is
/// the machine less the client's parts). The scheduler's per-CPU run time (`sched::Source`, found
/// by the meter) less the parts' is the time of everything outside the lab.
#[derive(Clone, Debug)]
pub struct Setup {
    pub parts: Vec<Part>,
    pub sides: Option<Sides>,
}

/// A part's CPU seconds so far, per CPU where its hierarchy says.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PartTime {
    pub total: f64,
    pub per_cpu: Option<Vec<f64>>,
}

pub const HZ: f64 = 10.0;

/// One reading of everything cheap: every 10 Hz sample reads each CPU's idle nanoseconds
/// (/proc/timer_list, ~0.07 ms a read here), so the series is as fine as the window's figure.
#[derive(Clone, Debug)]
pub struct Light {
    pub at: Instant,
    pub stat: procstat::Snapshot,
    /// CPU seconds per part (same order as the parts).
    pub parts: Vec<PartTime>,
    /// Every task's run time (per CPU where the source keeps it).
    pub sched: sched::Reading,
}

/// A reading at a window edge.
#[derive(Clone, Debug)]
pub struct Full {
    pub light: Light,
    pub scan: procs::Scan,
    pub irq: irqstat::Counts,
    pub counters: Option<crate::records::cpu::CounterReport>,
}

pub struct MeterData {
    pub parts: Vec<Part>,
    /// How this kernel counts, and where the scheduler's run time was read.
    pub acct: kernel::Accounting,
    pub source: Option<sched::Source>,
    /// The kernel's texts at the window's edges (what `meter --record` keeps).
    pub raw: Vec<raw::RawEdge>,
    pub sides: Option<Sides>,
    pub series: Vec<Light>,
    pub edges: Vec<Full>,
    pub counters_unsupported: Option<String>,
    pub counter_notes: Vec<String>,
    /// The sampler's own CPU seconds and the wall seconds it ran.
    pub own_cpu_s: f64,
    pub own_wall_s: f64,
    pub ticks_per_s: f64,
}

enum Msg {
    Window(Instant, Instant),
    Stop,
}

pub struct Meter {
    tx: Sender<Msg>,
    handle: JoinHandle<MeterData>,
}

fn thread_cpu_s() -> f64 {
    crate::sys::thread_cpu_s()
}

pub fn ticks_per_s() -> f64 {
    crate::sys::clock_ticks_per_s()
}

fn read_part(p: &Part, hz: f64) -> PartTime {
    if let Some(t) = &p.threads {
        return PartTime {
            total: threads::read(t, hz),
            per_cpu: None,
        };
    }
    if let (Some(pid), true) = (p.pid, p.cgroups.is_empty()) {
        return PartTime {
            total: procs::read_fine(pid, hz).unwrap_or(0.0),
            per_cpu: None,
        };
    }
    match p.cgroups.iter().find_map(|d| cgroupstat::read_percpu(d)) {
        Some(v) => PartTime {
            total: v.iter().sum(),
            per_cpu: Some(v),
        },
        None => PartTime {
            total: cgroupstat::read_any(&p.cgroups, hz).unwrap_or(0.0),
            per_cpu: None,
        },
    }
}

/// The processes the parts already count (the scan of the rest leaves them out): those in
/// the parts' accounting cgroups (not their cpusets, which count nothing), the parts' own pids
/// and the QEMUs whose threads they split.
fn measured_pids(parts: &[Part]) -> HashSet<u32> {
    let folders: Vec<PathBuf> = parts
        .iter()
        .flat_map(|p| {
            let vm = p.threads.iter().flat_map(|t| t.cgroups.clone());
            p.cgroups.iter().cloned().chain(vm)
        })
        .filter(|d| cgroupstat::counts_cpu(d))
        .collect();
    let mut pids = procs::pids_in(&folders);
    pids.extend(parts.iter().filter_map(|p| p.pid));
    pids.extend(
        parts
            .iter()
            .filter_map(|p| p.threads.as_ref().map(|t| t.pid)),
    );
    pids
}

/// Reads the machine's texts first (the scheduler's per-CPU time beside /proc/stat: their windows
/// must line up, the root less the parts is what ran outside the lab), then each part.
fn read_light(
    setup: &Setup,
    src: Option<&sched::Source>,
    hz: f64,
) -> (Light, Option<raw::RawEdge>) {
    let at = Instant::now();
    let raw = raw::RawEdge::read(src, true).ok();
    let (stat, sched) = raw
        .as_ref()
        .and_then(|r| r.parse(src).ok())
        .unwrap_or_default();
    let parts = setup.parts.iter().map(|p| read_part(p, hz)).collect();
    (
        Light {
            at,
            stat,
            parts,
            sched,
        },
        raw,
    )
}

/// A reading at a window's edge: the light one, a scan of every process, interrupts, counters.
fn read_full(
    setup: &Setup,
    src: Option<&sched::Source>,
    hz: f64,
    counters: Option<&counters::Counters>,
) -> (Full, Option<raw::RawEdge>) {
    let (light, raw) = read_light(setup, src, hz);
    let full = Full {
        light,
        scan: procs::scan(&measured_pids(&setup.parts), hz),
        irq: irqstat::read(),
        counters: counters.map(|c| c.read()),
    };
    (full, raw)
}

/// The parts' cgroup v2 folders, for the hardware counters (which follow cgroups there).
fn v2_folders(parts: &[Part]) -> Vec<(String, Option<PathBuf>)> {
    parts
        .iter()
        .map(|p| {
            let d = p.cgroups.iter().find(|d| d.join("cpu.stat").exists());
            (p.name.clone(), d.cloned())
        })
        .collect()
}

/// The sampler: 10 Hz light readings, full ones at the window's marks, until told to stop.
fn sample(setup: Setup, rx: mpsc::Receiver<Msg>) -> MeterData {
    let hz = ticks_per_s();
    let source = sched::Source::detect();
    let src = source.as_ref();
    let ncpu = crate::sys::online_cpus().len().max(1);
    let (cpu0, t0) = (thread_cpu_s(), Instant::now());
    let v2 = v2_folders(&setup.parts);
    let v2_refs: Vec<(String, Option<&std::path::Path>)> =
        v2.iter().map(|(n, d)| (n.clone(), d.as_deref())).collect();
    let (counters, unsupported) = match counters::Counters::start(&v2_refs, ncpu) {
        Ok(c) => (Some(c), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let mut data = MeterData {
        parts: setup.parts.clone(),
        acct: kernel::Accounting::this().clone(),
        source: source.clone(),
        raw: Vec::new(),
        sides: setup.sides.clone(),
        series: Vec::new(),
        edges: Vec::new(),
        counters_unsupported: unsupported,
        counter_notes: Vec::new(),
        own_cpu_s: 0.0,
        own_wall_s: 0.0,
        ticks_per_s: hz,
    };
    let edge = |data: &mut MeterData| {
        let (full, raw) = read_full(&setup, src, hz, counters.as_ref());
        data.edges.push(full);
        data.raw.extend(raw);
    };
    let period = Duration::from_secs_f64(1.0 / HZ);
    let mut next_tick = Instant::now();
    let mut marks: Vec<Instant> = Vec::new();
    loop {
        let next = marks
            .first()
            .copied()
            .filter(|m| *m < next_tick)
            .unwrap_or(next_tick);
        match rx.recv_timeout(next.saturating_duration_since(Instant::now())) {
            Ok(Msg::Window(a, b)) => {
                marks = vec![a, b];
                continue;
            }
            Ok(Msg::Stop) | Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => {}
        }
        let now = Instant::now();
        if marks.first().is_some_and(|m| *m <= now) {
            marks.remove(0);
            edge(&mut data);
        }
        if now >= next_tick {
            data.series.push(read_light(&setup, src, hz).0);
            next_tick += period;
            if next_tick < now {
                next_tick = now + period;
            }
        }
    }
    // A window still open at stop (a fixed-size transfer ended early) closes now.
    if data.edges.len() == 1 {
        edge(&mut data);
    }
    if let Some(c) = &counters {
        data.counter_notes = c.read().notes;
    }
    data.own_cpu_s = thread_cpu_s() - cpu0;
    data.own_wall_s = t0.elapsed().as_secs_f64();
    data
}

impl Meter {
    /// Starts sampling.
    pub fn start(setup: Setup) -> Meter {
        let (tx, rx) = mpsc::channel();
        let handle = std::thread::Builder::new()
            .name("meter".into())
            .spawn(move || sample(setup, rx))
            .expect("cannot start the meter thread");
        Meter { tx, handle }
    }

    /// The measured window: full snapshots are taken at exactly these instants.
    pub fn window(&self, start: Instant, end: Instant) {
        let _ = self.tx.send(Msg::Window(start, end));
    }

    pub fn stop(self) -> MeterData {
        let _ = self.tx.send(Msg::Stop);
        self.handle.join().expect("meter thread panicked")
    }
}

/// The machine's CPUs over a window, for callers that measure no parts (a serve's own machine, a
/// bench's peer tool): the same sources, bounds and cross-check as the meter's.
pub struct Probe {
    at: Instant,
    raw: raw::RawEdge,
    source: Option<sched::Source>,
}

impl Probe {
    pub fn start() -> Result<Probe, Error> {
        let source = sched::Source::detect();
        Ok(Probe {
            raw: raw::RawEdge::read(source.as_ref(), true)?,
            at: Instant::now(),
            source,
        })
    }

    /// The window's seconds and each CPU's time over it.
    pub fn finish(self) -> Result<(f64, std::collections::BTreeMap<usize, busy::CoreTime>), Error> {
        let b = raw::RawEdge::read(self.source.as_ref(), true)?;
        let window_s = self.at.elapsed().as_secs_f64();
        let rec = raw::Recording {
            note: String::new(),
            window_s,
            ticks_per_s: ticks_per_s(),
            kernel: kernel::Accounting::this().clone(),
            source: self.source,
            a: self.raw,
            b,
        };
        Ok((window_s, rec.cores()?))
    }
}
