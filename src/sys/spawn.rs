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
/// does, with the host's cgroup tree kept at /sys/fs/cgroup (`ip netns exec` loses it): a
/// vnetlab run inside a lab reads its labs' journals, whose cgroup folders are checked against
/// the mounted hierarchies.
pub fn enter_on_exec(cmd: &mut Command, ns: OwnedFd, procs: Vec<OwnedFd>) {
    // SAFETY: `enter` makes only async-signal-safe calls (write, setns, unshare, mount, open_tree, move_mount, close) on fds and data prepared before the fork and moved into the hook.
    unsafe {
        cmd.pre_exec(move || enter(ns.as_raw_fd(), &procs));
    }
}

/// Runs in the child between fork and exec: only async-signal-safe calls.
fn enter(ns: i32, procs: &[OwnedFd]) -> std::io::Result<()> {
    let err = std::io::Error::last_os_error;
    // SAFETY: every fd is open (owned by the hook, or returned by open_tree and closed once) and every pointer a literal that lives across the call.
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
        // A copy of the cgroup tree, detached, taken before /sys goes (-1: none to keep).
        let tree = libc::syscall(
            libc::SYS_open_tree,
            libc::AT_FDCWD,
            CGROUP.as_ptr(),
            OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint | libc::AT_RECURSIVE as libc::c_uint,
        ) as i32;
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
        if tree >= 0 {
            // Best effort, as before the copy was kept: without it the child still runs.
            libc::syscall(
                libc::SYS_move_mount,
                tree,
                c"".as_ptr(),
                libc::AT_FDCWD,
                CGROUP.as_ptr(),
                MOVE_MOUNT_F_EMPTY_PATH,
            );
            libc::close(tree);
        }
    }
    Ok(())
}

/// Where the cgroup hierarchies are mounted, under /sys.
const CGROUP: &std::ffi::CStr = c"/sys/fs/cgroup";
/// open_tree(2): a detached copy of the tree, not the tree itself.
const OPEN_TREE_CLONE: libc::c_uint = 1;
/// move_mount(2): the source is the fd itself.
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 4;

/// The child joins the cgroup whose `cgroup.procs` is open as `procs` (kept open by the caller
/// until the child has started) and dies with the thread that spawned it (SIGKILL on its death,
/// kept across exec): a crowd a test starts never outlives the test.
pub fn join_dying_with_parent(cmd: &mut Command, procs: i32) {
    // SAFETY: the hook runs in the child between fork and exec and calls only prctl and write,
    // which are async-signal-safe, on an fd the caller keeps open across the spawn.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::write(procs, b"0".as_ptr().cast(), 1) != 1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}
