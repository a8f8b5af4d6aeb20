//! Where labs are kept between commands: the state folder with each lab's journal and record,
//! and the record itself — the plain data other stages use to reach a lab's endpoints.

use crate::lab::Error;
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;
use std::path::PathBuf;

use super::addr::Addressing;
use super::folder::{check_trusted, dir, journal_path, labs, record_path};
use super::topology::Topology;
use crate::records::cpu::CpuPlan;
use crate::sys::ident::FileId;
use crate::units::CpuList;
use crate::vocab::Role;
pub use crate::vocab::Side;

/// One place a program can run in a lab: the host, the client, or a guest.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Endpoint {
    /// `host`, `client`, `g1`…
    #[serde(rename = "name")]
    pub role: Role,
    /// The network namespace it runs in.
    pub netns: String,
    /// Its address on the lab network, and the interface carrying it.
    pub address: Ipv4Addr,
    pub iface: String,
    /// The cgroup folders it is accounted in (one per hierarchy).
    pub cgroups: Vec<PathBuf>,
    /// The CPUs it is pinned to, if pinned.
    pub cpus: Option<String>,
    /// Behind NAT: the address and port range at which the client reaches this guest.
    pub reach_from_client: Option<NatReach>,
    /// The guest's vNIC backend, in modes emulated and paravirt.
    #[serde(default)]
    pub vnic: Option<VnicInfo>,
    /// The guest's QEMU VM, in the qemu-* modes (then `netns` is where QEMU runs, the host's).
    #[serde(default)]
    pub vm: Option<VmInfo>,
    /// The client on another machine (`--client`): no namespace here; its agent is the
    /// `vnetlab serve` there, when it has a token.
    #[serde(default)]
    pub remote: Option<super::topology::RemoteClient>,
    /// Its namespace's and folders' identities as the lab's journal recorded them when made:
    /// filled when the record is loaded (never read from the record file, which only names).
    #[serde(skip)]
    pub ids: Option<EndpointIds>,
}

/// What an endpoint's namespace and cgroup folders are, by identity (in `cgroups`' order).
#[derive(Clone, Debug, PartialEq)]
pub struct EndpointIds {
    pub netns: FileId,
    /// The namespace's cookie, where the kernel has them (`sys::ident::own_netns_cookie`).
    pub netns_cookie: Option<u64>,
    pub cgroups: Vec<FileId>,
}

/// A QEMU guest: its device, acceleration, size, the folder of its sockets and console, and how
/// long it took from QEMU's start to its agent answering.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct VmInfo {
    pub mode: crate::vocab::Mode,
    pub accel: crate::vocab::Accel,
    /// Why not KVM, when TCG.
    pub why_not_kvm: Option<String>,
    pub vcpus: u32,
    pub memory_mib: u32,
    /// Holds agent.sock, qmp.sock, console.log and qemu.pid.
    pub dir: PathBuf,
    /// Boot to agent-ready, once booted.
    pub boot_s: Option<f64>,
}

impl VmInfo {
    pub fn files(&self) -> crate::guest::qemu::Files {
        crate::guest::qemu::Files {
            dir: self.dir.clone(),
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct VnicInfo {
    pub model: String,
    pub lro: bool,
    /// Where the backend writes its counters, and its log.
    pub stats: PathBuf,
    pub log: PathBuf,
    /// The backend's cgroup folders (its CPU is the part "vNIC backend gN").
    pub cgroups: Vec<PathBuf>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct NatReach {
    pub address: Ipv4Addr,
    pub ports: [u16; 2],
}

/// An interface where frames cross from one side to the other (a wire end), and how its receive
/// processing is kept on its side's cores.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct SteeredIface {
    pub netns: String,
    pub iface: String,
    /// The side it belongs to: frames arriving on it are received on this side's cores.
    pub side: Side,
    pub cpus: CpuList,
    /// Receive runs in threaded-NAPI kernel threads placed on `cpus` (else RPS moves it there).
    pub napi_threaded: bool,
}

/// A built lab as later commands see it.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct LabRecord {
    pub topology: Topology,
    pub addressing: Addressing,
    pub endpoints: Vec<Endpoint>,
    /// How CPU is accounted: "cgroup v2", "cgroup v1 cpuacct" or why not.
    pub cgroups: String,
    /// Notes the builder made (what the host could not do).
    pub notes: Vec<String>,
    /// The client's and the host's cores, and whether processes are confined to them.
    pub cpus: CpuPlan,
    /// The wire ends and how receive processing on each is steered.
    #[serde(default)]
    pub steered: Vec<SteeredIface>,
}

impl LabRecord {
    pub fn endpoint(&self, role: Role) -> Result<&Endpoint, Error> {
        self.endpoints
            .iter()
            .find(|e| e.role == role)
            .ok_or_else(|| {
                Error::Input(format!(
                    "lab {} has no endpoint '{role}': use host, client or g1…g{}",
                    self.topology.name, self.topology.guests
                ))
            })
    }
    pub fn guests(&self) -> impl Iterator<Item = &Endpoint> {
        self.endpoints.iter().filter(|e| e.role.is_guest())
    }
}

/// The largest lab record vnetlab reads (a lab of 9 999 guests writes well under 8 MB).
pub const MAX_RECORD: u64 = 16 << 20;

/// Loads lab `lab`'s record under the rules its journal is read by (a trusted state folder, a
/// regular file, bounded) and vouches for it with the journal: every endpoint's namespace and
/// folders must be ones the journal recorded as made, whose identities it takes.
pub fn load(lab: &str) -> Result<LabRecord, Error> {
    check_trusted(&dir())?;
    let p = record_path(lab);
    if std::fs::symlink_metadata(&p).is_err() {
        let known = labs();
        return Err(Error::Input(if known.is_empty() {
            format!("no lab named '{lab}': there are no labs; make one with `vnetlab up`")
        } else {
            format!("no lab named '{lab}': the labs are {}", known.join(", "))
        }));
    }
    let text = crate::text::read_own_capped(&p, MAX_RECORD)
        .map_err(|e| Error::Input(format!("lab {lab}'s record: {e}")))?;
    let mut rec: LabRecord = serde_json::from_str(&text).map_err(|e| {
        Error::Input(format!(
            "{}: unreadable lab record ({e}); `vnetlab down {lab}` removes it",
            p.display()
        ))
    })?;
    if rec.topology.name != lab {
        return Err(Error::Input(format!(
            "{}: the record is lab {}'s, not {lab}'s: vnetlab will not act on it",
            p.display(),
            crate::text::clip(&rec.topology.name)
        )));
    }
    let entries = super::journal::read(&journal_path(lab), lab)?;
    vouch(&mut rec, &entries)?;
    load_token(&mut rec)?;
    Ok(rec)
}

/// The client machine's serve token, kept apart from the record, put back where it names one.
fn load_token(rec: &mut LabRecord) -> Result<(), Error> {
    let lab = rec.topology.name.clone();
    let wants = rec.topology.client.as_ref().is_some_and(|c| c.has_token);
    if !wants {
        return Ok(());
    }
    let t = crate::text::read_own_capped(&super::folder::token_path(&lab), 4096)
        .map_err(|e| Error::Failed(format!("lab {lab}'s client token: {e}")))?;
    let t = Some(t.trim().to_string());
    if let Some(c) = rec.topology.client.as_mut() {
        c.token.clone_from(&t);
    }
    for e in rec.endpoints.iter_mut().filter_map(|e| e.remote.as_mut()) {
        e.token.clone_from(&t);
    }
    Ok(())
}

/// Fills each endpoint's identities from the journal's `…Made` entries; an endpoint whose
/// namespace or a folder the journal does not record as made is refused (a planted or stale
/// record names what the lab never made).
pub fn vouch(rec: &mut LabRecord, entries: &[super::journal::Entry]) -> Result<(), Error> {
    use super::journal::Entry;
    let ns_id = |n: &str| {
        entries.iter().find_map(|e| match e {
            Entry::NetnsMade { name, id, cookie } if name == n => Some((*id, *cookie)),
            _ => None,
        })
    };
    let dir_id = |d: &std::path::Path| {
        entries.iter().find_map(|e| match e {
            Entry::CgroupMade { path, id } if path == d => Some(*id),
            _ => None,
        })
    };
    let lab = rec.topology.name.clone();
    for e in &mut rec.endpoints {
        if e.remote.is_some() {
            continue;
        }
        let refuse = |what: String| {
            Error::Failed(format!(
                "lab {lab}'s record names {what} for {}, which its journal does not record as made: vnetlab will not act on it",
                e.role
            ))
        };
        let (netns, netns_cookie) =
            ns_id(&e.netns).ok_or_else(|| refuse(format!("namespace {}", e.netns)))?;
        let cgroups = e
            .cgroups
            .iter()
            .map(|d| dir_id(d).ok_or_else(|| refuse(format!("cgroup {}", d.display()))))
            .collect::<Result<_, _>>()?;
        e.ids = Some(EndpointIds {
            netns,
            netns_cookie,
            cgroups,
        });
    }
    Ok(())
}

/// Picks the lab a command means: the one named, or the only one there is.
pub fn resolve(lab: Option<&str>) -> Result<String, Error> {
    if let Some(l) = lab {
        return Ok(l.to_string());
    }
    match labs().as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(Error::Input(
            "there are no labs: make one with `vnetlab up`".into(),
        )),
        many => Err(Error::Input(format!(
            "there are {} labs ({}): name the one you mean",
            many.len(),
            many.join(", ")
        ))),
    }
}
