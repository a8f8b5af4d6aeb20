//! QEMU guests: the guest image built on this host from distribution packages, the QEMU
//! command line per device, the KVM probe, QMP (the vCPUs' host threads) and waiting for a
//! booted guest's agent. The lab starts the processes; this stage knows what to start and how
//! to tell that a guest is up.

pub mod accel;
pub mod clock;
pub mod cpio;
pub mod deb;
pub mod image;
pub mod qemu;
pub mod qmp;
pub mod vm;

/// Why a guest could not be made or run. Its `Display` is the one line users see.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The guest image could not be built (packages, extraction, packing).
    #[error("guest image: {0}")]
    Image(String),
    /// QEMU could not be run.
    #[error("{0}")]
    Qemu(String),
    /// QMP did not answer as expected.
    #[error("QMP: {0}")]
    Qmp(String),
    /// A guest did not come up (QEMU exited, or no agent answered in time).
    #[error("{0}")]
    Boot(String),
}
