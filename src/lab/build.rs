//! Builds a planned lab for real and tears labs down: journals each object before making it,
//! stops and removes what was made on SIGINT/SIGTERM or any failure, and removes exactly what a
//! journal names, in reverse.

use crate::lab::Error;
use std::collections::HashSet;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use super::folder;
use super::hostcmd::{self, HostCmd, IpCmd};
use super::journal::{self, Entry, Journal};
use super::plan::{self, Plan, SriovPf, Step};
use super::state;
use super::topology::Topology;
use super::{cgroup, names::Names, vfio};
use crate::sys::ident::{self, FileId};
use crate::vocab::Mode;

/// Everything `up` checks before it makes anything; errors are one line and leave nothing.
pub fn prepare(t: &Topology) -> Result<Plan, Error> {
    checks(t).map_err(Error::as_input)
}

/// `prepare`'s checks and the plan they allow.
fn checks(t: &Topology) -> Result<Plan, Error> {
    plan::validate(t)?;
    let names = Names::new(&t.name);
    if folder::journal_path(&t.name).exists() {
        return Err(Error::Taken(format!(
            "lab '{}' already exists: remove it with `vnetlab down {}` or pick another --name",
            t.name, t.name
        )));
    }
    let prefix = names.ns_prefix();
    if let Some(ns) = netns_list().into_iter().find(|n| n.starts_with(&prefix)) {
        return Err(Error::Taken(format!("namespace {ns} already exists and this state folder's journals do not name it (another program's, or a lab of another VNETLAB_STATE_DIR): pick another --name; remove it yourself (`ip netns del {ns}`) only if you know it is no one's and no process is in it (`ip netns pids {ns}`)")));
    }
    let routes = hostcmd::read(&["ip", "-j", "-4", "route", "show", "table", "all"])?;
    if let Some(r) = super::addr::overlapping_route(&routes, &t.subnet)? {
        return Err(Error::Input(format!(
            "subnet {} overlaps the host route {r}: pick another range with --subnet",
            t.subnet
        )));
    }
    if (t.wire.delay.is_some() || t.wire.loss.is_some())
        && kernel_config("CONFIG_NET_SCH_NETEM") == Some(false)
    {
        return Err(Error::Input(NO_NETEM.into()));
    }
    if t.wire.rate.is_some() && kernel_config("CONFIG_NET_SCH_TBF") == Some(false) {
        return Err(Error::Failed("this kernel has no tbf qdisc (CONFIG_NET_SCH_TBF), so --wire-rate cannot shape the wire here: drop --wire-rate".into()));
    }
    let dp = plan::datapath::of(t.mode);
    let vm = match dp.vm() {
        Some(_) => Some(super::vms::host_for(t.mode)?),
        None => None,
    };
    let sriov = match (dp.pf_stand_in(), &t.pf) {
        (Some(_), Some(pf)) => Some(inspect_pf(pf, t.mode)?),
        _ => None,
    };
    if let Some(u) = &t.uplink {
        super::uplink::check(u, t.force_uplink)?;
    }
    let cg = cgroup::detect();
    let mut cpus = if t.remote_client() {
        super::cpus::remote_plan(
            &crate::sys::online_cpus(),
            t.host_cpus.as_ref(),
            t.pin,
            cgroup::no_cpuset(&cg),
        )?
    } else {
        super::cpus::plan(
            &crate::sys::online_cpus(),
            t.client_cpus.as_ref(),
            t.host_cpus.as_ref(),
            t.pin,
            cgroup::no_cpuset(&cg),
        )?
    };
    if cpus.placed && threaded_napi_offered() {
        cpus.steering = crate::records::cpu::Steering::ThreadedNapiRps;
    }
    let offers = plan::HostOffers {
        sriov: sriov.as_ref(),
        vm: vm.as_ref(),
    };
    plan::plan(t, &cg, &cpus, offers)
}

/// Whether this kernel offers threaded NAPI (the `threaded` attribute of network devices).
fn threaded_napi_offered() -> bool {
    Path::new("/sys/class/net/lo/threaded").exists()
}

const NO_NETEM: &str = "this kernel has no netem qdisc (CONFIG_NET_SCH_NETEM), so --wire-delay and --wire-loss cannot be applied here: drop them (--wire-rate works)";

/// Whether the running kernel was built with an option (y or m), from /proc/config.gz; None if unknown.
pub fn kernel_config(option: &str) -> Option<bool> {
    use std::io::Read;
    // A kernel's config is a few hundred KB; more is not a config.
    const MAX: u64 = 8 << 20;
    let gz = std::fs::File::open("/proc/config.gz").ok()?;
    let mut text = String::new();
    flate2::read::GzDecoder::new(gz)
        .take(MAX)
        .read_to_string(&mut text)
        .ok()?;
    let set = text
        .lines()
        .any(|l| l == format!("{option}=y") || l == format!("{option}=m"));
    Some(set)
}

/// Reads what an SR-IOV PF offers, or says plainly that it is not one.
pub fn inspect_pf(pf: &str, mode: Mode) -> Result<SriovPf, Error> {
    let dev = Path::new("/sys/class/net").join(pf);
    if pf.contains('/') || !dev.exists() {
        return Err(Error::Failed(format!("--pf {pf}: there is no such network interface; name the SR-IOV physical function (see `ip link`), or use --mode macvlan, vnetlab's stand-in for a VF")));
    }
    let read = |f: &str| {
        std::fs::read_to_string(dev.join("device").join(f))
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok())
    };
    match (read("sriov_totalvfs"), read("sriov_numvfs")) {
        (Some(total), Some(num)) if total > 0 => Ok(SriovPf {
            pf: pf.into(),
            numvfs: num,
            totalvfs: total,
        }),
        _ => {
            let instead = plan::datapath::of(mode)
                .pf_stand_in()
                .unwrap_or("macvlan, vnetlab's stand-in for a VF");
            Err(Error::Failed(format!("--pf {pf}: {pf} is not an SR-IOV NIC (it has no virtual functions), so this host cannot build mode {mode}; use --mode {instead}")))
        }
    }
}

/// The host's network namespaces by name.
pub fn netns_list() -> Vec<String> {
    std::fs::read_dir("/run/netns")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .collect()
}

/// Builds the plan. `kept`: the lab outlives this process (`up`); otherwise it belongs to it and
/// `cleanup` may remove it once the process is gone. On failure or a signal, removes what it made.
/// Returns the lab's record vouched for by its journal (with the identities of what it made).
pub fn build(p: &Plan, progress: bool, kept: bool) -> Result<state::LabRecord, Error> {
    let progress = progress && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let lab = p.record.topology.name.clone();
    folder::ensure_dir()?;
    let mut j = Journal::create(&folder::journal_path(&lab), kept)?;
    crate::sys::signals::install();
    let start = Instant::now();
    let result = run_steps(p, &mut j, progress);
    match result {
        Ok(()) if progress => {
            let secs = start.elapsed().as_secs_f64();
            crate::errln!("\rbuilt lab {lab}: {} steps in {secs:.2} s", p.steps.len());
        }
        Ok(()) => {}
        Err(_) if progress => crate::errln!(),
        Err(_) => {}
    }
    result.map_err(|e| undo_failed_build(&lab, e))?;
    let mut rec = p.record.clone();
    state::vouch(&mut rec, &journal::read(&folder::journal_path(&lab), &lab)?)?;
    Ok(rec)
}

/// Removes what a failed or interrupted build made, and says so in the error it returns.
fn undo_failed_build(lab: &str, e: Error) -> Error {
    let stopped = stopping();
    let msg = match (stopped, teardown(lab)) {
        (true, Ok(_)) => format!("interrupted while building lab {lab}; removed what was made"),
        (false, Ok(_)) => format!("{e}; removed what was made"),
        (_, Err(u)) => {
            format!("{e}; removing what was made also failed: {u} (run `vnetlab cleanup`)")
        }
    };
    match (stopped, e) {
        (true, _) => Error::Interrupted(msg),
        // A refusal of the input stays one (exit 2; `build_free` moves on from a taken name).
        (false, Error::Taken(_)) => Error::Taken(msg),
        (false, e) if e.is_input() => Error::Input(msg),
        (false, _) => Error::Failed(msg),
    }
}

/// Writes the lab record, then runs the plan's steps in order, journaling each object before it
/// is made; a run of independent per-interface commands (ethtool) goes a few at a time.
fn run_steps(p: &Plan, j: &mut Journal, progress: bool) -> Result<(), Error> {
    let lab = &p.record.topology.name;
    // The PF `up --pf` named, claimed before anything is written to it.
    if let Some(pf) = &p.record.topology.pf {
        j.record(&[Entry::Pf { name: pf.clone() }])?;
    }
    let record = serde_json::to_string_pretty(&p.record).unwrap();
    crate::sys::file::replace(&folder::record_path(lab), record.as_bytes(), 0o600)
        .map_err(|e| Error::Failed(format!("cannot write the lab record: {e}")))?;
    if let Some(t) = p
        .record
        .topology
        .client
        .as_ref()
        .and_then(|c| c.token.as_ref())
    {
        crate::sys::file::replace(&folder::token_path(lab), t.as_bytes(), 0o600)
            .map_err(|e| Error::Failed(format!("cannot keep the client's token: {e}")))?;
    }
    let log_path = folder::log_path(lab);
    let mut log = crate::sys::file::create(&log_path, 0o600)
        .map_err(|e| Error::Failed(format!("cannot write {}: {e}", log_path.display())))?;
    let total = p.steps.len();
    let mut started = Vec::new();
    let mut i = 0;
    while i < total {
        if stopping() {
            return Err(Error::Interrupted(INTERRUPTED.to_string()));
        }
        if progress {
            crate::err!("\rbuilding lab {lab}: step {}/{total}", i + 1);
        }
        let backends = backend_batch(&p.steps[i..]);
        if backends.len() > 1 {
            for b in &backends {
                let _ = writeln!(log, "{}", plan::shell_step(b));
            }
            start_backends(&backends)?;
            i += backends.len();
            continue;
        }
        let batch = ethtool_batch(&p.steps[i..]);
        if batch.is_empty() {
            let _ = writeln!(log, "{}", plan::shell_step(&p.steps[i]));
            run_step(&p.steps[i], j, &mut started)?;
            i += 1;
        } else {
            for c in &batch {
                let _ = writeln!(log, "{}", c.shell());
            }
            run_parallel(&batch, 4)?;
            i += batch.len();
        }
    }
    settle(&p.record)?;
    if let Some(ask) = &p.record.topology.shield {
        raise_shield(&p.record, ask, j)?;
    }
    j.record(&[Entry::Complete])
}

/// Clears the lab's host cores (and the client's, where the host has cores beyond both) of the
/// host's other work: each change journaled, then made.
fn raise_shield(
    r: &state::LabRecord,
    ask: &crate::shield::Ask,
    j: &mut Journal,
) -> Result<(), Error> {
    let tree = crate::shield::tree().ok_or_else(|| {
        Error::Input(
            "--shield moves cpusets, and this host mounts no cpuset hierarchy: leave --shield out"
                .into(),
        )
    })?;
    let online = crate::sys::online_cpus();
    let both: Vec<usize> = r
        .cpus
        .host
        .0
        .iter()
        .chain(&r.cpus.client.0)
        .copied()
        .collect();
    let spare = online.iter().any(|c| !both.contains(c));
    let cores = if spare { both } else { r.cpus.host.0.clone() };
    let h = crate::shield::RealHost::new();
    let own = format!("vl{}", r.topology.name);
    let mut plan = crate::shield::plan(&h, &tree, &cores, &online, ask, &own)?;
    for c in &plan.changes {
        j.record(&[Entry::Shield { change: c.clone() }])?;
        if let Err(e) = crate::shield::apply(&h, c) {
            match crate::shield::may_refuse(c) {
                true => plan.summary.left.push(e.to_string()),
                false => return Err(e.into()),
            }
        }
    }
    crate::errln!("\rvnetlab: {}", plan.summary.line());
    Ok(())
}

/// The ethtool commands at the head of `steps` that create nothing (they may run together).
fn ethtool_batch(steps: &[Step]) -> Vec<&HostCmd> {
    steps
        .iter()
        .map_while(|s| match s {
            Step::Run {
                cmd: cmd @ HostCmd::Ethtool { .. },
                creates,
            } if creates.is_empty() => Some(cmd),
            _ => None,
        })
        .collect()
}

/// The backends started at the head of `steps` (they start together).
fn backend_batch(steps: &[Step]) -> Vec<&Step> {
    steps
        .iter()
        .take_while(|s| matches!(s, Step::StartBackend { .. }))
        .collect()
}

/// Runs one step, journaling what it creates first.
/// `started`: when each QEMU guest was started (its boot is timed from then).
fn run_step(
    step: &Step,
    j: &mut Journal,
    started: &mut Vec<(crate::vocab::Role, Instant)>,
) -> Result<(), Error> {
    match step {
        Step::MakeNetns { names } => names.iter().try_for_each(|n| make_netns(n, j)),
        Step::MakeCgroup { path, shared } => {
            make_cgroup(path, *shared, j)?;
            if *shared {
                Ok(())
            } else {
                follow_shared(path, j)
            }
        }
        Step::Run { creates, cmd } => {
            j.record(creates)?;
            cmd.run().map_err(|e| match e.failure() {
                hostcmd::Failure::UnknownQdisc if matches!(cmd, HostCmd::Tc { .. }) => {
                    Error::Input(NO_NETEM.to_string())
                }
                _ => Error::Host(e),
            })
        }
        Step::StartBackend { .. } => start_backends(&[step]),
        Step::PlaceNapi { netns, dev, cpus } => super::steer::place_napi(netns, dev, cpus),
        Step::StartVm {
            guest,
            spec,
            netns,
            cgroups,
        } => {
            j.record(&[Entry::VmFolder {
                path: spec.files.dir.clone(),
            }])?;
            started.push((*guest, Instant::now()));
            super::vms::start(*guest, spec, netns, cgroups)
        }
        Step::WaitVms {
            lab,
            guests,
            timeout,
        } => super::vms::wait(lab, guests, started, *timeout, true),
        Step::BindVfio { pf, vf } => {
            let d = vfio::resolve(Path::new("/sys"), pf, *vf)?;
            vfio::check(pf, *vf, &d)?;
            j.record(&[Entry::VfioVf {
                pf: pf.clone(),
                vf: *vf,
                device: d.bdf.clone(),
                driver: d.driver.clone(),
            }])?;
            vfio::bind(&d)
        }
        Step::ClaimUplink { name, netns } => {
            let before = super::uplink::read_state(name)?;
            j.record(&[Entry::Uplink {
                name: name.clone(),
                netns: netns.clone(),
                before,
            }])?;
            let mv = IpCmd::ToNetns {
                dev: name.clone(),
                netns: netns.clone(),
            };
            HostCmd::ip(None, vec![mv]).run()?;
            j.record(&[Entry::UplinkMoved { name: name.clone() }])
        }
        Step::MoveVf {
            pf,
            vf,
            netns,
            name,
        } => {
            let ifname = vf_ifname(pf, *vf)?;
            j.record(&[Entry::Vf {
                pf: pf.clone(),
                ifname: ifname.clone(),
                netns: netns.clone(),
                lab_name: name.clone(),
            }])?;
            let mv = IpCmd::MoveRename {
                dev: ifname,
                netns: netns.clone(),
                name: name.clone(),
            };
            Ok(HostCmd::ip(None, vec![mv]).run()?)
        }
    }
}

/// Makes namespace `name`, journaled before and with its identity before it is bound to its name
/// (a crash between the two leaves only an empty placeholder, which `down` removes), and turns
/// IPv6 off in it: a lab's traffic is IPv4, and otherwise every link of 200 guests sends its own
/// neighbour discovery, router solicitations and multicast reports, which the bridge floods to
/// every other guest while the lab comes up and while it is measured. A name
/// someone else holds (another lab, another state folder, another program) is theirs: the build
/// stops and the rollback leaves it, since it was never journaled as made.
fn make_netns(name: &str, j: &mut Journal) -> Result<(), Error> {
    j.record(&[Entry::Netns { name: name.into() }])?;
    let made = ident::make_netns(name, |id, cookie| {
        j.record(&[Entry::NetnsMade {
            name: name.into(),
            id,
            cookie,
        }])
        .map_err(|e| std::io::Error::other(e.to_string()))
    });
    match made {
        Ok(true) => hostcmd::netlink::ipv6_off(name)
            .map_err(|e| Error::Failed(format!("cannot turn IPv6 off in namespace {name}: {e}"))),
        Ok(false) => Err(Error::Taken(format!(
            "namespace {name} exists and is not this lab's (another lab, another state folder or another program holds the name): pick another --name"
        ))),
        Err(e) => Err(Error::Failed(format!("cannot make namespace {name}: {e}"))),
    }
}

/// A name for a folder only this build could have made: `.<name>-<random hex>` beside it.
fn temp_name(path: &Path) -> std::path::PathBuf {
    use rand::Rng;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("x");
    path.with_file_name(format!(".{name}-{:016x}", rand::thread_rng().gen::<u64>()))
}

/// Makes cgroup folder `path` under a unique temporary name, journals what it is, then renames
/// it into place (a crash at any moment leaves a folder this lab's journal can prove is its own).
/// A shared folder that exists is used, journaled as made only if a lab of this state folder
/// made it; a lab's own folder that exists is someone else's. Where the file system cannot rename
/// folders (cgroup v2), the folder is made in place.
fn make_cgroup(path: &Path, shared: bool, j: &mut Journal) -> Result<(), Error> {
    let exists = || std::fs::symlink_metadata(path).is_ok();
    let taken = || {
        Error::Taken(format!(
            "cgroup folder {} exists and is not this lab's: pick another --name",
            path.display()
        ))
    };
    if exists() {
        return match (shared, made_here(path)) {
            (true, Some(id)) => j.record(&[
                Entry::Cgroup {
                    path: path.into(),
                    shared,
                    temp: None,
                },
                Entry::CgroupMade {
                    path: path.into(),
                    id,
                },
            ]),
            (true, None) => Ok(()),
            (false, _) => Err(taken()),
        };
    }
    let temp = temp_name(path);
    j.record(&[Entry::Cgroup {
        path: path.into(),
        shared,
        temp: Some(temp.clone()),
    }])?;
    let failed =
        |e: std::io::Error| Error::Failed(format!("cannot make cgroup {}: {e}", path.display()));
    if let Err(e) = std::fs::create_dir(&temp) {
        // The shared folder went (another lab found it empty) since this lab made or found it:
        // it is made again, once.
        let parent = path
            .parent()
            .filter(|p| p.file_name().is_some_and(|n| n == "vnetlab"));
        match parent {
            Some(top) if !shared && e.kind() == std::io::ErrorKind::NotFound => {
                make_cgroup(top, true, j)?;
                std::fs::create_dir(&temp).map_err(failed)?;
            }
            _ => return Err(failed(e)),
        }
    }
    let id = ident::id_of(&temp).map_err(failed)?;
    j.record(&[Entry::CgroupMade {
        path: temp.clone(),
        id,
    }])?;
    match std::fs::rename(&temp, path) {
        Ok(()) => j.record(&[Entry::CgroupMade {
            path: path.into(),
            id,
        }]),
        Err(e) => {
            let _ = std::fs::remove_dir(&temp);
            match e.raw_os_error() {
                Some(libc::EEXIST | libc::ENOTEMPTY) if shared => Ok(()),
                Some(libc::EEXIST | libc::ENOTEMPTY) => Err(taken()),
                // No rename here (cgroup v2): made in place, journaled right after.
                _ => make_in_place(path, shared, j),
            }
        }
    }
}

/// A lab's own folder lives in the shared one as it is now. If that is not the one this lab
/// journaled (another lab found it empty and removed it, and one was made anew in between), the
/// one it lives in is journaled too when a lab of this state folder made it, so whichever lab
/// goes last removes it.
fn follow_shared(path: &Path, j: &mut Journal) -> Result<(), Error> {
    let Some(parent) = path.parent() else {
        return Ok(());
    };
    let Some(now) = made_here(parent) else {
        return Ok(());
    };
    let mine = j
        .entries()?
        .iter()
        .any(|e| matches!(e, Entry::CgroupMade { path: p, id } if p == parent && *id == now));
    if mine {
        return Ok(());
    }
    j.record(&[
        Entry::Cgroup {
            path: parent.into(),
            shared: true,
            temp: None,
        },
        Entry::CgroupMade {
            path: parent.into(),
            id: now,
        },
    ])
}

/// Makes the folder in place and journals what it is (where folders cannot be renamed).
fn make_in_place(path: &Path, shared: bool, j: &mut Journal) -> Result<(), Error> {
    match std::fs::create_dir(path) {
        Ok(()) => {
            let id = ident::id_of(path)
                .map_err(|e| Error::Failed(format!("{}: {e}", path.display())))?;
            j.record(&[Entry::CgroupMade {
                path: path.into(),
                id,
            }])
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && shared => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(Error::Taken(format!(
            "cgroup folder {} exists and is not this lab's: pick another --name",
            path.display()
        ))),
        Err(e) => Err(Error::Failed(format!(
            "cannot make cgroup {}: {e}",
            path.display()
        ))),
    }
}

/// The identity of shared folder `path` if a lab of this state folder journaled it as made and it
/// is still that folder.
fn made_here(path: &Path) -> Option<FileId> {
    let now = ident::id_of(path).ok()?;
    folder::labs().iter().find_map(|l| {
        let entries = journal::read(&folder::journal_path(l), l).ok()?;
        entries.iter().find_map(|e| match e {
            Entry::CgroupMade { path: p, id } if p == path && *id == now => Some(now),
            _ => None,
        })
    })
}

/// What a build stopped by SIGINT/SIGTERM (or a closed output) says.
pub const INTERRUPTED: &str = "interrupted";

fn stopping() -> bool {
    crate::sys::signals::stop_requested()
}

/// A vNIC backend started and not yet known to have attached its taps.
struct Starting {
    guest: String,
    child: std::process::Child,
    stats: std::path::PathBuf,
    log: std::path::PathBuf,
}

/// Starts the vNIC backends of a run of `StartBackend` steps all at once, then waits until
/// each has attached both taps (its counters file appears), or reports the first that exits or
/// takes over 5 s. Started together, 200 backends cost one wait, not 200.
fn start_backends(steps: &[&Step]) -> Result<(), Error> {
    let mut starting = Vec::with_capacity(steps.len());
    let mut result = Ok(());
    for s in steps {
        if let Step::StartBackend {
            guest,
            args,
            netns,
            cgroups,
            stats,
            log,
        } = s
        {
            match spawn_backend(guest, args, netns, cgroups, stats, log) {
                Ok(b) => starting.push(b),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
    }
    let waited = result.and_then(|_| wait_backends(&mut starting));
    if waited.is_err() {
        for b in &mut starting {
            let _ = b.child.kill();
            let _ = b.child.wait();
        }
    }
    waited
}

/// Starts one backend detached from `up` (its own session, no parent-death signal) inside the
/// host namespace and its cgroup.
fn spawn_backend(
    guest: &str,
    args: &[String],
    netns: &str,
    cgroups: &[std::path::PathBuf],
    stats: &Path,
    log: &Path,
) -> Result<Starting, Error> {
    let exe = std::env::current_exe()
        .map_err(|e| Error::Failed(format!("cannot find vnetlab's own binary: {e}")))?;
    let mut argv = vec![exe.display().to_string()];
    argv.extend(args.iter().cloned());
    let mut cmd = super::exec::command_while_building(netns, cgroups, &argv)?;
    let out = crate::sys::file::create(log, 0o600)
        .map_err(|e| Error::Failed(format!("{}: {e}", log.display())))?;
    let _ = std::fs::remove_file(stats);
    crate::sys::spawn::new_session(&mut cmd);
    let child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(
            out.try_clone()
                .map_err(|e| Error::Failed(format!("{}: {e}", log.display())))?,
        )
        .stderr(out)
        .spawn()
        .map_err(|e| Error::Failed(format!("cannot start the vNIC backend of {guest}: {e}")))?;
    Ok(Starting {
        guest: guest.to_string(),
        child,
        stats: stats.to_path_buf(),
        log: log.to_path_buf(),
    })
}

/// Waits until every backend in `starting` has attached its taps, taking each off the list as
/// it does (a thread then reaps it, so a killed backend does not linger as a zombie of a
/// long-lived vnetlab such as `serve` or `reproduce`).
fn wait_backends(starting: &mut Vec<Starting>) -> Result<(), Error> {
    let t0 = Instant::now();
    while !starting.is_empty() {
        let mut i = 0;
        while i < starting.len() {
            let b = &mut starting[i];
            if b.stats.exists() {
                let mut b = starting.swap_remove(i);
                std::thread::spawn(move || b.child.wait());
                continue;
            }
            if let Ok(Some(st)) = b.child.try_wait() {
                let tail = std::fs::read_to_string(&b.log).unwrap_or_default();
                return Err(Error::Failed(format!(
                    "the vNIC backend of {} exited ({st}): {}",
                    b.guest,
                    hostcmd::one_line(&tail)
                )));
            }
            i += 1;
        }
        if starting.is_empty() {
            break;
        }
        if t0.elapsed() > Duration::from_secs(5) {
            let b = &starting[0];
            return Err(Error::Failed(format!(
                "the vNIC backend of {} did not attach its taps within 5 s (see {})",
                b.guest,
                b.log.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}

/// Waits (at most 3 s) until the kernel reports every lab interface that is set up as up: the
/// operational state follows the admin state a moment later (linkwatch).
fn settle(r: &state::LabRecord) -> Result<(), Error> {
    let mut namespaces: Vec<&str> = r
        .endpoints
        .iter()
        .filter(|e| e.remote.is_none())
        .map(|e| e.netns.as_str())
        .collect();
    namespaces.sort();
    namespaces.dedup();
    let start = Instant::now();
    for ns in namespaces {
        loop {
            let pending = hostcmd::netlink::pending_link(ns)
                .map_err(|e| Error::Failed(format!("cannot list the links of {ns}: {e}")))?;
            match pending {
                None => break,
                Some(_) if stopping() => return Err(Error::Interrupted(INTERRUPTED.to_string())),
                Some((name, state)) if start.elapsed() > Duration::from_secs(3) => {
                    return Err(Error::Failed(format!(
                        "{name} in {ns} did not come up (state {state})"
                    )));
                }
                Some(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }
    Ok(())
}

fn run_parallel(cmds: &[&HostCmd], width: usize) -> Result<(), Error> {
    let chunk = cmds.len().div_ceil(width).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = cmds
            .chunks(chunk)
            .map(|part| s.spawn(move || part.iter().try_for_each(|c| run_settling(c))))
            .collect();
        handles.into_iter().try_for_each(|h| {
            h.join()
                .unwrap_or_else(|_| Err(Error::Failed("a worker panicked".into())))
        })
    })
}

/// Runs one command. An ethtool change that raced a lower device's own feature update (a macvlan
/// follows the wire end beneath it, which another worker is changing) is tried once more after
/// it settles: "Could not change any device features" came from the race, not the request.
fn run_settling(c: &HostCmd) -> Result<(), Error> {
    match c.run() {
        Err(_) if matches!(c, HostCmd::Ethtool { .. }) => {
            std::thread::sleep(Duration::from_millis(100));
            c.run().map_err(Error::Host)
        }
        r => r.map_err(Error::Host),
    }
}

fn vf_ifname(pf: &str, vf: u32) -> Result<String, Error> {
    let dir = format!("/sys/class/net/{pf}/device/virtfn{vf}/net");
    std::fs::read_dir(&dir)
        .ok()
        .and_then(|mut d| d.next())
        .and_then(|e| e.ok())
        .and_then(|e| e.file_name().to_str().map(str::to_string))
        .ok_or_else(|| Error::Failed(format!("VF {vf} of {pf} has no network interface (is it bound to vfio-pci or another driver?)")))
}

/// What a namespace was made as: its inode and, where the kernel has them, its cookie.
pub type NsIdent = (FileId, Option<u64>);

/// One thing `down` does, derived from a journal entry.
#[derive(Debug, PartialEq)]
pub enum Undo {
    /// Kill the lab's processes (in the cgroups and namespaces it made).
    KillProcesses,
    /// Delete the namespaces the lab made, each only while it is the one made (None: the make
    /// was cut short; only an empty placeholder of that name goes).
    DelNetns(Vec<(String, Option<NsIdent>)>),
    ReturnVf {
        netns: String,
        lab_name: String,
        ifname: String,
    },
    NumVfs {
        pf: String,
        previous: u32,
        set: u32,
    },
    /// Remove the folder a make cut short left under its unique temporary name (before its
    /// identity was journaled): a name only this lab's build could have made, never used.
    RmTempCgroup(std::path::PathBuf),
    /// Remove a folder the lab made, only while it is the one made.
    RmCgroup {
        path: std::path::PathBuf,
        shared: bool,
        id: FileId,
    },
    /// Give a VF's PCI device back from vfio-pci to its own driver.
    GiveBackVf {
        device: String,
    },
    /// Remove a QEMU guest's folder (its QEMU is killed with the lab's processes).
    RmVmFolder(std::path::PathBuf),
    /// Give back what the shield moved, where it is still as the shield left it.
    Shield(crate::shield::Change),
    /// Move the uplink back into this machine's namespace and put its settings back.
    ReturnUplink {
        name: String,
        netns: String,
        before: Box<super::uplink::UplinkState>,
        moved: bool,
    },
}

impl Undo {
    pub fn shell(&self) -> String {
        match self {
            Undo::KillProcesses => {
                "# kill every process in the lab's cgroups and namespaces".into()
            }
            Undo::DelNetns(v) => v
                .iter()
                .map(|(n, id)| match id {
                    Some((id, _)) => format!("ip {}  # only while it is {id}", IpCmd::NetnsDel(n.to_string())),
                    None => format!("rm /run/netns/{n}  # only an empty placeholder"),
                })
                .collect::<Vec<_>>()
                .join("\n"),
            Undo::ReturnVf {
                netns,
                lab_name,
                ifname,
            } => format!("ip -n {netns} link set dev {lab_name} netns 1 name {ifname}"),
            Undo::NumVfs { pf, previous, set } => {
                format!("echo {previous} > /sys/class/net/{pf}/device/sriov_numvfs  # if it still has {set}")
            }
            Undo::RmVmFolder(path) => format!("rm -r {}", path.display()),
            Undo::Shield(c) => crate::shield::shell(c),
            Undo::ReturnUplink { name, netns, before, .. } => format!(
                "ip -n {netns} link set dev {name} netns 1  # if there with {}; then mtu {}, {} addresses, {} routes, qdiscs, offloads, rings and masks as they were, {}",
                before.mac,
                before.mtu,
                before.addrs.len(),
                before.routes.len(),
                if before.up { "up" } else { "down" }
            ),
            Undo::GiveBackVf { device: d } => {
                let dev = format!("/sys/bus/pci/devices/{d}");
                format!("echo {d} > {dev}/driver/unbind; echo > {dev}/driver_override; echo {d} > /sys/bus/pci/drivers_probe")
            }
            Undo::RmTempCgroup(path) => format!("rmdir {}  # if it is there", path.display()),
            Undo::RmCgroup { path, shared, id } => {
                format!(
                    "rmdir {}  # only while it is {id}{}",
                    path.display(),
                    if *shared {
                        ", if no other lab uses it"
                    } else {
                        ""
                    }
                )
            }
        }
    }
}

// Long on purpose: one match arm per journal entry kind, each its own undo.
/// The undo steps for a journal: its entries in reverse; objects inside a lab namespace go with
/// it. Namespaces and folders are undone only as they were made (their `…Made` identity); one
/// the lab only meant to make was never its own.
pub fn undo_steps(entries: &[Entry]) -> Result<Vec<Undo>, Error> {
    let namespaces: HashSet<&String> = entries
        .iter()
        .filter_map(|e| match e {
            Entry::Netns { name } => Some(name),
            _ => None,
        })
        .collect();
    let made_ns = |name: &str| {
        entries.iter().find_map(|e| match e {
            Entry::NetnsMade {
                name: n,
                id,
                cookie,
            } if n == name => Some((*id, *cookie)),
            _ => None,
        })
    };
    let moved = |name: &str| {
        entries
            .iter()
            .any(|e| matches!(e, Entry::UplinkMoved { name: n } if n == name))
    };
    let made_dir = |p: &Path| {
        entries.iter().find_map(|e| match e {
            Entry::CgroupMade { path, id } if path == p => Some(*id),
            _ => None,
        })
    };
    let mut out = vec![Undo::KillProcesses];
    for e in entries.iter().rev() {
        match e {
            Entry::Complete
            | Entry::Owner { .. }
            | Entry::Pf { .. }
            | Entry::NetnsMade { .. }
            | Entry::UplinkMoved { .. } => {}
            // Renamed into place but not journaled there yet: it is the one made under `temp`.
            Entry::Cgroup {
                path,
                shared,
                temp: Some(t),
            } if made_dir(path).is_none() => match made_dir(t) {
                Some(id) => out.push(Undo::RmCgroup {
                    path: path.clone(),
                    shared: *shared,
                    id,
                }),
                None => out.push(Undo::RmTempCgroup(t.clone())),
            },
            Entry::Cgroup { .. } => {}
            Entry::InNetns { netns, object } => {
                if !namespaces.contains(netns) {
                    return Err(Error::Failed(format!(
                        "journal names {object} in {netns}, a namespace the lab did not make"
                    )));
                }
            }
            Entry::Netns { name } => {
                let n = (name.clone(), made_ns(name));
                match out.last_mut() {
                    Some(Undo::DelNetns(v)) => v.push(n),
                    _ => out.push(Undo::DelNetns(vec![n])),
                }
            }
            Entry::Vf {
                ifname,
                netns,
                lab_name,
                ..
            } => out.push(Undo::ReturnVf {
                netns: netns.clone(),
                lab_name: lab_name.clone(),
                ifname: ifname.clone(),
            }),
            Entry::NumVfs { pf, previous, set } => out.push(Undo::NumVfs {
                pf: pf.clone(),
                previous: *previous,
                set: set.ok_or_else(|| {
                    Error::Failed(format!(
                        "journal names sriov_numvfs of {pf} without the value the lab set"
                    ))
                })?,
            }),
            Entry::VmFolder { path } => out.push(Undo::RmVmFolder(path.clone())),
            Entry::Shield { change } => out.push(Undo::Shield(change.clone())),
            Entry::Uplink {
                name,
                netns,
                before,
            } => out.push(Undo::ReturnUplink {
                name: name.clone(),
                netns: netns.clone(),
                before: Box::new(before.clone()),
                moved: moved(name),
            }),
            Entry::VfioVf { device, .. } => out.push(Undo::GiveBackVf {
                device: device.clone(),
            }),
            Entry::CgroupMade { path, id } => out.push(Undo::RmCgroup {
                path: path.clone(),
                shared: entries.iter().any(|x| {
                    matches!(x, Entry::Cgroup { path: p, shared: true, temp } if p == path || temp.as_deref() == Some(path))
                }),
                id: *id,
            }),
        }
    }
    Ok(out)
}

/// What `down LAB` would run (for --dry-run).
pub fn teardown_plan(lab: &str) -> Result<Vec<String>, Error> {
    let jpath = folder::journal_path(lab);
    if !jpath.exists() {
        return Err(Error::Input(no_such_lab(lab)));
    }
    let entries = journal::read(&jpath, lab).map_err(Error::as_input)?;
    Ok(undo_steps(&entries)
        .map_err(Error::as_input)?
        .iter()
        .map(Undo::shell)
        .collect())
}

fn no_such_lab(lab: &str) -> String {
    let known = folder::labs();
    if known.is_empty() {
        format!("no lab named '{lab}': there are no labs")
    } else {
        format!("no lab named '{lab}': the labs are {}", known.join(", "))
    }
}

/// Removes everything the lab's journal names, in reverse, then the journal itself. What cannot
/// be given back because it is gone (an unplugged uplink) is said and does not keep the lab; an
/// object that is not the one made (another namespace by its name) is left and said, and keeps
/// the journal, so a person can look.
pub fn teardown(lab: &str) -> Result<Vec<String>, Error> {
    let jpath = folder::journal_path(lab);
    let entries = if std::fs::symlink_metadata(&jpath).is_ok() {
        journal::read(&jpath, lab)?
    } else {
        vec![]
    };
    let own_ns = |name: &str| {
        entries.iter().find_map(|e| match e {
            Entry::NetnsMade {
                name: n,
                id,
                cookie,
            } if n == name => Some((*id, *cookie)),
            _ => None,
        })
    };
    let mut said = Vec::new();
    let errors: Vec<String> = undo_steps(&entries)?
        .iter()
        .filter_map(|u| match undo(lab, u, &entries, &own_ns) {
            Ok(Some(note)) => {
                said.push(note);
                None
            }
            Ok(None) => None,
            Err(e) => Some(e.to_string()),
        })
        .collect();
    if !errors.is_empty() {
        return Err(Error::Failed(errors.join("; ")));
    }
    for p in [
        jpath,
        folder::record_path(lab),
        folder::log_path(lab),
        folder::token_path(lab),
    ] {
        let _ = std::fs::remove_file(p);
    }
    // The backends' counters and logs.
    let prefix = format!("{lab}.vnic-");
    for e in std::fs::read_dir(folder::dir())
        .into_iter()
        .flatten()
        .flatten()
    {
        if e.file_name()
            .to_str()
            .is_some_and(|n| n.starts_with(&prefix))
        {
            let _ = std::fs::remove_file(e.path());
        }
    }
    Ok(said)
}

/// Does one thing `down` does; Some(note): done as far as it could be, with what could not.
fn undo(
    lab: &str,
    u: &Undo,
    entries: &[Entry],
    own_ns: &dyn Fn(&str) -> Option<NsIdent>,
) -> Result<Option<String>, Error> {
    match u {
        Undo::KillProcesses => {
            kill_processes(entries);
            Ok(None)
        }
        Undo::DelNetns(names) => del_netns(names),
        Undo::ReturnVf {
            netns,
            lab_name,
            ifname,
        } => return_vf(netns, lab_name, ifname).map(|_| None),
        Undo::NumVfs { pf, previous, set } => give_back_vfs(lab, pf, *previous, *set).map(|_| None),
        Undo::RmCgroup { path, shared, id } => cgroup::remove(path, *shared, *id).map(|_| None),
        Undo::RmTempCgroup(path) => cgroup::remove_unused(path).map(|_| None),
        Undo::GiveBackVf { device } => vfio::give_back(device).map(|_| None),
        Undo::Shield(c) => Ok(crate::shield::give_back(
            &crate::shield::RealHost::new(),
            c,
        )?),
        Undo::ReturnUplink {
            name,
            netns,
            before,
            moved,
        } => {
            let ours = own_ns(netns).is_some_and(|(id, c)| ident::open_netns(netns, id, c).is_ok());
            match super::uplink::give_back(name, netns, ours, *moved, before)? {
                super::uplink::GivenBack::Gone(why) => Ok(Some(why)),
                _ => Ok(None),
            }
        }
        Undo::RmVmFolder(path) => match std::fs::remove_dir_all(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::Failed(format!(
                "cannot remove {}: {e}",
                path.display()
            ))),
            _ => Ok(None),
        },
    }
}

/// Puts a PF's VF count back, only for the PF the lab's record names (what `up --pf` was given)
/// and only while it still has the count the lab set: VFs someone else set are never touched.
fn give_back_vfs(lab: &str, pf: &str, previous: u32, set: u32) -> Result<(), Error> {
    let named = state::load(lab).ok().and_then(|r| r.topology.pf);
    if named.as_deref() != Some(pf) {
        return Err(Error::Failed(format!(
            "the journal names VFs of {pf}, which lab {lab}'s record does not name as its --pf: left as they are"
        )));
    }
    let path = std::path::PathBuf::from(format!("/sys/class/net/{pf}/device/sriov_numvfs"));
    let now: Option<u32> = std::fs::read_to_string(&path)
        .ok()
        .and_then(|s| s.trim().parse().ok());
    match now {
        Some(n) if n == set => Ok(HostCmd::Write {
            path,
            value: previous.to_string(),
        }
        .run()?),
        // Gone already (the device was removed): nothing to give back.
        None if !path.exists() => Ok(()),
        n => Err(Error::Failed(format!(
            "{pf} has {} VFs, not the {set} lab {lab} set: left as they are",
            n.map(|n| n.to_string())
                .unwrap_or("an unreadable count of".into())
        ))),
    }
}

/// Kills the processes in the cgroups and namespaces the lab made, each while it is still the one
/// made (a QEMU guest runs in both: its pidfile alone is no proof a process is the lab's, so it
/// is never the reason for a kill).
fn kill_processes(entries: &[Entry]) {
    // Each namespace checked by inode and cookie, and held open while its processes are found
    // and killed: held, it cannot be freed, so no other namespace can take its inode meanwhile.
    let mut held = Vec::new();
    let own: Vec<(&Path, FileId)> = entries
        .iter()
        .filter_map(|e| match e {
            Entry::CgroupMade { path, id } => {
                let shared = entries.iter().any(|x| {
                    matches!(x, Entry::Cgroup { path: p, shared: true, temp } if p == path || temp.as_deref() == Some(path))
                });
                (!shared).then_some((path.as_path(), *id))
            }
            _ => None,
        })
        .collect();
    // Every folder signalled first, then each waited for: the processes die together.
    for (path, id) in &own {
        let _ = cgroup::signal_all(path, *id);
    }
    for (path, id) in &own {
        let _ = cgroup::kill_all(path, *id);
    }
    for e in entries {
        if let Entry::NetnsMade { name, id, cookie } = e {
            if let Ok(fd) = ident::open_netns(name, *id, *cookie) {
                held.push(fd);
            }
        }
    }
    kill_in_netns(&held);
}

/// Deletes the lab's namespaces still present, each only while it is the one made; another
/// namespace by one of their names is left, and said.
fn del_netns(names: &[(String, Option<NsIdent>)]) -> Result<Option<String>, Error> {
    let mut left = Vec::new();
    for (n, id) in names {
        // A make cut short before it journaled the identity: only a placeholder can be ours.
        let (want, cookie) = id.unwrap_or((FileId { dev: 0, ino: 0 }, None));
        match ident::del_netns(n, want, cookie) {
            Ok(_) => {}
            Err(e) if id.is_none() => left.push(format!(
                "namespace {n} was never journaled as made by this lab: left ({e})"
            )),
            Err(e) => left.push(format!("namespace {n}: {e}; left as it is")),
        }
    }
    Ok((!left.is_empty()).then(|| left.join("; ")))
}

/// Gives a VF back to the root namespace under its own name (it may be gone already).
fn return_vf(netns: &str, lab_name: &str, ifname: &str) -> Result<(), Error> {
    if !Path::new("/run/netns").join(netns).exists() {
        return Ok(());
    }
    let mv = IpCmd::MoveRename {
        dev: lab_name.to_string(),
        netns: "1".into(),
        name: ifname.to_string(),
    };
    match HostCmd::ip(Some(netns), vec![mv]).run() {
        Err(e) if e.failure() != hostcmd::Failure::NoSuchDevice => Err(Error::Host(e)),
        _ => Ok(()),
    }
}

/// `vnetlab down LAB`: what it could not give back, if anything.
pub fn down(lab: &str) -> Result<Vec<String>, Error> {
    if !folder::journal_path(lab).exists() {
        return Err(Error::Input(no_such_lab(lab)));
    }
    teardown(lab)
}

/// SIGKILLs every process living in one of these namespaces, held open by the caller; each
/// pinned by a pidfd and checked again before the signal, so a pid recycled in between is no one
/// else's loss.
fn kill_in_netns(held: &[std::os::fd::OwnedFd]) {
    let targets: HashSet<FileId> = held
        .iter()
        .filter_map(|fd| ident::id_of_fd(fd).ok())
        .collect();
    if targets.is_empty() {
        return;
    }
    let me = std::process::id() as i32;
    let inside = |pid: i32| {
        ident::id_of(&Path::new("/proc").join(pid.to_string()).join("ns/net"))
            .is_ok_and(|id| targets.contains(&id))
    };
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if pid != me && inside(pid) {
            crate::sys::kill9_if(pid, inside);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undo_runs_in_reverse_and_skips_what_goes_with_a_namespace() {
        let es = vec![
            Entry::Cgroup {
                path: "/cg/vnetlab".into(),
                shared: true,
                temp: None,
            },
            Entry::CgroupMade {
                path: "/cg/vnetlab".into(),
                id: FileId { dev: 1, ino: 2 },
            },
            Entry::Cgroup {
                path: "/cg/vnetlab/vlx".into(),
                shared: false,
                temp: None,
            },
            Entry::CgroupMade {
                path: "/cg/vnetlab/vlx".into(),
                id: FileId { dev: 1, ino: 3 },
            },
            Entry::Netns {
                name: "vlx-host".into(),
            },
            Entry::NetnsMade {
                name: "vlx-host".into(),
                id: FileId { dev: 4, ino: 5 },
                cookie: None,
            },
            Entry::Netns {
                name: "vlx-client".into(),
            },
            Entry::InNetns {
                netns: "vlx-host".into(),
                object: super::journal::NsObject::Link("vlxw".into()),
            },
            Entry::Vf {
                pf: "p".into(),
                ifname: "p_0".into(),
                netns: "vlx-host".into(),
                lab_name: "vlxw".into(),
            },
            Entry::Complete,
        ];
        let u = undo_steps(&es).unwrap();
        assert_eq!(u[0], Undo::KillProcesses);
        assert!(matches!(&u[1], Undo::ReturnVf { ifname, .. } if ifname == "p_0"));
        // The client's namespace was never journaled as made: only a placeholder may go.
        assert_eq!(
            u[2],
            Undo::DelNetns(vec![
                ("vlx-client".into(), None),
                ("vlx-host".into(), Some((FileId { dev: 4, ino: 5 }, None)))
            ])
        );
        assert_eq!(
            u[3],
            Undo::RmCgroup {
                path: "/cg/vnetlab/vlx".into(),
                shared: false,
                id: FileId { dev: 1, ino: 3 }
            }
        );
        assert_eq!(
            u[4],
            Undo::RmCgroup {
                path: "/cg/vnetlab".into(),
                shared: true,
                id: FileId { dev: 1, ino: 2 }
            }
        );
        assert_eq!(u.len(), 5);
        let foreign = vec![Entry::InNetns {
            netns: "other".into(),
            object: super::journal::NsObject::Link("eth0".into()),
        }];
        assert!(undo_steps(&foreign).is_err());
    }

    #[test]
    fn a_vfio_vf_is_given_back_after_its_vm_and_before_the_vfs_are_disabled() {
        let es = vec![
            Entry::NumVfs {
                pf: "p".into(),
                previous: 0,
                set: Some(4),
            },
            Entry::VfioVf {
                pf: "p".into(),
                vf: 2,
                device: "0000:03:10.4".into(),
                driver: Some("ixgbevf".into()),
            },
            Entry::VmFolder {
                path: "/run/vnetlab/x.vm-g1".into(),
            },
        ];
        let u = undo_steps(&es).unwrap();
        assert_eq!(u[0], Undo::KillProcesses);
        assert!(matches!(&u[1], Undo::RmVmFolder(_)));
        assert_eq!(
            u[2],
            Undo::GiveBackVf {
                device: "0000:03:10.4".into()
            }
        );
        assert!(matches!(&u[3], Undo::NumVfs { .. }));
        assert!(u[2]
            .shell()
            .contains("echo > /sys/bus/pci/devices/0000:03:10.4/driver_override"));
    }
}
