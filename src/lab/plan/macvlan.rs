//! Macvlan: each guest's NIC is a macvlan on the wire's host end, switched without a host
//! bridge hop (vnetlab's stand-in for an SR-IOV VF, which the NIC switches).

use super::{addr, Batch, Cx};
use crate::lab::hostcmd::IpCmd;

/// Makes each guest's macvlan in the host namespace and moves it into the guest's; the wire's
/// end holds the host's address.
pub(super) fn host(cx: &Cx, b: &mut Batch) -> String {
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
