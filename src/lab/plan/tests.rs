//! The planner's tests: each mode's commands and journal, asserted on the typed steps.

use super::*;
use crate::guest::qemu::{Device, VmSpec};
use crate::lab::hostcmd::HostCmd;
use crate::lab::hostcmd::{Offloads, TcCmd};
use crate::lab::journal::{Entry, NsObject};
use crate::lab::names::Names;
use crate::lab::state::Side;
use crate::records::cpu::Steering;
use crate::units::{Delay, Rate};
use crate::vocab::Mode;
use crate::vocab::{Gro, Role};

fn unplaced() -> CpuPlan {
    crate::lab::cpus::plan(&[0, 1], None, None, false, Some("test".into())).unwrap()
}

fn plan_of(t: &Topology) -> Plan {
    let cg = Hierarchy::V1 {
        cpuacct: "/nonexistent/cpuacct".into(),
        cpuset: None,
    };
    plan(t, &cg, &unplaced(), HostOffers::default()).unwrap()
}

/// A placed plan against a fake cpuset root holding 2 CPUs, and that root's path (its folder is
/// removed once planned: the plan only names paths under it).
fn placed_plan_of(t: &Topology) -> (Plan, std::path::PathBuf) {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let k = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let root = std::env::temp_dir().join(format!("vnetlab-cpuset-{}-{k}", std::process::id()));
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("cpuset.cpus"), "0-1\n").unwrap();
    std::fs::write(root.join("cpuset.mems"), "0\n").unwrap();
    let cg = Hierarchy::V1 {
        cpuacct: "/nonexistent/cpuacct".into(),
        cpuset: Some(root.clone()),
    };
    let mut cpus = crate::lab::cpus::plan(&[0, 1], None, None, t.pin, None).unwrap();
    cpus.steering = Steering::ThreadedNapiRps;
    let p = plan(t, &cg, &cpus, HostOffers::default());
    std::fs::remove_dir_all(&root).unwrap();
    (p.unwrap(), root)
}

fn topo(mode: Mode, guests: u32) -> Topology {
    Topology {
        mode,
        guests,
        ..Default::default()
    }
}

/// The host commands of the plan, in order.
fn cmds(p: &Plan) -> impl Iterator<Item = &HostCmd> {
    p.steps.iter().filter_map(|s| match s {
        Step::Run { cmd, .. } => Some(cmd),
        _ => None,
    })
}

/// Every iproute2 command run in namespace `ns` (None: the root namespace).
fn ip_in<'a>(p: &'a Plan, ns: Option<&str>) -> Vec<&'a IpCmd> {
    cmds(p)
        .filter_map(|c| match c {
            HostCmd::Ip { netns, cmds } if netns.as_deref() == ns => Some(cmds),
            _ => None,
        })
        .flatten()
        .collect()
}

/// The offloads set on each (namespace, interface).
fn offloads(p: &Plan) -> Vec<(&str, &Offloads)> {
    cmds(p)
        .filter_map(|c| match c {
            HostCmd::Ethtool { netns, offloads } => Some((netns.as_str(), offloads)),
            _ => None,
        })
        .collect()
}

fn offload_of<'a>(p: &'a Plan, dev: &str) -> &'a Offloads {
    offloads(p)
        .into_iter()
        .find(|(_, o)| o.dev == dev)
        .unwrap_or_else(|| panic!("no offloads for {dev}"))
        .1
}

/// The qdiscs of each wire end.
fn tc_of<'a>(p: &'a Plan, ns: &str) -> &'a [TcCmd] {
    cmds(p)
        .find_map(|c| match c {
            HostCmd::Tc { netns, cmds } if netns.as_deref() == Some(ns) => Some(cmds.as_slice()),
            _ => None,
        })
        .unwrap()
}

fn created(p: &Plan) -> Vec<Entry> {
    p.steps
        .iter()
        .flat_map(|s| match s {
            Step::Run { creates, .. } => creates.clone(),
            Step::MakeNetns { names } => names
                .iter()
                .map(|n| Entry::Netns { name: n.clone() })
                .collect(),
            _ => vec![],
        })
        .collect()
}

fn link(ns: &str, name: &str) -> Entry {
    Entry::InNetns {
        netns: ns.into(),
        object: NsObject::Link(name.into()),
    }
}

fn master(dev: &str, br: &str) -> IpCmd {
    IpCmd::Master {
        dev: dev.into(),
        master: br.into(),
    }
}

#[test]
fn a_placed_lab_confines_each_side_and_steers_both_wire_ends() {
    let t = Topology {
        gro: Gro::Guest,
        tso: false,
        ..topo(Mode::Paravirt, 2)
    };
    let (p, root) = placed_plan_of(&t);
    // The client's folder holds CPU 1, the host's parts CPU 0.
    for (part, cpu) in [
        ("client", "1"),
        ("host", "0"),
        ("g2", "0"),
        ("vnic-g1", "0"),
    ] {
        let path = root.join(format!("vnetlab/vllab/{part}/cpuset.cpus"));
        let want = HostCmd::Write {
            path: path.clone(),
            value: cpu.into(),
        };
        assert!(cmds(&p).any(|c| *c == want), "{part}: {want:?} missing");
    }
    // RPS/XPS on both ends; threaded NAPI only where the end runs GRO on MTU frames: here the
    // client's (the host sends MTU frames with --tso off), not the host's (--gro guest).
    let steer: Vec<_> = cmds(&p)
        .filter_map(|c| match c {
            HostCmd::Steer {
                dev,
                rps,
                xps,
                threaded,
                ..
            } => Some((dev.as_str(), rps.as_str(), xps.as_str(), *threaded)),
            _ => None,
        })
        .collect();
    assert_eq!(
        steer,
        [
            ("vllabw", "00000001", "00000001", false),
            ("vllabc", "00000002", "00000002", true)
        ]
    );
    let napi: Vec<_> = p
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::PlaceNapi { dev, cpus, .. } => Some((dev.as_str(), cpus.to_string())),
            _ => None,
        })
        .collect();
    assert_eq!(napi, [("vllabc", "1".to_string())]);
    // By default the host's NIC does TSO, so only the host's end receives frames to merge.
    let (d, _) = placed_plan_of(&Topology::default());
    let napi: Vec<_> = d
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::PlaceNapi { dev, .. } => Some(dev.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(napi, ["vllabw"]);
    assert_eq!(
        (offload_of(&d, "vllabw").gro, offload_of(&d, "vllabw").tso),
        (true, true)
    );
    assert_eq!(
        (offload_of(&d, "vllabc").gro, offload_of(&d, "vllabc").tso),
        (true, false)
    );
    assert_eq!(
        tc_of(&d, "vllab-host"),
        [TcCmd::Pfifo {
            dev: "vllabw".into(),
            limit: 1000
        }]
    );
    let r = &p.record;
    assert!(r.cpus.placed);
    assert_eq!(r.steered.len(), 2);
    assert_eq!(
        (r.steered[1].side, r.steered[1].napi_threaded),
        (Side::Client, true)
    );
    assert_eq!(r.endpoint(Role::Client).unwrap().cpus.as_deref(), Some("1"));
}

#[test]
fn an_unplaced_lab_steers_nothing_and_says_why() {
    let p = plan_of(&Topology::default());
    assert!(!cmds(&p).any(|c| matches!(c, HostCmd::Steer { .. })));
    assert!(
        p.record.notes.iter().any(|n| n.starts_with("unplaced")),
        "{:?}",
        p.record.notes
    );
    assert!(!p.record.cpus.placed && p.record.steered.is_empty());
}

#[test]
fn every_created_object_is_journaled_and_named_vl() {
    for mode in [
        Mode::Native,
        Mode::Bridge,
        Mode::Nat,
        Mode::Macvlan,
        Mode::Emulated,
        Mode::Paravirt,
    ] {
        let p = plan_of(&topo(mode, 3));
        let made = created(&p);
        // Every link an `ip` command makes is journaled in the namespace it is made in, first.
        for c in cmds(&p) {
            let HostCmd::Ip { netns, cmds } = c else {
                continue;
            };
            for ip in cmds {
                let (ns, name) = match ip {
                    IpCmd::Veth {
                        name,
                        netns,
                        peer,
                        peer_netns,
                        ..
                    } => {
                        assert!(made.contains(&link(peer_netns, peer)), "{mode}: {peer}");
                        (netns.clone(), name)
                    }
                    IpCmd::Bridge(name) | IpCmd::Tap { name, .. } | IpCmd::Macvlan { name, .. } => {
                        (netns.clone().unwrap(), name)
                    }
                    IpCmd::NetnsAdd(n) => {
                        assert!(made.contains(&Entry::Netns { name: n.clone() }));
                        continue;
                    }
                    _ => continue,
                };
                assert!(name.starts_with("vl"), "{mode}: {name}");
                assert!(
                    made.contains(&link(&ns, name)),
                    "{mode}: {name} is not journaled"
                );
            }
        }
        for e in &made {
            let text = serde_json::to_string(e).unwrap();
            assert!(!text.contains("eth0"), "{text}");
        }
    }
}

#[test]
fn every_veth_end_is_numbered_apart_from_its_peer_and_the_labs_others() {
    for mode in [Mode::Bridge, Mode::Nat, Mode::Macvlan, Mode::Paravirt] {
        let p = plan_of(&topo(mode, 3));
        let ends: Vec<u32> = ip_in(&p, None)
            .iter()
            .filter_map(|c| match c {
                IpCmd::Veth { index, .. } => Some([*index, index + 1]),
                _ => None,
            })
            .flatten()
            .collect();
        assert!(!ends.is_empty(), "{mode}: no veth");
        let mut unique = ends.clone();
        unique.sort();
        unique.dedup();
        // Equal indices at the two ends made linkwatch bring the wire up a second late.
        assert_eq!(unique.len(), ends.len(), "{mode}: {ends:?}");
        assert!(ends.iter().all(|&i| i >= 100), "{mode}: {ends:?}");
    }
}

#[test]
fn bridge_lab_puts_guests_and_wire_on_one_bridge() {
    let p = plan_of(&topo(Mode::Bridge, 2));
    let host = ip_in(&p, Some("vllab-host"));
    assert!(host.contains(&&IpCmd::Bridge("vllabbr".into())));
    assert!(host.contains(&&master("vllabw", "vllabbr")));
    assert!(host.contains(&&master("vllabg2h", "vllabbr")));
    let g2 = ip_in(&p, Some("vllab-g2"));
    assert!(g2.contains(&&IpCmd::Addr {
        addr: "10.213.0.4".parse().unwrap(),
        len: 16,
        dev: "vllabg2".into()
    }));
    assert!(!g2.iter().any(|c| matches!(c, IpCmd::Route { .. })));
    let e = p.record.endpoint(Role::Guest(2)).unwrap();
    assert_eq!(
        (e.netns.as_str(), e.iface.as_str()),
        ("vllab-g2", "vllabg2")
    );
    // The client's end segments its sends to MTU frames; the host's end is a NIC with TSO.
    assert!(!offload_of(&p, "vllabc").tso && offload_of(&p, "vllabw").tso);
}

#[test]
fn nat_lab_masquerades_and_forwards_ports() {
    let p = plan_of(&topo(Mode::Nat, 2));
    let nft = cmds(&p)
        .find_map(|c| match c {
            HostCmd::Nft { table, .. } => Some(table),
            _ => None,
        })
        .unwrap();
    assert_eq!(nft.wire, "vllabw");
    assert_eq!(nft.guest_net.to_string(), "10.213.128.0/17");
    assert_eq!(
        nft.forwards[1],
        ([20100, 20199], "10.213.128.3".parse().unwrap())
    );
    assert!(ip_in(&p, Some("vllab-g1")).contains(&&IpCmd::Route {
        to: "10.213.0.0/17".parse().unwrap(),
        via: "10.213.128.1".parse().unwrap()
    }));
    assert!(cmds(&p).any(|c| matches!(c, HostCmd::Sysctl { key, value, .. } if key == "net.ipv4.ip_forward" && value == "1")));
    assert!(created(&p).contains(&Entry::InNetns {
        netns: "vllab-host".into(),
        object: NsObject::NftTable("vllabnat".into())
    }));
    let reach = p.record.endpoint(Role::Guest(1)).unwrap();
    assert_eq!(
        reach.reach_from_client.as_ref().unwrap().ports,
        [20000, 20099]
    );
    // The wire is not on the bridge: the host routes between them.
    assert!(!ip_in(&p, Some("vllab-host")).contains(&&master("vllabw", "vllabbr")));
}

#[test]
fn native_guests_live_on_the_host() {
    let p = plan_of(&topo(Mode::Native, 2));
    let g1 = p.record.endpoint(Role::Guest(1)).unwrap();
    assert_eq!(g1.netns, "vllab-host");
    assert!(!created(&p).contains(&Entry::Netns {
        name: "vllab-g1".into()
    }));
    assert!(ip_in(&p, Some("vllab-g1")).is_empty());
}

#[test]
fn macvlan_hangs_guests_off_the_wire() {
    let p = plan_of(&topo(Mode::Macvlan, 2));
    let host = ip_in(&p, Some("vllab-host"));
    assert!(host.contains(&&IpCmd::Macvlan {
        name: "vllabg1".into(),
        link: "vllabw".into()
    }));
    assert!(host.contains(&&IpCmd::ToNetns {
        dev: "vllabg1".into(),
        netns: "vllab-g1".into()
    }));
    assert!(!host.iter().any(|c| matches!(c, IpCmd::Bridge(_))));
}

#[test]
fn wire_shaping_uses_netem_and_tbf() {
    let mut t = Topology::default();
    t.wire.rate = Some(Rate(1_000_000_000));
    let p = plan_of(&t);
    assert!(matches!(
        tc_of(&p, "vllab-host"),
        [TcCmd::Tbf { dev, under_netem: false, rate_bit: 1_000_000_000, .. }] if dev == "vllabw"
    ));
    t.wire.delay = Some(Delay(5000));
    let p = plan_of(&t);
    assert!(matches!(
        tc_of(&p, "vllab-client"),
        [
            TcCmd::Netem {
                delay_us: Some(5000),
                loss_pct: None,
                ..
            },
            TcCmd::Tbf {
                under_netem: true,
                ..
            }
        ]
    ));
}

#[test]
fn gro_goes_where_asked() {
    let t = Topology {
        gro: Gro::Guest,
        ..Default::default()
    };
    let p = plan_of(&t);
    assert!(!offload_of(&p, "vllabw").gro && offload_of(&p, "vllabg1").gro);
    let t = Topology {
        gro: Gro::Host,
        tso: false,
        ..Default::default()
    };
    let p = plan_of(&t);
    assert!(offload_of(&p, "vllabw").gro);
    let g1 = offload_of(&p, "vllabg1");
    assert!(!g1.gro && !g1.tso);
}

#[test]
fn sriov_needs_enough_vfs_and_leaves_used_ones_alone() {
    let cg = Hierarchy::None { why: "test".into() };
    let t = Topology {
        pf: Some("enp1s0f0".into()),
        ..topo(Mode::Sriov, 2)
    };
    let pf = SriovPf {
        pf: "enp1s0f0".into(),
        numvfs: 0,
        totalvfs: 16,
    };
    let p = plan(&t, &cg, &unplaced(), sriov_offer(&pf)).unwrap();
    assert!(cmds(&p).any(|c| matches!(c, HostCmd::Write { path, value } if value == "4" && path.ends_with("enp1s0f0/device/sriov_numvfs"))));
    let moves: Vec<_> = p
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::MoveVf {
                vf, netns, name, ..
            } => Some((*vf, netns.as_str(), name.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(
        moves,
        [
            (0, "vllab-host", "vllabw"),
            (1, "vllab-client", "vllabc"),
            (2, "vllab-g1", "vllabg1"),
            (3, "vllab-g2", "vllabg2")
        ]
    );
    // VFs are the wire: no veth is made.
    assert!(!ip_in(&p, None)
        .iter()
        .any(|c| matches!(c, IpCmd::Veth { .. })));
    let busy = SriovPf { numvfs: 2, ..pf };
    assert!(plan(&t, &cg, &unplaced(), sriov_offer(&busy))
        .err()
        .unwrap()
        .to_string()
        .contains("will not change"));
    let small = SriovPf {
        pf: "x".into(),
        numvfs: 0,
        totalvfs: 3,
    };
    assert!(plan(&t, &cg, &unplaced(), sriov_offer(&small))
        .err()
        .unwrap()
        .to_string()
        .contains("offers 3 VFs"));
}

#[test]
fn device_model_modes_put_taps_and_a_backend_between_guest_and_bridge() {
    let t = Topology {
        lro: true,
        ..topo(Mode::Paravirt, 2)
    };
    let p = plan_of(&t);
    let tap = |name: &str, vnet_hdr| IpCmd::Tap {
        name: name.into(),
        vnet_hdr,
    };
    assert!(ip_in(&p, Some("vllab-g1")).contains(&&tap("vllabg1", true)));
    let host = ip_in(&p, Some("vllab-host"));
    assert!(host.contains(&&tap("vllabg2h", true)));
    assert!(host.contains(&&master("vllabg2h", "vllabbr")));
    let args = p
        .steps
        .iter()
        .find_map(|s| match s {
            Step::StartBackend { guest, args, .. } if guest == "g1" => Some(args.join(" ")),
            _ => None,
        })
        .unwrap();
    assert!(args.starts_with("vnic --model paravirt --guest-ns vllab-g1 --guest-tap vllabg1 --host-ns vllab-host --host-tap vllabg1h"));
    assert!(args.ends_with("--lro"));
    let g1 = p.record.endpoint(Role::Guest(1)).unwrap();
    assert_eq!(
        g1.vnic.as_ref().unwrap().cgroups[0],
        std::path::PathBuf::from("/nonexistent/cpuacct/vnetlab/vllab/vnic-g1")
    );
    let e = plan_of(&topo(Mode::Emulated, 1));
    assert!(ip_in(&e, Some("vllab-g1")).contains(&&tap("vllabg1", false)));
    assert!(!offload_of(&e, "vllabg1").tso, "emulated NICs have no TSO");
    assert!(validate(&Topology {
        lro: true,
        ..topo(Mode::Bridge, 1)
    })
    .unwrap_err()
    .to_string()
    .contains("paravirt"));
}

#[test]
fn dry_run_text_is_the_commands_iproute2_reads() {
    let text = shell(&plan_of(&topo(Mode::Bridge, 1)).steps).join("\n");
    assert!(text.contains(
        "ip netns add vllab-host  # made only if the name is free; its inode journaled; IPv6 off in it\nip netns add vllab-client  # made only if the name is free; its inode journaled; IPv6 off in it\nip netns add vllab-g1  # made only if the name is free; its inode journaled; IPv6 off in it\nip -batch - <<'EOF'\nlink add vllabw netns vllab-host index 100 type veth peer name vllabc netns vllab-client index 101\n"
    ));
    assert!(text.contains("ip netns exec vllab-host ethtool -K vllabw gro on tso on gso on"));
}

fn sriov_offer(pf: &SriovPf) -> HostOffers<'_> {
    HostOffers {
        sriov: Some(pf),
        vm: None,
    }
}

fn vm_host() -> VmHost {
    VmHost {
        image: crate::guest::image::Image {
            kernel: "/cache/vmlinuz".into(),
            initrd: "/cache/initramfs.cpio".into(),
        },
        accel: crate::vocab::Accel::Tcg,
        why_not_kvm: Some("no /dev/kvm".into()),
        bios: None,
        tsc_khz: Some(2_596_130),
    }
}

fn qemu_plan(mode: Mode, guests: u32) -> Result<Plan, Error> {
    let cg = Hierarchy::V1 {
        cpuacct: "/nonexistent/cpuacct".into(),
        cpuset: None,
    };
    let vm = vm_host();
    let offers = HostOffers {
        sriov: None,
        vm: Some(&vm),
    };
    plan(&topo(mode, guests), &cg, &unplaced(), offers)
}

/// Every link the plan journals, as (namespace, name).
pub(super) fn created_links(p: &Plan) -> Vec<(String, String)> {
    p.steps
        .iter()
        .flat_map(|s| match s {
            Step::Run { creates, .. } => creates.clone(),
            _ => vec![],
        })
        .filter_map(|e| match e {
            Entry::InNetns {
                netns,
                object: NsObject::Link(l),
            } => Some((netns, l)),
            _ => None,
        })
        .collect()
}

#[test]
fn qemu_guests_are_vms_started_from_the_host_namespace_on_taps_of_the_bridge() {
    let p = qemu_plan(Mode::QemuVirtio, 2).unwrap();
    let names = Names::new(&p.record.topology.name);
    // No guest namespaces: QEMU runs in the host's; each guest's tap is on the bridge there.
    let made_ns: Vec<String> = created(&p)
        .into_iter()
        .filter_map(|e| match e {
            Entry::Netns { name } => Some(name),
            _ => None,
        })
        .collect();
    assert_eq!(made_ns, vec![names.host_ns(), names.client_ns()]);
    let links = created_links(&p);
    for i in [1, 2] {
        assert!(
            links.contains(&(names.host_ns(), names.guest_port(i))),
            "{links:?}"
        );
    }
    let starts: Vec<(&Role, &VmSpec, &String)> = p
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::StartVm {
                guest, spec, netns, ..
            } => Some((guest, spec.as_ref(), netns)),
            _ => None,
        })
        .collect();
    assert_eq!(starts.len(), 2);
    let (g, spec, ns) = starts[1];
    assert_eq!(
        (*g, ns.as_str()),
        (Role::Guest(2), names.host_ns().as_str())
    );
    assert_eq!(spec.device, Device::Virtio);
    assert_eq!(spec.host_if, names.guest_port(2));
    assert_eq!(spec.nic.address, p.record.addressing.guests[1]);
    // The wait comes after both starts, so the guests boot in parallel.
    let last_start = p
        .steps
        .iter()
        .rposition(|s| matches!(s, Step::StartVm { .. }));
    let wait = p
        .steps
        .iter()
        .position(|s| matches!(s, Step::WaitVms { .. }));
    assert!(wait > last_start, "{wait:?} {last_start:?}");
    let g2 = p.record.endpoint(Role::Guest(2)).unwrap();
    let vm = g2.vm.as_ref().unwrap();
    assert_eq!(
        (g2.netns.as_str(), g2.iface.as_str()),
        (names.host_ns().as_str(), "eth0")
    );
    assert_eq!(
        (vm.mode, vm.accel),
        (Mode::QemuVirtio, crate::vocab::Accel::Tcg)
    );
    // The guest sets its own offloads: no ethtool runs for eth0.
    assert!(!shell(&p.steps).iter().any(|c| c.contains(" eth0 ")));
}

#[test]
fn qemu_macvtap_guests_hang_off_the_wire_without_a_bridge() {
    let p = qemu_plan(Mode::QemuMacvtap, 1).unwrap();
    let text = shell(&p.steps).join("\n");
    assert!(text.contains("type macvtap mode bridge"), "{text}");
    assert!(text.contains("address 52:54:00:76:00:01"), "{text}");
    assert!(!text.contains("type bridge"), "{text}");
    assert!(text.contains("3<>/dev/tap$(cat /sys/class/net/"), "{text}");
    let e1000 = shell(&qemu_plan(Mode::QemuE1000, 1).unwrap().steps).join("\n");
    assert!(e1000.contains("e1000,netdev=net0"), "{e1000}");
}

#[test]
fn qemu_modes_need_the_vm_host_and_vfio_needs_the_pf() {
    let e = qemu_plan(Mode::QemuVfio, 1).err().unwrap();
    assert!(e.to_string().contains("--pf"), "{e}");
    let cg = Hierarchy::V1 {
        cpuacct: "/nonexistent/cpuacct".into(),
        cpuset: None,
    };
    let e = plan(
        &topo(Mode::QemuVirtio, 1),
        &cg,
        &unplaced(),
        HostOffers::default(),
    )
    .err()
    .unwrap();
    assert!(e.to_string().contains("vnetlab up"), "{e}");
}

#[test]
fn qemu_vfio_moves_the_ports_vfs_and_passes_the_next_ones_through() {
    let cg = Hierarchy::None { why: "test".into() };
    let t = Topology {
        pf: Some("enp1s0f0".into()),
        ..topo(Mode::QemuVfio, 2)
    };
    let pf = SriovPf {
        pf: "enp1s0f0".into(),
        numvfs: 0,
        totalvfs: 8,
    };
    let vm = vm_host();
    let offers = HostOffers {
        sriov: Some(&pf),
        vm: Some(&vm),
    };
    let p = plan(&t, &cg, &unplaced(), offers).unwrap();
    let kinds: Vec<String> = p
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::MoveVf { vf, netns, .. } => Some(format!("move {vf} {netns}")),
            Step::BindVfio { vf, .. } => Some(format!("vfio {vf}")),
            Step::StartVm { spec, .. } => Some(format!("start {}", spec.host_if)),
            _ => None,
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "move 0 vllab-host",
            "move 1 vllab-client",
            "vfio 2",
            "vfio 3",
            "start /sys/class/net/enp1s0f0/device/virtfn2",
            "start /sys/class/net/enp1s0f0/device/virtfn3",
        ]
    );
    assert!(cmds(&p).any(|c| matches!(c, HostCmd::Write { value, .. } if value == "4")));
    let text = shell(&p.steps).join("\n");
    assert!(!text.contains("type veth"), "{text}");
    assert!(!text.contains("type bridge"), "{text}");
    assert!(text.contains("drivers_probe"), "{text}");
    let g1 = p.record.endpoint(Role::Guest(1)).unwrap();
    assert_eq!(g1.vm.as_ref().unwrap().mode, Mode::QemuVfio);
}
