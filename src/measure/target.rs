//! Where a test runs: a lab (agents started in its endpoints, each proven the lab's own) or a
//! `vnetlab serve` elsewhere. What the meter measures there (the parts: cgroups, NAPI threads, a
//! QEMU's threads), which cores the driver takes, the vNIC backends and VMs a test depends on, and
//! kernel pacing on the senders' devices.

use std::net::{IpAddr, SocketAddr};

use super::error::Error;
use crate::engine::controller::{AgentConn, Pair};
use crate::engine::spec::Spec;
use crate::lab::state::LabRecord;
use crate::meter::threads::{ThreadClass, Threads};
use crate::meter::{Part, PartId, PartKind, Setup, Side, Sides};
use crate::records::cpu::CpuPlan;
use crate::vocab::{Role, Senders};

/// Where a test runs: a lab (agents started in its endpoints) or standalone against `serve`.
pub enum Target {
    Lab {
        rec: Box<LabRecord>,
        from: Senders,
        to: Role,
        /// Interfering load beside the test, and the desktops' own load.
        loads: Vec<super::load::Load>,
        /// The other guest's lab, beside this one (`udp-flood@other`).
        other: Option<Box<LabRecord>>,
    },
    Remote {
        host: String,
        ip: IpAddr,
        port: u16,
        token: String,
    },
}

impl Target {
    pub fn agents(&self) -> Result<(Vec<AgentConn>, Vec<Pair>), Error> {
        match self {
            Target::Lab { rec, from, to, .. } => super::agents::lab_agents(rec, *from, *to),
            Target::Remote {
                host,
                ip,
                port,
                token,
            } => {
                let remote = AgentConn::tcp(host, SocketAddr::new(*ip, *port), token)?;
                let local = AgentConn::local("local")?;
                let pair = Pair {
                    initiator: 0,
                    server: 1,
                    listen_on: *ip,
                    connect_to: *ip,
                    ports: None,
                    from: "local".into(),
                    to: host.clone(),
                    reverse: false,
                };
                Ok((vec![local, remote], vec![pair]))
            }
        }
    }

    /// What the meter measures: the lab's cgroups on their sides, the wire ends' NAPI threads,
    /// and this process (the driver and any local agent), with the two sides' cores.
    pub fn setup(&self) -> Result<Setup, Error> {
        let mut parts = Vec::new();
        let rec = match self {
            Target::Lab { rec, .. } => rec,
            Target::Remote { .. } => {
                parts.push(Part {
                    pid: Some(std::process::id()),
                    ..part("vnetlab driver", DRIVER_STANDALONE)
                });
                return Ok(Setup { parts, sides: None });
            }
        };
        for e in &rec.endpoints {
            // A client on another machine is measured there, by its serve (`remote_cpu`).
            if e.remote.is_some() {
                continue;
            }
            if e.vm.is_some() {
                parts.extend(vm_parts(e)?);
                continue;
            }
            let kind = match e.role {
                Role::Host => PartKind::Host,
                Role::Client => PartKind::Client,
                Role::Guest(_) => PartKind::Guest,
            };
            parts.push(Part {
                cgroups: e.cgroups.clone(),
                netns: e.ids.as_ref().map(|i| i.netns.ino),
                ..part(&e.role.to_string(), PartId::endpoint(kind, e.role))
            });
            if let Some(vn) = &e.vnic {
                parts.push(Part {
                    cgroups: vn.cgroups.clone(),
                    ..part(&format!("vNIC backend {}", e.role), backend(e.role))
                });
            }
        }
        for t in crate::lab::steer::ensure_placed(rec)? {
            let side = t.side;
            let name = format!("NAPI {} ({} end of the wire)", t.iface, side.name());
            parts.push(Part {
                pid: Some(t.pid as u32),
                ..part(&name, PartId::other(PartKind::Napi, side))
            });
        }
        let placed = rec.cpus.placed;
        let driver_side = if placed && !rec.cpus.remote_client() {
            Side::Client
        } else {
            Side::Host
        };
        parts.push(Part {
            pid: Some(std::process::id()),
            ..part(
                "vnetlab driver",
                PartId::other(PartKind::Driver, driver_side),
            )
        });
        let sides = placed.then(|| Sides {
            host: rec.cpus.host.0.clone(),
            client: rec.cpus.client.0.clone(),
        });
        Ok(Setup { parts, sides })
    }

    /// The lab's CPU plan (None standalone).
    pub fn cpus(&self) -> Option<&CpuPlan> {
        match self {
            Target::Lab { rec, .. } => Some(&rec.cpus),
            Target::Remote { .. } => None,
        }
    }

    /// The parts on the sending and on the receiving side of the bulk data: the endpoints' own
    /// (a namespace's cgroup, a guest's vCPUs), or this process standalone.
    pub fn sides(&self, spec: &Spec) -> (Vec<PartId>, Vec<PartId>) {
        let (from, to): (Vec<PartId>, Vec<PartId>) = match self {
            Target::Lab { rec, from, to, .. } => {
                let own = |r: Role| PartId::endpoint(endpoint_kind(rec, r), r);
                let f = match from {
                    Senders::AllGuests => rec.guests().map(|g| own(g.role)).collect(),
                    Senders::One(r) => vec![own(*r)],
                };
                (f, vec![own(*to)])
            }
            Target::Remote { .. } => (vec![DRIVER_STANDALONE], vec![]),
        };
        if spec.test.initiator_sends() {
            (from, to)
        } else {
            (to, from)
        }
    }
}

/// This process standalone (`-H`): the driver and the local agent, on the host's side.
const DRIVER_STANDALONE: PartId = PartId {
    kind: PartKind::Driver,
    side: Side::Host,
    role: None,
};

/// A guest's vNIC backend: host-side, its guest's.
pub fn backend(guest: Role) -> PartId {
    PartId {
        kind: PartKind::Backend,
        side: Side::Host,
        role: Some(guest),
    }
}

/// The kind of an endpoint's own part: a QEMU guest's vCPUs, else its namespace's cgroup.
fn endpoint_kind(rec: &LabRecord, r: Role) -> PartKind {
    let vm = rec.endpoint(r).is_ok_and(|e| e.vm.is_some());
    match r {
        _ if vm => PartKind::Vcpu,
        Role::Host => PartKind::Host,
        Role::Client => PartKind::Client,
        Role::Guest(_) => PartKind::Guest,
    }
}

/// A part with nothing measured yet (the caller sets its cgroups, pid or threads).
fn part(name: &str, id: PartId) -> Part {
    Part {
        name: name.to_string(),
        id,
        cgroups: vec![],
        pid: None,
        threads: None,
        netns: None,
    }
}

/// A part of a QEMU guest's process: on the host's cores, the guest's.
fn vm_part(kind: PartKind, guest: Role) -> PartId {
    PartId {
        kind,
        side: Side::Host,
        role: Some(guest),
    }
}

/// A QEMU guest's parts: its vCPU threads (named as the guest, its own CPU), its device
/// emulation and, with vhost-net, its vhost workers.
fn vm_parts(e: &crate::lab::state::Endpoint) -> Result<Vec<Part>, Error> {
    let (pid, vcpus, vhost) = crate::lab::vms::threads(e)?;
    let g = e.role.to_string();
    let threads = |class| {
        Some(Threads {
            pid,
            class,
            vcpus: vcpus.clone(),
            cgroups: e.cgroups.clone(),
        })
    };
    let mut v = vec![
        Part {
            threads: threads(ThreadClass::Vcpu),
            ..part(&g, vm_part(PartKind::Vcpu, e.role))
        },
        Part {
            threads: threads(ThreadClass::Emulation),
            ..part(
                &format!("{g} emulation"),
                vm_part(PartKind::Emulation, e.role),
            )
        },
    ];
    if vhost {
        v.push(Part {
            threads: threads(ThreadClass::Vhost),
            ..part(&format!("{g} vhost"), vm_part(PartKind::Vhost, e.role))
        });
    }
    Ok(v)
}

impl Target {
    /// The vNIC backends of the endpoints this test uses: (guest, counters file, log).
    pub fn backends(&self) -> Vec<(String, std::path::PathBuf, std::path::PathBuf)> {
        match self {
            Target::Lab { rec, from, to, .. } => rec
                .endpoints
                .iter()
                .filter(|e| {
                    Senders::One(e.role) == *from || e.role == *to || *from == Senders::AllGuests
                })
                .filter_map(|e| {
                    e.vnic
                        .as_ref()
                        .map(|v| (e.role.to_string(), v.stats.clone(), v.log.clone()))
                })
                .collect(),
            Target::Remote { .. } => vec![],
        }
    }
}

pub fn read_vnic(path: &std::path::Path) -> Option<crate::vnic::backend::Stats> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// The driver (this process's threads made from here on: the meter, the agents' readers) runs on
/// the client's cores, the measuring station, so the host's cores hold only the datapath.
pub fn place_driver(cpus: Option<&CpuPlan>) {
    let all = crate::sys::online_cpus();
    let want = match cpus {
        Some(p) if p.placed && !p.client.is_empty() => &p.client.0,
        _ => &all,
    };
    let _ = crate::sys::set_affinity(0, want);
}

/// The lab's guest devices that are gone: vNIC backends and QEMU VMs, each a line saying so.
impl Target {
    /// The lab's guest devices that are gone: vNIC backends and QEMU VMs, each a line saying so
    /// (a backend whose process is gone has taken its guest's link down with it).
    pub fn dead_backends(&self) -> Vec<String> {
        let mut dead = dead_vms(self);
        dead.extend(dead_vnic_backends(self));
        dead
    }

    /// The loads beside the test (none standalone).
    pub fn loads(&self) -> &[super::load::Load] {
        match self {
            Target::Lab { loads, .. } => loads,
            Target::Remote { .. } => &[],
        }
    }

    /// The side of the wire the test's senders stand on.
    pub fn sending_side(&self) -> crate::vocab::Side {
        match self {
            Target::Lab { from, .. } => from.side(),
            Target::Remote { .. } => crate::vocab::Side::Host,
        }
    }

    /// How many endpoints start streams (each with the spec's parallel streams).
    pub fn initiators(&self) -> usize {
        match self {
            Target::Lab {
                rec,
                from: Senders::AllGuests,
                ..
            } => rec.guests().count(),
            _ => 1,
        }
    }
}

fn dead_vms(target: &Target) -> Vec<String> {
    let Target::Lab { rec, .. } = target else {
        return vec![];
    };
    rec.endpoints
        .iter()
        .filter(|e| crate::lab::vms::vm_running(e) == Some(false))
        .map(|e| {
            format!(
                "{}'s QEMU VM is gone (it died or was killed); its console ended: {}; `vnetlab down {}` removes the lab",
                e.role,
                crate::lab::vms::console_tail(e),
                rec.topology.name
            )
        })
        .collect()
}

fn dead_vnic_backends(target: &Target) -> Vec<String> {
    target
        .backends()
        .into_iter()
        .filter(|(_, stats, _)| read_vnic(stats).map(|s| !crate::sys::alive(s.pid, None)).unwrap_or(true))
        .map(|(g, _, log)| {
            let tail = std::fs::read_to_string(&log).unwrap_or_default();
            let last = tail.lines().last().unwrap_or("no log").to_string();
            format!("the vNIC backend of {g} died, taking its link down ({last}); `vnetlab down` removes the lab")
        })
        .collect()
}

impl Target {
    /// `--pacing kernel` in a lab: fq on the devices that send the paced streams, for the test.
    pub fn kernel_pacing(&self, spec: &Spec) -> Result<Option<crate::lab::pacing::FqGuard>, Error> {
        let target = self;
        if spec.pacing != crate::vocab::Pacing::Kernel || spec.rate.is_none() {
            return Ok(None);
        }
        match target {
        Target::Lab { rec, from, to, .. } => {
            let senders: Vec<Role> = match (spec.test.initiator_sends(), from) {
                (false, _) => vec![*to],
                (true, Senders::AllGuests) => rec.guests().map(|g| g.role).collect(),
                (true, Senders::One(r)) => vec![*r],
            };
            Ok(Some(crate::lab::pacing::fq_on_senders(
                rec,
                &senders,
                spec.test.is_udp(),
            )?))
        }
        Target::Remote { .. } if spec.test.is_udp() => Err(Error::Input(
            "--pacing kernel paces UDP only through fq on the sending device, which vnetlab sets only in a lab: use --pacing app".into(),
        )),
        Target::Remote { .. } => Ok(None),
    }
    }
}
