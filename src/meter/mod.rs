//! The meter: where the host's CPU went while traffic flowed. A sampler thread reads /proc/stat
//! and each part's cgroup (per CPU where the hierarchy offers it) at 10 Hz for the time series,
//! and takes full snapshots (adding a scan of every process, interrupt counts and hardware
//! counters) exactly at the measured window's edges. The host and the client are sets of cores:
//! host CPU is the busy time of the host's cores. It knows parts (names, sides, cgroup folders,
//! PIDs) and cores, never labs or workloads.

pub mod account;
pub mod cgroupstat;
pub mod counters;
pub mod irqstat;
pub mod procs;
pub mod procstat;
pub mod threads;

/// Why the meter could not measure. Its `Display` is the one line users see.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A kernel file (/proc/stat, a cgroup's counters) could not be read or parsed.
    #[error("{0}")]
    Unreadable(String),
    /// This host does not offer what was asked (hardware counters).
    #[error("{0}")]
    Unsupported(String),
}

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
}

/// The host's and the client's cores (disjoint) when the lab is placed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Sides {
    pub host: Vec<usize>,
    pub client: Vec<usize>,
}

/// What the meter measures: the parts, the two sides' cores (None: unplaced, so the host is the
/// machine less the client's parts) and the root of the per-CPU accounting hierarchy (cgroup v1
/// cpuacct), whose per-CPU usage less the parts' is the time of everything outside the lab.
#[derive(Clone, Debug)]
pub struct Setup {
    pub parts: Vec<Part>,
    pub sides: Option<Sides>,
    pub root: Option<PathBuf>,
    /// Each 10 Hz sample also reads every core's idle nanoseconds (/proc/timer_list, ~0.25 ms a
    /// read on the 2-core development host, on the driver's core), so a phase inside the window
    /// (a movie's buffering, 0.64 s in the quick suite) is measured to the microsecond instead of
    /// in 10 ms ticks, where two datapaths' figures came out as the same six ticks.
    pub fine_series: bool,
}

/// A part's CPU seconds so far, per CPU where its hierarchy says.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PartTime {
    pub total: f64,
    pub per_cpu: Option<Vec<f64>>,
}

pub const HZ: f64 = 10.0;

/// One reading of everything cheap.
#[derive(Clone, Debug)]
pub struct Light {
    pub at: Instant,
    pub stat: procstat::Snapshot,
    /// CPU seconds per part (same order as the parts).
    pub parts: Vec<PartTime>,
    /// Every task's CPU seconds per CPU (the accounting root), where available.
    pub root: Option<Vec<f64>>,
}

/// A reading at a window edge.
#[derive(Clone, Debug)]
pub struct Full {
    pub light: Light,
    pub scan: procs::Scan,
    pub irq: irqstat::Counts,
    pub counters: Option<counters::CounterReport>,
}

pub struct MeterData {
    pub parts: Vec<Part>,
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
/// the parts' cgroups, the parts' own pids and the QEMUs whose threads they split.
fn measured_pids(parts: &[Part]) -> HashSet<u32> {
    let folders: Vec<PathBuf> = parts
        .iter()
        .flat_map(|p| {
            let vm = p.threads.iter().flat_map(|t| t.cgroups.clone());
            p.cgroups.iter().cloned().chain(vm)
        })
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

/// Reads /proc/stat and the accounting root first, together (their windows must line up: the
/// root less the parts is what ran outside the lab), then each part.
fn read_light(setup: &Setup, hz: f64) -> Light {
    if setup.fine_series {
        return read_edge(setup, hz);
    }
    light(setup, hz, procstat::read)
}

/// A reading at a window's edge: idle to the nanosecond where the kernel shows it.
fn read_edge(setup: &Setup, hz: f64) -> Light {
    light(setup, hz, procstat::read_edge)
}

fn light(setup: &Setup, hz: f64, stat: fn() -> Result<procstat::Snapshot, Error>) -> Light {
    let at = Instant::now();
    let stat = stat().unwrap_or_default();
    let root = setup.root.as_deref().and_then(cgroupstat::read_percpu);
    let parts = setup.parts.iter().map(|p| read_part(p, hz)).collect();
    Light {
        at,
        stat,
        parts,
        root,
    }
}

impl Meter {
    /// Starts sampling.
    pub fn start(setup: Setup) -> Meter {
        let (tx, rx) = mpsc::channel();
        let handle = std::thread::Builder::new()
            .name("meter".into())
            .spawn(move || {
                let hz = ticks_per_s();
                let parts = setup.parts.clone();
                let ncpu = procstat::read().map(|s| s.cores.len()).unwrap_or(1).max(1);
                let cpu0 = thread_cpu_s();
                let t0 = Instant::now();
                let v2: Vec<(String, Option<std::path::PathBuf>)> = parts
                    .iter()
                    .map(|p| {
                        (
                            p.name.clone(),
                            p.cgroups
                                .iter()
                                .find(|d| d.join("cpu.stat").exists())
                                .cloned(),
                        )
                    })
                    .collect();
                let v2_refs: Vec<(String, Option<&std::path::Path>)> =
                    v2.iter().map(|(n, d)| (n.clone(), d.as_deref())).collect();
                let (counters, unsupported) = match counters::Counters::start(&v2_refs, ncpu) {
                    Ok(c) => (Some(c), None),
                    Err(e) => (None, Some(e.to_string())),
                };
                let mut data = MeterData {
                    parts: parts.clone(),
                    sides: setup.sides.clone(),
                    series: Vec::new(),
                    edges: Vec::new(),
                    counters_unsupported: unsupported,
                    counter_notes: Vec::new(),
                    own_cpu_s: 0.0,
                    own_wall_s: 0.0,
                    ticks_per_s: hz,
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
                    let wait = next.saturating_duration_since(Instant::now());
                    match rx.recv_timeout(wait) {
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
                        let light = read_edge(&setup, hz);
                        data.edges.push(Full {
                            light,
                            scan: procs::scan(&measured_pids(&parts), hz),
                            irq: irqstat::read(),
                            counters: counters.as_ref().map(|c| c.read()),
                        });
                    }
                    if now >= next_tick {
                        data.series.push(read_light(&setup, hz));
                        next_tick += period;
                        if next_tick < now {
                            next_tick = now + period;
                        }
                    }
                }
                // A window still open at stop (a fixed-size transfer ended early) closes now.
                if data.edges.len() == 1 {
                    let light = read_edge(&setup, hz);
                    data.edges.push(Full {
                        light,
                        scan: procs::scan(&measured_pids(&parts), hz),
                        irq: irqstat::read(),
                        counters: counters.as_ref().map(|c| c.read()),
                    });
                }
                if let Some(c) = &counters {
                    data.counter_notes = c.read().notes;
                }
                data.own_cpu_s = thread_cpu_s() - cpu0;
                data.own_wall_s = t0.elapsed().as_secs_f64();
                data
            })
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
