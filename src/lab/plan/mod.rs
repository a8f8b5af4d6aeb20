//! The planner: turns a `Topology` into the ordered steps that build it (each naming the
//! objects it makes, for the journal) and the `LabRecord` later commands use. Pure: it reads
//! nothing from the host, so `--dry-run` and the unit tests see exactly what `up` would run.
//!
//! The steps come in a fixed order: cgroups, namespaces and links, the host's side, the
//! client, the guests, the guests' devices, the wire (shaping, offloads, steering), the
//! datapath's last steps (NAT). What differs between datapaths lives in one module per family
//! under `datapath/`, behind the `Datapath` trait; this driver asks it, and knows no mode.

pub mod cx;
pub mod datapath;
mod parts;
mod record;
mod shell;
#[cfg(test)]
mod tests;
mod wire;

use crate::lab::Error;

use super::cgroup::Hierarchy;
use super::hostcmd::IpCmd;
use super::state::LabRecord;
use super::topology::Topology;
use crate::records::cpu::CpuPlan;
use cx::{addr, just, veth, Batch, Cx};
use datapath::Datapath;

pub use cx::{boot_timeout, nat_ports, HostOffers, SriovPf, Step, VmHost};
pub use datapath::qemu::GUEST_IF;
pub use datapath::sriov::sriov_vfs_needed;
pub use shell::{shell, shell_step};

pub struct Plan {
    pub record: LabRecord,
    pub steps: Vec<Step>,
}

/// Checks a topology whole: its own fields, then what its datapath asks of them (a PF, LRO,
/// the guests its addressing holds). The one check `up`, the planner and the files go through.
pub fn validate(t: &Topology) -> Result<(), Error> {
    t.validate()?;
    let dp = datapath::of(t.mode);
    let max = super::addr::max_guests(dp.routed(), &t.subnet);
    if t.guests > max {
        return Err(Error::Input(format!(
            "--guests {}: subnet {} holds at most {max} guests in mode {}; use fewer guests or a larger --subnet",
            t.guests, t.subnet, t.mode
        )));
    }
    match (dp.pf_stand_in(), &t.pf) {
        (Some(_), None) => {
            return Err(Error::Input(format!(
                "mode {} needs --pf IFACE, the SR-IOV physical function to take VFs from",
                t.mode
            )))
        }
        (None, Some(_)) => {
            return Err(Error::Input(
                "--pf is only for modes sriov and qemu-vfio: drop it or use --mode sriov".into(),
            ))
        }
        _ => {}
    }
    if t.lro && !dp.lro() {
        return Err(Error::Input(format!("--lro guest is software LRO in the paravirt backend: use --mode paravirt (this lab is {})", t.mode)));
    }
    if t.uplink.is_some() && dp.vf_wire() {
        return Err(Error::Input(format!(
            "mode {} takes its wire from the PF's VFs: drop --uplink",
            t.mode
        )));
    }
    let want = super::addr::allocate(dp.routed(), &t.subnet, t.guests).client;
    match &t.client {
        Some(c) if c.address != want => Err(Error::Input(format!(
            "--client {}: the client must have the lab's client address {want} on the uplink's link (give it that address there, or pick a --subnet whose client address it has)",
            c.address
        ))),
        _ => Ok(()),
    }
}

pub fn plan(t: &Topology, cg: &Hierarchy, cpus: &CpuPlan, host: HostOffers) -> Result<Plan, Error> {
    plan_with(datapath::of(t.mode), t, cg, cpus, host)
}

/// The plan of `t` built by `dp` (`plan` takes the mode's own; a test may bring another).
fn plan_with(
    dp: &dyn Datapath,
    t: &Topology,
    cg: &Hierarchy,
    cpus: &CpuPlan,
    host: HostOffers,
) -> Result<Plan, Error> {
    validate(t)?;
    dp.needs(&host)?;
    let cx = Cx::new(t, dp.routed());
    let parts = parts::plan(&cx, cg, cpus, dp.backend(), dp.guests_per_core())?;
    let mut notes = parts.notes.clone();
    let mut steps = parts.steps();
    steps.push(Step::MakeNetns {
        names: namespaces(&cx, dp),
    });
    steps.push(links(&cx, dp));
    if let Some(u) = &t.uplink {
        steps.push(Step::ClaimUplink {
            name: u.clone(),
            netns: cx.h.clone(),
        });
    }
    steps.extend(dp.wire_steps(&cx, &host)?);
    let (host_step, host_iface) = host_side(&cx, dp);
    steps.push(host_step);
    if !cx.remote {
        steps.push(client(&cx));
    }
    steps.extend(cx.guests.iter().filter_map(|&i| guest_side(&cx, dp, i)));
    steps.extend(dp.devices(&cx, &parts, &host));
    steps.extend(wire::shaping(&cx));
    steps.extend(wire::offloads(&cx, dp));
    let (steer, steered) = wire::steering(&cx, cpus);
    steps.extend(steer);
    steps.extend(dp.finish(&cx));
    if dp.vf_wire() && cx.t.wire.shaped() {
        notes.push("VFs: wire shaping applies to the host's and the client's VFs, not between guests (the NIC switches those)".into());
    }
    let record = LabRecord {
        endpoints: record::endpoints(&cx, dp, &parts, &host_iface, host.vm),
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
fn namespaces(cx: &Cx, dp: &dyn Datapath) -> Vec<String> {
    let mut names = vec![cx.h.clone()];
    if !cx.remote {
        names.push(cx.c.clone());
    }
    if dp.guest_namespaces() {
        names.extend(cx.guests.iter().map(|&i| cx.n.guest_ns(i)));
    }
    names
}

/// The wire (a veth pair, unless VFs are the wire) and the datapath's links between host and
/// guests, in one batch in the root namespace, made straight into the lab's namespaces.
fn links(cx: &Cx, dp: &dyn Datapath) -> Step {
    let mut b = Batch::default();
    if !dp.vf_wire() && cx.t.uplink.is_none() {
        veth(&mut b, (&cx.h, &cx.wh), (&cx.c, &cx.wc));
    }
    dp.guest_links(cx, &mut b);
    b.step(None)
}

/// The host's namespace: its port on the wire and the datapath's switch; returns the step and
/// the interface that holds the host's address.
fn host_side(cx: &Cx, dp: &dyn Datapath) -> (Step, String) {
    let mut b = Batch::default();
    b.cmds.push(IpCmd::Up("lo".into()));
    b.cmds.push(IpCmd::Mtu {
        dev: cx.wh.clone(),
        mtu: cx.t.mtu,
    });
    let iface = dp.host_side(cx, &mut b);
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
    just(super::hostcmd::HostCmd::ip(Some(&cx.c), cmds))
}

/// Guest `i`'s namespace: its NIC up with its address (guests without a namespace of their
/// own, on the host or in VMs, have nothing here).
fn guest_side(cx: &Cx, dp: &dyn Datapath, i: u32) -> Option<Step> {
    if !dp.guest_namespaces() {
        return None;
    }
    let (gns, gif) = (cx.n.guest_ns(i), cx.n.guest_if(i));
    let mut b = Batch::default();
    dp.guest_nic(cx, &mut b, i);
    b.cmds.extend([
        IpCmd::Up("lo".into()),
        IpCmd::Mtu {
            dev: gif.clone(),
            mtu: cx.t.mtu,
        },
        addr(cx.a.guests[i as usize - 1], cx.a.guest_net.len, &gif),
        IpCmd::Up(gif),
    ]);
    b.cmds.extend(dp.guest_routes(cx));
    Some(b.step(Some(&gns)))
}
