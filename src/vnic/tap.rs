//! Tap devices for the device models: attach to a persistent tap (made by the lab with
//! `ip tuntap add`) in the current network namespace, non-blocking, with or without the
//! virtio-net header, and set the offloads the reader accepts (TUNSETOFFLOAD).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const TUNSETOFFLOAD: libc::c_ulong = 0x4004_54d0;
const TUNSETVNETHDRSZ: libc::c_ulong = 0x4004_54d8;
const IFF_TAP: libc::c_short = 0x0002;
const IFF_NO_PI: libc::c_short = 0x1000;
const IFF_VNET_HDR: libc::c_short = 0x4000;
pub const TUN_F_CSUM: libc::c_uint = 0x01;
pub const TUN_F_TSO4: libc::c_uint = 0x02;
pub const TUN_F_TSO6: libc::c_uint = 0x04;

#[repr(C)]
struct IfReq {
    name: [u8; 16],
    flags: libc::c_short,
    _pad: [u8; 22],
}

pub struct Tap {
    fd: OwnedFd,
    pub name: String,
}

impl AsRawFd for Tap {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

fn ioctl(fd: RawFd, req: libc::c_ulong, arg: *const libc::c_void) -> std::io::Result<()> {
    // SAFETY: callers pass the fd of an open tap and, for `req`, a pointer to the struct that request reads, alive across the call.
    if unsafe { libc::ioctl(fd, req, arg) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

impl Tap {
    /// Attaches to tap `name`. With `vnet_hdr`, frames carry the 12-byte virtio-net header and
    /// the kernel may hand over (and accept) checksum-partial GSO super-frames.
    pub fn attach(name: &str, vnet_hdr: bool) -> Result<Tap, String> {
        let path = b"/dev/net/tun\0";
        // SAFETY: `path` is a NUL-terminated byte literal.
        let fd = unsafe {
            libc::open(
                path.as_ptr().cast(),
                libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(format!(
                "/dev/net/tun: {} (is the tun module loaded?)",
                std::io::Error::last_os_error()
            ));
        }
        // SAFETY: open just returned this fd and nothing else owns it.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut req = IfReq {
            name: [0; 16],
            flags: IFF_TAP | IFF_NO_PI | if vnet_hdr { IFF_VNET_HDR } else { 0 },
            _pad: [0; 22],
        };
        if name.len() > 15 {
            return Err(format!("tap name {name} is too long"));
        }
        req.name[..name.len()].copy_from_slice(name.as_bytes());
        ioctl(fd.as_raw_fd(), TUNSETIFF, (&req as *const IfReq).cast())
            .map_err(|e| format!("attaching to tap {name}: {e}"))?;
        let t = Tap {
            fd,
            name: name.into(),
        };
        if vnet_hdr {
            let sz: libc::c_int = super::frame::VNET_HDR_LEN as libc::c_int;
            ioctl(
                t.as_raw_fd(),
                TUNSETVNETHDRSZ,
                (&sz as *const libc::c_int).cast(),
            )
            .map_err(|e| format!("{name}: TUNSETVNETHDRSZ: {e}"))?;
        }
        Ok(t)
    }

    /// The offloads this reader accepts (0 = none: the kernel segments and checksums for us).
    pub fn set_offload(&self, flags: libc::c_uint) -> Result<(), String> {
        // TUNSETOFFLOAD takes the flags by value.
        // SAFETY: TUNSETOFFLOAD takes its flags by value; the fd is the tap's own.
        if unsafe { libc::ioctl(self.as_raw_fd(), TUNSETOFFLOAD, flags as libc::c_ulong) } < 0 {
            return Err(format!(
                "{}: TUNSETOFFLOAD: {}",
                self.name,
                std::io::Error::last_os_error()
            ));
        }
        Ok(())
    }

    /// One frame, or None when there is nothing more to read now.
    pub fn read(&self, buf: &mut [u8]) -> std::io::Result<Option<usize>> {
        // SAFETY: the kernel writes at most buf.len() bytes into `buf`.
        let n = unsafe { libc::read(self.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n >= 0 {
            return Ok(Some(n as usize));
        }
        let e = std::io::Error::last_os_error();
        if e.kind() == std::io::ErrorKind::WouldBlock {
            Ok(None)
        } else {
            Err(e)
        }
    }

    pub fn write(&self, frame: &[u8]) -> std::io::Result<usize> {
        // SAFETY: the kernel reads at most frame.len() bytes from `frame`.
        let n = unsafe { libc::write(self.as_raw_fd(), frame.as_ptr().cast(), frame.len()) };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(n as usize)
    }
}
