//! Runs programs inside a lab endpoint: its cgroups joined, its network namespace entered, and
//! /sys remounted so tools there see the namespace's own interfaces (as `ip netns exec` does).

use crate::lab::Error;
use crate::sys::ident;
use std::os::fd::OwnedFd;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

use super::state::Endpoint;

/// A `Command` that, when spawned, runs `argv` inside `ep` (a namespace of this machine).
pub fn command(ep: &Endpoint, argv: &[String]) -> Result<Command, Error> {
    if let Some(r) = &ep.remote {
        return Err(Error::Input(format!(
            "{} is another machine ({}): run it there; tests reach it through its `vnetlab serve`",
            ep.role, r.address
        )));
    }
    if let Some(vm) = &ep.vm {
        return Err(Error::Input(format!(
            "{} is a QEMU guest ({}): exec runs in namespaces; tests reach it through its agent",
            ep.role, vm.mode
        )));
    }
    command_in(ep, argv)
}

/// A `Command` that runs `argv` in `ep`'s namespace and cgroups (for a QEMU guest: the host's
/// namespace and the VM's cgroups), each proven to be the one the lab made: the namespace and
/// every folder are opened and checked against the identities the lab's journal recorded, and
/// the child joins those very objects (never a path looked up again after the check).
pub fn command_in(ep: &Endpoint, argv: &[String]) -> Result<Command, Error> {
    let ids = ep.ids.as_ref().ok_or_else(|| {
        Error::Failed(format!(
            "{}'s namespace and folders are not vouched for by the lab's journal: vnetlab will not enter them",
            ep.role
        ))
    })?;
    let ns = netns_fd(ep)?;
    let procs = ep
        .cgroups
        .iter()
        .zip(&ids.cgroups)
        .map(|(d, &id)| {
            ident::open_dir_checked(d, id)
                .and_then(|dir| ident::open_at(&dir, "cgroup.procs", libc::O_WRONLY))
                .map_err(|e| {
                    Error::Failed(format!(
                        "{}'s cgroup {}: {e}; vnetlab will not join it",
                        ep.role,
                        d.display()
                    ))
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    spawn_in(ns, procs, argv)
}

/// `ep`'s namespace, opened and checked against the identity its journal recorded (a thread
/// enters it with `sys::ident::enter_netns_fd`).
pub fn netns_fd(ep: &Endpoint) -> Result<OwnedFd, Error> {
    let (id, cookie) = ep
        .ids
        .as_ref()
        .map(|i| (i.netns, i.netns_cookie))
        .ok_or_else(|| {
            Error::Failed(format!(
                "{}'s namespace is not vouched for by the lab's journal: vnetlab will not enter it",
                ep.role
            ))
        })?;
    ident::open_netns(&ep.netns, id, cookie).map_err(|e| {
        Error::Input(format!(
            "cannot enter {}'s namespace {} ({e}): is the lab still up? see `vnetlab status`",
            ep.role, ep.netns
        ))
    })
}

/// A `Command` that runs `argv` in namespace `netns` and cgroups `cgroups` looked up by name:
/// only while a lab is being built, for the objects its build has just made (a vNIC backend, a
/// QEMU guest).
pub fn command_while_building(
    netns: &str,
    cgroups: &[std::path::PathBuf],
    argv: &[String],
) -> Result<Command, Error> {
    let ns: OwnedFd = std::fs::File::open(Path::new(ident::NETNS_DIR).join(netns))
        .map_err(|e| Error::Failed(format!("cannot open namespace {netns}: {e}")))?
        .into();
    let procs = cgroups
        .iter()
        .map(|d| {
            std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(d.join("cgroup.procs"))
                .map(OwnedFd::from)
                .map_err(|e| Error::Failed(format!("cgroup {}: {e}", d.display())))
        })
        .collect::<Result<Vec<_>, _>>()?;
    spawn_in(ns, procs, argv)
}

/// The command itself: `argv` run with the namespace and cgroup files given, entered in the child.
fn spawn_in(ns: OwnedFd, procs: Vec<OwnedFd>, argv: &[String]) -> Result<Command, Error> {
    let (prog, args) = argv
        .split_first()
        .ok_or_else(|| Error::Input("no command given: write it after `--`".into()))?;
    let mut cmd = Command::new(prog);
    cmd.args(args);
    crate::sys::spawn::enter_on_exec(&mut cmd, ns, procs);
    Ok(cmd)
}

/// `vnetlab exec`: replaces this process with the command inside the endpoint, so its exit code
/// is the command's own.
pub fn exec(ep: &Endpoint, argv: &[String]) -> String {
    match command(ep, argv) {
        Ok(mut c) => {
            let e = c.exec();
            format!("cannot run {}: {e}", argv[0])
        }
        Err(e) => e.to_string(),
    }
}
