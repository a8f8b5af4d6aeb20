//! The seam's tests: each mode's rules as `validate` reads them from its datapath, and a toy
//! datapath the planner builds through the trait alone.

use super::seam::Datapath;
use crate::lab::cgroup::Hierarchy;
use crate::lab::hostcmd::{HostCmd, IpCmd};
use crate::lab::plan::cx::{addr, veth, Batch, Cx, HostOffers, Step};
use crate::lab::plan::{plan_with, validate};
use crate::lab::topology::Topology;
use crate::vocab::Mode;

fn err(t: &Topology) -> String {
    validate(t).unwrap_err().to_string()
}

#[test]
fn every_mode_has_a_datapath_that_names_it_back() {
    for m in Mode::ALL {
        let dp = super::of(m);
        assert_eq!(dp.mode(), m);
        assert!(!dp.about().is_empty(), "{m} has no help line");
        assert_eq!(m.name().parse::<Mode>().unwrap(), m);
        assert_eq!(dp.vm().is_some(), m.is_qemu(), "{m}");
    }
    assert_eq!(super::all().count(), Mode::ALL.len());
}

#[test]
fn each_mode_asks_its_own_of_the_topology() {
    let t = Topology {
        mode: Mode::Sriov,
        ..Default::default()
    };
    assert!(err(&t).contains("needs --pf IFACE"));
    let t = Topology {
        pf: Some("eth9".into()),
        ..Default::default()
    };
    assert!(err(&t).contains("only for modes sriov and qemu-vfio"));
    let t = Topology {
        lro: true,
        mode: Mode::Emulated,
        ..Default::default()
    };
    assert!(err(&t).contains("--lro guest"));
    let t = Topology {
        lro: true,
        mode: Mode::Paravirt,
        ..Default::default()
    };
    validate(&t).unwrap();
    // Behind NAT the guests live on the inner half of the subnet: fewer fit.
    let t = Topology {
        mode: Mode::Nat,
        guests: 200,
        subnet: "10.213.0.0/24".parse().unwrap(),
        ..Default::default()
    };
    assert!(err(&t).contains("holds at most"));
    validate(&Topology {
        mode: Mode::Bridge,
        ..t
    })
    .unwrap();
}

/// A datapath no mode names: each guest on its own veth from the host, routed by the host
/// (no bridge, no NAT). Only the trait is implemented; the planner is not touched.
struct Toy;

impl Datapath for Toy {
    fn mode(&self) -> Mode {
        Mode::Bridge
    }
    fn about(&self) -> &'static str {
        "a routed veth per guest (a test's toy)"
    }
    fn guest_port(&self) -> bool {
        true
    }
    fn guest_links(&self, cx: &Cx, b: &mut Batch) {
        for &i in &cx.guests {
            veth(
                b,
                (&cx.h, &cx.n.guest_port(i)),
                (&cx.n.guest_ns(i), &cx.n.guest_if(i)),
            );
        }
    }
    fn host_side(&self, cx: &Cx, b: &mut Batch) -> String {
        for &i in &cx.guests {
            b.cmds.push(IpCmd::Up(cx.n.guest_port(i)));
        }
        b.cmds.push(addr(cx.a.host, cx.a.wire.len, &cx.wh));
        cx.wh.clone()
    }
}

#[test]
fn a_toy_datapath_plugs_in_through_the_trait_alone() {
    let t = Topology {
        name: "toy".into(),
        guests: 2,
        ..Default::default()
    };
    let cg = Hierarchy::None { why: "test".into() };
    let cpus = crate::lab::cpus::plan(&[0, 1], None, None, false, Some("test".into())).unwrap();
    let p = plan_with(&Toy, &t, &cg, &cpus, HostOffers::default()).unwrap();
    let links = crate::lab::plan::tests::created_links(&p);
    let n = crate::lab::names::Names::new("toy");
    for i in 1..=2 {
        assert!(links.contains(&(n.host_ns(), n.guest_port(i))), "{links:?}");
        assert!(links.contains(&(n.guest_ns(i), n.guest_if(i))), "{links:?}");
    }
    assert!(links
        .iter()
        .all(|(ns, l)| ns.starts_with("vl") && l.starts_with("vl")));
    let bridges = p.steps.iter().filter(|s| {
        matches!(s, Step::Run { cmd: HostCmd::Ip { cmds, .. }, .. }
            if cmds.iter().any(|c| matches!(c, IpCmd::Bridge(_))))
    });
    assert_eq!(bridges.count(), 0, "the toy has no bridge");
    // Its guests have namespaces (the default) with their addresses; the record says where.
    let g2 = p.record.endpoints.iter().find(|e| e.netns == n.guest_ns(2));
    assert_eq!(g2.unwrap().address, p.record.addressing.guests[1]);
}
