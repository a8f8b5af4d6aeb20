//! Cgroups for CPU accounting and pinning: one folder per lab part (host, client, each guest),
//! in cgroup v2 where it has the cpu controller, else in v1 cpuacct (+ cpuset for pinning).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::hostcmd::HostCmd;
use super::journal::Entry;

#[derive(Clone, Debug, PartialEq)]
pub enum Hierarchy {
    /// A cgroup v2 mount whose root offers the cpu controller.
    V2 { root: PathBuf, cpuset: bool },
    /// v1 mounts: cpuacct for accounting, cpuset (if mounted) for pinning.
    V1 { cpuacct: PathBuf, cpuset: Option<PathBuf> },
    /// Neither: no per-part CPU accounting on this host, said plainly.
    None { why: String },
}

impl Hierarchy {
    pub fn describe(&self) -> String {
        match self {
            Hierarchy::V2 { root, .. } => format!("cgroup v2 ({})", root.display()),
            Hierarchy::V1 { cpuacct, .. } => format!("cgroup v1 cpuacct ({})", cpuacct.display()),
            Hierarchy::None { why } => format!("none: {why}"),
        }
    }
}

/// Finds the hierarchy from /proc/mounts text; `controllers` reads a v2 root's cgroup.controllers.
pub fn detect_from(mounts: &str, controllers: impl Fn(&Path) -> Option<String>) -> Hierarchy {
    let mut v1_acct = None;
    let mut v1_set = None;
    for line in mounts.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 4 {
            continue;
        }
        let (dir, fstype, opts) = (Path::new(f[1]), f[2], f[3]);
        match fstype {
            "cgroup2" => {
                if let Some(c) = controllers(dir) {
                    let c: Vec<&str> = c.split_whitespace().collect();
                    if c.contains(&"cpu") {
                        return Hierarchy::V2 { root: dir.to_path_buf(), cpuset: c.contains(&"cpuset") };
                    }
                }
            }
            "cgroup" => {
                let o: Vec<&str> = opts.split(',').collect();
                if o.contains(&"cpuacct") && v1_acct.is_none() {
                    v1_acct = Some(dir.to_path_buf());
                }
                if o.contains(&"cpuset") && v1_set.is_none() {
                    v1_set = Some(dir.to_path_buf());
                }
            }
            _ => {}
        }
    }
    match v1_acct {
        Some(cpuacct) => Hierarchy::V1 { cpuacct, cpuset: v1_set },
        None => Hierarchy::None {
            why: "neither a cgroup v2 cpu controller nor a v1 cpuacct hierarchy is mounted".into(),
        },
    }
}

pub fn detect() -> Hierarchy {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    detect_from(&mounts, |d| std::fs::read_to_string(d.join("cgroup.controllers")).ok())
}

/// What to make for one lab, and the folders each part joins.
#[derive(Debug)]
pub struct CgroupPlan {
    pub steps: Vec<(Vec<Entry>, HostCmd)>,
    /// Per part: the folders it is accounted (and pinned) in.
    pub folders: Vec<(String, Vec<PathBuf>)>,
}

/// Plans the folders `H/vnetlab/<lab>/<part>` for each part with its optional CPU list.
pub fn plan(h: &Hierarchy, lab_dir: &str, parts: &[(String, Option<String>)]) -> Result<CgroupPlan, String> {
    let pinned = parts.iter().any(|(_, c)| c.is_some());
    let mut steps = Vec::new();
    let mut roots: Vec<(PathBuf, bool)> = Vec::new(); // (hierarchy root, is a v1 cpuset)
    match h {
        Hierarchy::None { why } => {
            if pinned {
                return Err(format!("--pin needs a cpuset cgroup, and this host has none ({why}): run without --pin"));
            }
        }
        Hierarchy::V2 { root, cpuset } => {
            if pinned && !cpuset {
                return Err("--pin needs the cgroup v2 cpuset controller, which this host does not offer: run without --pin".into());
            }
            roots.push((root.clone(), false));
        }
        Hierarchy::V1 { cpuacct, cpuset } => {
            roots.push((cpuacct.clone(), false));
            if pinned {
                match cpuset {
                    Some(s) => roots.push((s.clone(), true)),
                    None => return Err("--pin needs the cgroup v1 cpuset hierarchy, which is not mounted: run without --pin".into()),
                }
            }
        }
    }
    let v2 = matches!(h, Hierarchy::V2 { .. });
    let mut folders: Vec<(String, Vec<PathBuf>)> = parts.iter().map(|(p, _)| (p.clone(), vec![])).collect();
    for (root, is_cpuset) in roots {
        let top = root.join("vnetlab");
        let lab = top.join(lab_dir);
        let all_cpus = read_trim(&root.join("cpuset.cpus.effective")).or_else(|| read_trim(&root.join("cpuset.cpus")));
        let mems = read_trim(&root.join("cpuset.mems.effective")).or_else(|| read_trim(&root.join("cpuset.mems")));
        if !top.exists() {
            steps.push((vec![Entry::Cgroup { path: top.clone(), shared: true }], HostCmd::Mkdir { path: top.clone() }));
        }
        steps.push((vec![Entry::Cgroup { path: lab.clone(), shared: false }], HostCmd::Mkdir { path: lab.clone() }));
        if v2 {
            let ctl = if pinned { "+cpu +cpuset" } else { "+cpu" };
            for dir in [&top, &lab] {
                steps.push((vec![], HostCmd::Write { path: dir.join("cgroup.subtree_control"), value: ctl.into() }));
            }
        }
        if is_cpuset {
            let (Some(cpus), Some(mems)) = (all_cpus, mems.clone()) else {
                return Err("cannot read the cpuset root's cpus and mems: run without --pin".into());
            };
            for dir in [&top, &lab] {
                steps.push((vec![], HostCmd::Write { path: dir.join("cpuset.cpus"), value: cpus.clone() }));
                steps.push((vec![], HostCmd::Write { path: dir.join("cpuset.mems"), value: mems.clone() }));
            }
        }
        for (i, (part, cpus)) in parts.iter().enumerate() {
            let dir = lab.join(part);
            steps.push((vec![Entry::Cgroup { path: dir.clone(), shared: false }], HostCmd::Mkdir { path: dir.clone() }));
            if let (Some(c), true) = (cpus, is_cpuset || (v2 && pinned)) {
                steps.push((vec![], HostCmd::Write { path: dir.join("cpuset.cpus"), value: c.clone() }));
                if is_cpuset {
                    steps.push((vec![], HostCmd::Write { path: dir.join("cpuset.mems"), value: mems.clone().unwrap() }));
                }
            }
            folders[i].1.push(dir);
        }
    }
    Ok(CgroupPlan { steps, folders })
}

fn read_trim(p: &Path) -> Option<String> {
    let s = std::fs::read_to_string(p).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

/// The CPUs of this host, from the process's affinity.
pub fn online_cpus() -> Vec<usize> {
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return vec![0];
        }
        (0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).collect()
    }
}

/// `--pin`: the client gets the last CPU to itself (it stands for another machine); the host and
/// the guests share the rest, guests round-robin. With one CPU everything shares it.
pub fn pin_layout(cpus: &[usize], guests: u32) -> (String, String, Vec<String>) {
    let last = *cpus.last().unwrap_or(&0);
    let rest: Vec<usize> = if cpus.len() > 1 { cpus[..cpus.len() - 1].to_vec() } else { cpus.to_vec() };
    let list = |v: &[usize]| v.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",");
    let guests = (0..guests as usize).map(|i| rest[i % rest.len()].to_string()).collect();
    (list(&rest), last.to_string(), guests)
}

/// Kills every process in a cgroup folder and waits until it is empty (at most 5 s).
pub fn kill_all(dir: &Path) -> Result<(), String> {
    let procs = dir.join("cgroup.procs");
    let start = Instant::now();
    loop {
        let pids: Vec<i32> = std::fs::read_to_string(&procs)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect();
        if pids.is_empty() {
            return Ok(());
        }
        for p in pids {
            unsafe { libc::kill(p, libc::SIGKILL) };
        }
        if start.elapsed() > Duration::from_secs(5) {
            return Err(format!("processes in {} did not die within 5 s", dir.display()));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Removes a cgroup folder; a missing one is fine, a busy shared one is left to its other users.
pub fn remove(dir: &Path, shared: bool) -> Result<(), String> {
    if !dir.exists() {
        return Ok(());
    }
    if !shared {
        kill_all(dir)?;
    }
    let start = Instant::now();
    loop {
        match std::fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(_) if shared => return Ok(()),
            // A killed task can linger in the folder for a moment.
            Err(_) if start.elapsed() < Duration::from_secs(3) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(format!("cannot remove cgroup {}: {e}", dir.display())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const THIS_HOST: &str = "tmpfs /sys/fs/cgroup tmpfs rw 0 0
cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0
cgroup /sys/fs/cgroup/cpuacct cgroup rw,relatime,cpuacct 0 0
cgroup /sys/fs/cgroup/cpuset cgroup rw,relatime,cpuset 0 0
cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0
";

    #[test]
    fn v1_is_chosen_when_v2_has_no_cpu_controller() {
        let h = detect_from(THIS_HOST, |_| Some("".into()));
        assert_eq!(
            h,
            Hierarchy::V1 { cpuacct: "/sys/fs/cgroup/cpuacct".into(), cpuset: Some("/sys/fs/cgroup/cpuset".into()) }
        );
    }

    #[test]
    fn v2_is_chosen_when_it_has_cpu() {
        let m = "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid 0 0\n";
        let h = detect_from(m, |_| Some("cpuset cpu io memory pids".into()));
        assert_eq!(h, Hierarchy::V2 { root: "/sys/fs/cgroup".into(), cpuset: true });
        let h = detect_from(m, |_| Some("io memory".into()));
        assert!(matches!(h, Hierarchy::None { .. }));
    }

    #[test]
    fn plan_makes_one_folder_per_part_and_refuses_pin_without_cpuset() {
        let h = Hierarchy::V1 { cpuacct: "/nonexistent/acct".into(), cpuset: None };
        let parts = vec![("host".to_string(), None), ("g1".to_string(), None)];
        let p = plan(&h, "vlx", &parts).unwrap();
        assert_eq!(p.folders[1], ("g1".to_string(), vec![PathBuf::from("/nonexistent/acct/vnetlab/vlx/g1")]));
        let made: Vec<_> = p.steps.iter().flat_map(|(e, _)| e.clone()).collect();
        assert_eq!(made.len(), 4, "vnetlab, the lab, host and g1: {made:?}");
        let pinned = vec![("g1".to_string(), Some("0".to_string()))];
        assert!(plan(&h, "vlx", &pinned).unwrap_err().contains("--pin"));
    }

    #[test]
    fn pinning_gives_the_client_its_own_cpu() {
        assert_eq!(pin_layout(&[0, 1], 3), ("0".into(), "1".into(), vec!["0".into(), "0".into(), "0".into()]));
        assert_eq!(pin_layout(&[0, 1, 2], 3).2, vec!["0", "1", "0"]);
        assert_eq!(pin_layout(&[0], 2), ("0".into(), "0".into(), vec!["0".into(), "0".into()]));
    }
}
