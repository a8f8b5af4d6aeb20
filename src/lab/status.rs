//! `vnetlab status`: each lab's endpoints with interface, MTU, addresses and offload states
//! read back from the kernel (ip -d link, ip addr, ethtool -k), not as requested.

use crate::lab::Error;
use serde::Serialize;
use std::collections::HashMap;

use super::folder;
use super::hostcmd;
use super::names::Names;
use super::state::{self, LabRecord};
use crate::vocab::{Gro, Mode, Role};

#[derive(Serialize, Debug, Clone)]
pub struct Iface {
    pub name: String,
    pub namespace: String,
    pub kind: String,
    pub mtu: u64,
    pub state: String,
    pub master: Option<String>,
    pub addresses: Vec<String>,
    /// ethtool -k: gro, lro, tso, gso, rx/tx checksumming.
    pub offloads: HashMap<String, String>,
    /// The root qdisc, if not the default.
    pub qdisc: Option<String>,
}

#[derive(Serialize, Debug)]
pub struct EndpointStatus {
    pub name: String,
    pub namespace: String,
    pub address: String,
    pub interface: Option<Iface>,
    /// The host-side end of a guest's link (its port on the bridge), if it has one.
    pub host_port: Option<Iface>,
    pub cgroups: Vec<String>,
    pub cpus: Option<String>,
    pub reach_from_client: Option<String>,
    /// The vNIC backend (modes emulated, paravirt): model, LRO, pid and whether it runs.
    pub vnic: Option<VnicStatus>,
    /// The QEMU VM (qemu-* modes): device, acceleration, size, boot time, pid and whether it runs.
    pub vm: Option<VmStatus>,
    /// The client on another machine: where its `vnetlab serve` answers (or "iperf3 only").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote: Option<String>,
}

/// A guest's QEMU VM as `status` finds it.
#[derive(Serialize, Debug)]
pub struct VmStatus {
    #[serde(flatten)]
    pub info: super::state::VmInfo,
    pub pid: Option<u32>,
    pub running: bool,
    pub console: std::path::PathBuf,
}

/// A guest's vNIC backend as `status` finds it.
#[derive(Serialize, Debug)]
pub struct VnicStatus {
    pub model: String,
    pub lro: bool,
    pub pid: Option<u32>,
    pub running: bool,
    pub log: std::path::PathBuf,
}

#[derive(Serialize, Debug)]
pub struct LabStatus {
    pub name: String,
    pub mode: Mode,
    pub complete: bool,
    /// What is missing from a lab whose journal says it is built (a namespace removed by hand, or
    /// a `down` cut short): `vnetlab down` removes the rest.
    pub damaged: Option<String>,
    /// Who uses the lab: a live process (pid), `up` (kept until down), or nobody (abandoned).
    pub usage: String,
    pub subnet: String,
    pub mtu_requested: u32,
    pub gro_requested: Gro,
    pub tso_requested: bool,
    pub wire: super::topology::Wire,
    pub cgroups: String,
    /// The CPU plan: the host's and the client's cores, and whether the lab is placed.
    pub cpus: crate::records::cpu::CpuPlan,
    /// Each wire end's receive steering, read back from the kernel.
    pub steering: Vec<super::steer::SteerStatus>,
    pub notes: Vec<String>,
    pub host: EndpointStatus,
    pub client: EndpointStatus,
    pub guests: Vec<EndpointStatus>,
    /// The bridge (bridge, nat) or other host-side interfaces.
    pub host_interfaces: Vec<Iface>,
}

#[derive(Serialize, Debug)]
pub struct Status {
    pub labs: Vec<LabStatus>,
    /// Labs whose record or journal is missing or unreadable (an interrupted `up`, or a journal
    /// someone changed).
    pub broken: Vec<String>,
}

pub fn status(only: Option<&str>) -> Result<Status, Error> {
    let mut labs = Vec::new();
    let mut broken = Vec::new();
    let names = match only {
        Some(l) => {
            state::load(l)?;
            vec![l.to_string()]
        }
        None => folder::labs(),
    };
    for l in names {
        // A lab whose record or journal cannot be read is broken: `cleanup` says why.
        let journal =
            |r: &LabRecord| super::journal::read(&folder::journal_path(&l), &r.topology.name);
        match state::load(&l).map(|r| (journal(&r), r)) {
            Ok((Ok(entries), r)) => labs.push(lab_status(&r, &entries)?),
            _ => broken.push(l),
        }
    }
    Ok(Status { labs, broken })
}

/// One lab read back: its journal's state, every interface the record names from the kernel,
/// and each endpoint with its port, backend and VM.
fn lab_status(r: &LabRecord, entries: &[super::journal::Entry]) -> Result<LabStatus, Error> {
    let t = &r.topology;
    let n = Names::new(&t.name);
    let damaged = gone_namespaces(entries);
    let links = read_all_links(r);
    let h = n.host_ns();
    let get = |ns: &str, dev: &str| links.get(&(ns.to_string(), dev.to_string())).cloned();
    let guest_port = super::plan::datapath::of(t.mode).guest_port();
    let ep = |role: Role| -> Result<EndpointStatus, Error> {
        let e = r.endpoint(role)?;
        let port = match role {
            Role::Guest(i) if guest_port => get(&h, &n.guest_port(i)),
            _ => None,
        };
        Ok(endpoint_status(e, get(&e.netns, &e.iface), port))
    };
    let wire_host = t.uplink.clone().unwrap_or_else(|| n.wire_host());
    let mut host_interfaces: Vec<Iface> = [wire_host, n.bridge()]
        .iter()
        .filter_map(|d| get(&h, d))
        .collect();
    host_interfaces.dedup_by(|a, b| a.name == b.name);
    Ok(LabStatus {
        name: t.name.clone(),
        mode: t.mode,
        complete: entries.contains(&super::journal::Entry::Complete) && damaged.is_none(),
        damaged,
        usage: usage(entries),
        subnet: t.subnet.to_string(),
        mtu_requested: t.mtu,
        gro_requested: t.gro,
        tso_requested: t.tso,
        wire: t.wire.clone(),
        cgroups: r.cgroups.clone(),
        cpus: r.cpus.clone(),
        steering: super::steer::read_back(r),
        notes: r.notes.clone(),
        host: ep(Role::Host)?,
        client: ep(Role::Client)?,
        guests: r.guests().map(|g| ep(g.role)).collect::<Result<_, _>>()?,
        host_interfaces,
    })
}

/// Which of the lab's journaled namespaces are gone, as the one line that says so.
fn gone_namespaces(entries: &[super::journal::Entry]) -> Option<String> {
    let missing: Vec<&str> = entries
        .iter()
        .filter_map(|e| match e {
            super::journal::Entry::Netns { name } => Some(name.as_str()),
            _ => None,
        })
        .filter(|n| !std::path::Path::new("/run/netns").join(n).exists())
        .collect();
    (!missing.is_empty()).then(|| format!("namespace {} is gone", missing.join(", ")))
}

/// Who holds the lab, as `status` says it.
fn usage(entries: &[super::journal::Entry]) -> String {
    match super::journal::usage(entries, crate::sys::alive) {
        super::journal::Usage::Owned { pid } => format!("in use by pid {pid}"),
        super::journal::Usage::Kept => "kept (made by `vnetlab up`)".into(),
        super::journal::Usage::Abandoned { why } => format!("abandoned: {why}"),
    }
}

/// Every interface of the lab's namespaces by (namespace, name): one `ip` read per namespace,
/// then ethtool per interface, a few at a time.
fn read_all_links(r: &LabRecord) -> HashMap<(String, String), Iface> {
    let mut namespaces: Vec<String> = r
        .endpoints
        .iter()
        .filter(|e| e.remote.is_none())
        .map(|e| e.netns.clone())
        .collect();
    namespaces.sort();
    namespaces.dedup();
    let mut links: HashMap<(String, String), Iface> = HashMap::new();
    for ns in &namespaces {
        for i in read_links(ns).unwrap_or_default() {
            links.insert((ns.clone(), i.name.clone()), i);
        }
    }
    let keys: Vec<(String, String)> = links
        .keys()
        .filter(|(_, name)| name != "lo")
        .cloned()
        .collect();
    for (k, o) in keys.iter().zip(read_offloads_of(&keys)) {
        if let Some(i) = links.get_mut(k) {
            i.offloads = o;
        }
    }
    links
}

/// The offloads of each (namespace, interface), read on four threads.
fn read_offloads_of(keys: &[(String, String)]) -> Vec<HashMap<String, String>> {
    std::thread::scope(|s| {
        let chunk = keys.len().div_ceil(4).max(1);
        let hs: Vec<_> = keys
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || {
                    part.iter()
                        .map(|(ns, dev)| read_offloads(ns, dev))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        hs.into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    })
}

/// One endpoint as `status` shows it, with its interface and host port as read back.
fn endpoint_status(
    e: &state::Endpoint,
    interface: Option<Iface>,
    host_port: Option<Iface>,
) -> EndpointStatus {
    EndpointStatus {
        name: e.role.to_string(),
        namespace: e.netns.clone(),
        address: e.address.to_string(),
        interface,
        host_port,
        cgroups: e.cgroups.iter().map(|p| p.display().to_string()).collect(),
        cpus: e.cpus.clone(),
        reach_from_client: e
            .reach_from_client
            .as_ref()
            .map(|rc| format!("{}:{}-{}", rc.address, rc.ports[0], rc.ports[1])),
        vnic: e.vnic.as_ref().map(vnic_status),
        vm: e.vm.as_ref().map(|v| {
            let files = v.files();
            VmStatus {
                info: v.clone(),
                pid: crate::guest::vm::pid(&files),
                running: crate::guest::vm::running(&files),
                console: files.console(),
            }
        }),
        remote: e.remote.as_ref().map(|rc| match rc.has_token {
            true => format!(
                "another machine: vnetlab serve at {}:{}",
                rc.address, rc.port
            ),
            false => format!(
                "another machine at {}: iperf3 only (no serve token)",
                rc.address
            ),
        }),
    }
}

/// A guest's vNIC backend: its model, and whether the process its stats name still runs.
fn vnic_status(v: &state::VnicInfo) -> VnicStatus {
    let st: Option<crate::vnic::backend::Stats> = std::fs::read(&v.stats)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    let pid = st.as_ref().map(|s| s.pid);
    VnicStatus {
        model: v.model.clone(),
        lro: v.lro,
        pid,
        running: pid.is_some_and(|p| crate::sys::alive(p, None)),
        log: v.log.clone(),
    }
}

/// Every interface of a namespace from `ip -d link` and `ip addr` (JSON).
pub fn read_links(ns: &str) -> Result<Vec<Iface>, Error> {
    let json = |args: &[&str]| -> Result<serde_json::Value, Error> {
        let out = hostcmd::read(args)?;
        serde_json::from_str(&out)
            .map_err(|e| Error::Failed(format!("cannot read `{}`: {e}", args.join(" "))))
    };
    let links = json(&["ip", "-n", ns, "-j", "-d", "link", "show"])?;
    let addrs = json(&["ip", "-n", ns, "-j", "addr", "show"])?;
    let qdiscs: serde_json::Value = hostcmd::read(&["tc", "-n", ns, "-j", "qdisc", "show"])
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or(serde_json::Value::Null);
    let mut out = Vec::new();
    for l in links.as_array().into_iter().flatten() {
        let name = l["ifname"].as_str().unwrap_or_default().to_string();
        let addresses = addrs
            .as_array()
            .into_iter()
            .flatten()
            .filter(|a| a["ifname"] == l["ifname"])
            .flat_map(|a| a["addr_info"].as_array().cloned().unwrap_or_default())
            .filter(|ai| ai["family"] == "inet")
            .map(|ai| format!("{}/{}", ai["local"].as_str().unwrap_or(""), ai["prefixlen"]))
            .collect();
        let qdisc = qdiscs
            .as_array()
            .into_iter()
            .flatten()
            .filter(|q| q["dev"] == l["ifname"] && q["root"] == true)
            .filter_map(|q| q["kind"].as_str())
            .find(|k| !matches!(*k, "noqueue" | "noop" | "pfifo_fast" | "fq_codel" | "mq"))
            .map(str::to_string);
        out.push(Iface {
            name,
            namespace: ns.to_string(),
            kind: l["linkinfo"]["info_kind"]
                .as_str()
                .unwrap_or("device")
                .to_string(),
            mtu: l["mtu"].as_u64().unwrap_or(0),
            state: l["operstate"].as_str().unwrap_or("UNKNOWN").to_string(),
            master: l["master"].as_str().map(str::to_string),
            addresses,
            offloads: HashMap::new(),
            qdisc,
        });
    }
    Ok(out)
}

/// The offload states that matter to the papers, from `ethtool -k`.
pub fn read_offloads(ns: &str, dev: &str) -> HashMap<String, String> {
    let out = hostcmd::read(&["ip", "netns", "exec", ns, "ethtool", "-k", dev]).unwrap_or_default();
    hostcmd::parse_offloads(&out)
}
