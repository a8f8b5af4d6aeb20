//! Tap devices for the device models: attach to a persistent tap (made by the lab with
//! `ip tuntap add`) in the current network namespace, non-blocking, with or without the
//! virtio-net header, and set the offloads the reader accepts (TUNSETOFFLOAD).

use super::Error;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use crate::sys::tap as sys;
pub use libc::{TUN_F_CSUM, TUN_F_TSO4, TUN_F_TSO6};
/// UDP segmentation offload (linux/if_tun.h, Linux 6.2+; not in `libc`).
pub const TUN_F_USO4: libc::c_uint = 0x20;
pub const TUN_F_USO6: libc::c_uint = 0x40;

pub struct Tap {
    fd: OwnedFd,
    pub name: String,
}

impl AsRawFd for Tap {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl Tap {
    /// Attaches to tap `name`. With `vnet_hdr`, frames carry the 12-byte virtio-net header and
    /// the kernel may hand over (and accept) checksum-partial GSO super-frames.
    pub fn attach(name: &str, vnet_hdr: bool) -> Result<Tap, Error> {
        if name.len() > 15 {
            return Err(Error::Failed(format!("tap name {name} is too long")));
        }
        let hdr = vnet_hdr.then_some(super::frame::VNET_HDR_LEN);
        let fd = sys::open_tap(name, hdr).map_err(|e| {
            Error::Failed(format!(
                "attaching to tap {name} through /dev/net/tun: {e} (is the tun module loaded?)"
            ))
        })?;
        Ok(Tap {
            fd,
            name: name.into(),
        })
    }

    /// The offloads this reader accepts (0 = none: the kernel segments and checksums for us).
    pub fn set_offload(&self, flags: libc::c_uint) -> Result<(), Error> {
        sys::set_offload(self.as_raw_fd(), flags)
            .map_err(|e| Error::Failed(format!("{}: TUNSETOFFLOAD: {e}", self.name)))
    }

    /// One frame, or None when there is nothing more to read now.
    pub fn read(&self, buf: &mut [u8]) -> std::io::Result<Option<usize>> {
        sys::read_nb(self.as_raw_fd(), buf)
    }

    pub fn write(&self, frame: &[u8]) -> std::io::Result<usize> {
        sys::write(self.as_raw_fd(), frame)
    }
}
