//! Cgroups for CPU accounting and pinning: one folder per lab part (host, client, each guest),
//! in cgroup v2 where it has the cpu controller, else in v1 cpuacct (+ cpuset for pinning).

use crate::lab::Error;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::hostcmd::HostCmd;
use super::journal::Entry;

#[derive(Clone, Debug, PartialEq)]
pub enum Hierarchy {
    /// A cgroup v2 mount whose root offers the cpu controller.
    V2 { root: PathBuf, cpuset: bool },
    /// v1 mounts: cpuacct for accounting, cpuset (if mounted) for pinning.
    V1 {
        cpuacct: PathBuf,
        cpuset: Option<PathBuf>,
    },
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
                        return Hierarchy::V2 {
                            root: dir.to_path_buf(),
                            cpuset: c.contains(&"cpuset"),
                        };
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
        Some(cpuacct) => Hierarchy::V1 {
            cpuacct,
            cpuset: v1_set,
        },
        None => Hierarchy::None {
            why: "neither a cgroup v2 cpu controller nor a v1 cpuacct hierarchy is mounted".into(),
        },
    }
}

pub fn detect() -> Hierarchy {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    detect_from(&mounts, |d| {
        std::fs::read_to_string(d.join("cgroup.controllers")).ok()
    })
}

/// The mount points of the hierarchies vnetlab uses: its folders are `<root>/vnetlab/…`.
pub fn vnetlab_roots(h: &Hierarchy) -> Vec<PathBuf> {
    match h {
        Hierarchy::V2 { root, .. } => vec![root.clone()],
        Hierarchy::V1 { cpuacct, cpuset } => std::iter::once(cpuacct)
            .chain(cpuset.iter())
            .cloned()
            .collect(),
        Hierarchy::None { .. } => vec![],
    }
}

/// vnetlab's shared folders (`<root>/vnetlab`) in each hierarchy it uses, for removal once empty.
pub fn shared_folders(h: &Hierarchy) -> Vec<PathBuf> {
    vnetlab_roots(h)
        .into_iter()
        .map(|r| r.join("vnetlab"))
        .collect()
}

/// Whether the folder on disk is what the journal's path says: no symlink anywhere on the way
/// (the path is its own canonical form) and a cgroup file system (not a plain folder that only
/// looks like one). Checked right before vnetlab kills what is in it or removes it.
pub fn owned(dir: &Path) -> Result<(), Error> {
    let refuse = |why: &str| {
        Err(Error::Failed(format!(
            "{}: {why}; vnetlab will not kill anything in it nor remove it",
            dir.display()
        )))
    };
    match std::fs::canonicalize(dir) {
        Ok(c) if c == dir => {}
        Ok(c) => {
            return refuse(&format!(
                "it leads to {} (a symlink on the way)",
                c.display()
            ))
        }
        Err(e) => return refuse(&format!("cannot resolve it ({e})")),
    }
    match crate::sys::fs_magic(dir) {
        Ok(m) if m == crate::sys::CGROUP_MAGIC || m == crate::sys::CGROUP2_MAGIC => Ok(()),
        Ok(_) => refuse("it is not on a cgroup file system"),
        Err(e) => refuse(&format!("cannot tell its file system ({e})")),
    }
}

/// Why processes cannot be confined to cores here (no cpuset controller), or None if they can.
pub fn no_cpuset(h: &Hierarchy) -> Option<String> {
    match h {
        Hierarchy::V2 { cpuset: true, .. }
        | Hierarchy::V1 {
            cpuset: Some(_), ..
        } => None,
        Hierarchy::V2 { .. } => Some("cgroup v2 offers no cpuset controller".into()),
        Hierarchy::V1 { .. } => Some("the cgroup v1 cpuset hierarchy is not mounted".into()),
        Hierarchy::None { why } => Some(why.clone()),
    }
}

/// What to make for one lab, and the folders each part joins.
#[derive(Debug)]
pub struct CgroupPlan {
    pub steps: Vec<(Vec<Entry>, HostCmd)>,
    /// Per part: the folders it is accounted (and pinned) in.
    pub folders: Vec<(String, Vec<PathBuf>)>,
}

/// Plans the folders `H/vnetlab/<lab>/<part>` for each part with its optional CPU list (a part
/// with a list is confined to it by a cpuset).
pub fn plan(
    h: &Hierarchy,
    lab_dir: &str,
    parts: &[(String, Option<String>)],
) -> Result<CgroupPlan, Error> {
    let pinned = parts.iter().any(|(_, c)| c.is_some());
    if pinned {
        if let Some(why) = no_cpuset(h) {
            return Err(Error::Input(format!(
                "placing the lab on cores needs a cpuset cgroup, and {why}"
            )));
        }
    }
    let mut steps = Vec::new();
    let mut roots: Vec<(PathBuf, bool)> = Vec::new(); // (hierarchy root, is a v1 cpuset)
    match h {
        Hierarchy::None { .. } => {}
        Hierarchy::V2 { root, .. } => roots.push((root.clone(), false)),
        Hierarchy::V1 { cpuacct, cpuset } => {
            roots.push((cpuacct.clone(), false));
            if let (true, Some(s)) = (pinned, cpuset) {
                roots.push((s.clone(), true));
            }
        }
    }
    let v2 = matches!(h, Hierarchy::V2 { .. });
    let mut folders: Vec<(String, Vec<PathBuf>)> =
        parts.iter().map(|(p, _)| (p.clone(), vec![])).collect();
    for (root, is_cpuset) in roots {
        let top = root.join("vnetlab");
        let lab = top.join(lab_dir);
        let all_cpus = read_trim(&root.join("cpuset.cpus.effective"))
            .or_else(|| read_trim(&root.join("cpuset.cpus")));
        let mems = read_trim(&root.join("cpuset.mems.effective"))
            .or_else(|| read_trim(&root.join("cpuset.mems")));
        // Every lab journals the shared folder, made or found: the last lab to go removes it.
        steps.push((
            vec![Entry::Cgroup {
                path: top.clone(),
                shared: true,
            }],
            HostCmd::Mkdir {
                path: top.clone(),
                exist_ok: true,
            },
        ));
        steps.push((
            vec![Entry::Cgroup {
                path: lab.clone(),
                shared: false,
            }],
            HostCmd::Mkdir {
                path: lab.clone(),
                exist_ok: false,
            },
        ));
        if v2 {
            let ctl = if pinned { "+cpu +cpuset" } else { "+cpu" };
            for dir in [&top, &lab] {
                steps.push((
                    vec![],
                    HostCmd::Write {
                        path: dir.join("cgroup.subtree_control"),
                        value: ctl.into(),
                    },
                ));
            }
        }
        if is_cpuset {
            let (Some(cpus), Some(mems)) = (all_cpus, mems.clone()) else {
                return Err(Error::Failed(format!(
                    "cannot read the cpus and mems of the cpuset root {}",
                    root.display()
                )));
            };
            for dir in [&top, &lab] {
                steps.push((
                    vec![],
                    HostCmd::Write {
                        path: dir.join("cpuset.cpus"),
                        value: cpus.clone(),
                    },
                ));
                steps.push((
                    vec![],
                    HostCmd::Write {
                        path: dir.join("cpuset.mems"),
                        value: mems.clone(),
                    },
                ));
            }
        }
        for (i, (part, cpus)) in parts.iter().enumerate() {
            let dir = lab.join(part);
            steps.push((
                vec![Entry::Cgroup {
                    path: dir.clone(),
                    shared: false,
                }],
                HostCmd::Mkdir {
                    path: dir.clone(),
                    exist_ok: false,
                },
            ));
            if let (Some(c), true) = (cpus, is_cpuset || (v2 && pinned)) {
                steps.push((
                    vec![],
                    HostCmd::Write {
                        path: dir.join("cpuset.cpus"),
                        value: c.clone(),
                    },
                ));
                if is_cpuset {
                    steps.push((
                        vec![],
                        HostCmd::Write {
                            path: dir.join("cpuset.mems"),
                            value: mems.clone().unwrap(),
                        },
                    ));
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

/// Kills every process in a cgroup folder and waits until it is empty (at most 5 s); a folder
/// that is not a real cgroup of its own path (`owned`) is refused.
pub fn kill_all(dir: &Path) -> Result<(), Error> {
    if !dir.exists() {
        return Ok(());
    }
    owned(dir)?;
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
            crate::sys::kill9(p);
        }
        if start.elapsed() > Duration::from_secs(5) {
            return Err(Error::Failed(format!(
                "processes in {} did not die within 5 s",
                dir.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Removes a cgroup folder; a missing one is fine, a busy shared one is left to its other users.
pub fn remove(dir: &Path, shared: bool) -> Result<(), Error> {
    if !dir.exists() {
        return Ok(());
    }
    owned(dir)?;
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
            Err(_) if start.elapsed() < Duration::from_secs(3) => {
                std::thread::sleep(Duration::from_millis(5))
            }
            Err(e) => {
                return Err(Error::Failed(format!(
                    "cannot remove cgroup {}: {e}",
                    dir.display()
                )))
            }
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
            Hierarchy::V1 {
                cpuacct: "/sys/fs/cgroup/cpuacct".into(),
                cpuset: Some("/sys/fs/cgroup/cpuset".into())
            }
        );
    }

    #[test]
    fn v2_is_chosen_when_it_has_cpu() {
        let m = "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid 0 0\n";
        let h = detect_from(m, |_| Some("cpuset cpu io memory pids".into()));
        assert_eq!(
            h,
            Hierarchy::V2 {
                root: "/sys/fs/cgroup".into(),
                cpuset: true
            }
        );
        let h = detect_from(m, |_| Some("io memory".into()));
        assert!(matches!(h, Hierarchy::None { .. }));
    }

    #[test]
    fn plan_makes_one_folder_per_part_and_refuses_pin_without_cpuset() {
        let h = Hierarchy::V1 {
            cpuacct: "/nonexistent/acct".into(),
            cpuset: None,
        };
        let parts = vec![("host".to_string(), None), ("g1".to_string(), None)];
        let p = plan(&h, "vlx", &parts).unwrap();
        assert_eq!(
            p.folders[1],
            (
                "g1".to_string(),
                vec![PathBuf::from("/nonexistent/acct/vnetlab/vlx/g1")]
            )
        );
        let made: Vec<_> = p.steps.iter().flat_map(|(e, _)| e.clone()).collect();
        assert_eq!(made.len(), 4, "vnetlab, the lab, host and g1: {made:?}");
        assert_eq!(
            made[0],
            Entry::Cgroup {
                path: "/nonexistent/acct/vnetlab".into(),
                shared: true
            },
            "the shared folder is journaled by every lab"
        );
        let pinned = vec![("g1".to_string(), Some("0".to_string()))];
        assert!(plan(&h, "vlx", &pinned)
            .unwrap_err()
            .to_string()
            .contains("cpuset"));
    }
}
