//! The CPU a point cost and where it ran, as the stored document keeps them: the meter's report
//! (the host's and the client's busy time, each part's share, the sources it was read from, the
//! hardware counters) and the lab's CPU plan (which cores stand for which machine). The meter
//! (`meter::account`) and the lab (`lab::cpus`) fill them; the logic stays with them.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::units::CpuList;
use crate::vocab::{PartKind, Role, Side};

/// One part's CPU over the window (a guest, a backend, the kernel's threads, the driver…).
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct PartCpu {
    /// Shown in reports; the part is found by its `id()`.
    pub name: String,
    pub kind: PartKind,
    /// The side whose cores this time was spent on.
    pub side: Side,
    /// The lab endpoint it belongs to (None: the driver, the kernel, processes outside the lab).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    /// Share of that side's cores, percent: a side's parts add up to its busy %.
    pub busy_pct: f64,
    pub cores: f64,
    /// CPU time in the window (what perf's task-clock would count).
    pub task_clock_ms: f64,
}

/// Hardware counters over the window, or why there are none (a string in JSON).
#[derive(Serialize, Deserialize, Debug, Clone)]
#[serde(untagged)]
pub enum HwCounters {
    Read(CounterReport),
    /// "not supported: …" or "not read".
    Missing(String),
}

/// The meter's own cost and settings.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct MeterInfo {
    pub hz: f64,
    pub own_cpu_pct_of_core: f64,
    pub counter_notes: Vec<String>,
    /// Files the most costly 10 Hz sample read, and the most costly window edge: they grow with
    /// the lab and the host's cores and top-level cgroups, never with its tasks (absent in runs
    /// stored before vnetlab counted them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reads_per_sample: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reads_per_edge: Option<u64>,
    /// Softirq time on the host's cores, traced per vector and per device (absent in runs
    /// stored before vnetlab traced it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub softirq: Option<SoftirqSplit>,
}

/// Softirq time on the host's cores over the window (% of those cores), and what of its NET_RX
/// time went to other devices' packets: taken out of the datapath's figure where it ran on the
/// idle task or the cores' own kernel threads, left in the task's time where it ran on top of
/// one. `untraced` says why there is no split (figures then 0).
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq)]
pub struct SoftirqSplit {
    pub softirq_pct: f64,
    pub net_rx_pct: f64,
    pub other_devices_pct: f64,
    pub other_devices_in_tasks_pct: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untraced: Option<String>,
}

/// netperf's service demand, µs of CPU per unit moved.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Demand {
    /// All of the host's busy time.
    pub host: f64,
    /// Only the parts on the sending side, and on the receiving side.
    pub send: f64,
    pub recv: f64,
}

/// How the report's figures were cross-checked: what the parts explain of the host's busy time,
/// and the sources it was read from.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Check {
    /// The host's parts measured on their own (cgroups, processes, kernel threads), % of the host.
    pub attributed_pct: f64,
    /// The rest: irq/softirq taken on the host's cores while no task ran, % of the host.
    pub unattributed_kernel_pct: f64,
    pub machine_busy_pct: f64,
    /// irq + softirq time in /proc/stat, % of the machine.
    pub irq_softirq_pct: f64,
    /// How parts were split between the sides: per CPU (cgroup v1 cpuacct), or by placement.
    pub attribution: String,
    /// The host's cores by every source, and the bounds they leave its busy time in.
    #[serde(default)]
    pub host_sources: SideTime,
    /// The tolerance the sources were held to, points of the host's cores.
    #[serde(default)]
    pub tolerance_pct: f64,
    /// How this kernel counts CPU time, and where the scheduler's run time was read.
    #[serde(default)]
    pub kernel: String,
    #[serde(default)]
    pub sched_source: Option<String>,
}

/// The meter's report of a test's window: where the host's (and the client's) CPU went.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct CpuReport {
    pub window_s: f64,
    pub ncpu: usize,
    /// The host's and the client's cores; `placed` false: the lab was not confined to them, and
    /// the host is the machine less the client's parts.
    pub host_cores: Vec<usize>,
    pub client_cores: Vec<usize>,
    pub placed: bool,
    /// Every core of the machine, client included.
    pub machine_busy_pct: f64,
    /// The papers' "host CPU", the datapath's: busy time of the host's cores less the work of
    /// tasks that are not the lab's (`foreign_pct`), % of those cores.
    pub host_busy_pct: f64,
    pub host_busy_cores: f64,
    /// Everything that ran on the host's cores, the lab's and not (old runs: None).
    #[serde(default)]
    pub host_total_pct: Option<f64>,
    /// Work on the host's cores of tasks that are not the lab's (unconfined tasks, processes
    /// pinned there), taken out of the datapath's figure and warned about above a few percent.
    #[serde(default)]
    pub foreign_pct: f64,
    /// Why the host's figure cannot be told here (steal it cannot be separated from, sources that
    /// disagree, parts past the total): the point is then unmeasurable and has no cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmeasurable: Option<String>,
    pub client_busy_pct: Option<f64>,
    pub client_busy_cores: Option<f64>,
    /// user, nice, system, irq, softirq, steal, guest (inside user), idle: % of the machine.
    pub split_pct: BTreeMap<String, f64>,
    /// Per online CPU, by CPU number: busy (this machine's work) and stolen by the hypervisor
    /// beneath this machine (a virtual machine's vCPU waiting to run: neither busy nor idle).
    pub per_core_busy_pct: BTreeMap<usize, f64>,
    pub per_core_steal_pct: BTreeMap<usize, f64>,
    /// Stolen share of the host's cores, shown beside the figure (what it does to the figure is in
    /// its bounds, `check.host_sources`).
    pub host_steal_pct: f64,
    pub normalized_pct_per_gbps: Option<f64>,
    pub cores_per_gbps: Option<f64>,
    /// netperf's service demand: µs of CPU per KB moved (streams) …
    pub service_demand_us_per_kb: Option<Demand>,
    /// … or per transaction (RR).
    pub service_demand_us_per_tran: Option<Demand>,
    pub parts: Vec<PartCpu>,
    /// Time the kernel charged to the client on host cores or to host parts on client cores, % of
    /// host busy (None where it cannot be measured: unplaced, or no per-CPU accounting).
    pub leak_pct: Option<f64>,
    pub leak_under_2pct: Option<bool>,
    /// What bound the point: a saturated side or core, a backend, the wire; None: nothing.
    /// Filled in by the caller, who knows the wire and the offered load.
    pub bound_by: Option<crate::vocab::Bound>,
    pub softirq_per_s: BTreeMap<String, f64>,
    pub interrupts_per_s: f64,
    /// Cycles and instructions, or why not.
    pub counters: HwCounters,
    pub meter: MeterInfo,
    pub check: Check,
    /// Host busy per 0.1 s inside the window.
    #[serde(with = "crate::named::busy_series")]
    pub series: Vec<(f64, f64)>,
}

/// Cycles and instructions over the window.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct CounterValues {
    pub cycles: u64,
    pub instructions: u64,
}

/// The hardware counters of the host and of each part that could be counted, with notes on those
/// that could not.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct CounterReport {
    pub host: CounterValues,
    pub parts: Vec<(String, CounterValues)>,
    pub notes: Vec<String>,
}

/// A side's time summed over its CPUs, percent of those CPUs, with the sources beside.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SideTime {
    pub busy_pct: f64,
    /// The bounds the sources allow.
    pub lo_pct: f64,
    pub hi_pct: f64,
    pub awake_pct: f64,
    pub steal_pct: f64,
    /// Tasks' run time (None: no per-CPU source).
    pub sched_pct: Option<f64>,
    pub ticks_pct: f64,
    pub conflict_pct: f64,
}

/// How receive processing is kept on the receiving side's cores where a frame crosses the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Steering {
    /// RPS and XPS masks on both wire ends, and threaded NAPI (its threads placed on the side's
    /// cores) where the end receives with GRO.
    ThreadedNapiRps,
    /// RPS and XPS masks only (the kernel offers no threaded NAPI).
    Rps,
    /// Nothing steered: the lab is unplaced.
    None,
}

/// Where the client and the host run. Recorded in the lab record and in every result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpuPlan {
    pub host: CpuList,
    pub client: CpuList,
    /// Whether every process the lab starts runs inside its side's cpuset.
    pub placed: bool,
    pub steering: Steering,
    /// Why the lab is unplaced, when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unplaced_because: Option<String>,
    /// `--pin`: each guest (and its backend) on its own host core, round-robin.
    #[serde(default)]
    pub pin: bool,
}
