//! vnetlab's device models (`emulated`, `paravirt`): a tap is the guest's NIC, another tap is
//! its port on the host's bridge (made by `kernel::host_bridge`), and a `vnetlab vnic` backend
//! process per guest moves frames between them in its own cgroup.

use super::parts::Parts;
use super::{Batch, Cx, Step};
use crate::lab::folder::{vnic_log_path, vnic_stats_path};
use crate::lab::hostcmd::IpCmd;
use crate::vocab::Role;

/// The guest's NIC: a tap (with the virtio-net header for the paravirtual model).
pub(super) fn guest_tap(b: &mut Batch, gns: &str, gif: &str, paravirt: bool) {
    let tap = IpCmd::Tap {
        name: gif.to_string(),
        vnet_hdr: paravirt,
    };
    b.make(gns, gif, tap);
}

/// One backend per guest, started in the host's namespace.
pub(super) fn backends(cx: &Cx, parts: &Parts) -> Vec<Step> {
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
                cgroups: parts.folders(&super::parts::backend_part(i)),
                stats,
                log: vnic_log_path(&cx.t.name, &g),
                guest: g,
            }
        })
        .collect()
}
