//! Turns the meter's window-edge snapshots into the figures the papers use: host busy (the busy
//! time of the host's cores; the client's cores stand for another machine), per-core and per-kind
//! splits, CPU per part on each side with what nothing was charged for, the leak across the
//! boundary, normalized CPU (% per Gb/s) and netperf's service demand. The report's types are
//! the stored document's (`records::cpu`).

use super::error::Error;
use std::collections::{BTreeMap, HashSet};

use super::busy::{self, CoreTime};
use super::kthreads::KThread;
use super::{
    counters, outside, procstat, softirq, Full, MeterData, Part, PartId, PartKind, PartTime, Side,
};
use crate::records::cpu::{
    Check, CpuReport, Demand, HwCounters, MeterInfo, PartCpu, SideTime, SoftirqSplit,
};

impl HwCounters {
    pub fn missing(&self) -> Option<&str> {
        match self {
            HwCounters::Missing(s) => Some(s),
            HwCounters::Read(_) => None,
        }
    }
}

/// What the traffic did in the window, and which parts sent and received.
pub struct Traffic<'a> {
    pub gbps: Option<f64>,
    pub transactions_per_s: Option<f64>,
    pub send_parts: &'a [PartId],
    pub recv_parts: &'a [PartId],
}

/// A part's seconds between the edges, split into (on host cores, on client cores).
fn split(p: &Part, a: &PartTime, b: &PartTime, host: &[usize], client: &[usize]) -> (f64, f64) {
    match (&a.per_cpu, &b.per_cpu) {
        (Some(x), Some(y)) => {
            let on = |cores: &[usize]| {
                cores
                    .iter()
                    .map(|&c| (y.get(c).unwrap_or(&0.0) - x.get(c).unwrap_or(&0.0)).max(0.0))
                    .sum()
            };
            (on(host), on(client))
        }
        _ => {
            let d = (b.total - a.total).max(0.0);
            if p.id.side == Side::Host {
                (d, 0.0)
            } else {
                (0.0, d)
            }
        }
    }
}

fn sum_on(v: &Option<Vec<f64>>, w: &Option<Vec<f64>>, cores: &[usize]) -> Option<f64> {
    let (x, y) = (v.as_ref()?, w.as_ref()?);
    Some(
        cores
            .iter()
            .map(|&c| (y.get(c).unwrap_or(&0.0) - x.get(c).unwrap_or(&0.0)).max(0.0))
            .sum(),
    )
}

/// A part's seconds as the report lists it.
type RawPart = (String, PartId, f64);

/// The parts of each side, their seconds adding up to the side's busy seconds.
struct Sided {
    parts: Vec<RawPart>,
    leak_s: Option<f64>,
    attribution: &'static str,
    /// Per side (host, client): seconds of tasks that are not the lab's.
    foreign_s: [f64; 2],
    /// Per side: seconds of kernel threads that serve another device or VM (in `foreign_s`).
    foreign_kernel_s: [f64; 2],
    /// Per side: seconds by which the parts measured apart add up past the side's total (each
    /// residual is then shown as 0, never negative).
    excess_s: [f64; 2],
    /// Per side: other devices' softirq on its cores.
    other_softirq: [OtherSoftirq; 2],
}

/// A residual part: its seconds, or 0 and the excess where the parts before it add up past it.
fn residual(v: f64, excess: &mut f64) -> f64 {
    if v < 0.0 {
        *excess += -v;
        0.0
    } else {
        v
    }
}

/// The lab's parts on each side, and what ran there from outside the lab (`sided`'s first step).
fn lab_parts(
    d: &MeterData,
    a: &Full,
    b: &Full,
    host: &[usize],
    client: &[usize],
) -> (Vec<RawPart>, [f64; 2], f64) {
    let mut parts = Vec::new();
    let mut on = [0.0f64; 2]; // parts' seconds on host cores, on client cores
    let mut leak = 0.0;
    for (i, p) in d.parts.iter().enumerate() {
        let (h, c) = split(p, &a.light.parts[i], &b.light.parts[i], host, client);
        for (k, (side, s)) in [(Side::Host, h), (Side::Client, c)].into_iter().enumerate() {
            on[k] += s;
            if side == p.id.side {
                parts.push((p.name.clone(), p.id, s));
            } else if s > 0.0 {
                leak += s;
                let id = PartId { side, ..p.id };
                parts.push((format!("{} (leak)", p.name), id, s));
            }
        }
    }
    (parts, on, leak)
}

/// The lab's tasks that left their endpoint's accounting cgroup (`outside`), each endpoint's
/// as a part of its own on its side; with the seconds of those that sit in another top-level
/// cgroup (whose time holds theirs), per side.
fn strays(d: &MeterData, (a, b): (&Full, &Full)) -> (Vec<RawPart>, [f64; 2], [f64; 2]) {
    let mut parts = Vec::new();
    let (mut on, mut in_tops) = ([0.0f64; 2], [0.0f64; 2]);
    for (i, p) in d.parts.iter().enumerate() {
        let (s, each) = outside::stray_delta(&a.outside, &b.outside, i);
        let k = usize::from(p.id.side == Side::Client);
        in_tops[k] += each
            .iter()
            .filter(|e| e.0.is_some())
            .map(|e| e.1)
            .sum::<f64>();
        if s > 0.0 {
            on[k] += s;
            parts.push((format!("{}, outside its cgroup", p.name), p.id, s));
        }
    }
    (parts, on, in_tops)
}

/// Which kernel threads are the lab's: those that serve no one device or VM (per-CPU threads
/// such as ksoftirqd and kworkers do the lab's softirq work on its cores) and its QEMUs' vhost
/// workers. The lab's own NAPI threads are parts of their own (taken before this is asked), so
/// any other NAPI poller (another device's, another lab's) is foreign kernel work, as is another
/// VM's vhost worker.
fn foreign_kthread(d: &MeterData, k: &KThread) -> bool {
    match k.serves() {
        None => false,
        Some(_) if k.comm.starts_with("napi/") => true,
        Some(owner) => !d
            .parts
            .iter()
            .filter_map(|p| p.threads.as_ref())
            .any(|t| t.pid.to_string() == owner),
    }
}

/// One side as `beside` reads it: its cores, the lab's seconds there (`known`), the scheduler's
/// run time there (`root`, where kept per CPU), its busy seconds and the seconds of the lab's
/// strays that sit in other top-level cgroups.
struct SideIn<'a> {
    side: Side,
    cores: &'a [usize],
    known: f64,
    root: Option<f64>,
    busy: f64,
    in_tops: f64,
}

/// What ran on one side's cores from outside the lab, as parts, with (foreign seconds, foreign
/// kernel seconds).
fn beside(
    d: &MeterData,
    (a, b): (&Full, &Full),
    s: SideIn,
    ex: &mut f64,
) -> (Vec<RawPart>, f64, f64, OtherSoftirq) {
    let SideIn {
        side,
        cores,
        known,
        root,
        busy,
        in_tops,
    } = s;
    let taken: HashSet<u32> = d.parts.iter().filter_map(|p| p.pid).collect();
    let ours = |tid: u32, k: &KThread| !taken.contains(&tid) && k.confined_to(cores);
    let kthreads = outside::kthread_delta(&a.outside, &b.outside, |t, k| {
        ours(t, k) && !foreign_kthread(d, k)
    });
    let fkernel = outside::kthread_delta(&a.outside, &b.outside, |t, k| {
        ours(t, k) && foreign_kthread(d, k)
    });
    let core_kthread = |t: u32| {
        a.outside
            .kthreads
            .get(&t)
            .is_some_and(|(k, _)| ours(t, k) && !foreign_kthread(d, k))
    };
    let soft = other_softirq(d, (a, b), cores, core_kthread);
    // Other devices' softirq on the cores' own kernel threads is inside those threads' time.
    let kthreads = residual(kthreads - soft.on_kthreads, ex);
    let tops =
        outside::tops_on(&a.outside, &b.outside, cores).map_or(0.0, |t| (t - in_tops).max(0.0));
    let mut parts: Vec<RawPart> = vec![
        (
            "kernel threads on these cores".into(),
            PartId::other(PartKind::Kernel, side),
            kthreads,
        ),
        (
            "other devices' kernel threads".into(),
            PartId::other(PartKind::Kernel, side),
            fkernel,
        ),
        (
            "other cgroups".into(),
            PartId::other(PartKind::Process, side),
            tops,
        ),
    ];
    // Only where softirq was traced (asked for): an untraced 0 would read as measured.
    if a.softirq.is_some() && b.softirq.is_some() {
        parts.push((
            "other devices' softirq".into(),
            PartId::other(PartKind::Kernel, side),
            soft.taken_s(),
        ));
    }
    // Tasks' time (the scheduler's) holds the softirq that ran on kernel threads, not the
    // idle task's.
    let known = known + kthreads + fkernel + tops + soft.on_kthreads;
    let fkernel = fkernel + soft.taken_s();
    let foreign = match root {
        Some(r) => {
            let unconfined = residual(r - known, ex);
            parts.push((
                "unconfined tasks".into(),
                PartId::other(PartKind::Unconfined, side),
                unconfined,
            ));
            let kernel = residual(busy - r.max(known) - soft.on_idle, ex);
            parts.push((
                "kernel (unattributed)".into(),
                PartId::other(PartKind::Unattributed, side),
                kernel,
            ));
            tops + unconfined + fkernel
        }
        // Without per-CPU accounting the two cannot be told apart.
        None => {
            let rest = residual(busy - known - soft.on_idle, ex);
            parts.push((
                "kernel and unconfined tasks".into(),
                PartId::other(PartKind::Unattributed, side),
                rest,
            ));
            tops + fkernel
        }
    };
    (parts, foreign, fkernel, soft)
}

/// Other devices' NET_RX softirq on one side's cores (seconds), by what it ran on top of and so
/// where the kernel charged it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OtherSoftirq {
    /// On the idle task (or anywhere, where the kernel keeps interrupt time apart): busy time
    /// no task was charged for.
    pub on_idle: f64,
    /// On the cores' own kernel threads (ksoftirqd, kworkers): inside their time.
    pub on_kthreads: f64,
    /// On the lab's parts' tasks, per part (by index): inside that part's time.
    pub in_lab: BTreeMap<usize, f64>,
    /// On any other task: inside that task's time, which is foreign already.
    pub in_tasks: f64,
}

impl OtherSoftirq {
    /// What is taken out of the datapath's figure: all of it but what other tasks hold.
    pub fn taken_s(&self) -> f64 {
        self.on_idle + self.on_kthreads + self.in_lab.values().sum::<f64>()
    }
}

/// The lab's network namespaces (inodes): their devices' packets are the lab's.
fn lab_netns(d: &MeterData) -> Vec<u64> {
    d.parts.iter().filter_map(|p| p.netns).collect()
}

/// The lab part whose task `tgid` is: its process, its QEMU, or a task seen in its folders.
fn part_of(d: &MeterData, b: &Full, tgid: u32) -> Option<usize> {
    d.parts.iter().enumerate().find_map(|(i, p)| {
        let own = p.pid == Some(tgid)
            || p.threads.as_ref().is_some_and(|t| t.pid == tgid)
            || b.outside
                .lab_tasks
                .get(i)
                .is_some_and(|s| s.contains(&tgid));
        own.then_some(i)
    })
}

/// Other devices' softirq on `cores`, where both edges traced it (`core_kthread`: a tgid that is
/// one of the cores' own kernel threads).
fn other_softirq(
    d: &MeterData,
    (a, b): (&Full, &Full),
    cores: &[usize],
    core_kthread: impl Fn(u32) -> bool,
) -> OtherSoftirq {
    let mut o = OtherSoftirq::default();
    let (Some(x), Some(y)) = (&a.softirq, &b.softirq) else {
        return o;
    };
    let lab = lab_netns(d);
    let tgids: std::collections::BTreeSet<u32> = y.devices.iter().map(|t| t.tgid).collect();
    let apart = d.acct.irq_time == Some(true);
    for t in tgids {
        let m = softirq::foreign_ns(x, y, &lab, |g| g == t);
        let s = cores.iter().filter_map(|c| m.get(c)).sum::<u64>() as f64 / 1e9;
        match (apart || t == 0, core_kthread(t), part_of(d, b, t)) {
            (true, _, _) => o.on_idle += s,
            (_, true, _) => o.on_kthreads += s,
            (_, _, Some(i)) => *o.in_lab.entry(i).or_insert(0.0) += s,
            _ => o.in_tasks += s,
        }
    }
    o
}

/// Takes other devices' softirq out of the lab parts whose tasks it ran on top of.
fn carve(d: &MeterData, parts: &mut [RawPart], soft: &OtherSoftirq, ex: &mut f64) {
    for (&i, &s) in &soft.in_lab {
        let p = &d.parts[i];
        if let Some(e) = parts.iter_mut().find(|e| e.1 == p.id && e.0 == p.name) {
            e.2 = residual(e.2 - s, ex);
        }
    }
}

fn sided(
    d: &MeterData,
    a: &Full,
    b: &Full,
    host: &[usize],
    client: &[usize],
    busy: [f64; 2],
) -> Sided {
    let (mut parts, mut on, leak) = lab_parts(d, a, b, host, client);
    let (stray, stray_on, in_tops) = strays(d, (a, b));
    parts.extend(stray);
    on[0] += stray_on[0];
    on[1] += stray_on[1];
    let per_cpu = d
        .parts
        .iter()
        .enumerate()
        .all(|(i, p)| p.pid.is_some() || a.light.parts[i].per_cpu.is_some());
    let root = [
        sum_on(&a.light.sched.per_cpu, &b.light.sched.per_cpu, host),
        sum_on(&a.light.sched.per_cpu, &b.light.sched.per_cpu, client),
    ];
    let (mut foreign_s, mut excess_s, mut foreign_kernel_s) = ([0.0; 2], [0.0; 2], [0.0; 2]);
    let mut other_softirq = [OtherSoftirq::default(), OtherSoftirq::default()];
    for (k, (side, cores)) in [(Side::Host, host), (Side::Client, client)]
        .into_iter()
        .enumerate()
    {
        // A client on another machine has no cores here: nothing of this machine is its.
        if cores.is_empty() {
            continue;
        }
        let s = SideIn {
            side,
            cores,
            known: on[k],
            root: root[k],
            busy: busy[k],
            in_tops: in_tops[k],
        };
        let (p, f, fk, soft) = beside(d, (a, b), s, &mut excess_s[k]);
        carve(d, &mut parts, &soft, &mut excess_s[k]);
        parts.extend(p);
        foreign_s[k] = f;
        foreign_kernel_s[k] = fk;
        other_softirq[k] = soft;
    }
    let by_cpu = per_cpu && root[0].is_some();
    Sided {
        parts,
        leak_s: by_cpu.then_some(leak),
        attribution: if by_cpu {
            "per CPU (scheduler run time per CPU)"
        } else {
            "by placement"
        },
        foreign_s,
        foreign_kernel_s,
        excess_s,
        other_softirq,
    }
}

/// Unplaced: the host is the machine less the client's parts (the old, sender-dependent view).
fn unplaced(d: &MeterData, a: &Full, b: &Full, machine_s: f64) -> Sided {
    let mut parts: Vec<RawPart> = d
        .parts
        .iter()
        .enumerate()
        .map(|(i, p)| {
            (
                p.name.clone(),
                p.id,
                (b.light.parts[i].total - a.light.parts[i].total).max(0.0),
            )
        })
        .collect();
    let taken: HashSet<u32> = d.parts.iter().filter_map(|p| p.pid).collect();
    let kthreads = outside::kthread_delta(&a.outside, &b.outside, |t, _| !taken.contains(&t));
    let others = outside::tops_total(&a.outside, &b.outside);
    parts.push((
        "other processes".into(),
        PartId::other(PartKind::Process, Side::Host),
        others,
    ));
    parts.push((
        "kernel threads".into(),
        PartId::other(PartKind::Kernel, Side::Host),
        kthreads,
    ));
    let attributed: f64 = parts.iter().map(|p| p.2).sum();
    let mut excess = 0.0;
    let rest = residual(machine_s - attributed, &mut excess);
    parts.push((
        "kernel (unattributed)".into(),
        PartId::other(PartKind::Unattributed, Side::Host),
        rest,
    ));
    Sided {
        parts,
        leak_s: None,
        attribution: "unplaced: the machine less the client's parts",
        foreign_s: [others, 0.0],
        foreign_kernel_s: [0.0, 0.0],
        excess_s: [excess, 0.0],
        other_softirq: Default::default(),
    }
}

impl PartCpu {
    /// Who this part is.
    pub fn id(&self) -> PartId {
        PartId {
            kind: self.kind,
            side: self.side,
            role: self.role,
        }
    }
}

/// The window's two full readings.
fn window_edges(d: &MeterData) -> Result<(&Full, &Full), Error> {
    match d.edges.as_slice() {
        [a, b, ..] => Ok((a, b)),
        _ => Err(Error::Unreadable(
            "the meter has no window (the test ended before its window closed)".into(),
        )),
    }
}

/// Each CPU's time between two readings, by the meter's sources on this kernel.
fn core_times(
    d: &MeterData,
    a: &super::Light,
    b: &super::Light,
    window_s: f64,
) -> BTreeMap<usize, CoreTime> {
    let basis = busy::Basis {
        ticks_per_s: d.ticks_per_s,
        acct: &d.acct,
        sched_steal: d
            .source
            .as_ref()
            .is_some_and(|s| s.includes_steal(d.acct.steal_in_task_clock())),
    };
    busy::cores((&a.stat, &a.sched), (&b.stat, &b.sched), window_s, basis)
}

/// The host's and the client's cores: placed, the lab's sides; else the whole machine is host.
fn side_cores(d: &MeterData, times: &BTreeMap<usize, CoreTime>) -> (Vec<usize>, Vec<usize>) {
    match &d.sides {
        Some(s) => (s.host.clone(), s.client.clone()),
        None => (times.keys().copied().collect(), Vec::new()),
    }
}

/// The host's figure, or why it cannot be told: steal or sources that disagree (`busy`), parts
/// adding up past the total, or a machine-wide scheduler total past the CPUs' awake time.
fn unmeasurable(
    d: &MeterData,
    a: &Full,
    b: &Full,
    times: &BTreeMap<usize, CoreTime>,
    host: &SideTime,
    excess_pct: f64,
) -> Option<String> {
    if let Some(why) = host.unmeasurable("host") {
        return Some(why);
    }
    let tol = busy::tolerance_pct(host.busy_pct);
    if excess_pct > tol {
        return Some(format!(
            "the host's parts measured apart add up to {excess_pct:.1} points more than its cores were busy (tolerance {tol:.1})"
        ));
    }
    let steal = d
        .source
        .as_ref()
        .is_some_and(|s| s.includes_steal(d.acct.steal_in_task_clock()));
    let window_s = b.light.at.duration_since(a.light.at).as_secs_f64();
    busy::machine_check(times, &a.light.sched, &b.light.sched, window_s, steal)
}

/// The parts as the report lists them: seconds turned into shares of their side's cores.
fn part_cpus(raw: Vec<RawPart>, window_s: f64, cap: impl Fn(Side) -> f64) -> Vec<PartCpu> {
    raw.into_iter()
        .map(|(name, id, s)| PartCpu {
            name,
            kind: id.kind,
            side: id.side,
            role: id.role,
            busy_pct: 100.0 * s / cap(id.side),
            cores: s / window_s,
            task_clock_ms: s * 1e3,
        })
        .collect()
}

/// netperf's service demand per unit of traffic, for the host and the sending/receiving parts.
fn demand(parts: &[PartCpu], t: &Traffic, host_cores: f64, per_unit_per_s: f64) -> Demand {
    let cores_of = |ids: &[PartId]| {
        parts
            .iter()
            .filter(|p| ids.contains(&p.id()))
            .map(|p| p.cores)
            .sum::<f64>()
    };
    Demand {
        host: host_cores * 1e6 / per_unit_per_s,
        send: cores_of(t.send_parts) * 1e6 / per_unit_per_s,
        recv: cores_of(t.recv_parts) * 1e6 / per_unit_per_s,
    }
}

/// The window's two readings and each CPU's time between them, with the machine's busy time and
/// the sides' cores (`build`'s first step).
struct Window<'a> {
    a: &'a Full,
    b: &'a Full,
    window_s: f64,
    times: BTreeMap<usize, CoreTime>,
    /// Each CPU's busy seconds.
    busy: BTreeMap<usize, f64>,
    ncpu: usize,
    machine_s: f64,
    machine_busy_pct: f64,
    host: Vec<usize>,
    client: Vec<usize>,
    host_time: SideTime,
    /// The lab was confined to the sides' cores.
    placed: bool,
}

impl<'a> Window<'a> {
    /// Reads the window: its edges, each CPU's time, the machine's busy share, the sides' cores.
    fn read(d: &'a MeterData) -> Result<Window<'a>, Error> {
        let (a, b) = window_edges(d)?;
        let window_s = b.light.at.duration_since(a.light.at).as_secs_f64();
        let times = core_times(d, &a.light, &b.light, window_s);
        let busy: BTreeMap<usize, f64> = times.iter().map(|(&c, t)| (c, t.busy_s)).collect();
        let ncpu = busy.len().max(1);
        let machine_s: f64 = busy.values().sum();
        let machine_busy_pct = 100.0 * machine_s / (window_s * ncpu as f64);
        let (host, client) = side_cores(d, &times);
        let host_time = SideTime::of(&times, &host, window_s);
        Ok(Window {
            a,
            b,
            window_s,
            times,
            busy,
            ncpu,
            machine_s,
            machine_busy_pct,
            host,
            client,
            host_time,
            placed: d.sides.is_some(),
        })
    }

    /// Some cores' busy seconds (a core without a reading counts 0).
    fn busy_of(&self, cores: &[usize]) -> f64 {
        cores
            .iter()
            .map(|c| self.busy.get(c).copied().unwrap_or(0.0))
            .sum::<f64>()
    }

    /// A side's seconds of CPU in the window: its cores (at least one) for the window's length;
    /// unplaced, the client's are the host's (the whole machine).
    fn cap(&self, side: Side) -> f64 {
        let n = if self.placed && side == Side::Client {
            self.client.len()
        } else {
            self.host.len()
        };
        self.window_s * n.max(1) as f64
    }

    /// Each CPU's busy time and its steal, % of the window.
    fn per_core_pct(&self) -> (BTreeMap<usize, f64>, BTreeMap<usize, f64>) {
        let busy = self
            .busy
            .iter()
            .map(|(&c, &s)| (c, 100.0 * s / self.window_s))
            .collect();
        let steal = self
            .times
            .iter()
            .map(|(&c, t)| (c, 100.0 * t.steal_s / self.window_s))
            .collect();
        (busy, steal)
    }
}

/// The host's busy seconds (what ran there from outside the lab included), the client's (placed
/// only) and each side's parts: placed, by the sides' cores; unplaced, the host is the machine
/// less the client's parts.
fn side_totals(d: &MeterData, w: &Window) -> (f64, Option<f64>, Sided) {
    match &d.sides {
        Some(_) => {
            let both = [w.busy_of(&w.host), w.busy_of(&w.client)];
            (
                both[0],
                Some(both[1]),
                sided(d, w.a, w.b, &w.host, &w.client, both),
            )
        }
        None => {
            let s = unplaced(d, w.a, w.b, w.machine_s);
            let client: f64 = s
                .parts
                .iter()
                .filter(|p| p.1.kind == PartKind::Client)
                .map(|p| p.2)
                .sum();
            (w.machine_s - client, None, s)
        }
    }
}

/// The host's figures (`build`'s reading of its side).
struct HostShare {
    /// Busy seconds of the host's cores, what ran there from outside the lab included.
    total_s: f64,
    /// Of which the seconds of tasks that are not the lab's.
    foreign_s: f64,
    busy_pct: f64,
    busy_cores: f64,
    /// Why the host's figure cannot be told, if it cannot.
    why: Option<String>,
    /// What the host's parts leave unattributed, % of its cores.
    unattributed: f64,
}

/// The host's busy time less what ran there from outside the lab, what its parts leave
/// unattributed, and why the figure cannot be told, if it cannot.
fn host_share(
    d: &MeterData,
    w: &Window,
    total_s: f64,
    foreign_s: f64,
    excess_s: f64,
    parts: &[PartCpu],
) -> HostShare {
    let foreign_s = foreign_s.min(total_s);
    let host_s = total_s - foreign_s;
    let busy_pct = 100.0 * host_s / w.cap(Side::Host);
    let busy_cores = host_s / w.window_s;
    let excess_pct = 100.0 * excess_s / w.cap(Side::Host);
    let why = unmeasurable(d, w.a, w.b, &w.times, &w.host_time, excess_pct);
    let unattributed: f64 = parts
        .iter()
        .filter(|p| p.side == Side::Host && p.kind == PartKind::Unattributed)
        .map(|p| p.busy_pct)
        .sum();
    HostShare {
        total_s,
        foreign_s,
        busy_pct,
        busy_cores,
        why,
        unattributed,
    }
}

/// The traffic's rates the figures per unit divide by, where there are any: Gb/s (a stream
/// test's, where the host's figure can be told) and transactions per second (an RR test's).
fn rates(t: &Traffic, measurable: bool) -> (Option<f64>, Option<f64>) {
    let tps = t.transactions_per_s.filter(|x| *x > 0.0);
    let gbps = t
        .gbps
        .filter(|g| *g > 0.0 && tps.is_none())
        .filter(|_| measurable);
    (gbps, tps)
}

/// What the kernel charged across the boundary, % of the host's busy time (0 if it was idle).
fn leak_pct(leak_s: Option<f64>, host_total_s: f64) -> Option<f64> {
    leak_s.map(|l| {
        if host_total_s > 0.0 {
            100.0 * l / host_total_s
        } else {
            0.0
        }
    })
}

/// The meter's own figures: its tick rate, its own CPU (% of one core), its counters' notes.
fn meter_info(d: &MeterData, softirq: Option<SoftirqSplit>) -> MeterInfo {
    let own = if d.own_wall_s > 0.0 {
        100.0 * d.own_cpu_s / d.own_wall_s
    } else {
        0.0
    };
    MeterInfo {
        hz: super::HZ,
        own_cpu_pct_of_core: own,
        counter_notes: d.counter_notes.clone(),
        reads_per_sample: Some(d.reads_per_sample),
        reads_per_edge: Some(d.reads_per_edge),
        softirq,
    }
}

/// The host cores' softirq over the window, and what of it went to other devices' packets.
fn softirq_split(d: &MeterData, w: &Window, other: &OtherSoftirq) -> Option<SoftirqSplit> {
    let (x, y) = (w.a.softirq.as_ref(), w.b.softirq.as_ref());
    let why = match (&d.softirq_untraced, d.sides.is_some()) {
        (Some(why), _) => why.clone(),
        // Unplaced, the host has no cores of its own to take other devices' work out of.
        (None, false) if x.is_some() => "the lab is not placed on cores of its own: other devices' softirq is told apart per side only".to_string(),
        _ => String::new(),
    };
    if !why.is_empty() {
        return Some(SoftirqSplit {
            untraced: Some(why),
            ..Default::default()
        });
    }
    let (x, y) = (x?, y?);
    let cap = w.cap(Side::Host);
    let ns = |pick: &dyn Fn(&[u64; softirq::VECTORS]) -> u64| -> f64 {
        let on = |r: &softirq::Reading, c: usize| r.vectors_ns.get(c).map_or(0, pick);
        w.host
            .iter()
            .map(|&c| on(y, c).saturating_sub(on(x, c)))
            .sum::<u64>() as f64
            / 1e9
    };
    Some(SoftirqSplit {
        softirq_pct: 100.0 * ns(&|v| v.iter().sum()) / cap,
        net_rx_pct: 100.0 * ns(&|v| v[softirq::NET_RX_VECTOR]) / cap,
        other_devices_pct: 100.0 * other.taken_s() / cap,
        other_devices_in_tasks_pct: 100.0 * other.in_tasks / cap,
        untraced: None,
    })
}

/// How the figures were cross-checked: what the host's parts explain of its busy time, the
/// machine's irq and softirq share, and the sources the host's time was read from.
fn check(
    d: &MeterData,
    w: &Window,
    host: &HostShare,
    irq_softirq_pct: f64,
    attribution: &str,
) -> Check {
    Check {
        attributed_pct: 100.0 * host.total_s / w.cap(Side::Host) - host.unattributed,
        unattributed_kernel_pct: host.unattributed,
        machine_busy_pct: w.machine_busy_pct,
        irq_softirq_pct,
        attribution: attribution.to_string(),
        tolerance_pct: busy::tolerance_pct(w.host_time.busy_pct),
        host_sources: w.host_time.clone(),
        kernel: d.acct.describe(),
        sched_source: d.source.as_ref().map(|s| s.describe()),
    }
}

/// Foreign kernel work on the host's cores past this share of them makes a point unmeasurable.
const FOREIGN_KERNEL_MAX_PCT: f64 = 5.0;

/// The CPU report of one window from the meter's data and the test's traffic: each CPU's time
/// (`busy`), the two sides, the parts of each, then the figures that read them.
pub fn build(d: &MeterData, t: &Traffic) -> Result<CpuReport, Error> {
    let w = Window::read(d)?;
    let (a, b, window_s) = (w.a, w.b, w.window_s);
    let (host_total_s, client_s, sided) = side_totals(d, &w);
    let parts = part_cpus(sided.parts, window_s, |side| w.cap(side));
    let (foreign_s, excess_s) = (sided.foreign_s[0], sided.excess_s[0]);
    let mut host = host_share(d, &w, host_total_s, foreign_s, excess_s, &parts);
    let fk_pct = 100.0 * sided.foreign_kernel_s[0] / w.cap(Side::Host);
    if host.why.is_none() && fk_pct > FOREIGN_KERNEL_MAX_PCT {
        host.why = Some(format!(
            "other devices' kernel work (their NAPI threads and softirq) ran {fk_pct:.1} % of the host's cores (more than {FOREIGN_KERNEL_MAX_PCT} %): their work there costs the datapath cache and wake-ups the meter cannot separate; shield the host's cores (--shield) or measure when that traffic is gone"
        ));
    }
    let ds = b.light.stat.total.delta(&a.light.stat.total);
    let (split_pct, irq_softirq_pct) = split_by_column(&ds, w.machine_busy_pct);
    let (gbps, tps) = rates(t, host.why.is_none());
    let kb_per_s = gbps.map(|g| g * 1e9 / 8.0 / 1024.0);
    let leak_pct = leak_pct(sided.leak_s, host_total_s);
    let per_tran = tps.filter(|_| host.why.is_none());
    let (per_core_busy_pct, per_core_steal_pct) = w.per_core_pct();
    Ok(CpuReport {
        window_s,
        ncpu: w.ncpu,
        host_cores: w.host.clone(),
        client_cores: w.client.clone(),
        placed: w.placed,
        machine_busy_pct: w.machine_busy_pct,
        host_busy_pct: host.busy_pct,
        host_busy_cores: host.busy_cores,
        host_total_pct: Some(100.0 * host_total_s / w.cap(Side::Host)),
        foreign_pct: 100.0 * host.foreign_s / w.cap(Side::Host),
        unmeasurable: host.why.clone(),
        client_busy_pct: client_s.map(|c| 100.0 * c / w.cap(Side::Client)),
        client_busy_cores: client_s.map(|c| c / window_s),
        split_pct,
        per_core_busy_pct,
        per_core_steal_pct,
        host_steal_pct: w.host_time.steal_pct,
        normalized_pct_per_gbps: gbps.map(|g| host.busy_pct / g),
        cores_per_gbps: gbps.map(|g| host.busy_cores / g),
        service_demand_us_per_kb: kb_per_s.map(|k| demand(&parts, t, host.busy_cores, k)),
        service_demand_us_per_tran: per_tran.map(|x| demand(&parts, t, host.busy_cores, x)),
        leak_pct,
        leak_under_2pct: leak_pct.map(|l| l < 2.0),
        bound_by: None,
        softirq_per_s: softirq_rates(a, b, window_s),
        interrupts_per_s: b.irq.interrupts.saturating_sub(a.irq.interrupts) as f64 / window_s,
        counters: hw_counters(d, a, b),
        meter: meter_info(d, softirq_split(d, &w, &sided.other_softirq[0])),
        check: check(d, &w, &host, irq_softirq_pct, sided.attribution),
        series: series(d, a, b, &w.host),
        parts,
    })
}

/// The machine's busy time by /proc/stat column (and idle), in % of the machine, and the share
/// of irq and softirq in it. A busy column's share of the tick samples is scaled to the precise
/// busy time; idle is precise.
fn split_by_column(ds: &procstat::CpuTimes, machine_busy_pct: f64) -> (BTreeMap<String, f64>, f64) {
    let busy_ticks = ds.busy().max(1) as f64;
    let share = |v: u64| machine_busy_pct * v as f64 / busy_ticks;
    let columns = [
        ("user", ds.user),
        ("nice", ds.nice),
        ("system", ds.system),
        ("irq", ds.irq),
        ("softirq", ds.softirq),
        ("steal", ds.steal),
        ("guest", ds.guest + ds.guest_nice),
    ];
    let pct = columns
        .into_iter()
        .map(|(k, v)| (k.to_string(), share(v)))
        .chain(std::iter::once(("idle".into(), 100.0 - machine_busy_pct)))
        .collect();
    (pct, share(ds.irq + ds.softirq))
}

/// Softirqs raised per second in the window, by kind.
fn softirq_rates(a: &Full, b: &Full, window_s: f64) -> BTreeMap<String, f64> {
    let count = |f: &Full, k: &str| f.irq.softirqs.get(k).copied().unwrap_or(0);
    b.irq
        .softirqs
        .keys()
        .map(|k| {
            let n = count(b, k).saturating_sub(count(a, k));
            (k.clone(), n as f64 / window_s)
        })
        .collect()
}

/// Hardware counters over the window, or why there are none.
fn hw_counters(d: &MeterData, a: &Full, b: &Full) -> HwCounters {
    match (&d.counters_unsupported, &a.counters, &b.counters) {
        (Some(why), _, _) => HwCounters::Missing(format!(
            "not supported: {why}; task_clock_ms per part is given instead"
        )),
        (None, Some(x), Some(y)) => HwCounters::Read(counters::delta(x, y)),
        _ => HwCounters::Missing("not read".into()),
    }
}

/// Host busy per sample inside the window: the host's cores (placed), else the machine less the
/// client's parts.
fn series(d: &MeterData, a: &Full, b: &Full, host: &[usize]) -> Vec<(f64, f64)> {
    let client_idx: Vec<usize> = d
        .parts
        .iter()
        .enumerate()
        .filter(|(_, p)| p.id.kind == PartKind::Client)
        .map(|(i, _)| i)
        .collect();
    d.series
        .windows(2)
        .filter(|w| w[1].at > a.light.at && w[1].at <= b.light.at)
        .map(|w| {
            let dt = w[1].at.duration_since(w[0].at).as_secs_f64();
            let times = core_times(d, &w[0], &w[1], dt);
            let host_s: f64 = host
                .iter()
                .filter_map(|c| times.get(c))
                .map(|t| t.busy_s)
                .sum();
            let host_s = if d.sides.is_some() {
                host_s
            } else {
                host_s
                    - client_idx
                        .iter()
                        .map(|&i| (w[1].parts[i].total - w[0].parts[i].total).max(0.0))
                        .sum::<f64>()
            };
            let pct = 100.0 * host_s / (dt * host.len().max(1) as f64);
            (
                w[1].at.duration_since(a.light.at).as_secs_f64(),
                pct.max(0.0),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meter::{irqstat::Counts, procstat, Full, Light, MeterData, Part, PartTime, Sides};
    use crate::vocab::Role;
    use std::time::{Duration, Instant};

    fn full(
        at: Instant,
        stat: &str,
        parts: Vec<PartTime>,
        root: Option<Vec<f64>>,
        netrx: u64,
    ) -> Full {
        let mut irq = Counts::default();
        irq.softirqs.insert("NET_RX".into(), netrx);
        Full {
            light: Light {
                at,
                stat: procstat::parse(stat).unwrap(),
                parts,
                sched: crate::meter::sched::Reading {
                    per_cpu: root,
                    total: None,
                },
            },
            outside: Default::default(),
            irq,
            counters: None,
            softirq: None,
        }
    }

    fn total(t: f64) -> PartTime {
        PartTime {
            total: t,
            per_cpu: None,
        }
    }

    fn percpu(v: &[f64]) -> PartTime {
        PartTime {
            total: v.iter().sum(),
            per_cpu: Some(v.to_vec()),
        }
    }

    fn data(parts: Vec<Part>, sides: Option<Sides>, edges: Vec<Full>) -> MeterData {
        MeterData {
            parts,
            acct: Default::default(),
            source: None,
            raw: vec![],
            sides,
            series: vec![],
            edges,
            counters_unsupported: Some("perf_event_open(cycles): No such file or directory".into()),
            counter_notes: vec![],
            softirq_untraced: None,
            own_cpu_s: 0.01,
            own_wall_s: 2.0,
            ticks_per_s: 100.0,
            reads_per_sample: 0,
            reads_per_edge: 0,
        }
    }

    fn part(name: &str, kind: PartKind, side: Side) -> Part {
        let role = name.parse().ok();
        Part {
            name: name.into(),
            id: PartId { kind, side, role },
            cgroups: vec![],
            pid: None,
            threads: None,
            netns: None,
        }
    }

    const ZERO: &str = "cpu  0 0 0 0 0 0 0 0 0 0\ncpu0 0 0 0 0\ncpu1 0 0 0 0\n";
    // 2 cores, 2 s: CPU 0 idle 0.5 s (busy 1.5 s), CPU 1 idle 1.5 s (busy 0.5 s).
    const AFTER: &str =
        "cpu  100 0 60 200 0 0 40 0 0 0\ncpu0 100 0 30 50 0 0 20 0\ncpu1 0 0 30 150 0 0 20 0\n";

    #[test]
    fn host_cpu_is_the_host_cores_and_the_leak_is_measured() {
        let t0 = Instant::now();
        let parts = vec![
            part("g1", PartKind::Guest, Side::Host),
            part("client", PartKind::Client, Side::Client),
        ];
        let a = full(
            t0,
            ZERO,
            vec![percpu(&[0.0, 0.0]), percpu(&[0.0, 0.0])],
            Some(vec![0.0, 0.0]),
            0,
        );
        // g1 1 s on CPU 0; the client 0.3 s on its CPU 1 and 0.1 s on the host's CPU 0 (a leak).
        let b = full(
            t0 + Duration::from_secs(2),
            AFTER,
            vec![percpu(&[1.0, 0.0]), percpu(&[0.1, 0.3])],
            Some(vec![1.3, 0.35]),
            2000,
        );
        let d = data(
            parts,
            Some(Sides {
                host: vec![0],
                client: vec![1],
            }),
            vec![a, b],
        );
        let send = vec![PartId::endpoint(PartKind::Guest, Role::Guest(1))];
        let recv = vec![PartId::endpoint(PartKind::Client, Role::Client)];
        let r = build(
            &d,
            &Traffic {
                gbps: Some(2.0),
                transactions_per_s: None,
                send_parts: &send,
                recv_parts: &recv,
            },
        )
        .unwrap();
        // The host's cores were 75 % busy; 10 points of it unconfined tasks (not the lab's),
        // taken out of the datapath's figure and shown apart.
        assert_eq!(
            (r.machine_busy_pct, r.host_total_pct, r.client_busy_pct),
            (50.0, Some(75.0), Some(25.0))
        );
        assert!((r.host_busy_pct - 65.0).abs() < 1e-9 && (r.foreign_pct - 10.0).abs() < 1e-9);
        assert_eq!(r.unmeasurable, None);
        let get = |n: &str, side: Side| {
            r.parts
                .iter()
                .find(|p| p.name == n && p.side == side)
                .unwrap_or_else(|| panic!("{n}: {:?}", r.parts))
                .busy_pct
        };
        assert_eq!(get("g1", Side::Host), 50.0);
        assert_eq!(get("client (leak)", Side::Host), 5.0);
        assert!((get("unconfined tasks", Side::Host) - 10.0).abs() < 1e-9);
        assert!((get("kernel (unattributed)", Side::Host) - 10.0).abs() < 1e-9);
        assert!((get("client", Side::Client) - 15.0).abs() < 1e-9);
        assert!((get("kernel (unattributed)", Side::Client) - 7.5).abs() < 1e-9);
        // Each side's parts add up to its busy share.
        for (side, want) in [(Side::Host, 75.0), (Side::Client, 25.0)] {
            let sum: f64 = r
                .parts
                .iter()
                .filter(|p| p.side == side)
                .map(|p| p.busy_pct)
                .sum();
            assert!((sum - want).abs() < 1e-9, "{side:?}: {sum}");
        }
        assert!((r.leak_pct.unwrap() - 100.0 * 0.1 / 1.5).abs() < 1e-9);
        assert_eq!(r.leak_under_2pct, Some(false));
        assert!((r.normalized_pct_per_gbps.unwrap() - 32.5).abs() < 1e-9);
        assert!((r.cores_per_gbps.unwrap() - 0.325).abs() < 1e-9);
        // netperf's service demand: the datapath's host cores × 10^6 ÷ KB/s.
        let kbs = 2e9 / 8.0 / 1024.0;
        assert!((r.service_demand_us_per_kb.as_ref().unwrap().host - 0.65e6 / kbs).abs() < 1e-9);
        assert!((r.service_demand_us_per_kb.as_ref().unwrap().send - 0.5e6 / kbs).abs() < 1e-9);
        assert_eq!(r.per_core_busy_pct.get(&0), Some(&75.0));
        assert_eq!(r.softirq_per_s["NET_RX"], 1000.0);
        assert!(r.counters.missing().unwrap().starts_with("not supported"));
        assert_eq!(r.check.attribution, "per CPU (scheduler run time per CPU)");
    }

    #[test]
    fn unplaced_the_host_is_the_machine_less_the_client() {
        let t0 = Instant::now();
        let parts = vec![
            part("g1", PartKind::Guest, Side::Host),
            part("client", PartKind::Client, Side::Client),
        ];
        let a = full(t0, ZERO, vec![total(0.0), total(0.0)], None, 0);
        let b = full(
            t0 + Duration::from_secs(2),
            AFTER,
            vec![total(1.0), total(0.4)],
            None,
            2000,
        );
        let r = build(
            &data(parts, None, vec![a, b]),
            &Traffic {
                gbps: Some(2.0),
                transactions_per_s: None,
                send_parts: &[],
                recv_parts: &[],
            },
        )
        .unwrap();
        assert!(!r.placed && r.leak_pct.is_none() && r.client_busy_pct.is_none());
        assert_eq!(r.machine_busy_pct, 50.0);
        assert!((r.host_busy_pct - 40.0).abs() < 1e-9);
        let g1 = r.parts.iter().find(|p| p.name == "g1").unwrap();
        assert_eq!(
            (g1.busy_pct, g1.cores, g1.task_clock_ms),
            (25.0, 0.5, 1000.0)
        );
        assert!((r.check.unattributed_kernel_pct - 15.0).abs() < 1e-9);
        assert!((r.normalized_pct_per_gbps.unwrap() - 20.0).abs() < 1e-9);
        assert_eq!(r.split_pct["softirq"], 10.0);
    }

    #[test]
    fn rr_gets_service_demand_per_transaction() {
        let t0 = Instant::now();
        let a = full(
            t0,
            "cpu  0 0 0 0 0 0 0 0 0 0\ncpu0 0 0 0 0\n",
            vec![],
            None,
            0,
        );
        let b = full(
            t0 + Duration::from_secs(1),
            "cpu  50 0 0 50 0 0 0 0 0 0\ncpu0 50 0 0 50\n",
            vec![],
            None,
            0,
        );
        let mut d = data(vec![], None, vec![a, b]);
        d.own_wall_s = 1.0;
        let r = build(
            &d,
            &Traffic {
                gbps: Some(0.01),
                transactions_per_s: Some(10_000.0),
                send_parts: &[],
                recv_parts: &[],
            },
        )
        .unwrap();
        // 0.5 cores for 10 000 transactions/s = 50 µs each.
        assert!((r.service_demand_us_per_tran.unwrap().host - 50.0).abs() < 1e-9);
        assert!(r.service_demand_us_per_kb.is_none());
    }

    /// A fine series (a movie's buffering phase): a 0.1 s sample whose ticks say idle throughout
    /// but whose idle nanoseconds say 93 ms is 7 % busy, not 0 %.
    #[test]
    fn a_series_sample_with_idle_nanoseconds_is_measured_from_them() {
        let t0 = Instant::now();
        let sample = |ms: u64, ticks: u64, ns: Option<u64>| {
            let text = format!("cpu  0 0 0 {ticks} 0 0 0 0 0 0\ncpu0 0 0 0 {ticks} 0 0 0 0\n");
            let mut stat = procstat::parse(&text).unwrap();
            stat.idle_ns = vec![ns];
            Light {
                at: t0 + Duration::from_millis(ms),
                stat,
                parts: vec![],
                sched: Default::default(),
            }
        };
        let edge = |ms: u64| Full {
            light: sample(ms, 0, None),
            outside: Default::default(),
            irq: Counts::default(),
            counters: None,
            softirq: None,
        };
        let (a, b) = (edge(0), edge(200));
        let mut d = data(vec![], None, vec![]);
        d.series = vec![
            sample(100, 10, Some(1_000_000)),
            sample(200, 20, Some(94_000_000)),
        ];
        let s = series(&d, &a, &b, &[0]);
        assert_eq!(s.len(), 1);
        assert!(
            (s[0].0 - 0.2).abs() < 1e-9 && (s[0].1 - 7.0).abs() < 1e-6,
            "{s:?}"
        );
        // Without the nanoseconds the same sample is the ticks' 0 %.
        d.series = vec![sample(100, 10, None), sample(200, 20, None)];
        assert_eq!(series(&d, &a, &b, &[0])[0].1, 0.0);
    }

    /// Other devices' softirq is taken from where the kernel charged it: the idle task's from
    /// the unattributed time, a core kernel thread's from those threads, a lab task's from its
    /// part; another task's stays with that (foreign) task; the lab's own devices' never counts.
    #[test]
    fn other_devices_softirq_is_taken_from_where_the_kernel_charged_it() {
        use crate::meter::kthreads::KThread;
        use crate::meter::softirq::{DevTime, Reading};
        let dev = |netns: u32, tgid: u32, ms: u64| DevTime {
            name: format!("d{netns}"),
            netns,
            tgid,
            per_cpu_ns: vec![ms * 1_000_000, 50_000_000],
        };
        let traced = |devices: Vec<DevTime>| Reading {
            devices,
            ..Default::default()
        };
        let g1 = Part {
            pid: Some(100),
            netns: Some(11),
            ..part("g1", PartKind::Guest, Side::Host)
        };
        let at = Instant::now();
        let mut a = full(at, ZERO, vec![total(0.0)], None, 0);
        let mut b = full(
            at + Duration::from_secs(2),
            AFTER,
            vec![total(0.5)],
            None,
            0,
        );
        a.softirq = Some(traced(vec![]));
        b.softirq = Some(traced(vec![
            dev(11, 0, 5),
            dev(99, 0, 10),
            dev(99, 100, 20),
            dev(99, 7, 30),
            dev(99, 555, 40),
        ]));
        let ksoftirqd = KThread {
            comm: "ksoftirqd/0".into(),
            cpus: vec![0],
        };
        a.outside.kthreads.insert(7, (ksoftirqd, 0.0));
        let mut d = data(vec![g1], None, vec![]);
        let kthread = |t: u32| t == 7;
        let o = other_softirq(&d, (&a, &b), &[0], kthread);
        assert!((o.on_idle - 0.010).abs() < 1e-12, "{o:?}");
        assert!((o.on_kthreads - 0.030).abs() < 1e-12, "{o:?}");
        assert!((o.in_lab[&0] - 0.020).abs() < 1e-12, "{o:?}");
        assert!((o.in_tasks - 0.040).abs() < 1e-12, "{o:?}");
        assert!((o.taken_s() - 0.060).abs() < 1e-12);
        // Carved from g1's part, never below zero.
        let mut parts = vec![("g1".to_string(), d.parts[0].id, 0.5)];
        let mut ex = 0.0;
        carve(&d, &mut parts, &o, &mut ex);
        assert!((parts[0].2 - 0.48).abs() < 1e-12 && ex == 0.0);
        // Where the kernel keeps interrupt time apart, all of it is time no task was charged.
        d.acct.irq_time = Some(true);
        let o = other_softirq(&d, (&a, &b), &[0], kthread);
        assert!(
            (o.on_idle - 0.100).abs() < 1e-12 && o.in_lab.is_empty(),
            "{o:?}"
        );
        // Untraced edges: nothing.
        b.softirq = None;
        assert_eq!(
            other_softirq(&d, (&a, &b), &[0], kthread),
            OtherSoftirq::default()
        );
    }

    /// Traced, other devices' softirq on the idle task comes out of the unattributed time and
    /// the datapath's figure, as a part of its own; unplaced, the split says why there is none.
    #[test]
    fn other_devices_softirq_is_a_foreign_part_of_the_host() {
        use crate::meter::softirq::{DevTime, Reading};
        let t0 = Instant::now();
        let parts = || {
            vec![
                Part {
                    netns: Some(11),
                    ..part("g1", PartKind::Guest, Side::Host)
                },
                part("client", PartKind::Client, Side::Client),
            ]
        };
        let mut a = full(
            t0,
            ZERO,
            vec![percpu(&[0.0, 0.0]), percpu(&[0.0, 0.0])],
            Some(vec![0.0, 0.0]),
            0,
        );
        let mut b = full(
            t0 + Duration::from_secs(2),
            AFTER,
            vec![percpu(&[1.0, 0.0]), percpu(&[0.1, 0.3])],
            Some(vec![1.3, 0.35]),
            2000,
        );
        let mut rx = [0u64; crate::meter::softirq::VECTORS];
        rx[crate::meter::softirq::NET_RX_VECTOR] = 300_000_000;
        a.softirq = Some(Reading {
            vectors_ns: vec![[0; crate::meter::softirq::VECTORS]; 2],
            ..Default::default()
        });
        let dev = |netns, ns| DevTime {
            name: "x".into(),
            netns,
            tgid: 0,
            per_cpu_ns: vec![ns, 0],
        };
        b.softirq = Some(Reading {
            vectors_ns: vec![rx, [0; crate::meter::softirq::VECTORS]],
            devices: vec![dev(99, 100_000_000), dev(11, 150_000_000)],
            ..Default::default()
        });
        let sides = Sides {
            host: vec![0],
            client: vec![1],
        };
        let traffic = Traffic {
            gbps: Some(2.0),
            transactions_per_s: None,
            send_parts: &[],
            recv_parts: &[],
        };
        let d = data(parts(), Some(sides), vec![a.clone(), b.clone()]);
        let r = build(&d, &traffic).unwrap();
        let get = |n: &str| r.parts.iter().find(|p| p.name == n).map(|p| p.busy_pct);
        // 0.1 s of the host core's 2 s: 5 points, out of the 10 the kernel left unattributed.
        assert!((get("other devices' softirq").unwrap() - 5.0).abs() < 1e-9);
        assert!((get("kernel (unattributed)").unwrap() - 5.0).abs() < 1e-9);
        assert!((r.host_busy_pct - 60.0).abs() < 1e-9 && (r.foreign_pct - 15.0).abs() < 1e-9);
        let s = r.meter.softirq.clone().unwrap();
        assert!((s.net_rx_pct - 15.0).abs() < 1e-9 && (s.softirq_pct - 15.0).abs() < 1e-9);
        assert!((s.other_devices_pct - 5.0).abs() < 1e-9 && s.untraced.is_none());
        // Unplaced: no split, and it says why.
        let d = data(parts(), None, vec![a, b]);
        let r = build(&d, &traffic).unwrap();
        let why = r.meter.softirq.unwrap().untraced.unwrap();
        assert!(why.contains("not placed"), "{why}");
    }
}
