//! SR-IOV: real virtual functions of a physical NIC, one moved into the host's namespace (its
//! port), one into the client's and one into each guest's namespace (mode sriov) or bound to
//! vfio-pci for each guest's VM (qemu-vfio, in `qemu`); the NIC switches between them.

use super::seam::Datapath;
use crate::lab::hostcmd::HostCmd;
use crate::lab::journal::Entry;
use crate::lab::plan::cx::{Cx, HostOffers, SriovPf, Step};
use crate::lab::Error;
use crate::vocab::Mode;

pub struct Sriov;

impl Datapath for Sriov {
    fn mode(&self) -> Mode {
        Mode::Sriov
    }
    fn about(&self) -> &'static str {
        "a real SR-IOV VF per guest (--pf IFACE); the NIC switches"
    }
    fn vf_wire(&self) -> bool {
        true
    }
    fn pf_stand_in(&self) -> Option<&'static str> {
        Some("macvlan, vnetlab's stand-in for a VF")
    }
    fn wire_steps(&self, cx: &Cx, host: &HostOffers) -> Result<Vec<Step>, Error> {
        match host.sriov {
            Some(pf) => steps(cx, pf, false),
            None => Ok(vec![]),
        }
    }
}

/// SR-IOV needs one VF per guest, one for the client and one for the host's own port.
pub fn sriov_vfs_needed(guests: u32) -> u32 {
    guests + 2
}

/// Enables the VFs if none are (never changing VFs in use), then moves them into place; with
/// `passed_through`, the guests' VFs are bound to vfio-pci for their VMs instead.
pub(super) fn steps(cx: &Cx, s: &SriovPf, passed_through: bool) -> Result<Vec<Step>, Error> {
    let need = sriov_vfs_needed(cx.t.guests);
    if s.totalvfs < need {
        return Err(Error::Input(format!(
            "{} offers {} VFs and this lab needs {need} (one per guest, one for the client, one for the host): use fewer guests",
            s.pf, s.totalvfs
        )));
    }
    let mut steps = Vec::new();
    if s.numvfs < need {
        if s.numvfs != 0 {
            return Err(Error::Input(format!(
                "{} has {} VFs enabled, fewer than the {need} this lab needs; vnetlab will not change VFs already in use: set sriov_numvfs to 0 or to {need} or more",
                s.pf, s.numvfs
            )));
        }
        steps.push(Step::Run {
            creates: vec![Entry::NumVfs {
                pf: s.pf.clone(),
                previous: s.numvfs,
                set: Some(need),
            }],
            cmd: HostCmd::Write {
                path: format!("/sys/class/net/{}/device/sriov_numvfs", s.pf).into(),
                value: need.to_string(),
            },
        });
    }
    let mut places = vec![(cx.h.clone(), cx.wh.clone()), (cx.c.clone(), cx.wc.clone())];
    if !passed_through {
        places.extend(
            cx.guests
                .iter()
                .map(|&i| (cx.n.guest_ns(i), cx.n.guest_if(i))),
        );
    }
    steps.extend(
        places
            .into_iter()
            .enumerate()
            .map(|(vf, (netns, name))| Step::MoveVf {
                pf: s.pf.clone(),
                vf: vf as u32,
                netns,
                name,
            }),
    );
    if passed_through {
        steps.extend((0..cx.guests.len()).map(|k| Step::BindVfio {
            pf: s.pf.clone(),
            vf: guest_vf(k),
        }));
    }
    Ok(steps)
}

/// The VF of the k-th guest (0-based): VFs 0 and 1 are the host's and the client's ports.
pub(super) fn guest_vf(k: usize) -> u32 {
    k as u32 + 2
}
