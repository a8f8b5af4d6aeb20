//! Turns the meter's window-edge snapshots into the figures the papers use: host busy (without
//! the client, which stands for another machine), per-core and per-kind splits, CPU per part with
//! the kernel's unattributed share, normalized CPU (% per Gb/s) and netperf's service demand.

use serde::Serialize;
use std::collections::BTreeMap;

use super::{counters, procs, MeterData, PartKind};

#[derive(Serialize, Debug, Clone)]
pub struct PartCpu {
    pub name: String,
    pub kind: PartKind,
    /// Share of the whole machine (all cores), percent.
    pub busy_pct: f64,
    pub cores: f64,
    /// CPU time in the window (what perf's task-clock would count).
    pub task_clock_ms: f64,
}

#[derive(Serialize, Debug, Clone)]
pub struct Demand {
    /// All of the host's busy time (without the client).
    pub host: f64,
    /// Only the parts on the sending side, and on the receiving side.
    pub send: f64,
    pub recv: f64,
}

#[derive(Serialize, Debug, Clone)]
pub struct Check {
    /// Parts measured on their own (cgroups, processes, kernel threads), % of the machine.
    pub attributed_pct: f64,
    /// The rest: irq/softirq taken while no task ran, % of the machine.
    pub unattributed_kernel_pct: f64,
    pub machine_busy_pct: f64,
    /// irq + softirq time in /proc/stat: the unattributed part can be at most this (+ rounding).
    pub irq_softirq_pct: f64,
}

#[derive(Serialize, Debug, Clone)]
pub struct CpuReport {
    pub window_s: f64,
    pub ncpu: usize,
    /// Every core of the machine, client included.
    pub machine_busy_pct: f64,
    /// The papers' "host CPU": the machine without the client's part.
    pub host_busy_pct: f64,
    pub host_busy_cores: f64,
    /// user, nice, system, irq, softirq, steal, guest (inside user), idle: % of the machine.
    pub split_pct: BTreeMap<String, f64>,
    pub per_core_busy_pct: Vec<f64>,
    pub normalized_pct_per_gbps: Option<f64>,
    pub cores_per_gbps: Option<f64>,
    /// netperf's service demand: µs of CPU per KB moved (streams) …
    pub service_demand_us_per_kb: Option<Demand>,
    /// … or per transaction (RR).
    pub service_demand_us_per_tran: Option<Demand>,
    pub parts: Vec<PartCpu>,
    pub softirq_per_s: BTreeMap<String, f64>,
    pub interrupts_per_s: f64,
    /// Cycles and instructions, or why not.
    pub counters: serde_json::Value,
    pub meter: serde_json::Value,
    pub check: Check,
    /// Host busy (without the client) per 0.1 s inside the window.
    pub series: Vec<(f64, f64)>,
}

/// What the traffic did in the window, and which parts sent and received.
pub struct Traffic<'a> {
    pub gbps: Option<f64>,
    pub transactions_per_s: Option<f64>,
    pub send_parts: &'a [String],
    pub recv_parts: &'a [String],
}

pub fn build(d: &MeterData, t: &Traffic) -> Result<CpuReport, String> {
    let [a, b] = match d.edges.as_slice() {
        [a, b, ..] => [a, b],
        _ => return Err("the meter has no window (the test ended before its window closed)".into()),
    };
    let ds = b.light.stat.total.delta(&a.light.stat.total);
    let ncpu = b.light.stat.cores.len().max(1);
    let total_ticks = ds.total().max(1) as f64;
    let window_s = b.light.at.duration_since(a.light.at).as_secs_f64();
    // Parts (cgroups and processes) are precise run times: cpuacct.stat and /proc/PID/stat are
    // scaled to the scheduler's runtime. /proc/stat's busy columns are tick samples, which a
    // virtual machine can under-count, but its idle is precise (NO_HZ idle tracking). So the
    // machine's busy time is the wall-clock capacity less idle; ticks give only the proportions.
    let capacity_s = window_s * ncpu as f64;
    let idle_s = (ds.idle + ds.iowait) as f64 / d.ticks_per_s;
    let busy_s = (capacity_s - idle_s).max(0.0);
    let pct = |secs: f64| 100.0 * secs / capacity_s;
    let machine_busy_pct = pct(busy_s);
    let mut parts: Vec<PartCpu> = d
        .parts
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let s = (b.light.parts[i] - a.light.parts[i]).max(0.0);
            PartCpu { name: p.name.clone(), kind: p.kind, busy_pct: pct(s), cores: pct(s) / 100.0 * ncpu as f64, task_clock_ms: s * 1e3 }
        })
        .collect();
    let (kthreads, others) = procs::scan_delta(&a.scan, &b.scan);
    for (name, kind, s) in [("other processes", PartKind::Process, others), ("kernel threads", PartKind::Kernel, kthreads)] {
        parts.push(PartCpu { name: name.into(), kind, busy_pct: pct(s), cores: pct(s) / 100.0 * ncpu as f64, task_clock_ms: s * 1e3 });
    }
    let attributed: f64 = parts.iter().map(|p| p.busy_pct).sum();
    let unattributed = machine_busy_pct - attributed;
    parts.push(PartCpu {
        name: "kernel (unattributed)".into(),
        kind: PartKind::Kernel,
        busy_pct: unattributed,
        cores: unattributed / 100.0 * ncpu as f64,
        task_clock_ms: unattributed / 100.0 * capacity_s * 1e3,
    });
    let client_pct: f64 = parts.iter().filter(|p| p.kind == PartKind::Client).map(|p| p.busy_pct).sum();
    let host_busy_pct = machine_busy_pct - client_pct;
    let host_busy_cores = host_busy_pct / 100.0 * ncpu as f64;
    let busy_ticks = ds.busy().max(1) as f64;
    // A busy column's share of the tick samples, scaled to the precise busy time; idle is precise.
    let share = |v: u64| machine_busy_pct * v as f64 / busy_ticks;
    let _ = total_ticks;
    let split_pct: BTreeMap<String, f64> = [
        ("user", ds.user),
        ("nice", ds.nice),
        ("system", ds.system),
        ("irq", ds.irq),
        ("softirq", ds.softirq),
        ("steal", ds.steal),
        ("guest", ds.guest + ds.guest_nice),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), share(v)))
    .chain(std::iter::once(("idle".to_string(), 100.0 - machine_busy_pct)))
    .collect();
    let per_core_busy_pct = b
        .light
        .stat
        .cores
        .iter()
        .zip(&a.light.stat.cores)
        .map(|(y, x)| {
            let c = y.delta(x);
            (100.0 * (1.0 - (c.idle + c.iowait) as f64 / d.ticks_per_s / window_s)).clamp(0.0, 100.0)
        })
        .collect();
    let side = |names: &[String]| parts.iter().filter(|p| names.contains(&p.name)).map(|p| p.busy_pct).sum::<f64>();
    let demand = |per_unit: f64| Demand {
        host: host_busy_pct * 10_000.0 * ncpu as f64 / per_unit,
        send: side(t.send_parts) * 10_000.0 * ncpu as f64 / per_unit,
        recv: side(t.recv_parts) * 10_000.0 * ncpu as f64 / per_unit,
    };
    let kb_per_s = t.gbps.filter(|g| *g > 0.0 && t.transactions_per_s.is_none()).map(|g| g * 1e9 / 8.0 / 1024.0);
    let tps = t.transactions_per_s.filter(|x| *x > 0.0);
    let per_s = |k: &str| (b.irq.softirqs.get(k).copied().unwrap_or(0).saturating_sub(a.irq.softirqs.get(k).copied().unwrap_or(0))) as f64 / window_s;
    let softirq_per_s: BTreeMap<String, f64> = b.irq.softirqs.keys().map(|k| (k.clone(), per_s(k))).collect();
    let counters = match (&d.counters_unsupported, &a.counters, &b.counters) {
        (Some(why), _, _) => serde_json::json!(format!("not supported: {why}; task_clock_ms per part is given instead")),
        (None, Some(x), Some(y)) => serde_json::to_value(counters::delta(x, y)).unwrap(),
        _ => serde_json::json!("not read"),
    };
    let own = if d.own_wall_s > 0.0 { 100.0 * d.own_cpu_s / d.own_wall_s } else { 0.0 };
    let client_idx: Vec<usize> = d.parts.iter().enumerate().filter(|(_, p)| p.kind == PartKind::Client).map(|(i, _)| i).collect();
    let series = d
        .series
        .windows(2)
        .filter(|w| w[1].at > a.light.at && w[1].at <= b.light.at)
        .map(|w| {
            let dd = w[1].stat.total.delta(&w[0].stat.total);
            let cap = w[1].at.duration_since(w[0].at).as_secs_f64() * ncpu as f64;
            let client: f64 = client_idx.iter().map(|&i| (w[1].parts[i] - w[0].parts[i]).max(0.0)).sum();
            let idle = (dd.idle + dd.iowait) as f64 / d.ticks_per_s;
            let busy = 100.0 * ((cap - idle).max(0.0) - client) / cap;
            (w[1].at.duration_since(a.light.at).as_secs_f64(), busy.max(0.0))
        })
        .collect();
    Ok(CpuReport {
        window_s,
        ncpu,
        machine_busy_pct,
        host_busy_pct,
        host_busy_cores,
        split_pct,
        per_core_busy_pct,
        normalized_pct_per_gbps: t.gbps.filter(|g| *g > 0.0 && tps.is_none()).map(|g| host_busy_pct / g),
        cores_per_gbps: t.gbps.filter(|g| *g > 0.0 && tps.is_none()).map(|g| host_busy_cores / g),
        service_demand_us_per_kb: kb_per_s.map(demand),
        service_demand_us_per_tran: tps.map(demand),
        parts,
        softirq_per_s,
        interrupts_per_s: b.irq.interrupts.saturating_sub(a.irq.interrupts) as f64 / window_s,
        counters,
        meter: serde_json::json!({"hz": super::HZ, "own_cpu_pct_of_core": own, "counter_notes": d.counter_notes}),
        check: Check {
            attributed_pct: attributed,
            unattributed_kernel_pct: unattributed,
            machine_busy_pct,
            irq_softirq_pct: share(ds.irq + ds.softirq),
        },
        series,
    })
}

/// Reads a snapshot pair from fixtures (tests).
#[cfg(test)]
mod tests {
    use super::*;
    use crate::meter::{irqstat::Counts, procstat, Full, Light, MeterData, Part};
    use std::time::{Duration, Instant};

    fn full(at: Instant, stat: &str, parts: Vec<f64>, netrx: u64) -> Full {
        let mut irq = Counts::default();
        irq.softirqs.insert("NET_RX".into(), netrx);
        Full { light: Light { at, stat: procstat::parse(stat).unwrap(), parts }, scan: Default::default(), irq, counters: None }
    }

    #[test]
    fn parts_add_up_and_client_is_not_host_cpu() {
        let t0 = Instant::now();
        // 2 cores, 2 s window = 400 ticks: 100 user + 60 system + 40 softirq busy, 200 idle.
        let a = full(t0, "cpu  0 0 0 0 0 0 0 0 0 0\ncpu0 0 0 0 0\ncpu1 0 0 0 0\n", vec![0.0, 0.0], 0);
        let b = full(
            t0 + Duration::from_secs(2),
            "cpu  100 0 60 200 0 0 40 0 0 0\ncpu0 100 0 30 50 0 0 20 0\ncpu1 0 0 30 150 0 0 20 0\n",
            vec![1.0, 0.4], // g1 1.0 s, client 0.4 s
            2000,
        );
        let d = MeterData {
            parts: vec![
                Part { name: "g1".into(), kind: PartKind::Guest, cgroups: vec![], pid: None },
                Part { name: "client".into(), kind: PartKind::Client, cgroups: vec![], pid: None },
            ],
            series: vec![],
            edges: vec![a, b],
            counters_unsupported: Some("perf_event_open(cycles): No such file or directory".into()),
            counter_notes: vec![],
            own_cpu_s: 0.01,
            own_wall_s: 2.0,
            ticks_per_s: 100.0,
        };
        let send = vec!["g1".to_string()];
        let recv = vec!["client".to_string()];
        let r = build(&d, &Traffic { gbps: Some(2.0), transactions_per_s: None, send_parts: &send, recv_parts: &recv }).unwrap();
        assert_eq!(r.machine_busy_pct, 50.0);
        // g1 = 1 s of 4 s capacity = 25 %; client 10 %; the rest (15 %) is unattributed kernel.
        let g1 = r.parts.iter().find(|p| p.name == "g1").unwrap();
        assert_eq!((g1.busy_pct, g1.cores, g1.task_clock_ms), (25.0, 0.5, 1000.0));
        assert!((r.check.unattributed_kernel_pct - 15.0).abs() < 1e-9);
        let sum: f64 = r.parts.iter().map(|p| p.busy_pct).sum();
        assert!((sum - r.machine_busy_pct).abs() < 1e-9);
        assert!((r.host_busy_pct - 40.0).abs() < 1e-9);
        assert!((r.normalized_pct_per_gbps.unwrap() - 20.0).abs() < 1e-9);
        // netperf: 40 % × 10 000 × 2 CPUs ÷ (2 Gb/s in KB/s).
        let kbs = 2e9 / 8.0 / 1024.0;
        assert!((r.service_demand_us_per_kb.as_ref().unwrap().host - 40.0 * 10_000.0 * 2.0 / kbs).abs() < 1e-9);
        assert!((r.service_demand_us_per_kb.as_ref().unwrap().send - 25.0 * 20_000.0 / kbs).abs() < 1e-9);
        assert_eq!(r.softirq_per_s["NET_RX"], 1000.0);
        assert!(r.counters.as_str().unwrap().starts_with("not supported"));
        assert_eq!(r.split_pct["softirq"], 10.0);
        assert_eq!(r.per_core_busy_pct, vec![75.0, 25.0]);
    }

    #[test]
    fn rr_gets_service_demand_per_transaction() {
        let t0 = Instant::now();
        let a = full(t0, "cpu  0 0 0 0 0 0 0 0 0 0\ncpu0 0 0 0 0\n", vec![], 0);
        let b = full(t0 + Duration::from_secs(1), "cpu  50 0 0 50 0 0 0 0 0 0\ncpu0 50 0 0 50\n", vec![], 0);
        let d = MeterData { parts: vec![], series: vec![], edges: vec![a, b], counters_unsupported: None, counter_notes: vec![], own_cpu_s: 0.0, own_wall_s: 1.0, ticks_per_s: 100.0 };
        let r = build(&d, &Traffic { gbps: Some(0.01), transactions_per_s: Some(10_000.0), send_parts: &[], recv_parts: &[] }).unwrap();
        // 0.5 cores for 10 000 transactions/s = 50 µs each.
        assert!((r.service_demand_us_per_tran.unwrap().host - 50.0).abs() < 1e-9);
        assert!(r.service_demand_us_per_kb.is_none());
    }
}
