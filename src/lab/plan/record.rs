//! The lab record's endpoints: where host, client and each guest live, their addresses,
//! interfaces, cgroups and cores, as other commands and stages read them.

use super::cx::{backend_part, nat_ports, Cx, VmHost};
use super::datapath::{qemu, Datapath};
use super::parts::Parts;
use crate::lab::folder::{vnic_log_path, vnic_stats_path};
use crate::lab::state::{Endpoint, NatReach, VnicInfo};
use crate::vocab::Role;

pub(super) fn endpoints(
    cx: &Cx,
    dp: &dyn Datapath,
    parts: &Parts,
    host_iface: &str,
    vm: Option<&VmHost>,
) -> Vec<Endpoint> {
    let end = |role: Role, netns: &str, address, iface: &str| Endpoint {
        role,
        netns: netns.to_string(),
        address,
        iface: iface.to_string(),
        cgroups: parts.folders(&role.to_string()),
        cpus: parts.cpus(&role.to_string()),
        reach_from_client: None,
        vnic: None,
        vm: None,
        remote: None,
        ids: None,
    };
    let client = match &cx.t.client {
        // Another machine: no namespace, interface or cgroup of its here.
        Some(r) => Endpoint {
            netns: String::new(),
            iface: String::new(),
            cgroups: vec![],
            cpus: None,
            remote: Some(r.clone()),
            ..end(Role::Client, "", r.address, "")
        },
        None => end(Role::Client, &cx.c, cx.a.client, &cx.wc),
    };
    let mut out = vec![end(Role::Host, &cx.h, cx.a.host, host_iface), client];
    for (k, &i) in cx.guests.iter().enumerate() {
        let mut e = if let (Some(_), Some(vm)) = (dp.vm(), vm) {
            let mut e = end(Role::Guest(i), &cx.h, cx.a.guests[k], qemu::GUEST_IF);
            e.vm = Some(qemu::info(cx, vm, i));
            e
        } else if !dp.guest_namespaces() {
            end(Role::Guest(i), &cx.h, cx.a.host, host_iface)
        } else {
            end(
                Role::Guest(i),
                &cx.n.guest_ns(i),
                cx.a.guests[k],
                &cx.n.guest_if(i),
            )
        };
        if dp.routed() {
            e.reach_from_client = Some(NatReach {
                address: cx.a.host,
                ports: nat_ports(k as u32),
            });
        }
        if dp.backend() {
            let g = Role::Guest(i).to_string();
            e.vnic = Some(VnicInfo {
                model: cx.t.mode.to_string(),
                lro: cx.t.lro,
                stats: vnic_stats_path(&cx.t.name, &g),
                log: vnic_log_path(&cx.t.name, &g),
                cgroups: parts.folders(&backend_part(i)),
            });
        }
        out.push(e);
    }
    out
}
