//! Kernel datapaths: guests on veth pairs into the host's Linux bridge (`bridge`), or routed
//! and masqueraded by the host (`nat`). The bridge is also where vnetlab's device models and
//! QEMU's taps plug in (`host_bridge`).

use super::seam::Datapath;
use crate::lab::hostcmd::{HostCmd, IpCmd, NftCmd};
use crate::lab::journal::{Entry, NsObject};
use crate::lab::plan::cx::{addr, just, nat_ports, veth, Batch, Cx, Step};
use crate::vocab::Mode;

pub struct Bridge;
pub struct Nat;

impl Datapath for Bridge {
    fn mode(&self) -> Mode {
        Mode::Bridge
    }
    fn about(&self) -> &'static str {
        "a veth pair per guest into the host's Linux bridge, which the wire joins"
    }
    fn bridged(&self) -> bool {
        true
    }
    fn guest_links(&self, cx: &Cx, b: &mut Batch) {
        guest_veths(cx, b);
    }
    fn host_side(&self, cx: &Cx, b: &mut Batch) -> String {
        host_bridge(cx, b, None, false)
    }
}

impl Datapath for Nat {
    fn mode(&self) -> Mode {
        Mode::Nat
    }
    fn about(&self) -> &'static str {
        "guests on an inner bridge, routed and masqueraded by the host onto the wire"
    }
    fn bridged(&self) -> bool {
        true
    }
    fn routed(&self) -> bool {
        true
    }
    fn guest_links(&self, cx: &Cx, b: &mut Batch) {
        guest_veths(cx, b);
    }
    fn host_side(&self, cx: &Cx, b: &mut Batch) -> String {
        host_bridge(cx, b, None, true)
    }
    fn guest_routes(&self, cx: &Cx) -> Vec<IpCmd> {
        vec![route_to_wire(cx)]
    }
    fn finish(&self, cx: &Cx) -> Vec<Step> {
        nat(cx)
    }
}

/// A veth pair per guest: its port on the host, its NIC in its namespace.
fn guest_veths(cx: &Cx, b: &mut Batch) {
    for &i in &cx.guests {
        let (port, gif, gns) = (cx.n.guest_port(i), cx.n.guest_if(i), cx.n.guest_ns(i));
        veth(b, (&cx.h, &port), (&gns, &gif));
    }
}

/// The bridge with every guest's port; in bridged modes the wire joins it and the bridge holds
/// the host's address, behind NAT the wire holds it and the bridge the inner network's. With
/// `taps`, each port is a tap (with the virtio-net header or not) for a device model or QEMU.
pub(super) fn host_bridge(cx: &Cx, b: &mut Batch, taps: Option<bool>, nat: bool) -> String {
    let (br, wh, mtu) = (cx.n.bridge(), &cx.wh, cx.t.mtu);
    b.make(&cx.h, &br, IpCmd::Bridge(br.clone()));
    for &i in &cx.guests {
        let port = cx.n.guest_port(i);
        if let Some(vnet_hdr) = taps {
            let tap = IpCmd::Tap {
                name: port.clone(),
                vnet_hdr,
            };
            b.make(&cx.h, &port, tap);
        }
        b.cmds.extend([
            IpCmd::Mtu {
                dev: port.clone(),
                mtu,
            },
            IpCmd::Master {
                dev: port.clone(),
                master: br.clone(),
            },
            IpCmd::Up(port),
        ]);
    }
    if nat {
        b.cmds.push(addr(cx.a.host, cx.a.wire.len, wh));
        let inner =
            cx.a.host_inner
                .expect("nat addressing has an inner address");
        b.cmds.push(addr(inner, cx.a.guest_net.len, &br));
    } else {
        b.cmds.push(IpCmd::Master {
            dev: wh.clone(),
            master: br.clone(),
        });
        b.cmds.push(addr(cx.a.host, cx.a.wire.len, &br));
    }
    b.cmds.push(IpCmd::Mtu {
        dev: br.clone(),
        mtu,
    });
    b.cmds.push(IpCmd::Up(br.clone()));
    if nat {
        wh.clone()
    } else {
        br
    }
}

/// Behind NAT a guest reaches the wire's segment through the host's inner address.
fn route_to_wire(cx: &Cx) -> IpCmd {
    IpCmd::Route {
        to: cx.a.wire,
        via: cx
            .a
            .host_inner
            .expect("nat addressing has an inner address"),
    }
}

/// NAT: forwarding on, masquerade out of the wire, a block of ports forwarded to each guest.
fn nat(cx: &Cx) -> Vec<Step> {
    let table = cx.n.nft_table();
    let forwards = (0..cx.guests.len())
        .map(|k| (nat_ports(k as u32), cx.a.guests[k]))
        .collect();
    let nft = NftCmd {
        table: table.clone(),
        guest_net: cx.a.guest_net,
        wire: cx.wh.clone(),
        host: cx.a.host,
        forwards,
    };
    vec![
        just(HostCmd::Sysctl {
            netns: cx.h.clone(),
            key: "net.ipv4.ip_forward".into(),
            value: "1".into(),
        }),
        Step::Run {
            creates: vec![Entry::InNetns {
                netns: cx.h.clone(),
                object: NsObject::NftTable(table),
            }],
            cmd: HostCmd::Nft {
                netns: cx.h.clone(),
                table: nft,
            },
        },
    ]
}
