//! The shield: clears a lab's cores of the host's other work when asked (`up --shield`), the way
//! `tuned`'s cpu-partitioning profile and `cset shield` do. Other cgroups' cpusets move off the
//! shielded cores (v1 and v2, systemd slices and `kubepods` alike), each task's narrower affinity
//! is recorded and given back, and with `--shield-irqs` movable IRQs and other devices' RPS/XPS
//! masks move too. It is the one named exception to "lab objects only": every change is a
//! [`Change`] the lab journals before it is made, and [`give_back`] writes the old value back only
//! while the value is still the one vnetlab wrote (also after a crash, from `cleanup`).

mod cpusets;
mod devices;
mod host;
#[cfg(test)]
mod tests;

pub use host::{Host, RealHost};

use crate::units::CpuList;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Why the shield could not be raised. Its `Display` is the one line users see.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// What was asked cannot be done on this host as asked; the line says what to change.
    #[error("{0}")]
    Input(String),
    /// The host refused a read or write the shield needed.
    #[error("shield: {0}")]
    Failed(String),
}

/// Which IRQs and devices `--shield-irqs` moves.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum Irqs {
    /// Every movable IRQ, and every device's RPS/XPS masks but the lab's own.
    All,
    /// Only these devices: their IRQs (named in /proc/interrupts) and their masks.
    Devices(Vec<String>),
}

/// What `--shield` was asked to move.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Ask {
    /// `--shield-root CGROUP`: move only this cgroup (a path under the cpuset hierarchy's root),
    /// and allow tasks in the root cgroup (they stay where they are).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<PathBuf>,
    /// `--shield-irqs`: also IRQs and RPS/XPS masks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irqs: Option<Irqs>,
}

/// The cpuset hierarchy the shield moves cgroups in.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum Tree {
    V1(PathBuf),
    V2(PathBuf),
}

/// One change the shield makes, journaled before it is made. Paths are absolute on the host.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "what", rename_all = "snake_case")]
pub enum Change {
    /// A value file (cpuset.cpus, smp_affinity_list, rps_cpus, xps_cpus) from `previous` to `set`.
    Value {
        path: PathBuf,
        previous: String,
        set: String,
    },
    /// The cpuset controller enabled in a v2 folder's cgroup.subtree_control.
    Controller { path: PathBuf },
    /// A task whose own affinity was narrower than its cpuset: given back after the cpusets
    /// are, while the task lives and its affinity is one the kernel left (`left`), not one
    /// someone else set since.
    Affinity {
        tid: u32,
        start: u64,
        previous: CpuList,
        left: Vec<CpuList>,
    },
}

/// What the shield moved and what it could not, for the user and the lab's record.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Summary {
    pub cores: CpuList,
    pub cgroups: usize,
    pub affinities: usize,
    pub irqs: usize,
    pub masks: usize,
    /// What stays on the shielded cores, each with why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left: Vec<String>,
}

impl Summary {
    pub fn line(&self) -> String {
        let mut s = format!(
            "shield: CPU {} cleared: {} cgroups, {} tasks' affinities, {} IRQs, {} RPS/XPS masks moved",
            self.cores, self.cgroups, self.affinities, self.irqs, self.masks
        );
        if !self.left.is_empty() {
            s += &format!("; left there: {}", self.left.join("; "));
        }
        s
    }
}

/// The shield's plan: the changes in the order they are made (given back in reverse).
#[derive(Debug, Default)]
pub struct Plan {
    pub changes: Vec<Change>,
    pub summary: Summary,
}

/// Plans the shield of `cores` (the rest of `online` takes the host's other work) in `tree`,
/// skipping vnetlab's own folders (`<root>/vnetlab`) and the lab's own devices (names that begin
/// with `own`). Reads only; refuses what it must.
pub fn plan(
    h: &dyn Host,
    tree: &Tree,
    cores: &[usize],
    online: &[usize],
    ask: &Ask,
    own: &str,
) -> Result<Plan, Error> {
    let rest: Vec<usize> = online
        .iter()
        .copied()
        .filter(|c| !cores.contains(c))
        .collect();
    if cores.is_empty() || rest.is_empty() {
        return Err(Error::Input(format!(
            "--shield: no CPU is left for the rest of the host beside CPU {}: give the lab fewer cores (--host-cpus)",
            CpuList(cores.to_vec())
        )));
    }
    let mut p = Plan::default();
    p.summary.cores = CpuList(cores.to_vec());
    cpusets::plan(h, tree, cores, &rest, ask.root.as_deref(), &mut p)?;
    if let Some(irqs) = &ask.irqs {
        devices::plan(h, irqs, cores, own, &mut p)?;
    }
    Ok(p)
}

/// Makes one change (already journaled). A value the kernel refuses to take (an IRQ it cannot
/// move) is not an error: the caller notes it and moves on.
pub fn apply(h: &dyn Host, c: &Change) -> Result<(), Error> {
    match c {
        Change::Value { path, set, .. } => h.write(path, set),
        Change::Controller { path } => h.write(path, "+cpuset"),
        Change::Affinity { .. } => Ok(()),
    }
}

/// Gives one change back; Some(note) where it was left because the value changed since.
pub fn give_back(h: &dyn Host, c: &Change) -> Result<Option<String>, Error> {
    match c {
        Change::Value {
            path,
            previous,
            set,
        } => {
            let now = h.read(path).map(|s| s.trim().to_string()).ok();
            match now.as_deref() {
                None => Ok(None), // gone with its cgroup or device
                Some(n) if same(path, n, previous) => Ok(None),
                Some(n) if same(path, n, set) => h.write(path, previous).map(|_| None),
                Some(n) => Ok(Some(format!(
                    "{} is {n}, not the {set} the shield wrote: left as it is",
                    path.display()
                ))),
            }
        }
        Change::Controller { path } => {
            // Best effort: another user of the controller keeps it enabled.
            let _ = h.write(path, "-cpuset");
            Ok(None)
        }
        Change::Affinity {
            tid,
            start,
            previous,
            left,
        } => {
            if h.start_time(*tid) != Some(*start) {
                return Ok(None);
            }
            match h.affinity(*tid) {
                Some(now) if left.iter().any(|l| l.0 == now) && now != previous.0 => {
                    h.set_affinity(*tid, &previous.0).map(|_| None)
                }
                _ => Ok(None),
            }
        }
    }
}

/// Whether the kernel may refuse `c` without the shield failing: an IRQ it cannot move (its
/// write fails with EIO) or a queue mask a driver does not take stays where it is, said in the
/// summary.
pub fn may_refuse(c: &Change) -> bool {
    matches!(c, Change::Value { path, .. }
        if path.starts_with("/proc/irq") || path.starts_with("/sys/class/net"))
}

/// The shell line that gives `c` back, as `down --dry-run` prints it.
pub fn shell(c: &Change) -> String {
    match c {
        Change::Value {
            path,
            previous,
            set,
        } => format!(
            "echo '{previous}' > {}  # if it still has {set}",
            path.display()
        ),
        Change::Controller { path } => format!("echo -cpuset > {}", path.display()),
        Change::Affinity { tid, previous, .. } => {
            format!(
                "taskset -p -c {previous} {tid}  # if it is the same task, as the kernel left it"
            )
        }
    }
}

/// Whether a journaled change is one the shield makes: a value file of a cgroup, an IRQ or a
/// device queue (no `..`, no other file), holding CPU lists or masks. A planted journal's other
/// writes are refused, not made.
pub fn valid(c: &Change) -> bool {
    use std::path::Component;
    let plain = |p: &std::path::Path| {
        p.is_absolute()
            && p.as_os_str().len() <= 4096
            && p.components()
                .all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
    };
    match c {
        Change::Value {
            path,
            previous,
            set,
        } => {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            let s = path.to_string_lossy();
            let kind = match &*name {
                "cpuset.cpus" => s.starts_with("/sys/fs/cgroup/"),
                "smp_affinity_list" => s.starts_with("/proc/irq/"),
                "rps_cpus" | "xps_cpus" => s.starts_with("/sys/class/net/"),
                _ => false,
            };
            let value = |v: &str| v.is_empty() || cpus_in(path, v).is_some();
            plain(path) && kind && value(previous) && cpus_in(path, set).is_some()
        }
        Change::Controller { path } => {
            plain(path)
                && path.starts_with("/sys/fs/cgroup")
                && path.ends_with("cgroup.subtree_control")
        }
        Change::Affinity { previous, .. } => !previous.is_empty(),
    }
}

/// Whether two values of the file at `path` are the same: CPU lists (`0-1`, `0,1`) and masks
/// (`3`, `00000003`: rps_cpus, xps_cpus) compared as sets.
fn same(path: &std::path::Path, a: &str, b: &str) -> bool {
    a == b || (cpus_in(path, a).is_some() && cpus_in(path, a) == cpus_in(path, b))
}

/// The CPUs a value of the file at `path` names, sorted.
fn cpus_in(path: &std::path::Path, s: &str) -> Option<Vec<usize>> {
    let mask = path.file_name().is_some_and(|n| {
        let n = n.to_string_lossy();
        n == "rps_cpus" || n == "xps_cpus"
    });
    let mut v = match mask {
        true => devices::mask_cpus(s)?,
        false => crate::sys::parse_cpu_list(s)?,
    };
    v.sort_unstable();
    v.dedup();
    Some(v)
}

/// The cpuset hierarchy in /proc/mounts text: v1's `cpuset` mount, else v2's (where its root
/// offers cpuset).
pub fn tree_of(mounts: &str, v2_controllers: impl Fn(&std::path::Path) -> String) -> Option<Tree> {
    let mut v2 = None;
    for line in mounts.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [_, dir, fstype, opts, ..] = f[..] else {
            continue;
        };
        match fstype {
            "cgroup" if opts.split(',').any(|o| o == "cpuset") => {
                return Some(Tree::V1(PathBuf::from(dir)))
            }
            "cgroup2" if v2.is_none() => v2 = Some(PathBuf::from(dir)),
            _ => {}
        }
    }
    v2.filter(|d| v2_controllers(d).split_whitespace().any(|c| c == "cpuset"))
        .map(Tree::V2)
}

/// This host's cpuset hierarchy.
pub fn tree() -> Option<Tree> {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    tree_of(&mounts, |d| {
        std::fs::read_to_string(d.join("cgroup.controllers")).unwrap_or_default()
    })
}
