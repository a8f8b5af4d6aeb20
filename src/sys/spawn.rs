//! Hooks that run in a child between fork and exec: a new session, and entering a lab
//! endpoint (cgroups, network namespace, its own /sys). Only async-signal-safe calls there.

use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::Command;

/// The child starts its own session (no controlling terminal, no parent's process group).
pub fn new_session(cmd: &mut Command) {
    // SAFETY: the hook runs in the child between fork and exec and calls only setsid, which is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
}

/// The child joins the cgroups whose `cgroup.procs` files are open for writing as `procs` (opened
/// and checked before the fork, through each folder checked by identity), enters network
/// namespace `ns` (opened and checked alike) and mounts that namespace's /sys, as `ip netns exec`
/// does.
pub fn enter_on_exec(cmd: &mut Command, ns: OwnedFd, procs: Vec<OwnedFd>) {
    // SAFETY: `enter` makes only async-signal-safe calls (write, setns, unshare, mount) on fds and data prepared before the fork and moved into the hook.
    unsafe {
        cmd.pre_exec(move || enter(ns.as_raw_fd(), &procs));
    }
}

/// Runs in the child between fork and exec: only async-signal-safe calls.
fn enter(ns: i32, procs: &[OwnedFd]) -> std::io::Result<()> {
    let err = std::io::Error::last_os_error;
    // SAFETY: every fd is open (owned by the hook) and every pointer a byte literal that lives across the call.
    unsafe {
        for p in procs {
            // "0" moves the writer: this child.
            if libc::write(p.as_raw_fd(), b"0".as_ptr().cast(), 1) != 1 {
                return Err(err());
            }
        }
        if libc::setns(ns, libc::CLONE_NEWNET) != 0 {
            return Err(err());
        }
        if libc::unshare(libc::CLONE_NEWNS) != 0 {
            return Err(err());
        }
        let root = b"/\0";
        let sys = b"/sys\0";
        let sysfs = b"sysfs\0";
        if libc::mount(
            std::ptr::null(),
            root.as_ptr().cast(),
            std::ptr::null(),
            libc::MS_SLAVE | libc::MS_REC,
            std::ptr::null(),
        ) != 0
        {
            return Err(err());
        }
        libc::umount2(sys.as_ptr().cast(), libc::MNT_DETACH);
        if libc::mount(
            sysfs.as_ptr().cast(),
            sys.as_ptr().cast(),
            sysfs.as_ptr().cast(),
            0,
            std::ptr::null(),
        ) != 0
        {
            return Err(err());
        }
    }
    Ok(())
}
