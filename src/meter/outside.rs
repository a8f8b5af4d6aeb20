//! What ran beside the lab's parts, read in files whose number grows with the lab and with the
//! host's top-level cgroups, never with its tasks: the kernel threads by thread id (`kthreads`),
//! one read per top-level cgroup that is not the lab's (v1 `cpuacct.usage_percpu`, per CPU; v2
//! `cpu.stat`, in total), and the lab's own tasks that left their part's accounting cgroup. Those
//! are found in the part's other folders (its cpuset) or among the tasks once seen in its
//! accounting folders, and are the part's while they stay in its network namespace: each is
//! read at every sample once found, so its time counts from when it left.

use super::fs::Fs;
use super::kthreads::{KThread, Registry};
use super::{cgroupstat, procs, Part, PartTime};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

/// A lab's parts hold at most this many tasks the meter keeps track of.
const MAX_SEEN: usize = 100_000;

/// A lab task outside its part's accounting cgroup.
#[derive(Clone, Debug, PartialEq)]
pub struct Stray {
    /// The part (index into the parts) whose namespace it is in.
    pub part: usize,
    pub pid: u32,
    /// CPU seconds so far, and when it was first found outside.
    pub cpu_s: f64,
    pub since_s: f64,
    /// The top-level cgroup it sits in now (its time is also in that folder's).
    pub top: Option<String>,
}

/// One reading of what is outside the lab.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reading {
    /// Kernel threads read: each one's name, CPUs and run seconds so far.
    pub kthreads: BTreeMap<u32, (KThread, f64)>,
    /// Each top-level cgroup that is not the lab's: its CPU seconds so far.
    pub tops: Vec<(String, PartTime)>,
    pub strays: Vec<Stray>,
    /// Per part: the tasks seen in its accounting folders (the lab's own, by process id).
    pub lab_tasks: Vec<HashSet<u32>>,
}

/// The meter's knowledge of the host beside the lab, kept between readings.
#[derive(Debug, Default)]
pub struct Tracker {
    kthreads: Registry,
    /// The accounting hierarchy's root (v1 cpuacct, else v2) and the lab's own top folders.
    root: Option<PathBuf>,
    lab_tops: HashSet<String>,
    /// Per part: its accounting folders and its other ones (a cpuset), told apart once.
    folders: Vec<(Vec<PathBuf>, Vec<PathBuf>)>,
    /// Per part: tasks seen in its accounting folders and still in its namespace, and strays
    /// with their first CPU seconds.
    seen: Vec<HashSet<u32>>,
    first: HashMap<u32, f64>,
    /// The cores whose kernel threads are read (empty: all).
    cores: Vec<usize>,
}

/// The top-level folder of `dir` under `root`.
fn top_of(root: &Path, dir: &Path) -> Option<String> {
    let rel = dir.strip_prefix(root).ok()?;
    Some(rel.components().next()?.as_os_str().to_str()?.to_string())
}

/// The folder's task ids (`cgroup.procs`), bounded.
fn procs_in(fs: &Fs, dir: &Path) -> Vec<u32> {
    fs.read(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .take(MAX_SEEN)
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// A process's CPU seconds so far and the top-level cgroup it is in.
fn stray_times(fs: &Fs, pid: u32, hz: f64) -> Option<(f64, Option<String>)> {
    let t = procs::parse_stat(&fs.read(format!("/proc/{pid}/stat"))?, hz)?;
    let top = fs
        .read(format!("/proc/{pid}/cgroup"))
        .and_then(|text| cgroup_line(&text))
        .and_then(|rel| top_of(Path::new("/"), Path::new(&rel)));
    Some((t.cpu_s, top))
}

/// The path in the accounting hierarchy a /proc/PID/cgroup text gives: v1's `cpuacct` line,
/// else v2's `0::` line.
fn cgroup_line(text: &str) -> Option<String> {
    let mut v2 = None;
    for l in text.lines() {
        let mut f = l.splitn(3, ':');
        let (_, ctl, path) = (f.next()?, f.next()?, f.next()?);
        if ctl.split(',').any(|c| c == "cpuacct") {
            return Some(path.to_string());
        }
        if ctl.is_empty() {
            v2 = Some(path.to_string());
        }
    }
    v2
}

impl Tracker {
    /// The kernel threads known.
    pub fn kthreads(&self) -> &Registry {
        &self.kthreads
    }

    /// Knows the host's kernel threads and its accounting root; `cores` are the lab's (empty:
    /// unplaced, every core).
    pub fn start(fs: &Fs, parts: &[Part], cores: &[usize]) -> Tracker {
        let root = super::sched::accounting_root(fs);
        let lab_tops = root
            .as_ref()
            .map(|r| {
                parts
                    .iter()
                    .flat_map(|p| {
                        let vm = p.threads.iter().flat_map(|t| t.cgroups.clone());
                        p.cgroups.iter().cloned().chain(vm).collect::<Vec<_>>()
                    })
                    .filter_map(|d| top_of(r, &d))
                    .collect()
            })
            .unwrap_or_default();
        Tracker {
            kthreads: Registry::start(fs),
            root,
            lab_tops,
            folders: parts
                .iter()
                .map(|p| {
                    p.cgroups
                        .iter()
                        .cloned()
                        .partition(|d| cgroupstat::counts_cpu(&fs.path(d)))
                })
                .collect(),
            seen: vec![HashSet::new(); parts.len()],
            first: HashMap::new(),
            cores: cores.to_vec(),
        }
    }

    /// At every sample: takes note of the tasks in the parts' accounting folders, and of strays
    /// (with their CPU seconds when first found). Reads grow with the lab's tasks only.
    pub fn watch(&mut self, fs: &Fs, parts: &[Part], hz: f64) -> Vec<Stray> {
        let mut strays = Vec::new();
        for (i, p) in parts.iter().enumerate() {
            let Some(ns) = p.netns else { continue };
            let (acct, other) = &self.folders[i];
            let inside: HashSet<u32> = acct.iter().flat_map(|d| procs_in(fs, d)).collect();
            let seen = &mut self.seen[i];
            if seen.len() < MAX_SEEN {
                seen.extend(inside.iter().copied());
            }
            let mut out: Vec<u32> = other.iter().flat_map(|d| procs_in(fs, d)).collect();
            out.extend(seen.iter().copied());
            out.sort_unstable();
            out.dedup();
            for pid in out.into_iter().filter(|p| !inside.contains(p)) {
                // A task that ended or left the namespace is no longer the lab's to follow.
                let here = fs.link(format!("/proc/{pid}/ns/net"));
                let times = (here.as_deref() == Some(&format!("net:[{ns}]")))
                    .then(|| stray_times(fs, pid, hz))
                    .flatten();
                let Some((cpu_s, top)) = times else {
                    seen.remove(&pid);
                    self.first.remove(&pid);
                    continue;
                };
                let since_s = *self.first.entry(pid).or_insert(cpu_s);
                strays.push(Stray {
                    part: i,
                    pid,
                    cpu_s,
                    since_s,
                    top,
                });
            }
        }
        strays
    }

    /// At a window's edge: the strays, the kernel threads of the lab's cores and those that serve
    /// one device or VM, and each top-level cgroup that is not the lab's.
    pub fn read(&mut self, fs: &Fs, parts: &[Part], hz: f64) -> Reading {
        let strays = self.watch(fs, parts, hz);
        self.kthreads.refresh(fs);
        let cores = self.cores.clone();
        let times = self.kthreads.read(fs, |_, k| {
            cores.is_empty() || k.confined_to(&cores) || k.serves().is_some()
        });
        let kthreads = times
            .into_iter()
            .filter_map(|(tid, s)| Some((tid, (self.kthreads.known.get(&tid)?.clone(), s))))
            .collect();
        Reading {
            kthreads,
            tops: self.tops(fs),
            strays,
            lab_tasks: self.seen.clone(),
        }
    }

    /// Each top-level folder of the accounting root that is not the lab's, with its time.
    fn tops(&self, fs: &Fs) -> Vec<(String, PartTime)> {
        let Some(root) = &self.root else {
            return Vec::new();
        };
        let mut names = fs.names(root);
        names.sort();
        names
            .into_iter()
            .filter(|n| !self.lab_tops.contains(n))
            .filter_map(|n| {
                let d = root.join(&n);
                if let Some(v) = fs
                    .read(d.join("cpuacct.usage_percpu"))
                    .and_then(|t| cgroupstat::parse_percpu(&t))
                {
                    let total = v.iter().sum();
                    return Some((
                        n,
                        PartTime {
                            total,
                            per_cpu: Some(v),
                        },
                    ));
                }
                let t = fs.read(d.join("cpu.stat"))?;
                let total = cgroupstat::parse("cpu.stat", &t, 1.0).ok()?;
                Some((
                    n,
                    PartTime {
                        total,
                        per_cpu: None,
                    },
                ))
            })
            .collect()
    }
}

/// Seconds between two readings of the strays of part `part` (a stray found within the window
/// counts from when it was found).
pub fn stray_delta(a: &Reading, b: &Reading, part: usize) -> (f64, Vec<(Option<String>, f64)>) {
    let before: HashMap<u32, f64> = a.strays.iter().map(|s| (s.pid, s.cpu_s)).collect();
    let each: Vec<(Option<String>, f64)> = b
        .strays
        .iter()
        .filter(|s| s.part == part)
        .map(|s| {
            let from = before.get(&s.pid).copied().unwrap_or(s.since_s);
            (s.top.clone(), (s.cpu_s - from).max(0.0))
        })
        .collect();
    (each.iter().map(|x| x.1).sum(), each)
}

/// Seconds between two readings of the kernel threads `pick` takes.
pub fn kthread_delta(a: &Reading, b: &Reading, pick: impl Fn(u32, &KThread) -> bool) -> f64 {
    b.kthreads
        .iter()
        .filter(|(tid, (k, _))| pick(**tid, k))
        .map(|(tid, (_, s))| (s - a.kthreads.get(tid).map_or(*s, |x| x.1)).max(0.0))
        .sum()
}

/// Seconds between two readings of the other cgroups on `cores` (per CPU where their hierarchy
/// keeps it; None where it does not).
pub fn tops_on(a: &Reading, b: &Reading, cores: &[usize]) -> Option<f64> {
    let before: HashMap<&str, &PartTime> = a.tops.iter().map(|(n, t)| (n.as_str(), t)).collect();
    let mut sum = 0.0;
    for (n, t) in &b.tops {
        let Some(x) = before.get(n.as_str()) else {
            continue;
        };
        let (Some(v), Some(w)) = (&x.per_cpu, &t.per_cpu) else {
            return None;
        };
        sum += cores
            .iter()
            .map(|&c| (w.get(c).unwrap_or(&0.0) - v.get(c).unwrap_or(&0.0)).max(0.0))
            .sum::<f64>();
    }
    Some(sum)
}

/// Seconds between two readings of every other cgroup, in total.
pub fn tops_total(a: &Reading, b: &Reading) -> f64 {
    let before: HashMap<&str, f64> = a.tops.iter().map(|(n, t)| (n.as_str(), t.total)).collect();
    b.tops
        .iter()
        .filter_map(|(n, t)| Some((t.total - before.get(n.as_str())?).max(0.0)))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tasks_accounting_path_is_read_from_either_hierarchy() {
        let v1 = "12:cpuset:/vnetlab/x\n4:cpu,cpuacct:/system.slice/a.service\n0::/init.scope\n";
        assert_eq!(cgroup_line(v1).as_deref(), Some("/system.slice/a.service"));
        assert_eq!(
            cgroup_line("0::/kubepods.slice/p\n").as_deref(),
            Some("/kubepods.slice/p")
        );
        assert_eq!(
            top_of(Path::new("/"), Path::new("/kubepods.slice/p")).as_deref(),
            Some("kubepods.slice")
        );
        assert_eq!(
            top_of(
                Path::new("/sys/fs/cgroup/cpuacct"),
                Path::new("/sys/fs/cgroup/cpuacct/vnetlab/l/g1")
            )
            .as_deref(),
            Some("vnetlab")
        );
    }

    #[test]
    fn other_cgroups_count_on_the_cores_asked_and_strays_from_when_found() {
        let pt = |v: Vec<f64>| PartTime {
            total: v.iter().sum(),
            per_cpu: Some(v),
        };
        let a = Reading {
            tops: vec![("system.slice".into(), pt(vec![1.0, 2.0]))],
            strays: vec![Stray {
                part: 0,
                pid: 5,
                cpu_s: 3.0,
                since_s: 1.0,
                top: None,
            }],
            ..Default::default()
        };
        let b = Reading {
            tops: vec![
                ("system.slice".into(), pt(vec![1.5, 4.0])),
                ("new.slice".into(), pt(vec![9.0, 9.0])),
            ],
            strays: vec![
                Stray {
                    part: 0,
                    pid: 5,
                    cpu_s: 4.0,
                    since_s: 1.0,
                    top: None,
                },
                Stray {
                    part: 0,
                    pid: 6,
                    cpu_s: 2.5,
                    since_s: 2.0,
                    top: Some("user.slice".into()),
                },
                Stray {
                    part: 1,
                    pid: 7,
                    cpu_s: 9.0,
                    since_s: 0.0,
                    top: None,
                },
            ],
            ..Default::default()
        };
        assert_eq!(tops_on(&a, &b, &[0]), Some(0.5));
        assert_eq!(tops_on(&a, &b, &[1]), Some(2.0));
        assert_eq!(tops_total(&a, &b), 2.5);
        let (s, each) = stray_delta(&a, &b, 0);
        assert_eq!(s, 1.5);
        assert_eq!(each[1], (Some("user.slice".into()), 0.5));
    }
}
