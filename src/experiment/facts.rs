//! Facts a run records beside its figures: the host (kernel and how it counts CPU time, CPU
//! model, cores, memory, cgroups, counters, the hypervisor beneath it) and, per lab, the MTU and
//! offloads read back from the kernel.

use crate::records::{EndpointFacts, HostFacts, IfaceFacts, LabFacts, NicFacts};

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
        cpu_accounting: crate::meter::kernel::Accounting::this().describe(),
        virtualization: virtualization(
            &read_small("/sys/hypervisor/type"),
            &read_small("/sys/devices/system/clocksource/clocksource0/available_clocksource"),
            &read_small("/sys/class/dmi/id/sys_vendor"),
            &cpuinfo,
        ),
        nics: nics(),
    }
}

/// The host's network devices, those with a device behind them (not the lab's, not virtual
/// links), each as `ethtool -i` reads it; reading is all that is done to them.
fn nics() -> Vec<NicFacts> {
    let mut names: Vec<String> = std::fs::read_dir("/sys/class/net")
        .map(|d| {
            d.flatten()
                .filter(|e| e.path().join("device").exists())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with("vl"))
                .take(64)
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    // A device ethtool cannot read is not in this network namespace (sysfs shows its mounter's).
    names
        .into_iter()
        .filter_map(|name| {
            let info = crate::lab::hostcmd::read(&["ethtool", "-i", &name]).ok()?;
            Some(nic(&name, &info))
        })
        .collect()
}

/// A device's facts from `ethtool -i`'s text.
pub fn nic(name: &str, ethtool_i: &str) -> NicFacts {
    let v = |k: &str| first_line_value(ethtool_i, &format!("{k}:")).unwrap_or_default();
    NicFacts {
        name: name.into(),
        driver: v("driver"),
        version: v("version"),
        firmware: v("firmware-version"),
        bus: v("bus-info"),
    }
}

/// A small kernel file's text, or nothing where it is missing.
fn read_small(path: &str) -> String {
    crate::text::read_capped(std::path::Path::new(path), 4096).unwrap_or_default()
}

/// Which hypervisor this machine runs under, from what the kernel shows: Xen's
/// `/sys/hypervisor/type`, a clocksource only a hypervisor offers (kvm-clock,
/// hyperv_clocksource), the DMI vendor; the CPU's hypervisor bit alone names no one; without it,
/// bare metal.
pub fn virtualization(
    hv_type: &str,
    clocksources: &str,
    dmi_vendor: &str,
    cpuinfo: &str,
) -> String {
    let named = [
        (clocksources, "kvm-clock", "KVM"),
        (clocksources, "hyperv_clocksource", "Hyper-V"),
        (clocksources, "xen", "Xen"),
        (dmi_vendor, "VMware", "VMware"),
        (dmi_vendor, "QEMU", "QEMU"),
        (dmi_vendor, "Microsoft", "Hyper-V"),
        (dmi_vendor, "innotek", "VirtualBox"),
    ];
    if !hv_type.trim().is_empty() {
        return hv_type.trim().to_string();
    }
    if let Some((_, _, name)) = named.iter().find(|(text, mark, _)| text.contains(mark)) {
        return name.to_string();
    }
    let flags = first_line_value(cpuinfo, "flags").unwrap_or_default();
    match flags.split_whitespace().any(|f| f == "hypervisor") {
        true => "a hypervisor the kernel does not name (the CPU's hypervisor bit is set)".into(),
        false => "none: bare metal".into(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nic_is_read_from_ethtool_i() {
        let text = "driver: ixgbe\nversion: 5.19.6-k\nfirmware-version: 0x800003df\nexpansion-rom-version: \nbus-info: 0000:3b:00.0\n";
        let n = nic("enp59s0f0", text);
        assert_eq!(
            (n.driver.as_str(), n.firmware.as_str()),
            ("ixgbe", "0x800003df")
        );
        assert_eq!(n.bus, "0000:3b:00.0");
        assert_eq!(n.describe(), "ixgbe fw 0x800003df");
        let v = nic(
            "eth0",
            "driver: virtio_net\nversion: 1.0.0\nfirmware-version: \n",
        );
        assert_eq!(v.describe(), "virtio_net");
        assert_eq!(nic("x", "").driver, "");
    }

    #[test]
    fn the_hypervisor_is_named_by_what_the_kernel_shows() {
        let hv = "flags\t\t: fpu vme hypervisor lahf_lm\n";
        let bare = "flags\t\t: fpu vme lahf_lm\n";
        assert_eq!(virtualization("xen\n", "", "", hv), "xen");
        assert_eq!(virtualization("", "tsc kvm-clock \n", "", hv), "KVM");
        assert_eq!(virtualization("", "tsc", "VMware, Inc.\n", hv), "VMware");
        assert!(virtualization("", "tsc", "", hv).contains("does not name"));
        assert_eq!(
            virtualization("", "tsc hpet", "Dell Inc.", bare),
            "none: bare metal"
        );
    }
}
