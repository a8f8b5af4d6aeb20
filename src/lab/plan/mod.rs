//! The planner: turns a `Topology` into the ordered steps that build it (each naming the
//! objects it makes, for the journal) and the `LabRecord` later commands use. Pure: it reads
//! nothing from the host, so `--dry-run` and the unit tests see exactly what `up` would run.
//!
//! The steps come in a fixed order: cgroups, namespaces and links, the host's side, the
//! client, the guests, the guests' devices, the wire (shaping, offloads, steering), NAT. What
//! differs between datapaths lives in one module per family (`kernel`: bridge and NAT,
//! `macvlan`, `sriov`, `vnic`: vnetlab's device models, `qemu`: QEMU VMs), plugged into
//! `host_side`, `guest_side` and `devices`.

mod kernel;
mod macvlan;
mod parts;
mod qemu;
mod record;
mod sriov;
#[cfg(test)]
mod tests;
mod vnic;
mod wire;

use crate::lab::Error;
use std::path::PathBuf;

use super::addr::{self, Addressing, NAT_PORTS_PER_GUEST, NAT_PORT_BASE};
use super::cgroup::Hierarchy;
use super::cpus::CpuPlan;
use super::hostcmd::{HostCmd, IpCmd};
use super::journal::{Entry, NsObject};
use super::names::Names;
use super::state::LabRecord;
use super::topology::Topology;
use crate::guest::qemu::{Device, Files, VmSpec};
use crate::units::CpuList;
use crate::vocab::{Mode, Role};

pub use qemu::{boot_timeout, VmHost, GUEST_IF};
pub use sriov::{sriov_vfs_needed, SriovPf};

pub enum Step {
    /// Journal `creates`, then run `cmd`.
    Run { creates: Vec<Entry>, cmd: HostCmd },
    /// Make these network namespaces, each journaled before it is made and, once made, with its
    /// identity; a name someone else holds fails the build and is never taken over.
    MakeNetns { names: Vec<String> },
    /// Make this cgroup folder, journaled as `MakeNetns` is; a shared one that exists is used,
    /// not journaled as made (the lab that made it removes it).
    MakeCgroup { path: PathBuf, shared: bool },
    /// Move this machine's interface `name` (`--uplink`) into `netns`, its state read and
    /// journaled first (at build time), for `down` to put back.
    ClaimUplink { name: String, netns: String },
    /// Move VF number `vf` of `pf` into `netns`, renamed `name` (its current name is read at build time).
    MoveVf {
        pf: String,
        vf: u32,
        netns: String,
        name: String,
    },
    /// Bind VF number `vf` of `pf` to vfio-pci for a QEMU guest (its PCI address and driver are
    /// read and journaled at build time; `down` gives it back).
    BindVfio { pf: String, vf: u32 },
    /// Start guest `guest`'s vNIC backend (a `vnetlab vnic` process) in the host namespace and
    /// its own cgroup; it lives until `down` (it is in the lab's namespace and cgroup).
    StartBackend {
        guest: String,
        args: Vec<String>,
        netns: String,
        cgroups: Vec<PathBuf>,
        stats: PathBuf,
        log: PathBuf,
    },
    /// Place the threaded-NAPI kernel threads of `dev` (in `netns`) on `cpus`: they receive the
    /// frames that cross the wire to this side, as a NIC's interrupt would on that machine.
    PlaceNapi {
        netns: String,
        dev: String,
        cpus: CpuList,
    },
    /// Start guest `guest`'s QEMU in `netns` (the host's) and its cgroups; its folder is
    /// journaled first. It boots while the next steps run.
    StartVm {
        guest: Role,
        spec: Box<VmSpec>,
        netns: String,
        cgroups: Vec<PathBuf>,
    },
    /// Wait until every started guest's agent answers (at most `timeout` in all).
    WaitVms {
        lab: String,
        guests: Vec<(Role, Files)>,
        timeout: std::time::Duration,
    },
}

pub struct Plan {
    pub record: LabRecord,
    pub steps: Vec<Step>,
}

/// How a guest's NIC reaches the host's end of the wire.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Family {
    /// No guests: the application runs on the host's end of the wire.
    Native,
    /// A veth into the host's bridge; `nat` routes and masquerades instead of bridging the wire.
    Kernel { nat: bool },
    /// A macvlan on the wire's host end (the stand-in for an SR-IOV VF).
    Macvlan,
    /// Real VFs moved into the lab's namespaces.
    Sriov,
    /// A tap in the guest, one on the bridge, and vnetlab's backend between them.
    Vnic { paravirt: bool },
    /// QEMU VMs with the device named.
    Qemu(Device),
}

impl Family {
    fn of(mode: Mode) -> Family {
        match mode {
            Mode::Native => Family::Native,
            Mode::Bridge => Family::Kernel { nat: false },
            Mode::Nat => Family::Kernel { nat: true },
            Mode::Macvlan => Family::Macvlan,
            Mode::Sriov => Family::Sriov,
            Mode::Emulated => Family::Vnic { paravirt: false },
            Mode::Paravirt => Family::Vnic { paravirt: true },
            m => Family::Qemu(qemu::device(m).expect("the other modes are QEMU's")),
        }
    }
    /// Whether the host has a bridge that the guests' ports join.
    fn bridged(self) -> bool {
        match self {
            Family::Kernel { .. } | Family::Vnic { .. } => true,
            Family::Qemu(d) => qemu::on_bridge(d),
            _ => false,
        }
    }
    /// Whether each guest has a namespace of its own (QEMU guests are VMs run from the host's).
    fn guest_namespaces(self) -> bool {
        !matches!(self, Family::Native | Family::Qemu(_))
    }
    fn vnic(self) -> bool {
        matches!(self, Family::Vnic { .. })
    }
    /// Whether the wire is a pair of VFs (the NIC switches) rather than a veth pair.
    fn vf_wire(self) -> bool {
        matches!(self, Family::Sriov | Family::Qemu(Device::Vfio))
    }
}

/// What every part of the planner reads: the topology, its names and addresses.
struct Cx<'a> {
    t: &'a Topology,
    n: Names,
    a: Addressing,
    family: Family,
    /// The host's and the client's namespaces, and the wire's two ends.
    h: String,
    c: String,
    wh: String,
    wc: String,
    guests: Vec<u32>,
    /// The client is another machine, beyond the uplink (`wh` is then the uplink, and nothing of
    /// the client is made here).
    remote: bool,
}

impl Cx<'_> {
    fn new(t: &Topology) -> Cx<'_> {
        let n = Names::new(&t.name);
        Cx {
            a: addr::allocate(t.mode, &t.subnet, t.guests),
            family: Family::of(t.mode),
            h: n.host_ns(),
            c: n.client_ns(),
            wh: t.uplink.clone().unwrap_or_else(|| n.wire_host()),
            wc: n.wire_client(),
            guests: (1..=t.guests).collect(),
            remote: t.remote_client(),
            n,
            t,
        }
    }
}

/// One `ip -batch` and the links it makes (journaled before it runs).
#[derive(Default)]
struct Batch {
    creates: Vec<Entry>,
    cmds: Vec<IpCmd>,
}

impl Batch {
    /// A command that makes link `name` inside namespace `ns`.
    fn make(&mut self, ns: &str, name: &str, cmd: IpCmd) {
        self.creates.push(Entry::InNetns {
            netns: ns.to_string(),
            object: NsObject::Link(name.to_string()),
        });
        self.cmds.push(cmd);
    }
    fn step(self, netns: Option<&str>) -> Step {
        Step::Run {
            creates: self.creates,
            cmd: HostCmd::ip(netns, self.cmds),
        }
    }
}

/// A step that makes nothing to journal.
fn just(cmd: HostCmd) -> Step {
    Step::Run {
        creates: vec![],
        cmd,
    }
}

/// What the host offers beyond the topology: SR-IOV VFs, and the image and acceleration of QEMU
/// guests (both probed before planning).
#[derive(Default)]
pub struct HostOffers<'a> {
    pub sriov: Option<&'a SriovPf>,
    pub vm: Option<&'a VmHost>,
}

pub fn plan(t: &Topology, cg: &Hierarchy, cpus: &CpuPlan, host: HostOffers) -> Result<Plan, Error> {
    t.validate()?;
    let cx = Cx::new(t);
    let vm =
        match (cx.family, host.vm) {
            (Family::Qemu(Device::Vfio), _) if host.sriov.is_none() => return Err(Error::Input(
                "mode qemu-vfio needs the PF's VFs read: plan it through `vnetlab up --pf IFACE`"
                    .into(),
            )),
            (Family::Qemu(_), None) => {
                return Err(Error::Input(format!(
                    "mode {} needs the guest image and QEMU: plan it through `vnetlab up`",
                    t.mode
                )))
            }
            (_, vm) => vm,
        };
    let sriov = host.sriov;
    let parts = parts::plan(&cx, cg, cpus)?;
    let mut notes = parts.notes.clone();
    let mut steps = parts.steps();
    steps.push(Step::MakeNetns {
        names: namespaces(&cx),
    });
    steps.push(links(&cx));
    if let Some(u) = &t.uplink {
        steps.push(Step::ClaimUplink {
            name: u.clone(),
            netns: cx.h.clone(),
        });
    }
    if let Some(pf) = sriov {
        steps.extend(sriov::steps(&cx, pf)?);
    }
    let (host, host_iface) = host_side(&cx);
    steps.push(host);
    if !cx.remote {
        steps.push(client(&cx));
    }
    steps.extend(cx.guests.iter().filter_map(|&i| guest_side(&cx, i)));
    steps.extend(devices(&cx, &parts, vm));
    steps.extend(wire::shaping(&cx));
    steps.extend(wire::offloads(&cx));
    let (steer, steered) = wire::steering(&cx, cpus);
    steps.extend(steer);
    if cx.family == (Family::Kernel { nat: true }) {
        steps.extend(kernel::nat(&cx));
    }
    if cx.family.vf_wire() && cx.t.wire.shaped() {
        notes.push("VFs: wire shaping applies to the host's and the client's VFs, not between guests (the NIC switches those)".into());
    }
    let record = LabRecord {
        endpoints: record::endpoints(&cx, &parts, &host_iface, vm),
        topology: t.clone(),
        addressing: cx.a,
        cgroups: cg.describe(),
        notes,
        cpus: cpus.clone(),
        steered,
    };
    Ok(Plan { record, steps })
}

/// The lab's namespaces: the host's, the client's (unless it is another machine), each guest's.
fn namespaces(cx: &Cx) -> Vec<String> {
    let mut names = vec![cx.h.clone()];
    if !cx.remote {
        names.push(cx.c.clone());
    }
    if cx.family.guest_namespaces() {
        names.extend(cx.guests.iter().map(|&i| cx.n.guest_ns(i)));
    }
    names
}

/// The wire (a veth pair, unless VFs are the wire) and the family's links between host and
/// guests, in one batch in the root namespace, made straight into the lab's namespaces.
fn links(cx: &Cx) -> Step {
    let mut b = Batch::default();
    if !cx.family.vf_wire() && cx.t.uplink.is_none() {
        veth(&mut b, (&cx.h, &cx.wh), (&cx.c, &cx.wc));
    }
    if let Family::Kernel { .. } = cx.family {
        kernel::guest_links(cx, &mut b);
    }
    b.step(None)
}

/// The interface index of a lab's first veth end; its k-th pair takes this + 2k and the next.
/// Far above what a fresh namespace numbers its own devices from (lo, fallback tunnels, 2, 3, …).
const VETH_INDEX: u32 = 100;

/// A veth pair `a` ↔ `b`, each end (namespace, name) made straight in its namespace, the two
/// ends numbered apart (see `IpCmd::Veth`).
fn veth(b: &mut Batch, (ns, name): (&str, &str), (peer_ns, peer): (&str, &str)) {
    let made = b
        .cmds
        .iter()
        .filter(|c| matches!(c, IpCmd::Veth { .. }))
        .count() as u32;
    b.creates.push(Entry::InNetns {
        netns: ns.to_string(),
        object: NsObject::Link(name.to_string()),
    });
    b.make(
        peer_ns,
        peer,
        IpCmd::Veth {
            name: name.into(),
            netns: ns.into(),
            index: VETH_INDEX + 2 * made,
            peer: peer.into(),
            peer_netns: peer_ns.into(),
        },
    );
}

/// The host's namespace: its port on the wire and the family's switch; returns the step and the
/// interface that holds the host's address.
fn host_side(cx: &Cx) -> (Step, String) {
    let mut b = Batch::default();
    b.cmds.push(IpCmd::Up("lo".into()));
    b.cmds.push(IpCmd::Mtu {
        dev: cx.wh.clone(),
        mtu: cx.t.mtu,
    });
    let iface = match cx.family {
        f if f.bridged() => kernel::host_bridge(cx, &mut b),
        Family::Macvlan => macvlan::host(cx, &mut b),
        Family::Qemu(Device::Macvtap) => qemu::macvtaps(cx, &mut b),
        _ => {
            b.cmds.push(addr(cx.a.host, cx.a.wire.len, &cx.wh));
            cx.wh.clone()
        }
    };
    b.cmds.push(IpCmd::Up(cx.wh.clone()));
    (b.step(Some(&cx.h)), iface)
}

fn client(cx: &Cx) -> Step {
    let wc = &cx.wc;
    let cmds = vec![
        IpCmd::Up("lo".into()),
        IpCmd::Mtu {
            dev: wc.clone(),
            mtu: cx.t.mtu,
        },
        addr(cx.a.client, cx.a.wire.len, wc),
        IpCmd::Up(wc.clone()),
    ];
    just(HostCmd::ip(Some(&cx.c), cmds))
}

/// Guest `i`'s namespace: its NIC up with its address (in native mode guests are processes on
/// the host: nothing to make).
fn guest_side(cx: &Cx, i: u32) -> Option<Step> {
    if !cx.family.guest_namespaces() {
        return None;
    }
    let (gns, gif) = (cx.n.guest_ns(i), cx.n.guest_if(i));
    let mut b = Batch::default();
    if let Family::Vnic { paravirt } = cx.family {
        vnic::guest_tap(&mut b, &gns, &gif, paravirt);
    }
    b.cmds.extend([
        IpCmd::Up("lo".into()),
        IpCmd::Mtu {
            dev: gif.clone(),
            mtu: cx.t.mtu,
        },
        addr(cx.a.guests[i as usize - 1], cx.a.guest_net.len, &gif),
        IpCmd::Up(gif),
    ]);
    if cx.family == (Family::Kernel { nat: true }) {
        b.cmds.push(kernel::route_to_wire(cx));
    }
    Some(b.step(Some(&gns)))
}

/// What runs beside the guests to give them their NICs: vnetlab's backends, or the VMs.
fn devices(cx: &Cx, parts: &parts::Parts, vm: Option<&VmHost>) -> Vec<Step> {
    match (cx.family, vm) {
        (Family::Vnic { .. }, _) => vnic::backends(cx, parts),
        (Family::Qemu(d), Some(vm)) => qemu::vms(cx, parts, vm, d),
        _ => vec![],
    }
}

fn addr(addr: std::net::Ipv4Addr, len: u8, dev: &str) -> IpCmd {
    IpCmd::Addr {
        addr,
        len,
        dev: dev.to_string(),
    }
}

/// The forwarded port block of the k-th guest (0-based) behind NAT.
pub fn nat_ports(k: u32) -> [u16; 2] {
    let lo = NAT_PORT_BASE + (k as u16) * NAT_PORTS_PER_GUEST;
    [lo, lo + NAT_PORTS_PER_GUEST - 1]
}

/// Every command the plan runs, as shell text (for --dry-run).
pub fn shell(p: &Plan) -> Vec<String> {
    p.steps.iter().map(shell_step).collect()
}

pub fn shell_step(s: &Step) -> String {
    match s {
        Step::Run { cmd, .. } => cmd.shell(),
        Step::MakeNetns { names } => names
            .iter()
            .map(|n| format!("ip netns add {n}  # made only if the name is free; its inode journaled"))
            .collect::<Vec<_>>()
            .join("\n"),
        Step::MakeCgroup { path, shared } => format!(
            "mkdir {}{}",
            path.display(),
            if *shared {
                "  # if missing; journaled as made only if made here"
            } else {
                "  # made only if missing; its inode journaled"
            }
        ),
        Step::ClaimUplink { name, netns } => format!(
            "ip link set dev {name} netns {netns}  # its MTU, addresses, offloads, qdisc and state journaled first"
        ),
        Step::MoveVf { pf, vf, netns, name } => format!(
            "ip link set dev $(ls /sys/class/net/{pf}/device/virtfn{vf}/net) netns {netns} name {name}"
        ),
        Step::BindVfio { pf, vf } => {
            let d = format!("$(basename $(readlink /sys/class/net/{pf}/device/virtfn{vf}))");
            format!("echo vfio-pci > /sys/bus/pci/devices/{d}/driver_override; echo {d} > /sys/bus/pci/devices/{d}/driver/unbind; echo {d} > /sys/bus/pci/drivers_probe")
        }
        Step::StartBackend { args, netns, log, .. } => format!(
            "ip netns exec {netns} vnetlab {} > {} 2>&1 &  # in its own cgroup",
            args.join(" "),
            log.display()
        ),
        Step::PlaceNapi { dev, cpus, .. } => {
            format!("taskset -pc {cpus} $(pgrep '^napi/{dev}-')")
        }
        Step::StartVm { spec, netns, .. } => format!(
            "ip netns exec {netns} {} &  # in the guest's cgroup",
            crate::guest::qemu::argv(spec).join(" ")
        ),
        Step::WaitVms {
            guests, timeout, ..
        } => format!(
            "# wait up to {} s for the agents of {} to answer on their sockets",
            timeout.as_secs(),
            guests
                .iter()
                .map(|(r, _)| r.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}
