//! The planner's vocabulary, below every other part of it: the steps a plan is made of, what
//! every part reads (`Cx`), one `ip -batch` and the objects it makes (`Batch`), and what the
//! host offers beyond the topology (SR-IOV VFs, QEMU). The datapaths and the planner's own
//! stages build on these; nothing here knows a datapath.

use std::path::PathBuf;
use std::time::Duration;

use crate::guest::image::Image;
use crate::guest::qemu::{Files, VmSpec};
use crate::lab::addr::{self, Addressing, NAT_PORTS_PER_GUEST, NAT_PORT_BASE};
use crate::lab::hostcmd::{HostCmd, IpCmd};
use crate::lab::journal::{Entry, NsObject};
use crate::lab::names::Names;
use crate::lab::topology::Topology;
use crate::units::CpuList;
use crate::vocab::{Accel, Role};

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

/// What every part of the planner reads: the topology, its names and addresses.
pub struct Cx<'a> {
    pub t: &'a Topology,
    pub n: Names,
    pub a: Addressing,
    /// The host's and the client's namespaces, and the wire's two ends.
    pub h: String,
    pub c: String,
    pub wh: String,
    pub wc: String,
    pub guests: Vec<u32>,
    /// The client is another machine, beyond the uplink (`wh` is then the uplink, and nothing of
    /// the client is made here).
    pub remote: bool,
}

impl Cx<'_> {
    /// `routed`: the guests sit behind the host on an inner network (NAT).
    pub fn new(t: &Topology, routed: bool) -> Cx<'_> {
        let n = Names::new(&t.name);
        Cx {
            a: addr::allocate(routed, &t.subnet, t.guests),
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
pub struct Batch {
    pub creates: Vec<Entry>,
    pub cmds: Vec<IpCmd>,
}

impl Batch {
    /// A command that makes link `name` inside namespace `ns`.
    pub fn make(&mut self, ns: &str, name: &str, cmd: IpCmd) {
        self.creates.push(Entry::InNetns {
            netns: ns.to_string(),
            object: NsObject::Link(name.to_string()),
        });
        self.cmds.push(cmd);
    }
    pub fn step(self, netns: Option<&str>) -> Step {
        Step::Run {
            creates: self.creates,
            cmd: HostCmd::ip(netns, self.cmds),
        }
    }
}

/// A step that makes nothing to journal.
pub fn just(cmd: HostCmd) -> Step {
    Step::Run {
        creates: vec![],
        cmd,
    }
}

/// The interface index of a lab's first veth end; its k-th pair takes this + 2k and the next.
/// Far above what a fresh namespace numbers its own devices from (lo, fallback tunnels, 2, 3, …).
const VETH_INDEX: u32 = 100;

/// A veth pair `a` ↔ `b`, each end (namespace, name) made straight in its namespace, the two
/// ends numbered apart (see `IpCmd::Veth`).
pub fn veth(b: &mut Batch, (ns, name): (&str, &str), (peer_ns, peer): (&str, &str)) {
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

pub fn addr(addr: std::net::Ipv4Addr, len: u8, dev: &str) -> IpCmd {
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

/// What the builder read about an SR-IOV PF before planning.
pub struct SriovPf {
    pub pf: String,
    pub numvfs: u32,
    pub totalvfs: u32,
}

/// What the host gives its QEMU guests: the image and the acceleration (probed before planning).
#[derive(Clone, Debug)]
pub struct VmHost {
    pub image: Image,
    pub accel: Accel,
    pub why_not_kvm: Option<String>,
    pub bios: Option<PathBuf>,
    /// The host's TSC rate told to TCG guests' kernels (see `guest::clock`).
    pub tsc_khz: Option<u64>,
}

/// What the host offers beyond the topology: SR-IOV VFs, and the image and acceleration of QEMU
/// guests (both probed before planning).
#[derive(Default, Clone, Copy)]
pub struct HostOffers<'a> {
    pub sriov: Option<&'a SriovPf>,
    pub vm: Option<&'a VmHost>,
}

/// How long a guest may take from QEMU's start to its agent answering: booting under TCG on a
/// busy 2-core host takes seconds per guest; under KVM well under one.
pub fn boot_timeout(accel: Accel, guests: u32) -> Duration {
    match accel {
        Accel::Kvm => Duration::from_secs(30 + u64::from(guests)),
        Accel::Tcg => Duration::from_secs(60 + 10 * u64::from(guests)),
    }
}

/// The part a guest's vNIC backend is accounted in.
pub fn backend_part(guest: u32) -> String {
    format!("vnic-{}", Role::Guest(guest))
}
