//! vnetlab's device models (`emulated`, `paravirt`): a tap is the guest's NIC, another tap is
//! its port on the host's bridge, and a `vnetlab vnic` backend process per guest moves frames
//! between them in its own cgroup.

use super::kernel::host_bridge;
use super::seam::Datapath;
use crate::lab::folder::{vnic_log_path, vnic_stats_path};
use crate::lab::hostcmd::IpCmd;
use crate::lab::plan::cx::{backend_part, Batch, Cx, HostOffers, Step};
use crate::lab::plan::parts::Parts;
use crate::vocab::{Mode, Role};

/// An emulated NIC (no offloads: the guest segments and checksums), or the paravirtual one
/// (the virtio-net header, TSO, and software LRO in its backend).
pub struct DeviceModel {
    pub paravirt: bool,
}

impl Datapath for DeviceModel {
    fn mode(&self) -> Mode {
        if self.paravirt {
            Mode::Paravirt
        } else {
            Mode::Emulated
        }
    }
    fn about(&self) -> &'static str {
        if self.paravirt {
            "vnetlab's paravirtual NIC: virtio-net header, TSO, software LRO (--lro) in its backend process"
        } else {
            "vnetlab's emulated NIC: no offloads, every frame copied by its backend process"
        }
    }
    fn bridged(&self) -> bool {
        true
    }
    fn backend(&self) -> bool {
        true
    }
    fn lro(&self) -> bool {
        self.paravirt
    }
    fn guest_tso(&self) -> bool {
        self.paravirt
    }
    fn guests_per_core(&self) -> usize {
        16
    }
    fn host_side(&self, cx: &Cx, b: &mut Batch) -> String {
        host_bridge(cx, b, Some(self.paravirt), false)
    }
    /// The guest's NIC: a tap (with the virtio-net header for the paravirtual model).
    fn guest_nic(&self, cx: &Cx, b: &mut Batch, i: u32) {
        let (gns, gif) = (cx.n.guest_ns(i), cx.n.guest_if(i));
        let tap = IpCmd::Tap {
            name: gif.clone(),
            vnet_hdr: self.paravirt,
        };
        b.make(&gns, &gif, tap);
    }
    fn devices(&self, cx: &Cx, parts: &Parts, _host: &HostOffers) -> Vec<Step> {
        backends(cx, parts)
    }
}

/// One backend per guest, started in the host's namespace.
fn backends(cx: &Cx, parts: &Parts) -> Vec<Step> {
    cx.guests
        .iter()
        .map(|&i| {
            let g = Role::Guest(i).to_string();
            let stats = vnic_stats_path(&cx.t.name, &g);
            let mut args: Vec<String> = [
                "vnic",
                "--model",
                &cx.t.mode.to_string(),
                "--guest-ns",
                &cx.n.guest_ns(i),
                "--guest-tap",
                &cx.n.guest_if(i),
                "--host-ns",
                &cx.h,
                "--host-tap",
                &cx.n.guest_port(i),
                "--mtu",
                &cx.t.mtu.to_string(),
                "--stats",
                &stats.display().to_string(),
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            if cx.t.lro {
                args.push("--lro".into());
            }
            Step::StartBackend {
                args,
                netns: cx.h.clone(),
                cgroups: parts.folders(&backend_part(i)),
                stats,
                log: vnic_log_path(&cx.t.name, &g),
                guest: g,
            }
        })
        .collect()
}
