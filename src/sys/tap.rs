//! Tap devices: attach to a persistent tap by name (TUNSETIFF), set its offloads and header
//! size, and move frames through its fd. Constants from `libc` (linux/if_tun.h).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// struct ifreq as TUNSETIFF reads it: the name and the flags.
#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

fn ioctl_ptr<T>(fd: RawFd, req: libc::Ioctl, arg: &T) -> io::Result<()> {
    // SAFETY: `arg` is a live reference to the struct or integer that request `req` reads, valid across the call; the fd is a tap's.
    if unsafe { libc::ioctl(fd, req, arg as *const T) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Opens /dev/net/tun non-blocking and attaches it to tap `name` (at most 15 bytes); with
/// `vnet_hdr_len`, frames carry a virtio-net header of that length.
pub fn open_tap(name: &str, vnet_hdr_len: Option<usize>) -> io::Result<OwnedFd> {
    let fd = tun(name, vnet_hdr_len.is_some(), libc::O_NONBLOCK)?;
    if let Some(len) = vnet_hdr_len {
        ioctl_ptr(fd.as_raw_fd(), libc::TUNSETVNETHDRSZ, &(len as libc::c_int))?;
    }
    Ok(fd)
}

/// Makes tap `name` in this thread's namespace and leaves it there, persistent and detached (as
/// `ip tuntap add dev NAME mode tap [vnet_hdr]` does); fails if a device of that name exists.
pub fn make_persistent(name: &str, vnet_hdr: bool) -> io::Result<()> {
    if super::if_index(name).is_ok() {
        return Err(io::Error::from_raw_os_error(libc::EEXIST));
    }
    persist(tun(name, vnet_hdr, 0)?.as_raw_fd())
}

/// /dev/net/tun opened (with `flags`) and attached to tap `name` (made if missing).
fn tun(name: &str, vnet_hdr: bool, flags: libc::c_int) -> io::Result<OwnedFd> {
    if name.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "name too long"));
    }
    let path = c"/dev/net/tun";
    // SAFETY: `path` is a NUL-terminated C string literal.
    let raw = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC | flags) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: open just returned this fd and nothing else owns it.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let vnet = if vnet_hdr { libc::IFF_VNET_HDR } else { 0 };
    let mut req = IfReq {
        name: [0; libc::IFNAMSIZ],
        flags: (libc::IFF_TAP | libc::IFF_NO_PI | vnet) as libc::c_short,
        _pad: [0; 22],
    };
    req.name[..name.len()].copy_from_slice(name.as_bytes());
    ioctl_ptr(fd.as_raw_fd(), libc::TUNSETIFF, &req)?;
    Ok(fd)
}

fn persist(fd: RawFd) -> io::Result<()> {
    // SAFETY: TUNSETPERSIST takes its flag by value; the fd is attached to a tap.
    if unsafe { libc::ioctl(fd, libc::TUNSETPERSIST, 1 as libc::c_ulong) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The offloads this reader accepts (TUN_F_*; 0 = none: the kernel segments and checksums).
pub fn set_offload(fd: RawFd, flags: libc::c_uint) -> io::Result<()> {
    // SAFETY: TUNSETOFFLOAD takes its flags by value, not through a pointer; the fd is a tap's.
    if unsafe { libc::ioctl(fd, libc::TUNSETOFFLOAD, flags as libc::c_ulong) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// One frame from a non-blocking fd, or None when there is nothing to read now.
pub fn read_nb(fd: RawFd, buf: &mut [u8]) -> io::Result<Option<usize>> {
    // SAFETY: the kernel writes at most buf.len() bytes into `buf`, a live mutable slice.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n >= 0 {
        return Ok(Some(n as usize));
    }
    let e = io::Error::last_os_error();
    if e.kind() == io::ErrorKind::WouldBlock {
        Ok(None)
    } else {
        Err(e)
    }
}

/// Writes one frame.
pub fn write(fd: RawFd, frame: &[u8]) -> io::Result<usize> {
    // SAFETY: the kernel reads at most frame.len() bytes from `frame`, a live slice.
    let n = unsafe { libc::write(fd, frame.as_ptr().cast(), frame.len()) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}
