//! Runs programs inside a lab endpoint: its cgroups joined, its network namespace entered, and
//! /sys remounted so tools there see the namespace's own interfaces (as `ip netns exec` does).

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

use super::state::Endpoint;

/// A `Command` that, when spawned, runs `argv` inside `ep`.
pub fn command(ep: &Endpoint, argv: &[String]) -> Result<Command, String> {
    command_in(&ep.netns, &ep.cgroups, argv)
}

/// A `Command` that, when spawned, runs `argv` in network namespace `netns`, joined to `cgroups`.
pub fn command_in(
    netns: &str,
    cgroups: &[std::path::PathBuf],
    argv: &[String],
) -> Result<Command, String> {
    let (prog, args) = argv
        .split_first()
        .ok_or("no command given: write it after `--`")?;
    let ns_path = Path::new("/run/netns").join(netns);
    let ns: OwnedFd = std::fs::File::open(&ns_path)
        .map_err(|e| {
            format!(
                "cannot open namespace {netns} ({e}): is the lab still up? see `vnetlab status`"
            )
        })?
        .into();
    let procs: Vec<CString> = cgroups
        .iter()
        .map(|d| CString::new(d.join("cgroup.procs").to_string_lossy().as_bytes()).unwrap())
        .collect();
    let mut cmd = Command::new(prog);
    cmd.args(args);
    // SAFETY: `enter` makes only async-signal-safe calls (open, write, close, setns, unshare, mount) on data prepared before the fork.
    unsafe {
        cmd.pre_exec(move || enter(ns.as_raw_fd(), &procs));
    }
    Ok(cmd)
}

/// Runs in the child between fork and exec: only async-signal-safe calls.
fn enter(ns: i32, procs: &[CString]) -> std::io::Result<()> {
    let err = std::io::Error::last_os_error;
    // SAFETY: every pointer passed is a NUL-terminated CString or byte literal that lives across the call; fds are closed before returning.
    unsafe {
        for p in procs {
            let fd = libc::open(p.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(err());
            }
            let ok = libc::write(fd, b"0".as_ptr().cast(), 1) == 1;
            libc::close(fd);
            if !ok {
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

/// `vnetlab exec`: replaces this process with the command inside the endpoint, so its exit code
/// is the command's own.
pub fn exec(ep: &Endpoint, argv: &[String]) -> String {
    match command(ep, argv) {
        Ok(mut c) => {
            let e = c.exec();
            format!("cannot run {}: {e}", argv[0])
        }
        Err(e) => e,
    }
}
