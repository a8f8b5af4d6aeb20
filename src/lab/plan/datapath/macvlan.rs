//! Macvlan: each guest's NIC is a macvlan on the wire's host end, switched without a host
//! bridge hop (vnetlab's stand-in for an SR-IOV VF, which the NIC switches).

use super::seam::Datapath;
use crate::lab::hostcmd::IpCmd;
use crate::lab::plan::cx::{addr, Batch, Cx};
use crate::vocab::Mode;

pub struct Macvlan;

impl Datapath for Macvlan {
    fn mode(&self) -> Mode {
        Mode::Macvlan
    }
    fn about(&self) -> &'static str {
        "a macvlan on the wire's host end per guest, no bridge hop (the stand-in for an SR-IOV VF)"
    }
    /// Makes each guest's macvlan in the host namespace and moves it into the guest's; the
    /// wire's end holds the host's address.
    fn host_side(&self, cx: &Cx, b: &mut Batch) -> String {
        for &i in &cx.guests {
            let gif = cx.n.guest_if(i);
            let mv = IpCmd::Macvlan {
                name: gif.clone(),
                link: cx.wh.clone(),
            };
            b.make(&cx.h, &gif, mv);
            b.cmds.push(IpCmd::ToNetns {
                dev: gif,
                netns: cx.n.guest_ns(i),
            });
        }
        b.cmds.push(addr(cx.a.host, cx.a.wire.len, &cx.wh));
        cx.wh.clone()
    }
}
