//! QEMU guests (the qemu-* modes): each guest is a VM whose NIC is a tap on the host's bridge
//! (e1000, virtio, vhost), a macvtap of the wire's host end (macvtap) or a passed-through VF
//! (vfio). QEMU runs in the host's namespace, in the guest's cgroup and on the guest's cores;
//! the guest configures its own NIC from its kernel command line.

use std::path::Path;

use super::kernel::host_bridge;
use super::seam::Datapath;
use super::sriov;
use crate::guest::qemu::{self, Device, Files, NicConfig, VmSpec};
use crate::lab::folder::vm_dir;
use crate::lab::hostcmd::IpCmd;
use crate::lab::plan::cx::{addr, boot_timeout, Batch, Cx, HostOffers, Step, VmHost};
use crate::lab::plan::parts::Parts;
use crate::lab::state::VmInfo;
use crate::lab::Error;
use crate::vocab::{Mode, Role};

/// The interface a guest's NIC is inside its VM.
pub const GUEST_IF: &str = "eth0";

/// A QEMU VM per guest with `device` as its NIC.
pub struct QemuVm {
    pub mode: Mode,
    pub device: Device,
    pub about: &'static str,
}

impl Datapath for QemuVm {
    fn mode(&self) -> Mode {
        self.mode
    }
    fn about(&self) -> &'static str {
        self.about
    }
    fn guest_namespaces(&self) -> bool {
        false
    }
    /// A tap on the lab's bridge.
    fn bridged(&self) -> bool {
        matches!(self.device, Device::E1000 | Device::Virtio | Device::Vhost)
    }
    fn guest_port(&self) -> bool {
        self.bridged() || self.device == Device::Macvtap
    }
    fn vf_wire(&self) -> bool {
        self.device == Device::Vfio
    }
    fn vm(&self) -> Option<Device> {
        Some(self.device)
    }
    fn pf_stand_in(&self) -> Option<&'static str> {
        (self.device == Device::Vfio).then_some("qemu-macvtap, a virtio NIC straight on the wire")
    }
    fn missing(&self) -> Option<String> {
        match self.device {
            Device::Vhost if !Path::new("/dev/vhost-net").exists() => Some(
                "mode qemu-vhost needs /dev/vhost-net (the vhost_net module), which this host lacks: use qemu-virtio, the same virtio NIC with QEMU's userspace backend".into(),
            ),
            Device::Vfio => vfio_missing(),
            _ if !Path::new("/dev/net/tun").exists() => Some(format!(
                "mode {} needs /dev/net/tun (the tun module) for the VM's tap, which this host lacks",
                self.mode
            )),
            _ => None,
        }
    }
    fn needs(&self, host: &HostOffers) -> Result<(), Error> {
        if self.device == Device::Vfio && host.sriov.is_none() {
            return Err(Error::Input(
                "mode qemu-vfio needs the PF's VFs read: plan it through `vnetlab up --pf IFACE`"
                    .into(),
            ));
        }
        if host.vm.is_none() {
            return Err(Error::Input(format!(
                "mode {} needs the guest image and QEMU: plan it through `vnetlab up`",
                self.mode
            )));
        }
        Ok(())
    }
    fn host_side(&self, cx: &Cx, b: &mut Batch) -> String {
        match self.device {
            // QEMU opens the tap by name and sets its header and offloads itself.
            _ if self.bridged() => host_bridge(cx, b, Some(true), false),
            Device::Macvtap => macvtaps(cx, b),
            _ => {
                b.cmds.push(addr(cx.a.host, cx.a.wire.len, &cx.wh));
                cx.wh.clone()
            }
        }
    }
    fn wire_steps(&self, cx: &Cx, host: &HostOffers) -> Result<Vec<Step>, Error> {
        match (self.device, host.sriov) {
            (Device::Vfio, Some(pf)) => sriov::steps(cx, pf, true),
            _ => Ok(vec![]),
        }
    }
    fn devices(&self, cx: &Cx, parts: &Parts, host: &HostOffers) -> Vec<Step> {
        match host.vm {
            Some(vm) => vms(cx, parts, vm, self.device),
            None => vec![],
        }
    }
}

/// The macvtap of each guest on the wire's host end, in bridge mode with the guest's MAC; the
/// wire's end holds the host's address.
fn macvtaps(cx: &Cx, b: &mut Batch) -> String {
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
            crate::lab::vfio::virtfn(std::path::Path::new("/sys"), pf, sriov::guest_vf(k))
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
        tsc_khz: vm.tsc_khz,
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
fn vms(cx: &Cx, parts: &Parts, vm: &VmHost, dev: Device) -> Vec<Step> {
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
pub(in crate::lab::plan) fn info(cx: &Cx, vm: &VmHost, i: u32) -> VmInfo {
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

fn vfio_missing() -> Option<String> {
    let iommu = std::fs::read_dir("/sys/kernel/iommu_groups")
        .map(|mut d| d.next().is_some())
        .unwrap_or(false);
    let vf = std::fs::read_dir("/sys/class/net")
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| {
            std::fs::read_to_string(e.path().join("device/sriov_totalvfs"))
                .ok()
                .and_then(|s| s.trim().parse::<u32>().ok())
                .is_some_and(|n| n > 0)
        });
    let lacks: Vec<&str> = [
        (!vf).then_some("an SR-IOV NIC with VFs"),
        (!iommu).then_some("an IOMMU (/sys/kernel/iommu_groups is empty)"),
    ]
    .into_iter()
    .flatten()
    .collect();
    (!lacks.is_empty()).then(|| {
        format!(
            "mode qemu-vfio needs {}, which this host lacks: use qemu-macvtap, a virtio NIC straight on the wire without a host bridge",
            lacks.join(" and ")
        )
    })
}
