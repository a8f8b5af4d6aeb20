//! Hardware counters through perf_event_open(2): open a cycles or instructions counter for a
//! CPU (optionally for one cgroup) and read it. The attribute struct mirrors the head of
//! linux/perf_event.h's `perf_event_attr` (its first 64 bytes, PERF_ATTR_SIZE_VER1).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

/// PERF_TYPE_HARDWARE.
const PERF_TYPE_HARDWARE: u32 = 0;
/// PERF_FLAG_PID_CGROUP: `pid` is an fd of a cgroup folder.
pub const PERF_FLAG_PID_CGROUP: libc::c_ulong = 1 << 2;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

/// The hardware events vnetlab counts (PERF_COUNT_HW_*).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hw {
    Cycles = 0,
    Instructions = 1,
}

/// Opens a counter of `event` for `pid` (or a cgroup fd, with PERF_FLAG_PID_CGROUP) on `cpu`
/// (-1: any).
pub fn open(event: Hw, pid: i32, cpu: i32, flags: libc::c_ulong) -> io::Result<OwnedFd> {
    let attr = PerfEventAttr {
        kind: PERF_TYPE_HARDWARE,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config: event as u64,
        ..Default::default()
    };
    // SAFETY: `attr` is a perf_event_attr of the size it declares that outlives the call; the kernel only reads it.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            pid,
            cpu,
            -1,
            flags | PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: perf_event_open just returned this fd and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// The counter's value (0 if it cannot be read).
pub fn value(fd: &OwnedFd) -> u64 {
    let mut v = 0u64;
    // SAFETY: `v` is a u64 that outlives the call: the kernel writes at most the 8 bytes asked for.
    let r = unsafe { libc::read(fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
    if r == 8 {
        v
    } else {
        0
    }
}
