//! The lab's QEMU guests at run time: what `up` checks before planning them (QEMU, the devices
//! the mode needs, the image, KVM or TCG), starting each VM in the host's namespace and its
//! cgroup, waiting for their agents (boot to agent-ready, written into the record), and telling
//! whether a guest's VM still runs.

use crate::lab::Error;
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::folder;
use super::plan::{datapath, VmHost};
use super::state::{self, Endpoint};
use crate::guest::qemu::{self, Files, VmSpec};
use crate::guest::vm;
use crate::vocab::{Mode, Role};

/// Where the guest image is cached: `$VNETLAB_CACHE_DIR/guest`, else /var/cache/vnetlab/guest.
pub fn image_cache() -> PathBuf {
    std::env::var_os("VNETLAB_CACHE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/cache/vnetlab"))
        .join("guest")
}

/// What this host lacks for `mode` (one line naming the closest mode that works), if anything.
pub fn missing(mode: Mode) -> Option<String> {
    let has_qemu = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(qemu::QEMU).exists()))
        .unwrap_or(false);
    if !has_qemu {
        return Some(format!(
            "mode {mode} needs {}, which is not installed: apt-get install qemu-system-x86 (`make deps` does)",
            qemu::QEMU
        ));
    }
    datapath::of(mode).missing()
}

/// Checks the host and readies the image and the acceleration for `mode`'s guests.
pub fn host_for(mode: Mode) -> Result<VmHost, Error> {
    if let Some(why) = missing(mode) {
        return Err(Error::Input(why));
    }
    let cache = image_cache();
    std::fs::create_dir_all(&cache)
        .map_err(|e| Error::Failed(format!("cannot make {}: {e}", cache.display())))?;
    let image = crate::guest::image::ensure(&cache, mode == Mode::QemuVfio)?;
    let v = crate::guest::accel::probe(&image.kernel, &cache)?;
    Ok(VmHost {
        image,
        accel: v.accel,
        why_not_kvm: v.why_not_kvm,
        bios: qemu::fast_bios(),
        tsc_khz: match v.accel {
            qemu::Accel::Tcg => crate::guest::clock::host_tsc_khz(),
            qemu::Accel::Kvm => None,
        },
    })
}

/// A vfio guest's spec with its VF's sysfs link resolved to the PCI address QEMU takes.
fn passed_through(spec: &VmSpec) -> Result<VmSpec, Error> {
    let mut s = spec.clone();
    if s.device == qemu::Device::Vfio {
        let dev = std::fs::canonicalize(&s.host_if)
            .map_err(|e| Error::Failed(format!("{}: {e}", s.host_if)))?;
        s.host_if = dev
            .file_name()
            .and_then(|n| n.to_str())
            .filter(|n| super::vfio::is_bdf(n))
            .ok_or_else(|| Error::Failed(format!("{} is not a PCI device", dev.display())))?
            .to_string();
    }
    Ok(s)
}

/// How long QEMU may take to set its devices up and daemonize.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Starts one guest's QEMU in `netns` and `cgroups`; returns once it has daemonized (its devices
/// are open), or with QEMU's own error.
pub fn start(guest: Role, spec: &VmSpec, netns: &str, cgroups: &[PathBuf]) -> Result<(), Error> {
    let dir = &spec.files.dir;
    let _ = std::fs::remove_dir_all(dir);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| Error::Failed(format!("cannot make {}: {e}", dir.display())))?;
    let log = dir.join("qemu.log");
    let out = crate::sys::file::create(&log, 0o600)
        .map_err(|e| Error::Failed(format!("{}: {e}", log.display())))?;
    let spec = &passed_through(spec)?;
    let mut argv = qemu::argv(spec);
    argv.push("-daemonize".into());
    let mut cmd = super::exec::command_while_building(netns, cgroups, &argv)?;
    let err = out
        .try_clone()
        .map_err(|e| Error::Failed(format!("{}: {e}", log.display())))?;
    let mut child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| Error::Failed(format!("cannot start {}'s QEMU: {e}", guest)))?;
    let t0 = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().map_err(|e| Error::Failed(e.to_string()))? {
            break st;
        }
        if t0.elapsed() > START_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::Failed(format!(
                "{guest}'s QEMU did not start within {} s (see {})",
                START_TIMEOUT.as_secs(),
                log.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if !status.success() {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        return Err(Error::Failed(format!(
            "{guest}'s QEMU did not start ({status}): {}",
            super::hostcmd::one_line(&text)
        )));
    }
    Ok(())
}

/// Waits for every guest's agent (they boot in parallel) and writes each boot to agent-ready
/// time (from its QEMU's start, `started`) into the lab's record; prints them when `say`.
pub fn wait(
    lab: &str,
    guests: &[(Role, Files)],
    started: &[(Role, Instant)],
    timeout: Duration,
    say: bool,
) -> Result<(), Error> {
    let mut boot = Vec::new();
    for (role, files) in guests {
        let since = started
            .iter()
            .find(|(r, _)| r == role)
            .map(|(_, t)| *t)
            .unwrap_or_else(Instant::now);
        let left = timeout.saturating_sub(since.elapsed());
        vm::wait_ready(
            &role.to_string(),
            files,
            left,
            || vm::running(files),
            crate::sys::signals::stop_requested,
        )?;
        let secs = since.elapsed().as_secs_f64();
        if say {
            crate::errln!("{role}: booted to agent-ready in {secs:.1} s");
        }
        boot.push((*role, secs));
    }
    record_boot(lab, &boot)
}

fn record_boot(lab: &str, boot: &[(Role, f64)]) -> Result<(), Error> {
    let path = folder::record_path(lab);
    let text = crate::text::read_own_capped(&path, state::MAX_RECORD)
        .map_err(|e| Error::Failed(format!("cannot read the lab record: {e}")))?;
    let mut rec: state::LabRecord = serde_json::from_str(&text)
        .map_err(|e| Error::Failed(format!("cannot read the lab record: {e}")))?;
    for e in rec.endpoints.iter_mut() {
        if let (Some(v), Some((_, s))) = (&mut e.vm, boot.iter().find(|(r, _)| *r == e.role)) {
            v.boot_s = Some(*s);
        }
    }
    let text = serde_json::to_string_pretty(&rec).unwrap();
    crate::sys::file::replace(&path, text.as_bytes(), 0o600)
        .map_err(|e| Error::Failed(format!("cannot write the lab record: {e}")))
}

/// Whether endpoint `ep`'s VM (if it is one) still runs; None when it is no VM.
pub fn vm_running(ep: &Endpoint) -> Option<bool> {
    ep.vm.as_ref().map(|v| vm::running(&v.files()))
}

/// A running guest's QEMU pid, its vCPUs' thread ids (from QMP; empty if QMP does not answer,
/// then the meter tells vCPU threads by their names) and whether it uses vhost-net.
pub fn threads(ep: &Endpoint) -> Result<(u32, Vec<u32>, bool), Error> {
    let vm = ep
        .vm
        .as_ref()
        .ok_or_else(|| Error::Input(format!("{} is not a QEMU guest", ep.role)))?;
    let files = vm.files();
    let pid = vm::pid(&files)
        .filter(|_| vm::running(&files))
        .ok_or_else(|| {
            Error::Failed(format!(
                "{}'s VM is not running; its console ended: {}",
                ep.role,
                vm::console_tail(&files, vm::TAIL_LINES)
            ))
        })?;
    let vcpus = crate::guest::qmp::vcpu_threads(&files.qmp()).unwrap_or_default();
    Ok((
        pid,
        vcpus,
        datapath::of(vm.mode).vm() == Some(qemu::Device::Vhost),
    ))
}

/// The last lines of a VM's console, for a failure message.
pub fn console_tail(ep: &Endpoint) -> String {
    ep.vm
        .as_ref()
        .map(|v| vm::console_tail(&v.files(), vm::TAIL_LINES))
        .unwrap_or_default()
}
