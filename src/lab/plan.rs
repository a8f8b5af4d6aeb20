//! The planner: turns a `Topology` into the ordered steps that build it (each naming the
//! objects it makes, for the journal) and the `LabRecord` later commands use. Pure: it reads
//! nothing from the host, so `--dry-run` and the unit tests see exactly what `up` would run.

use std::net::Ipv4Addr;

use super::addr::{self, NAT_PORTS_PER_GUEST, NAT_PORT_BASE};
use super::cgroup::{self, Hierarchy};
use super::cpus::{CpuPlan, Steering};
use super::hostcmd::HostCmd;
use super::journal::Entry;
use super::names::Names;
use super::state::{Endpoint, LabRecord, NatReach, Side, SteeredIface};
use super::topology::Topology;
use crate::units::CpuList;
use crate::vocab::Mode;
use crate::vocab::Role;

pub enum Step {
    /// Journal `creates`, then run `cmd`.
    Run { creates: Vec<Entry>, cmd: HostCmd },
    /// Move VF number `vf` of `pf` into `netns`, renamed `name` (its current name is read at build time).
    MoveVf {
        pf: String,
        vf: u32,
        netns: String,
        name: String,
    },
    /// Start guest `guest`'s vNIC backend (a `vnetlab vnic` process) in the host namespace and
    /// its own cgroup; it lives until `down` (it is in the lab's namespace and cgroup).
    StartBackend {
        guest: String,
        args: Vec<String>,
        netns: String,
        cgroups: Vec<std::path::PathBuf>,
        stats: std::path::PathBuf,
        log: std::path::PathBuf,
    },
    /// Place the threaded-NAPI kernel threads of `dev` (in `netns`) on `cpus`: they receive the
    /// frames that cross the wire to this side, as a NIC's interrupt would on that machine.
    PlaceNapi {
        netns: String,
        dev: String,
        cpus: CpuList,
    },
}

/// What the builder read about an SR-IOV PF before planning.
pub struct SriovPf {
    pub pf: String,
    pub numvfs: u32,
    pub totalvfs: u32,
}

pub struct Plan {
    pub record: LabRecord,
    pub steps: Vec<Step>,
}

/// SR-IOV needs one VF per guest, one for the client and one for the host's own port.
pub fn sriov_vfs_needed(guests: u32) -> u32 {
    guests + 2
}

pub fn plan(
    t: &Topology,
    cg: &Hierarchy,
    cpus: &CpuPlan,
    sriov: Option<&SriovPf>,
) -> Result<Plan, String> {
    t.validate()?;
    let n = Names::new(&t.name);
    let a = addr::allocate(t.mode, &t.subnet, t.guests);
    let (h, c) = (n.host_ns(), n.client_ns());
    let native = t.mode == Mode::Native;
    // The userspace device models: the guest's NIC is a tap, a backend process moves its frames
    // to a tap on the host's bridge.
    let vnic = matches!(t.mode, Mode::Emulated | Mode::Paravirt);
    let bridged = matches!(t.mode, Mode::Bridge | Mode::Nat) || vnic;
    let guest_ns = |i: u32| if native { h.clone() } else { n.guest_ns(i) };
    let guests: Vec<u32> = (1..=t.guests).collect();
    let mut steps = Vec::new();
    let mut notes = Vec::new();
    let run = |creates: Vec<Entry>, cmd: HostCmd| Step::Run { creates, cmd };
    let inns = |ns: &str, obj: String| Entry::InNetns {
        netns: ns.to_string(),
        object: obj,
    };

    // 1. Cgroups: host, client, g1…, each confined to its side's cores when the lab is placed.
    let placed = |l: CpuList| cpus.placed.then(|| l.to_string());
    let mut parts = vec![
        ("host".to_string(), placed(cpus.host.clone())),
        ("client".to_string(), placed(cpus.client.clone())),
    ];
    parts.extend(
        guests
            .iter()
            .map(|&i| (Role::Guest(i).to_string(), placed(cpus.guest(i)))),
    );
    if vnic {
        parts.extend(
            guests
                .iter()
                .map(|&i| (format!("vnic-{}", Role::Guest(i)), placed(cpus.backend(i)))),
        );
    }
    if let Some(why) = &cpus.unplaced_because {
        notes.push(format!("unplaced: {why}; every result says so"));
    }
    // A backend is a process per guest, a kernel datapath is not: past these many guests per host
    // core, a test from every guest at once may leave some with nothing (the result names them).
    let per_core = if vnic { 16 } else { 128 };
    if t.guests as usize > per_core * cpus.host.len().max(1) {
        notes.push(format!(
            "{} guests on {} host core(s): more than this host can drive at once in mode {} (about {per_core} per core); a test from every guest may starve some, and says which",
            t.guests,
            cpus.host.len(),
            t.mode
        ));
    }
    let cgp = cgroup::plan(cg, &n.cgroup(), &parts)?;
    if let Hierarchy::None { why } = cg {
        notes.push(format!("no per-part CPU accounting: {why}"));
    }
    steps.extend(cgp.steps.into_iter().map(|(e, cmd)| run(e, cmd)));
    let folders = |part: &str| {
        cgp.folders
            .iter()
            .find(|(p, _)| p == part)
            .map(|(_, f)| f.clone())
            .unwrap()
    };
    let cpus_of = |part: &str| {
        parts
            .iter()
            .find(|(p, _)| p == part)
            .and_then(|(_, c)| c.clone())
    };

    // 2. Namespaces and the links between them, made straight inside the lab's namespaces.
    let mut creates = Vec::new();
    let mut lines = Vec::new();
    let mut namespaces = vec![h.clone(), c.clone()];
    if !native {
        namespaces.extend(guests.iter().map(|&i| n.guest_ns(i)));
    }
    for ns in &namespaces {
        creates.push(Entry::Netns { name: ns.clone() });
        lines.push(format!("netns add {ns}"));
    }
    let (wh, wc) = (n.wire_host(), n.wire_client());
    if t.mode != Mode::Sriov {
        creates.push(inns(&h, format!("link {wh}")));
        creates.push(inns(&c, format!("link {wc}")));
        lines.push(format!(
            "link add {wh} netns {h} type veth peer name {wc} netns {c}"
        ));
    }
    if matches!(t.mode, Mode::Bridge | Mode::Nat) {
        for &i in &guests {
            let (port, gif, gns) = (n.guest_port(i), n.guest_if(i), n.guest_ns(i));
            creates.push(inns(&h, format!("link {port}")));
            creates.push(inns(&gns, format!("link {gif}")));
            lines.push(format!(
                "link add {port} netns {h} type veth peer name {gif} netns {gns}"
            ));
        }
    }
    steps.push(run(creates, HostCmd::ip(None, lines)));

    // 2b. SR-IOV: VFs into the host (its port), the client and each guest.
    if let Some(s) = sriov {
        let need = sriov_vfs_needed(t.guests);
        if s.totalvfs < need {
            return Err(format!(
                "{} offers {} VFs and this lab needs {need} (one per guest, one for the client, one for the host): use fewer guests",
                s.pf, s.totalvfs
            ));
        }
        if s.numvfs < need {
            if s.numvfs != 0 {
                return Err(format!(
                    "{} has {} VFs enabled, fewer than the {need} this lab needs; vnetlab will not change VFs already in use: set sriov_numvfs to 0 or to {need} or more",
                    s.pf, s.numvfs
                ));
            }
            let path = format!("/sys/class/net/{}/device/sriov_numvfs", s.pf).into();
            steps.push(run(
                vec![Entry::NumVfs {
                    pf: s.pf.clone(),
                    previous: s.numvfs,
                }],
                HostCmd::Write {
                    path,
                    value: need.to_string(),
                },
            ));
        }
        steps.push(Step::MoveVf {
            pf: s.pf.clone(),
            vf: 0,
            netns: h.clone(),
            name: wh.clone(),
        });
        steps.push(Step::MoveVf {
            pf: s.pf.clone(),
            vf: 1,
            netns: c.clone(),
            name: wc.clone(),
        });
        for &i in &guests {
            steps.push(Step::MoveVf {
                pf: s.pf.clone(),
                vf: i + 1,
                netns: n.guest_ns(i),
                name: n.guest_if(i),
            });
        }
    }

    // 3. The host: its port on the wire, the bridge (bridge, nat), macvlans (macvlan), addresses.
    let mtu = t.mtu;
    let wlen = a.wire.len;
    let mut creates = Vec::new();
    let mut lines = vec![
        "link set lo up".to_string(),
        format!("link set {wh} mtu {mtu}"),
    ];
    let br = n.bridge();
    let vnet_hdr = if t.mode == Mode::Paravirt {
        " vnet_hdr"
    } else {
        ""
    };
    let host_iface = match t.mode {
        Mode::Bridge | Mode::Nat | Mode::Emulated | Mode::Paravirt => {
            creates.push(inns(&h, format!("link {br}")));
            lines.push(format!("link add {br} type bridge"));
            for &i in &guests {
                let port = n.guest_port(i);
                if vnic {
                    creates.push(inns(&h, format!("link {port}")));
                    lines.push(format!("tuntap add dev {port} mode tap{vnet_hdr}"));
                }
                lines.push(format!("link set {port} mtu {mtu}"));
                lines.push(format!("link set {port} master {br}"));
                lines.push(format!("link set {port} up"));
            }
            if t.mode != Mode::Nat {
                lines.push(format!("link set {wh} master {br}"));
                lines.push(format!("addr add {}/{wlen} dev {br}", a.host));
            } else {
                lines.push(format!("addr add {}/{wlen} dev {wh}", a.host));
                lines.push(format!(
                    "addr add {}/{} dev {br}",
                    a.host_inner.unwrap(),
                    a.guest_net.len
                ));
            }
            lines.push(format!("link set {br} mtu {mtu}"));
            lines.push(format!("link set {br} up"));
            if t.mode != Mode::Nat {
                br.clone()
            } else {
                wh.clone()
            }
        }
        Mode::Macvlan => {
            for &i in &guests {
                let gif = n.guest_if(i);
                creates.push(inns(&h, format!("link {gif}")));
                lines.push(format!("link add {gif} link {wh} type macvlan mode bridge"));
                lines.push(format!("link set {gif} netns {}", n.guest_ns(i)));
            }
            lines.push(format!("addr add {}/{wlen} dev {wh}", a.host));
            wh.clone()
        }
        _ => {
            lines.push(format!("addr add {}/{wlen} dev {wh}", a.host));
            wh.clone()
        }
    };
    lines.push(format!("link set {wh} up"));
    steps.push(run(creates, HostCmd::ip(Some(&h), lines)));

    // 4. The client.
    let lines = vec![
        "link set lo up".to_string(),
        format!("link set {wc} mtu {mtu}"),
        format!("addr add {}/{wlen} dev {wc}", a.client),
        format!("link set {wc} up"),
    ];
    steps.push(run(vec![], HostCmd::ip(Some(&c), lines)));

    // 5. The guests (in native mode they are processes on the host: nothing to make).
    if !native {
        for (k, &i) in guests.iter().enumerate() {
            let gif = n.guest_if(i);
            let mut creates = vec![];
            let mut lines = vec![];
            if vnic {
                creates.push(inns(&n.guest_ns(i), format!("link {gif}")));
                lines.push(format!("tuntap add dev {gif} mode tap{vnet_hdr}"));
            }
            lines.extend([
                "link set lo up".to_string(),
                format!("link set {gif} mtu {mtu}"),
                format!("addr add {}/{} dev {gif}", a.guests[k], a.guest_net.len),
                format!("link set {gif} up"),
            ]);
            if t.mode == Mode::Nat {
                lines.push(format!(
                    "route add {} via {}",
                    a.wire,
                    a.host_inner.unwrap()
                ));
            }
            steps.push(run(creates, HostCmd::ip(Some(&n.guest_ns(i)), lines)));
        }
    }

    // 5b. The device-model backends, one per guest.
    if vnic {
        for &i in &guests {
            let g = Role::Guest(i).to_string();
            let mut args = vec![
                "vnic".to_string(),
                "--model".into(),
                t.mode.to_string(),
                "--guest-ns".into(),
                n.guest_ns(i),
                "--guest-tap".into(),
                n.guest_if(i),
                "--host-ns".into(),
                h.clone(),
                "--host-tap".into(),
                n.guest_port(i),
                "--mtu".into(),
                t.mtu.to_string(),
                "--stats".into(),
                super::state::vnic_stats_path(&t.name, &g)
                    .display()
                    .to_string(),
            ];
            if t.lro {
                args.push("--lro".into());
            }
            steps.push(Step::StartBackend {
                guest: g.clone(),
                args,
                netns: h.clone(),
                cgroups: folders(&format!("vnic-{g}")),
                stats: super::state::vnic_stats_path(&t.name, &g),
                log: super::state::vnic_log_path(&t.name, &g),
            });
        }
    }

    // 6. Wire shaping: rate (tbf), delay and loss (netem), on both ends' egress. Unshaped, each
    // end still gets a queue (pfifo, a NIC's txqueuelen): with one, a full veth ring stops the
    // queue as a full NIC ring would, instead of dropping (veth's default is no queue at all).
    let w = &t.wire;
    let shaped = w.rate.is_some() || w.delay.is_some() || w.loss.is_some();
    for (ns, dev) in [(&h, &wh), (&c, &wc)] {
        let lines = if shaped {
            shaping(dev, t)
        } else {
            vec![format!(
                "qdisc add dev {dev} root handle 1: pfifo limit 1000"
            )]
        };
        steps.push(run(
            vec![inns(ns, format!("qdisc root dev {dev}"))],
            HostCmd::Tc {
                netns: Some(ns.clone()),
                lines,
            },
        ));
    }

    // 7. Offloads: GRO where --gro puts it, TSO/GSO per --tso. The wire's host end is the host's
    // NIC: its TSO is the NIC's hardware (no host CPU), so it follows --tso; the client's end
    // segments its sends to MTU frames (--wire-segment), so the host's GRO has frames to merge.
    let onoff = |b: bool| if b { "on" } else { "off" };
    let client_tso = if w.segment { false } else { t.tso };
    let mut eth = vec![
        (h.clone(), wh.clone(), t.gro.host(), t.tso),
        (c.clone(), wc.clone(), true, client_tso),
    ];
    // Emulated NICs have no offloads: the guest segments and checksums.
    let guest_tso = t.tso && t.mode != Mode::Emulated;
    if bridged {
        eth.push((h.clone(), br.clone(), t.gro.host(), t.tso));
        for &i in &guests {
            eth.push((h.clone(), n.guest_port(i), t.gro.host(), guest_tso));
        }
    }
    if !native {
        for &i in &guests {
            eth.push((n.guest_ns(i), n.guest_if(i), t.gro.guest(), guest_tso));
        }
    }
    for (ns, dev, gro, tso) in eth {
        let args = [
            "-K",
            &dev,
            "gro",
            onoff(gro),
            "tso",
            onoff(tso),
            "gso",
            onoff(tso),
        ];
        steps.push(run(
            vec![],
            HostCmd::Ethtool {
                netns: ns,
                args: args.iter().map(|s| s.to_string()).collect(),
            },
        ));
    }

    // 7b. The wire is a machine boundary: frames arriving on each end are received on that
    // side's cores (RPS, and threaded NAPI placed there where the end runs GRO), and each end
    // transmits from its side's cores (XPS).
    // An end runs GRO (NAPI) only on MTU frames: the host's end on the client's segmented sends,
    // the client's end only when the host's sends MTU frames too (--tso off).
    let mut steered = Vec::new();
    if cpus.placed {
        let client_gets_frames = !t.tso && w.segment;
        for (ns, dev, side, list, gro) in [
            (&h, &wh, Side::Host, &cpus.host, t.gro.host()),
            (&c, &wc, Side::Client, &cpus.client, client_gets_frames),
        ] {
            let threaded = gro && cpus.steering == Steering::ThreadedNapiRps;
            let mask = list.mask();
            steps.push(run(
                vec![],
                HostCmd::Steer {
                    netns: ns.clone(),
                    dev: dev.clone(),
                    rps: mask.clone(),
                    xps: mask,
                    threaded,
                },
            ));
            if threaded {
                steps.push(Step::PlaceNapi {
                    netns: ns.clone(),
                    dev: dev.clone(),
                    cpus: list.clone(),
                });
            }
            steered.push(SteeredIface {
                netns: ns.clone(),
                iface: dev.clone(),
                side,
                cpus: list.clone(),
                napi_threaded: threaded,
            });
        }
    }

    // 8. NAT: forwarding and masquerade out of the wire; port blocks forwarded to each guest.
    if t.mode == Mode::Nat {
        steps.push(run(
            vec![],
            HostCmd::Sysctl {
                netns: h.clone(),
                key: "net.ipv4.ip_forward".into(),
                value: "1".into(),
            },
        ));
        let table = n.nft_table();
        let mut s = format!("table ip {table} {{\n  chain post {{\n    type nat hook postrouting priority srcnat; policy accept;\n");
        s += &format!(
            "    ip saddr {} oifname \"{wh}\" masquerade\n  }}\n",
            a.guest_net
        );
        s += "  chain pre {\n    type nat hook prerouting priority dstnat; policy accept;\n";
        for (k, _) in guests.iter().enumerate() {
            let [lo, hi] = nat_ports(k as u32);
            s += &format!("    iifname \"{wh}\" ip daddr {} meta l4proto {{ tcp, udp }} th dport {lo}-{hi} dnat to {}\n", a.host, a.guests[k]);
        }
        s += "  }\n}\n";
        steps.push(run(
            vec![inns(&h, format!("nft table ip {table}"))],
            HostCmd::Nft {
                netns: h.clone(),
                script: s,
            },
        ));
    }

    // The record other commands use.
    let mut endpoints = vec![
        Endpoint {
            role: Role::Host,
            netns: h.clone(),
            address: a.host,
            iface: host_iface.clone(),
            cgroups: folders("host"),
            cpus: cpus_of("host"),
            reach_from_client: None,
            vnic: None,
        },
        Endpoint {
            role: Role::Client,
            netns: c.clone(),
            address: a.client,
            iface: wc.clone(),
            cgroups: folders("client"),
            cpus: cpus_of("client"),
            reach_from_client: None,
            vnic: None,
        },
    ];
    for (k, &i) in guests.iter().enumerate() {
        let g = Role::Guest(i).to_string();
        let (address, iface): (Ipv4Addr, String) = if native {
            (a.host, host_iface.clone())
        } else {
            (a.guests[k], n.guest_if(i))
        };
        let reach = (t.mode == Mode::Nat).then(|| NatReach {
            address: a.host,
            ports: nat_ports(k as u32),
        });
        let vnic_info = vnic.then(|| super::state::VnicInfo {
            model: t.mode.to_string(),
            lro: t.lro,
            stats: super::state::vnic_stats_path(&t.name, &g),
            log: super::state::vnic_log_path(&t.name, &g),
            cgroups: folders(&format!("vnic-{g}")),
        });
        endpoints.push(Endpoint {
            role: Role::Guest(i),
            netns: guest_ns(i),
            address,
            iface,
            cgroups: folders(&g),
            cpus: cpus_of(&g),
            reach_from_client: reach,
            vnic: vnic_info,
        });
    }
    if t.mode == Mode::Sriov && (w.rate.is_some() || w.delay.is_some() || w.loss.is_some()) {
        notes.push("sriov: wire shaping applies to the host's and the client's VFs, not between guests (the NIC switches those)".into());
    }
    let record = LabRecord {
        topology: t.clone(),
        addressing: a,
        endpoints,
        cgroups: cg.describe(),
        notes,
        cpus: cpus.clone(),
        steered,
    };
    Ok(Plan { record, steps })
}

/// The forwarded port block of the k-th guest (0-based) behind NAT.
pub fn nat_ports(k: u32) -> [u16; 2] {
    let lo = NAT_PORT_BASE + (k as u16) * NAT_PORTS_PER_GUEST;
    [lo, lo + NAT_PORTS_PER_GUEST - 1]
}

/// tc lines for one wire end: netem (delay, loss) at the root with tbf (rate) below it.
fn shaping(dev: &str, t: &Topology) -> Vec<String> {
    let w = &t.wire;
    let tbf = |parent: &str| {
        let r = w.rate.unwrap().0;
        // A burst of at least one timer tick at the rate, and room for a 64 KB super-frame.
        let burst = (r / 8 / 250).max(2 * 65536 + 2 * t.mtu as u64);
        format!(
            "qdisc add dev {dev} {parent} tbf rate {}bit burst {burst} latency 50ms",
            r
        )
    };
    if w.delay.is_none() && w.loss.is_none() {
        return vec![tbf("root handle 1:")];
    }
    let mut netem = format!("qdisc add dev {dev} root handle 1: netem limit 100000");
    if let Some(d) = w.delay {
        netem += &format!(" delay {}us", d.0);
    }
    if let Some(l) = w.loss {
        netem += &format!(" loss {}%", l.0);
    }
    let mut v = vec![netem];
    if w.rate.is_some() {
        v.push(tbf("parent 1: handle 2:"));
    }
    v
}

/// Every command the plan runs, as shell text (for --dry-run).
pub fn shell(p: &Plan) -> Vec<String> {
    p.steps.iter().map(shell_step).collect()
}

pub fn shell_step(s: &Step) -> String {
    match s {
            Step::Run { cmd, .. } => cmd.shell(),
            Step::MoveVf { pf, vf, netns, name } => format!(
                "ip link set dev $(ls /sys/class/net/{pf}/device/virtfn{vf}/net) netns {netns} name {name}"
            ),
            Step::StartBackend { args, netns, log, .. } => {
                format!("ip netns exec {netns} vnetlab {} > {} 2>&1 &  # in its own cgroup", args.join(" "), log.display())
            }
            Step::PlaceNapi { dev, cpus, .. } => format!("taskset -pc {cpus} $(pgrep '^napi/{dev}-')"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{Delay, Rate};

    fn unplaced() -> CpuPlan {
        crate::lab::cpus::plan(&[0, 1], None, None, false, Err("test".into())).unwrap()
    }

    fn plan_of(t: &Topology) -> Plan {
        let cg = Hierarchy::V1 {
            cpuacct: "/nonexistent/cpuacct".into(),
            cpuset: None,
        };
        plan(t, &cg, &unplaced(), None).unwrap()
    }

    /// A placed plan against a fake cpuset root holding 2 CPUs.
    fn placed_plan_of(t: &Topology) -> Plan {
        let root = std::env::temp_dir().join(format!("vnetlab-cpuset-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("cpuset.cpus"), "0-1\n").unwrap();
        std::fs::write(root.join("cpuset.mems"), "0\n").unwrap();
        let cg = Hierarchy::V1 {
            cpuacct: "/nonexistent/cpuacct".into(),
            cpuset: Some(root),
        };
        let mut cpus = crate::lab::cpus::plan(&[0, 1], None, None, t.pin, Ok(())).unwrap();
        cpus.steering = Steering::ThreadedNapiRps;
        plan(t, &cg, &cpus, None).unwrap()
    }

    #[test]
    fn a_placed_lab_confines_each_side_and_steers_both_wire_ends() {
        let t = Topology {
            mode: Mode::Paravirt,
            guests: 2,
            gro: crate::vocab::Gro::Guest,
            tso: false,
            ..Default::default()
        };
        let p = placed_plan_of(&t);
        let text = shell(&p).join("\n");
        // The client's folder holds CPU 1, the host's parts CPU 0.
        for (part, cpu) in [
            ("client", "1"),
            ("host", "0"),
            ("g2", "0"),
            ("vnic-g1", "0"),
        ] {
            let line = format!(
                "echo {cpu} > {}",
                std::env::temp_dir()
                    .join(format!(
                        "vnetlab-cpuset-{}/vnetlab/vllab/{part}/cpuset.cpus",
                        std::process::id()
                    ))
                    .display()
            );
            assert!(text.contains(&line), "{part}: {line} missing in\n{text}");
        }
        // RPS/XPS on both ends; threaded NAPI only where the end runs GRO on MTU frames: here the
        // client's (the host sends MTU frames with --tso off), not the host's (--gro guest).
        assert!(text.contains("ip netns exec vllab-host sh -c 'for q in /sys/class/net/vllabw/queues/rx-*; do echo 00000001 > $q/rps_cpus; done; for q in /sys/class/net/vllabw/queues/tx-*; do echo 00000001 > $q/xps_cpus; done'"), "{text}");
        assert!(text.contains("echo 00000002 > $q/rps_cpus; done; for q in /sys/class/net/vllabc/queues/tx-*; do echo 00000002 > $q/xps_cpus; done; echo 1 > /sys/class/net/vllabc/threaded'"), "{text}");
        assert!(text.contains("taskset -pc 1 $(pgrep '^napi/vllabc-')"));
        assert!(!text.contains("napi/vllabw"));
        // By default the host's NIC does TSO, so only the host's end receives frames to merge.
        let d = placed_plan_of(&Topology::default());
        let text = shell(&d).join("\n");
        assert!(
            text.contains("napi/vllabw") && !text.contains("napi/vllabc"),
            "{text}"
        );
        assert!(
            text.contains("ethtool -K vllabw gro on tso on gso on")
                && text.contains("ethtool -K vllabc gro on tso off gso off")
        );
        assert!(text.contains("qdisc add dev vllabw root handle 1: pfifo limit 1000"));
        let r = &p.record;
        assert!(r.cpus.placed);
        assert_eq!(r.steered.len(), 2);
        assert_eq!(
            (r.steered[1].side, r.steered[1].napi_threaded),
            (Side::Client, true)
        );
        assert_eq!(r.endpoint(Role::Client).unwrap().cpus.as_deref(), Some("1"));
    }

    #[test]
    fn an_unplaced_lab_steers_nothing_and_says_why() {
        let p = plan_of(&Topology::default());
        assert!(!shell(&p).join("\n").contains("rps_cpus"));
        assert!(
            p.record.notes.iter().any(|n| n.starts_with("unplaced")),
            "{:?}",
            p.record.notes
        );
        assert!(!p.record.cpus.placed && p.record.steered.is_empty());
    }

    fn created(p: &Plan) -> Vec<Entry> {
        p.steps
            .iter()
            .flat_map(|s| match s {
                Step::Run { creates, .. } => creates.clone(),
                _ => vec![],
            })
            .collect()
    }

    #[test]
    fn every_created_object_is_journaled_and_named_vl() {
        for mode in [Mode::Native, Mode::Bridge, Mode::Nat, Mode::Macvlan] {
            let t = Topology {
                mode,
                guests: 3,
                ..Default::default()
            };
            let p = plan_of(&t);
            let text = shell(&p).join("\n");
            let made = created(&p);
            for word in text.split_whitespace() {
                if word.starts_with("vl") && !word.contains('/') {
                    let w = word.trim_matches('"');
                    assert!(
                        made.iter()
                            .any(|e| serde_json::to_string(e).unwrap().contains(w)),
                        "{mode}: {w} is used but not journaled"
                    );
                }
            }
            for line in text.lines() {
                if let Some(rest) = line.strip_prefix("ip -batch - <<'EOF'") {
                    assert!(rest.is_empty());
                }
                assert!(!line.contains("eth0"), "{line}");
            }
        }
    }

    #[test]
    fn bridge_lab_puts_guests_and_wire_on_one_bridge() {
        let p = plan_of(&Topology {
            guests: 2,
            ..Default::default()
        });
        let text = shell(&p).join("\n");
        assert!(text.contains("link set vllabw master vllabbr"));
        assert!(text.contains("link set vllabg2h master vllabbr"));
        assert!(text.contains("ip -n vllab-g2 -batch"));
        assert!(text.contains("addr add 10.213.0.4/16 dev vllabg2"));
        assert!(!text.contains("route add default"));
        let g2 = p.record.endpoint(Role::Guest(2)).unwrap();
        assert_eq!(
            (g2.netns.as_str(), g2.iface.as_str()),
            ("vllab-g2", "vllabg2")
        );
        // The client's end segments its sends to MTU frames; the host's end is a NIC with TSO.
        assert!(text.contains("ethtool -K vllabc gro on tso off gso off"));
        assert!(text.contains("ethtool -K vllabw gro on tso on gso on"));
    }

    #[test]
    fn nat_lab_masquerades_and_forwards_ports() {
        let p = plan_of(&Topology {
            mode: Mode::Nat,
            guests: 2,
            ..Default::default()
        });
        let text = shell(&p).join("\n");
        assert!(text.contains("masquerade"));
        assert!(text.contains("th dport 20100-20199 dnat to 10.213.128.3"));
        assert!(text.contains("route add 10.213.0.0/17 via 10.213.128.1"));
        assert!(text.contains("net.ipv4.ip_forward=1"));
        assert_eq!(
            p.record
                .endpoint(Role::Guest(1))
                .unwrap()
                .reach_from_client
                .as_ref()
                .unwrap()
                .ports,
            [20000, 20099]
        );
    }

    #[test]
    fn native_guests_live_on_the_host() {
        let p = plan_of(&Topology {
            mode: Mode::Native,
            guests: 2,
            ..Default::default()
        });
        let g1 = p.record.endpoint(Role::Guest(1)).unwrap();
        assert_eq!(g1.netns, "vllab-host");
        assert!(!shell(&p).join("\n").contains("vllab-g1"));
    }

    #[test]
    fn macvlan_hangs_guests_off_the_wire() {
        let p = plan_of(&Topology {
            mode: Mode::Macvlan,
            guests: 2,
            ..Default::default()
        });
        let text = shell(&p).join("\n");
        assert!(text.contains("link add vllabg1 link vllabw type macvlan mode bridge"));
        assert!(text.contains("link set vllabg1 netns vllab-g1"));
        assert!(!text.contains("type bridge"));
    }

    #[test]
    fn wire_shaping_uses_netem_and_tbf() {
        let mut t = Topology::default();
        t.wire.rate = Some(Rate(1_000_000_000));
        let text = shell(&plan_of(&t)).join("\n");
        assert!(
            text.contains("qdisc add dev vllabw root handle 1: tbf rate 1000000000bit"),
            "{text}"
        );
        t.wire.delay = Some(Delay(5000));
        let text = shell(&plan_of(&t)).join("\n");
        assert!(text.contains("root handle 1: netem limit 100000 delay 5000us"));
        assert!(text.contains("qdisc add dev vllabc parent 1: handle 2: tbf"));
    }

    #[test]
    fn gro_goes_where_asked() {
        use crate::vocab::Gro;
        let t = Topology {
            gro: Gro::Guest,
            ..Default::default()
        };
        let text = shell(&plan_of(&t)).join("\n");
        assert!(text.contains("ethtool -K vllabw gro off"));
        assert!(text.contains("ethtool -K vllabg1 gro on"));
        let t = Topology {
            gro: Gro::Host,
            tso: false,
            ..Default::default()
        };
        let text = shell(&plan_of(&t)).join("\n");
        assert!(text.contains("ethtool -K vllabw gro on"));
        assert!(text.contains("ethtool -K vllabg1 gro off tso off gso off"));
    }

    #[test]
    fn sriov_needs_enough_vfs_and_leaves_used_ones_alone() {
        let cg = Hierarchy::None { why: "test".into() };
        let t = Topology {
            mode: Mode::Sriov,
            guests: 2,
            pf: Some("enp1s0f0".into()),
            ..Default::default()
        };
        let pf = SriovPf {
            pf: "enp1s0f0".into(),
            numvfs: 0,
            totalvfs: 16,
        };
        let p = plan(&t, &cg, &unplaced(), Some(&pf)).unwrap();
        let text = shell(&p).join("\n");
        assert!(text.contains("echo 4 > /sys/class/net/enp1s0f0/device/sriov_numvfs"));
        assert!(text.contains("virtfn3/net) netns vllab-g2 name vllabg2"));
        let busy = SriovPf { numvfs: 2, ..pf };
        assert!(plan(&t, &cg, &unplaced(), Some(&busy))
            .err()
            .unwrap()
            .contains("will not change"));
        let small = SriovPf {
            pf: "x".into(),
            numvfs: 0,
            totalvfs: 3,
        };
        assert!(plan(&t, &cg, &unplaced(), Some(&small))
            .err()
            .unwrap()
            .contains("offers 3 VFs"));
    }

    #[test]
    fn device_model_modes_put_taps_and_a_backend_between_guest_and_bridge() {
        let t = Topology {
            mode: Mode::Paravirt,
            guests: 2,
            lro: true,
            ..Default::default()
        };
        let p = plan_of(&t);
        let text = shell(&p).join("\n");
        assert!(
            text.contains("tuntap add dev vllabg1 mode tap vnet_hdr"),
            "{text}"
        );
        assert!(text.contains("tuntap add dev vllabg2h mode tap vnet_hdr"));
        assert!(text.contains("link set vllabg2h master vllabbr"));
        assert!(text.contains("vnetlab vnic --model paravirt --guest-ns vllab-g1 --guest-tap vllabg1 --host-ns vllab-host --host-tap vllabg1h"));
        assert!(text.contains("--lro"));
        let g1 = p.record.endpoint(Role::Guest(1)).unwrap();
        assert_eq!(
            g1.vnic.as_ref().unwrap().cgroups[0],
            std::path::PathBuf::from("/nonexistent/cpuacct/vnetlab/vllab/vnic-g1")
        );
        let e = plan_of(&Topology {
            mode: Mode::Emulated,
            ..Default::default()
        });
        let text = shell(&e).join("\n");
        assert!(text.contains("tuntap add dev vllabg1 mode tap\n") && !text.contains("vnet_hdr"));
        assert!(
            text.contains("ethtool -K vllabg1 gro on tso off gso off"),
            "emulated NICs have no TSO"
        );
        assert!(Topology {
            mode: Mode::Bridge,
            lro: true,
            ..Default::default()
        }
        .validate()
        .unwrap_err()
        .contains("paravirt"));
    }
}
