//! The wire between host and client: its queues and shaping, every interface's offloads, and
//! the steering that makes it a boundary between two machines' cores.

use super::cx::{just, Cx, Step};
use super::datapath::Datapath;
use crate::lab::hostcmd::{HostCmd, Offloads, TcCmd};
use crate::lab::journal::{Entry, NsObject};
use crate::lab::state::{Side, SteeredIface};
use crate::records::cpu::{CpuPlan, Steering};

/// Rate (tbf), delay and loss (netem), on both ends' egress. Unshaped, each end still gets a
/// queue (pfifo, a NIC's txqueuelen): with one, a full veth ring stops the queue as a full NIC
/// ring would, instead of dropping (veth's default is no queue at all).
pub(super) fn shaping(cx: &Cx) -> Vec<Step> {
    ends(cx)
        .into_iter()
        .map(|(ns, dev)| {
            let cmds = if cx.t.wire.shaped() {
                shaped(dev, cx)
            } else {
                vec![TcCmd::Pfifo {
                    dev: dev.clone(),
                    limit: 1000,
                }]
            };
            Step::Run {
                creates: vec![Entry::InNetns {
                    netns: ns.clone(),
                    object: NsObject::RootQdisc(dev.clone()),
                }],
                cmd: HostCmd::Tc {
                    netns: Some(ns.clone()),
                    cmds,
                },
            }
        })
        .collect()
}

/// The wire's ends made or taken here: the host's, and the client's unless it is another machine.
fn ends<'a>(cx: &'a Cx) -> Vec<(&'a String, &'a String)> {
    let mut v = vec![(&cx.h, &cx.wh)];
    if !cx.remote {
        v.push((&cx.c, &cx.wc));
    }
    v
}

/// One wire end's qdiscs: netem (delay, loss) at the root with tbf (rate) below it.
fn shaped(dev: &str, cx: &Cx) -> Vec<TcCmd> {
    let w = &cx.t.wire;
    let tbf = |under_netem: bool| {
        let r = w.rate.expect("tbf only with a rate").0;
        TcCmd::Tbf {
            dev: dev.to_string(),
            under_netem,
            rate_bit: r,
            // A burst of at least one timer tick at the rate, and room for a 64 KB super-frame.
            burst: (r / 8 / 250).max(2 * 65536 + 2 * cx.t.mtu as u64),
            latency_ms: 50,
        }
    };
    if w.delay.is_none() && w.loss.is_none() {
        return vec![tbf(false)];
    }
    let mut v = vec![TcCmd::Netem {
        dev: dev.to_string(),
        limit: 100000,
        delay_us: w.delay.map(|d| d.0),
        loss_pct: w.loss.map(|l| l.0),
    }];
    if w.rate.is_some() {
        v.push(tbf(true));
    }
    v
}

/// GRO where --gro puts it, TSO/GSO per --tso. The wire's host end is the host's NIC: its TSO
/// is the NIC's hardware (no host CPU), so it follows --tso; the client's end segments its sends
/// to MTU frames (--wire-segment), so the host's GRO has frames to merge.
pub(super) fn offloads(cx: &Cx, dp: &dyn Datapath) -> Vec<Step> {
    let t = cx.t;
    let client_tso = if t.wire.segment { false } else { t.tso };
    let mut eth = vec![(&cx.h, cx.wh.clone(), t.gro.host(), t.tso)];
    if !cx.remote {
        eth.push((&cx.c, cx.wc.clone(), true, client_tso));
    }
    // Emulated NICs have no offloads: the guest segments and checksums.
    let guest_tso = t.tso && dp.guest_tso();
    let guest_ns: Vec<String> = cx.guests.iter().map(|&i| cx.n.guest_ns(i)).collect();
    if dp.bridged() {
        eth.push((&cx.h, cx.n.bridge(), t.gro.host(), t.tso));
        for &i in &cx.guests {
            eth.push((&cx.h, cx.n.guest_port(i), t.gro.host(), guest_tso));
        }
    }
    if dp.guest_namespaces() {
        for (k, &i) in cx.guests.iter().enumerate() {
            eth.push((&guest_ns[k], cx.n.guest_if(i), t.gro.guest(), guest_tso));
        }
    }
    eth.into_iter()
        .map(|(ns, dev, gro, tso)| {
            just(HostCmd::Ethtool {
                netns: ns.clone(),
                offloads: Offloads { dev, gro, tso },
            })
        })
        .collect()
}

/// The wire is a machine boundary: frames arriving on each end are received on that side's
/// cores (RPS, and threaded NAPI placed there where the end runs GRO), and each end transmits
/// from its side's cores (XPS). An end runs GRO (NAPI) only on MTU frames: the host's end on the
/// client's segmented sends, the client's end only when the host sends MTU frames too (--tso off).
pub(super) fn steering(cx: &Cx, cpus: &CpuPlan) -> (Vec<Step>, Vec<SteeredIface>) {
    let (mut steps, mut steered) = (Vec::new(), Vec::new());
    // With the client on another machine, every core here is the host's: nothing crosses sides.
    if !cpus.placed || cx.remote {
        return (steps, steered);
    }
    let client_gets_frames = !cx.t.tso && cx.t.wire.segment;
    for (ns, dev, side, list, gro) in [
        (&cx.h, &cx.wh, Side::Host, &cpus.host, cx.t.gro.host()),
        (
            &cx.c,
            &cx.wc,
            Side::Client,
            &cpus.client,
            client_gets_frames,
        ),
    ] {
        let threaded = gro && cpus.steering == Steering::ThreadedNapiRps;
        let mask = list.mask();
        steps.push(just(HostCmd::Steer {
            netns: ns.clone(),
            dev: dev.clone(),
            rps: mask.clone(),
            xps: mask,
            threaded,
        }));
        if threaded {
            steps.push(Step::PlaceNapi {
                netns: ns.clone(),
                dev: dev.clone(),
                cpus: list.clone(),
            });
        }
        steered.push(SteeredIface {
            netns: ns.clone(),
            iface: dev.clone(),
            side,
            cpus: list.clone(),
            napi_threaded: threaded,
        });
    }
    (steps, steered)
}
