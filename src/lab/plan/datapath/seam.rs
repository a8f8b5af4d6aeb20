//! The seam every datapath plugs into: what the planner, the builder, `status` and `up`'s
//! checks ask of a way a guest's NIC reaches the wire. Each family answers in its own module;
//! the defaults describe the plainest datapath (guests in namespaces, the host's address on its
//! end of the wire, nothing between).

use crate::guest::qemu::Device;
use crate::lab::hostcmd::IpCmd;
use crate::lab::plan::cx::{addr, Batch, Cx, HostOffers, Step};
use crate::lab::plan::parts::Parts;
use crate::lab::Error;
use crate::vocab::Mode;

pub trait Datapath: Sync {
    /// The mode this datapath builds (its name is the mode's).
    fn mode(&self) -> Mode;
    /// One line for `--help`: how the guest's NIC reaches the wire.
    fn about(&self) -> &'static str;

    /// Whether each guest has a network namespace of its own (native guests are processes on
    /// the host; QEMU guests are VMs).
    fn guest_namespaces(&self) -> bool {
        true
    }
    /// Whether the host joins the guests' ports and the wire in a Linux bridge.
    fn bridged(&self) -> bool {
        false
    }
    /// Whether each guest has a port in the host's namespace (a bridge port, tap or macvtap)
    /// that `status` reads back.
    fn guest_port(&self) -> bool {
        self.bridged()
    }
    /// Whether the guests sit behind the host on an inner network (NAT) rather than on the
    /// wire's segment.
    fn routed(&self) -> bool {
        false
    }
    /// Whether the wire is a pair of VFs (the NIC switches) rather than a veth pair.
    fn vf_wire(&self) -> bool {
        false
    }
    /// Whether a `vnetlab vnic` backend process per guest moves its frames (a CPU part of its own).
    fn backend(&self) -> bool {
        false
    }
    /// The QEMU device of the guests' VMs, if the guests are VMs.
    fn vm(&self) -> Option<Device> {
        None
    }
    /// If the mode takes its NICs from an SR-IOV PF (`--pf`): the mode to use where the host
    /// has none, with why.
    fn pf_stand_in(&self) -> Option<&'static str> {
        None
    }
    /// Whether the backend can coalesce received frames (software LRO, `--lro`).
    fn lro(&self) -> bool {
        false
    }
    /// Whether the guest's NIC offers segmentation offload (an emulated NIC offers none).
    fn guest_tso(&self) -> bool {
        true
    }
    /// Past this many guests per host core, a test from every guest at once may starve some.
    fn guests_per_core(&self) -> usize {
        128
    }
    /// What this host lacks for the mode beyond the lab's basics, in one line naming the
    /// closest mode that works.
    fn missing(&self) -> Option<String> {
        None
    }
    /// Refuses a plan the host cannot give this mode (VFs to read, a guest image to boot).
    fn needs(&self, _host: &HostOffers) -> Result<(), Error> {
        Ok(())
    }

    /// The host namespace's side: the links the datapath needs made in the root namespace,
    /// straight into the lab's namespaces (one batch with the wire).
    fn guest_links(&self, _cx: &Cx, _b: &mut Batch) {}
    /// The host's side: its switch and ports; returns the interface holding the host's address.
    fn host_side(&self, cx: &Cx, b: &mut Batch) -> String {
        b.cmds.push(addr(cx.a.host, cx.a.wire.len, &cx.wh));
        cx.wh.clone()
    }
    /// Steps that give the lab its VFs, before the host's side is configured.
    fn wire_steps(&self, _cx: &Cx, _host: &HostOffers) -> Result<Vec<Step>, Error> {
        Ok(vec![])
    }
    /// Guest `i`'s NIC, made in its namespace before its address is set.
    fn guest_nic(&self, _cx: &Cx, _b: &mut Batch, _i: u32) {}
    /// Routes a guest needs once its address is set.
    fn guest_routes(&self, _cx: &Cx) -> Vec<IpCmd> {
        vec![]
    }
    /// What runs beside the guests to give them their NICs: backends, or the VMs.
    fn devices(&self, _cx: &Cx, _parts: &Parts, _host: &HostOffers) -> Vec<Step> {
        vec![]
    }
    /// The last steps, once the wire is shaped and steered (NAT's rules).
    fn finish(&self, _cx: &Cx) -> Vec<Step> {
        vec![]
    }
}
