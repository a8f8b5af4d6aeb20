//! QEMU guests (the qemu-* modes): each guest is a VM whose NIC is a tap on the host's bridge
//! (e1000, virtio, vhost), a macvtap of the wire's host end (macvtap) or a passed-through VF
//! (vfio). QEMU runs in the host's namespace, in the guest's cgroup and on the guest's cores;
//! the guest configures its own NIC from its kernel command line.

use std::time::Duration;

use super::parts::Parts;
use super::{addr, Batch, Cx, Step};
use crate::guest::image::Image;
use crate::guest::qemu::{self, Device, Files, NicConfig, VmSpec};
use crate::lab::folder::vm_dir;
use crate::lab::hostcmd::IpCmd;
use crate::lab::state::VmInfo;
use crate::vocab::{Accel, Mode, Role};

/// What the host gives its QEMU guests: the image and the acceleration (probed before planning).
#[derive(Clone, Debug)]
pub struct VmHost {
    pub image: Image,
    pub accel: Accel,
    pub why_not_kvm: Option<String>,
    pub bios: Option<std::path::PathBuf>,
}

/// The interface a guest's NIC is inside its VM.
pub const GUEST_IF: &str = "eth0";

/// How long a guest may take from QEMU's start to its agent answering: booting under TCG on a
/// busy 2-core host takes seconds per guest; under KVM well under one.
pub fn boot_timeout(accel: Accel, guests: u32) -> Duration {
    match accel {
        Accel::Kvm => Duration::from_secs(30 + u64::from(guests)),
        Accel::Tcg => Duration::from_secs(60 + 10 * u64::from(guests)),
    }
}

pub(super) fn device(mode: Mode) -> Option<Device> {
    Some(match mode {
        Mode::QemuE1000 => Device::E1000,
        Mode::QemuVirtio => Device::Virtio,
        Mode::QemuVhost => Device::Vhost,
        Mode::QemuMacvtap => Device::Macvtap,
        Mode::QemuVfio => Device::Vfio,
        _ => return None,
    })
}

/// Whether the device's host side is a tap on the lab's bridge.
pub(super) fn on_bridge(d: Device) -> bool {
    matches!(d, Device::E1000 | Device::Virtio | Device::Vhost)
}

/// The macvtap of each guest on the wire's host end, in bridge mode with the guest's MAC; the
/// wire's end holds the host's address.
pub(super) fn macvtaps(cx: &Cx, b: &mut Batch) -> String {
    for &i in &cx.guests {
        let port = cx.n.guest_port(i);
        let tap = IpCmd::Macvtap {
            name: port.clone(),
            link: cx.wh.clone(),
            mac: qemu::mac_text(&qemu::guest_mac(i)),
        };
        b.make(&cx.h, &port, tap);
        b.cmds.push(IpCmd::Mtu {
            dev: port.clone(),
            mtu: cx.t.mtu,
        });
        b.cmds.push(IpCmd::Up(port));
    }
    b.cmds.push(addr(cx.a.host, cx.a.wire.len, &cx.wh));
    cx.wh.clone()
}

/// The host side of guest `k`'s (0-based, number `i`) NIC: its tap or macvtap, or for vfio the
/// sysfs link of its VF (resolved to the PCI address when QEMU starts, after the VFs exist).
fn host_if(cx: &Cx, dev: Device, k: usize, i: u32) -> String {
    match (dev, &cx.t.pf) {
        (Device::Vfio, Some(pf)) => {
            crate::lab::vfio::virtfn(std::path::Path::new("/sys"), pf, super::sriov::guest_vf(k))
                .display()
                .to_string()
        }
        _ => cx.n.guest_port(i),
    }
}

/// Guest `k`'s (0-based, number `i`) VM as QEMU starts it.
fn spec(cx: &Cx, vm: &VmHost, dev: Device, k: usize, i: u32) -> VmSpec {
    let role = Role::Guest(i).to_string();
    VmSpec {
        name: role.clone(),
        kernel: vm.image.kernel.clone(),
        initrd: vm.image.initrd.clone(),
        bios: vm.bios.clone(),
        vcpus: cx.t.vcpus,
        memory_mib: cx.t.memory_mib,
        accel: vm.accel,
        device: dev,
        host_if: host_if(cx, dev, k, i),
        nic: NicConfig {
            address: cx.a.guests[k],
            prefix: cx.a.guest_net.len,
            mtu: cx.t.mtu,
            gro: cx.t.gro.guest(),
            tso: cx.t.tso,
            mac: qemu::guest_mac(i),
        },
        files: Files {
            dir: vm_dir(&cx.t.name, &role),
        },
    }
}

/// Starts every guest's QEMU (they boot in parallel), then waits for all their agents.
pub(super) fn vms(cx: &Cx, parts: &Parts, vm: &VmHost, dev: Device) -> Vec<Step> {
    let mut steps: Vec<Step> = cx
        .guests
        .iter()
        .enumerate()
        .map(|(k, &i)| Step::StartVm {
            guest: Role::Guest(i),
            spec: Box::new(spec(cx, vm, dev, k, i)),
            netns: cx.h.clone(),
            cgroups: parts.folders(&Role::Guest(i).to_string()),
        })
        .collect();
    steps.push(Step::WaitVms {
        lab: cx.t.name.clone(),
        guests: cx
            .guests
            .iter()
            .map(|&i| (Role::Guest(i), vm_files(cx, i)))
            .collect(),
        timeout: boot_timeout(vm.accel, cx.t.guests),
    });
    steps
}

fn vm_files(cx: &Cx, i: u32) -> Files {
    Files {
        dir: vm_dir(&cx.t.name, &Role::Guest(i).to_string()),
    }
}

/// The record's view of guest `i`'s VM.
pub(super) fn info(cx: &Cx, vm: &VmHost, i: u32) -> VmInfo {
    VmInfo {
        mode: cx.t.mode,
        accel: vm.accel,
        why_not_kvm: vm.why_not_kvm.clone(),
        vcpus: cx.t.vcpus,
        memory_mib: cx.t.memory_mib,
        dir: vm_files(cx, i).dir,
        boot_s: None,
    }
}
