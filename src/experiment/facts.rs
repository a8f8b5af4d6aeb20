//! Facts a run records beside its figures: the host (kernel, CPU model, cores, memory, cgroups,
//! counters) and, per lab, the MTU and offloads read back from the kernel.

use serde_json::{json, Value};

fn first_line_value(text: &str, key: &str) -> Option<String> {
    text.lines().find(|l| l.starts_with(key)).and_then(|l| l.split_once(':')).map(|(_, v)| v.trim().to_string())
}

pub fn host() -> Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_kb: f64 = first_line_value(&meminfo, "MemTotal")
        .and_then(|v| v.split_whitespace().next().and_then(|n| n.parse().ok()))
        .unwrap_or(0.0);
    json!({
        "kernel": std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim(),
        "cpu_model": first_line_value(&cpuinfo, "model name").unwrap_or_else(|| "unknown".into()),
        "cores": crate::sys::online_cpus().len(),
        "memory_gib": (mem_kb / 1024.0 / 1024.0 * 10.0).round() / 10.0,
        "cgroups": crate::lab::cgroup::detect().describe(),
        "hardware_counters": match crate::meter::counters::probe() { Ok(()) => "supported".to_string(), Err(e) => format!("not supported: {e}") },
        "vnetlab": env!("CARGO_PKG_VERSION"),
    })
}

/// MTU and offloads of a lab's interfaces as the kernel reports them.
pub fn lab(name: &str) -> Value {
    match crate::lab::status::status(Some(name)) {
        Ok(s) => match s.labs.first() {
            Some(l) => {
                let iface = |i: &Option<crate::lab::status::Iface>| {
                    i.as_ref().map(|i| json!({"name": i.name, "mtu": i.mtu, "offloads": i.offloads, "qdisc": i.qdisc}))
                };
                let mut eps = vec![("host", &l.host), ("client", &l.client)];
                eps.extend(l.guests.iter().take(2).map(|g| (g.name.as_str(), g)));
                let endpoints: serde_json::Map<String, Value> = eps
                    .into_iter()
                    .map(|(n, e)| (n.to_string(), json!({"interface": iface(&e.interface), "host_port": iface(&e.host_port)})))
                    .collect();
                json!({"mode": l.mode, "endpoints": endpoints, "host_interfaces": l.host_interfaces.iter().map(|i| json!({"name": i.name, "mtu": i.mtu, "offloads": i.offloads, "qdisc": i.qdisc})).collect::<Vec<_>>()})
            }
            None => json!(null),
        },
        Err(e) => json!({ "error": e }),
    }
}
