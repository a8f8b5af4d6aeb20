//! Cgroups for CPU accounting and pinning: one folder per lab part (host, client, each guest),
//! in cgroup v2 where it has the cpu controller, else in v1 cpuacct (+ cpuset for pinning).

use crate::lab::Error;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::sys::ident::{self, FileId};

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

/// One step of making a lab's folders.
#[derive(Debug, Clone, PartialEq)]
pub enum CgStep {
    /// Make the folder (journaled before, and with its identity once made).
    Make { path: PathBuf, shared: bool },
    /// Write a control file of a folder made before.
    Write { path: PathBuf, value: String },
}

/// What to make for one lab, and the folders each part joins.
#[derive(Debug)]
pub struct CgroupPlan {
    pub steps: Vec<CgStep>,
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
        // Every lab needs the shared folder; the lab that made it removes it when it is empty.
        steps.push(CgStep::Make {
            path: top.clone(),
            shared: true,
        });
        steps.push(CgStep::Make {
            path: lab.clone(),
            shared: false,
        });
        if v2 {
            let ctl = if pinned { "+cpu +cpuset" } else { "+cpu" };
            for dir in [&top, &lab] {
                steps.push(CgStep::Write {
                    path: dir.join("cgroup.subtree_control"),
                    value: ctl.into(),
                });
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
                steps.push(CgStep::Write {
                    path: dir.join("cpuset.cpus"),
                    value: cpus.clone(),
                });
                steps.push(CgStep::Write {
                    path: dir.join("cpuset.mems"),
                    value: mems.clone(),
                });
            }
        }
        for (i, (part, cpus)) in parts.iter().enumerate() {
            let dir = lab.join(part);
            steps.push(CgStep::Make {
                path: dir.clone(),
                shared: false,
            });
            if let (Some(c), true) = (cpus, is_cpuset || (v2 && pinned)) {
                steps.push(CgStep::Write {
                    path: dir.join("cpuset.cpus"),
                    value: c.clone(),
                });
                if is_cpuset {
                    steps.push(CgStep::Write {
                        path: dir.join("cpuset.mems"),
                        value: mems.clone().unwrap_or_default(),
                    });
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

/// The lab's folder `dir` opened, if it is there: it must be a real cgroup folder of its own
/// path (`owned`) and still the folder the lab made (`id`, its identity when made).
fn open_own(dir: &Path, id: FileId) -> Result<Option<std::os::fd::OwnedFd>, Error> {
    if std::fs::symlink_metadata(dir).is_err() {
        return Ok(None);
    }
    owned(dir)?;
    ident::open_dir_checked(dir, id).map(Some).map_err(|e| {
        Error::Failed(format!(
            "{e}; vnetlab will not kill anything in it nor remove it"
        ))
    })
}

/// The processes in an open cgroup folder (its cgroup.procs, read through the folder's fd).
fn procs_in(dir: &std::os::fd::OwnedFd) -> Vec<i32> {
    let Ok(f) = ident::open_at(dir, "cgroup.procs", libc::O_RDONLY) else {
        return vec![];
    };
    let mut text = String::new();
    let _ = std::io::Read::read_to_string(
        &mut std::io::Read::take(std::fs::File::from(f), 1 << 20),
        &mut text,
    );
    text.lines().filter_map(|l| l.trim().parse().ok()).collect()
}

/// Kills every process in the lab's folder `dir` (still the one made, `id`) and waits until it
/// is empty (at most 5 s). A folder gone is nothing to do; another folder by that name is refused.
/// Sends SIGKILL once to every process in cgroup folder `dir` (if it is still the folder of
/// identity `id`), without waiting: a lab's folders are all signalled first, then waited for
/// with `kill_all`, so 200 backends die together rather than one wait after another.
pub fn signal_all(dir: &Path, id: FileId) -> Result<(), Error> {
    let Some(fd) = open_own(dir, id)? else {
        return Ok(());
    };
    for p in procs_in(&fd) {
        crate::sys::kill9_if(p, |pid| procs_in(&fd).contains(&pid));
    }
    Ok(())
}

pub fn kill_all(dir: &Path, id: FileId) -> Result<(), Error> {
    let Some(fd) = open_own(dir, id)? else {
        return Ok(());
    };
    let start = Instant::now();
    loop {
        let pids = procs_in(&fd);
        if pids.is_empty() {
            return Ok(());
        }
        // Each pinned by a pidfd and found in the folder again before the signal: a pid the
        // kernel recycled meanwhile is another program's, and is left alone.
        for p in pids {
            crate::sys::kill9_if(p, |pid| procs_in(&fd).contains(&pid));
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

/// Removes a folder a cut-short make left under its unique temporary name, if it is there: a real
/// cgroup folder of its own path that was never used (a folder with processes is refused).
pub fn remove_unused(dir: &Path) -> Result<(), Error> {
    if std::fs::symlink_metadata(dir).is_err() {
        return Ok(());
    }
    owned(dir)?;
    match std::fs::remove_dir(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::Failed(format!(
            "cannot remove cgroup {}: {e}",
            dir.display()
        ))),
        _ => Ok(()),
    }
}

/// Removes vnetlab's shared folder above a lab's folder just removed, if nothing is left in it,
/// whoever made it: a lab of another state folder may have lived in it when its maker went, and
/// otherwise it would stay. An `up` that finds it gone between its steps makes it again.
fn remove_shared_if_empty(lab_dir: &Path) {
    let Some(top) = lab_dir.parent() else { return };
    if top.file_name().is_some_and(|n| n == "vnetlab") && owned(top).is_ok() {
        let _ = std::fs::remove_dir(top);
    }
}

/// Removes the lab's folder `dir` (still the one made, `id`); a missing one is fine, a shared one
/// other labs still use is left to them, another folder by that name is refused.
pub fn remove(dir: &Path, shared: bool, id: FileId) -> Result<(), Error> {
    // The shared folder goes whenever someone finds it empty (another lab, `cleanup`): one made
    // anew since ours went belongs to the lab that made it, and is left to it.
    if shared && ident::id_of(dir).is_ok_and(|have| have != id) {
        return Ok(());
    }
    if open_own(dir, id)?.is_none() {
        return Ok(());
    }
    if !shared {
        kill_all(dir, id)?;
    }
    let start = Instant::now();
    loop {
        match std::fs::remove_dir(dir) {
            Ok(()) => {
                if !shared {
                    remove_shared_if_empty(dir);
                }
                return Ok(());
            }
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
        let made: Vec<_> = p
            .steps
            .iter()
            .filter(|s| matches!(s, CgStep::Make { .. }))
            .collect();
        assert_eq!(made.len(), 4, "vnetlab, the lab, host and g1: {made:?}");
        assert_eq!(
            *made[0],
            CgStep::Make {
                path: "/nonexistent/acct/vnetlab".into(),
                shared: true
            },
            "the shared folder is made if missing"
        );
        let pinned = vec![("g1".to_string(), Some("0".to_string()))];
        assert!(plan(&h, "vlx", &pinned)
            .unwrap_err()
            .to_string()
            .contains("cpuset"));
    }

    #[test]
    fn a_shared_folder_made_anew_by_another_is_left_to_it() {
        let dir = std::env::temp_dir().join(format!("vl-shared-{}", std::process::id()));
        std::fs::create_dir(&dir).unwrap();
        let ours = ident::id_of(&dir).unwrap();
        // Someone found it empty and removed it; another lab made a new one by the same name.
        std::fs::remove_dir(&dir).unwrap();
        let keep = dir.with_extension("keep");
        std::fs::create_dir(&keep).unwrap();
        std::fs::create_dir(&dir).unwrap();
        assert_ne!(ident::id_of(&dir).unwrap(), ours);
        assert!(remove(&dir, true, ours).is_ok());
        assert!(dir.exists(), "another lab's shared folder was removed");
        std::fs::remove_dir(&dir).unwrap();
        std::fs::remove_dir(&keep).unwrap();
    }
}
