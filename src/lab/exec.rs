//! Runs programs inside a lab endpoint: its cgroups joined, its network namespace entered, and
//! /sys remounted so tools there see the namespace's own interfaces (as `ip netns exec` does).

use crate::lab::Error;
use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

use super::state::Endpoint;

/// A `Command` that, when spawned, runs `argv` inside `ep`.
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
    command_in(&ep.netns, &ep.cgroups, argv)
}

/// A `Command` that, when spawned, runs `argv` in network namespace `netns`, joined to `cgroups`.
pub fn command_in(
    netns: &str,
    cgroups: &[std::path::PathBuf],
    argv: &[String],
) -> Result<Command, Error> {
    let (prog, args) = argv
        .split_first()
        .ok_or_else(|| Error::Input("no command given: write it after `--`".into()))?;
    let ns_path = Path::new("/run/netns").join(netns);
    let ns: OwnedFd = std::fs::File::open(&ns_path)
        .map_err(|e| {
            Error::Input(format!(
                "cannot open namespace {netns} ({e}): is the lab still up? see `vnetlab status`"
            ))
        })?
        .into();
    let procs: Vec<CString> = cgroups
        .iter()
        .map(|d| CString::new(d.join("cgroup.procs").to_string_lossy().as_bytes()).unwrap())
        .collect();
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
