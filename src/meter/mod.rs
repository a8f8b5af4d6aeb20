//! The meter: where the host's CPU went while traffic flowed. A sampler thread reads each CPU's
//! idle time, steal and scheduler run time (`busy` says what they mean together) and each part's
//! cgroup (per CPU where the hierarchy offers it) at 10 Hz for the time series, and takes full
//! snapshots (adding what ran beside the lab, `outside`, interrupt counts and hardware counters)
//! exactly at the measured window's edges, keeping the kernel's texts of those two (`raw`). No
//! read at any sample grows with the host's tasks or timers: idle time comes from cpuidle
//! residency where the kernel keeps it, /proc/timer_list (whose printing grows with the square
//! of pending timers) is read only at the edges and only where it does not, and the files each
//! sample reads are counted (`fs`). The host and the client are sets of cores: host CPU is the
//! busy time of the host's cores. It knows parts (names, sides, cgroup folders, PIDs) and cores,
//! never labs or workloads.

pub mod account;
mod bpfasm;
pub mod btf;
pub mod busy;
pub mod cgroupstat;
pub mod counters;
pub mod error;
pub mod fs;
pub mod irqstat;
pub mod kernel;
pub mod kthreads;
pub mod outside;
pub mod procs;
pub mod procstat;
pub mod raw;
pub mod sched;
pub mod softirq;
pub mod threads;

pub use error::Error;

pub use crate::vocab::Side;
use serde::Serialize;
use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use crate::vocab::{PartId, PartKind};

#[cfg(test)]
mod recorded_tests;
#[cfg(test)]
mod replay_tests;

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

/// One reading of everything cheap: every 10 Hz sample reads each CPU's idle time (cpuidle
/// residency, microseconds, where the kernel keeps it), so the series is as fine as the
/// window's figure.
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
    pub outside: outside::Reading,
    pub irq: irqstat::Counts,
    pub counters: Option<crate::records::cpu::CounterReport>,
    /// Softirq time per CPU and device, where the kernel could be traced.
    pub softirq: Option<softirq::Reading>,
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
    /// Why softirq time could not be traced per device, where it could not.
    pub softirq_untraced: Option<String>,
    /// The sampler's own CPU seconds and the wall seconds it ran.
    pub own_cpu_s: f64,
    pub own_wall_s: f64,
    pub ticks_per_s: f64,
    /// Files read by the most costly 10 Hz sample and the most costly window edge.
    pub reads_per_sample: u64,
    pub reads_per_edge: u64,
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

/// What the sampler reads with: the file tree, what it knows of the host beside the lab, the
/// scheduler's source and the tick rate.
struct Reader {
    fs: fs::Fs,
    outside: outside::Tracker,
    source: Option<sched::Source>,
    hz: f64,
    /// The cores whose idle time the series reads (empty: every CPU).
    cores: Vec<usize>,
    /// Each CPU's cpuidle states; where there are none, /proc/timer_list is read at the edges.
    idle: procstat::Cpuidle,
    /// The softirq tracer (the real sampler's; none where the kernel is replayed).
    softirq: Option<softirq::Tracer>,
}

impl Reader {
    fn new(fs: fs::Fs, setup: &Setup) -> Reader {
        let cores: Vec<usize> = setup
            .sides
            .as_ref()
            .map(|s| s.host.iter().chain(&s.client).copied().collect())
            .unwrap_or_default();
        Reader {
            outside: outside::Tracker::start(&fs, &setup.parts, &cores),
            idle: procstat::Cpuidle::find(&fs),
            source: sched::Source::detect_in(&fs),
            hz: ticks_per_s(),
            cores,
            fs,
            softirq: None,
        }
    }

    /// Run seconds of the kernel threads `vhost-PID`, from the threads known.
    fn kernel_vhost(&self, pid: u32) -> f64 {
        let r = self.outside.kthreads();
        let name = format!("vhost-{pid}");
        r.read(&self.fs, |_, k| k.comm == name).values().sum()
    }

    fn part(&self, p: &Part) -> PartTime {
        let (fs, hz) = (&self.fs, self.hz);
        if let Some(t) = &p.threads {
            let total = threads::read(fs, t, hz, |pid| self.kernel_vhost(pid));
            return PartTime {
                total,
                per_cpu: None,
            };
        }
        if let (Some(pid), true) = (p.pid, p.cgroups.is_empty()) {
            return PartTime {
                total: procs::read_fine(fs, pid, hz).unwrap_or(0.0),
                per_cpu: None,
            };
        }
        match p
            .cgroups
            .iter()
            .find_map(|d| cgroupstat::read_percpu(fs, d))
        {
            Some(v) => PartTime {
                total: v.iter().sum(),
                per_cpu: Some(v),
            },
            None => PartTime {
                total: cgroupstat::read_any(fs, &p.cgroups, hz).unwrap_or(0.0),
                per_cpu: None,
            },
        }
    }

    /// Reads the machine's texts first (the scheduler's per-CPU time beside /proc/stat: their
    /// windows must line up, the root less the parts is what ran outside the lab), then each
    /// part. At an edge (`edge`) every CPU's idle time, and the timer list where it is needed.
    fn light(&self, setup: &Setup, edge: bool) -> (Light, Option<raw::RawEdge>) {
        let at = Instant::now();
        let src = self.source.as_ref();
        let cores: &[usize] = if edge { &[] } else { &self.cores };
        let raw = raw::RawEdge::read(&self.fs, src, (&self.idle, edge), cores).ok();
        let (stat, sched) = raw
            .as_ref()
            .and_then(|r| r.parse(src).ok())
            .unwrap_or_default();
        let parts = setup.parts.iter().map(|p| self.part(p)).collect();
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

    /// A 10 Hz sample: the light reading, and the lab's tasks that left their cgroups noted.
    fn sample(&mut self, setup: &Setup) -> Light {
        let l = self.light(setup, false).0;
        self.outside.watch(&self.fs, &setup.parts, self.hz);
        l
    }

    /// A reading at a window's edge: the light one, what ran beside the lab, interrupts,
    /// counters.
    fn full(
        &mut self,
        setup: &Setup,
        counters: Option<&counters::Counters>,
    ) -> (Full, Option<raw::RawEdge>) {
        let (light, raw) = self.light(setup, true);
        let full = Full {
            light,
            outside: self.outside.read(&self.fs, &setup.parts, self.hz),
            irq: irqstat::read(&self.fs),
            counters: counters.map(|c| c.read()),
            softirq: self.softirq.as_ref().and_then(|t| t.read().ok()),
        };
        (full, raw)
    }
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
    let mut rd = Reader::new(fs::Fs::real(), &setup);
    let (tracer, untraced) = match softirq::Tracer::asked().then(softirq::Tracer::start) {
        Some(Ok(t)) => (Some(t), None),
        Some(Err(e)) => (None, Some(e.to_string())),
        None => (None, None),
    };
    rd.softirq = tracer;
    let hz = rd.hz;
    let source = rd.source.clone();
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
        softirq_untraced: untraced,
        own_cpu_s: 0.0,
        own_wall_s: 0.0,
        ticks_per_s: hz,
        reads_per_sample: 0,
        reads_per_edge: 0,
    };
    let edge = |rd: &mut Reader, data: &mut MeterData| {
        let r0 = rd.fs.reads();
        let (full, raw) = rd.full(&setup, counters.as_ref());
        data.reads_per_edge = data.reads_per_edge.max(rd.fs.reads() - r0);
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
            edge(&mut rd, &mut data);
        }
        if now >= next_tick {
            let r0 = rd.fs.reads();
            data.series.push(rd.sample(&setup));
            data.reads_per_sample = data.reads_per_sample.max(rd.fs.reads() - r0);
            next_tick += period;
            if next_tick < now {
                next_tick = now + period;
            }
        }
    }
    // A window still open at stop (a fixed-size transfer ended early) closes now.
    if data.edges.len() == 1 {
        edge(&mut rd, &mut data);
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
    idle: procstat::Cpuidle,
}

impl Probe {
    pub fn start() -> Result<Probe, Error> {
        let source = sched::Source::detect();
        let idle = procstat::Cpuidle::find(&fs::Fs::real());
        Ok(Probe {
            raw: Self::read(source.as_ref(), &idle)?,
            at: Instant::now(),
            source,
            idle,
        })
    }

    /// Every CPU's texts now (the timer list only where cpuidle is missing).
    fn read(
        source: Option<&sched::Source>,
        idle: &procstat::Cpuidle,
    ) -> Result<raw::RawEdge, Error> {
        raw::RawEdge::read(&fs::Fs::real(), source, (idle, true), &[])
    }

    /// The window's seconds and each CPU's time over it.
    pub fn finish(self) -> Result<(f64, std::collections::BTreeMap<usize, busy::CoreTime>), Error> {
        let b = Self::read(self.source.as_ref(), &self.idle)?;
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
