//! The datapaths, one module per family, and the registry that names them: `of(mode)` is the
//! one place a mode meets the code that builds it. To add a datapath: its `Mode` variant and
//! name (`vocab.rs`), its module here implementing `Datapath`, and its line in `of`; the CLI's
//! `--mode` list and help are read from `ALL` through this registry.

mod kernel;
mod macvlan;
mod native;
pub mod qemu;
mod seam;
pub mod sriov;
#[cfg(test)]
mod tests;
mod vnic;

use crate::guest::qemu::Device;
use crate::vocab::Mode;

pub use seam::Datapath;

/// The datapath that builds `mode`.
pub fn of(mode: Mode) -> &'static dyn Datapath {
    match mode {
        Mode::Native => &native::Native,
        Mode::Bridge => &kernel::Bridge,
        Mode::Nat => &kernel::Nat,
        Mode::Macvlan => &macvlan::Macvlan,
        Mode::Sriov => &sriov::Sriov,
        Mode::Emulated => &vnic::DeviceModel { paravirt: false },
        Mode::Paravirt => &vnic::DeviceModel { paravirt: true },
        Mode::QemuE1000 => &QEMU_E1000,
        Mode::QemuVirtio => &QEMU_VIRTIO,
        Mode::QemuVhost => &QEMU_VHOST,
        Mode::QemuMacvtap => &QEMU_MACVTAP,
        Mode::QemuVfio => &QEMU_VFIO,
    }
}

/// Every datapath, in `Mode::ALL`'s order.
pub fn all() -> impl Iterator<Item = &'static dyn Datapath> {
    Mode::ALL.into_iter().map(of)
}

const QEMU_E1000: qemu::QemuVm = qemu::QemuVm {
    mode: Mode::QemuE1000,
    device: Device::E1000,
    about: "a QEMU VM per guest with an emulated Intel e1000 NIC, its tap on the host's bridge",
};
const QEMU_VIRTIO: qemu::QemuVm = qemu::QemuVm {
    mode: Mode::QemuVirtio,
    device: Device::Virtio,
    about: "a QEMU VM per guest with a virtio-net NIC served by QEMU itself, its tap on the bridge",
};
const QEMU_VHOST: qemu::QemuVm = qemu::QemuVm {
    mode: Mode::QemuVhost,
    device: Device::Vhost,
    about: "a QEMU VM per guest with a virtio-net NIC served in the kernel (vhost-net)",
};
const QEMU_MACVTAP: qemu::QemuVm = qemu::QemuVm {
    mode: Mode::QemuMacvtap,
    device: Device::Macvtap,
    about: "a QEMU VM per guest with a virtio-net NIC on a macvtap of the wire (no bridge)",
};
const QEMU_VFIO: qemu::QemuVm = qemu::QemuVm {
    mode: Mode::QemuVfio,
    device: Device::Vfio,
    about: "a QEMU VM per guest with an SR-IOV VF passed through (vfio-pci; --pf IFACE)",
};
