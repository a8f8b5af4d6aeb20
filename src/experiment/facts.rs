//! Facts a run records beside its figures: the host (kernel, CPU model, cores, memory, cgroups,
//! counters) and, per lab, the MTU and offloads read back from the kernel.

use crate::records::{EndpointFacts, HostFacts, IfaceFacts, LabFacts};

fn first_line_value(text: &str, key: &str) -> Option<String> {
    text.lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

pub fn host() -> HostFacts {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_kb: f64 = first_line_value(&meminfo, "MemTotal")
        .and_then(|v| v.split_whitespace().next().and_then(|n| n.parse().ok()))
        .unwrap_or(0.0);
    HostFacts {
        kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim()
            .to_string(),
        cpu_model: first_line_value(&cpuinfo, "model name").unwrap_or_else(|| "unknown".into()),
        cores: crate::sys::online_cpus().len(),
        memory_gib: (mem_kb / 1024.0 / 1024.0 * 10.0).round() / 10.0,
        cgroups: crate::lab::cgroup::detect().describe(),
        hardware_counters: match crate::meter::counters::probe() {
            Ok(()) => "supported".to_string(),
            Err(e) => format!("not supported: {e}"),
        },
        vnetlab: env!("CARGO_PKG_VERSION").into(),
    }
}

fn iface(i: &crate::lab::status::Iface) -> IfaceFacts {
    IfaceFacts {
        name: i.name.clone(),
        mtu: i.mtu,
        offloads: i
            .offloads
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        qdisc: i.qdisc.clone(),
    }
}

/// MTU and offloads of a lab's interfaces as the kernel reports them (the host, the client and
/// the first two guests).
pub fn lab(name: &str) -> LabFacts {
    let s = match crate::lab::status::status(Some(name)) {
        Ok(s) => s,
        Err(e) => {
            return LabFacts {
                error: Some(e.to_string()),
                ..Default::default()
            }
        }
    };
    let Some(l) = s.labs.first() else {
        return LabFacts::default();
    };
    let mut eps = vec![&l.host, &l.client];
    eps.extend(l.guests.iter().take(2));
    LabFacts {
        mode: Some(l.mode),
        endpoints: eps
            .into_iter()
            .map(|e| {
                (
                    e.name.clone(),
                    EndpointFacts {
                        interface: e.interface.as_ref().map(iface),
                        host_port: e.host_port.as_ref().map(iface),
                    },
                )
            })
            .collect(),
        host_interfaces: l.host_interfaces.iter().map(iface).collect(),
        error: None,
    }
}
