//! QEMU guests (issue 13, in progress): the guest image built on this host from distribution
//! packages. So far: the initramfs archive writer. The image builder, the QEMU command line per
//! mode, the agent over virtio-serial and the meter's vCPU/emulation/vhost parts come next.

pub mod cpio;
pub mod image;

/// Why a guest could not be made or run. Its `Display` is the one line users see.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The guest image could not be built (packages, extraction, packing).
    #[error("guest image: {0}")]
    Image(String),
}
