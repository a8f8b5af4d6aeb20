//! The scheduler's own run time, in nanoseconds: how long tasks ran on each CPU, which a
//! tick-counting kernel keeps exactly though its /proc/stat busy columns are 10 ms samples. Three
//! places keep it: cgroup v1's root `cpuacct.usage_percpu` (per CPU), `/proc/schedstat`'s
//! `rq_cpu_time` (per CPU; needs CONFIG_SCHEDSTATS) and, on cgroup v2 alone, the top-level
//! folders' `cpu.stat` `usage_usec` plus the root folder's tasks' `/proc/TID/schedstat` (the
//! machine as a whole: v2 keeps no per-CPU figure). None of them counts interrupts taken while
//! the CPU idled; whether they count time the hypervisor stole depends on the source and the
//! kernel (`includes_steal`).

use super::fs::Fs;
use std::path::{Path, PathBuf};

/// Where the run time is read.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// cgroup v1 cpuacct's root folder (every task's time, per CPU).
    CpuacctV1(PathBuf),
    /// /proc/schedstat's per-CPU run time.
    Schedstat,
    /// A cgroup v2 root: its top-level folders' usage plus its own tasks' (machine-wide).
    V2Sum(PathBuf),
}

/// One reading: seconds so far per CPU (by CPU number) where the source keeps them, else the
/// machine's total.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reading {
    pub per_cpu: Option<Vec<f64>>,
    pub total: Option<f64>,
}

impl Source {
    /// The best source on this host: per CPU first (cpuacct, then schedstat), else v2's total.
    /// `VNETLAB_SCHED_SOURCE` (cpuacct, schedstat, v2 or none) picks one where the host has it,
    /// to record how the meter reads on a host that has only that.
    pub fn detect() -> Option<Source> {
        Source::detect_in(&Fs::real())
    }

    /// `detect` in the tree `fs` (a recorded host's).
    pub fn detect_in(fs: &Fs) -> Option<Source> {
        let mounts = fs.read("/proc/mounts").unwrap_or_default();
        let (v1, v2) = roots(&mounts);
        if let Ok(want) = std::env::var("VNETLAB_SCHED_SOURCE") {
            return match want.as_str() {
                "cpuacct" => v1.map(Source::CpuacctV1),
                "schedstat" => Some(Source::Schedstat),
                "v2" => v2.map(Source::V2Sum),
                _ => None,
            };
        }
        if let Some(d) = v1.filter(|d| fs.exists(d.join("cpuacct.usage_percpu"))) {
            return Some(Source::CpuacctV1(d));
        }
        if fs
            .read("/proc/schedstat")
            .is_some_and(|t| parse_schedstat(&t).is_some())
        {
            return Some(Source::Schedstat);
        }
        v2.filter(|d| fs.exists(d.join("cgroup.threads")))
            .map(Source::V2Sum)
    }

    pub fn describe(&self) -> String {
        match self {
            Source::CpuacctV1(d) => format!("cgroup v1 {}/cpuacct.usage_percpu", d.display()),
            Source::Schedstat => "/proc/schedstat run time".into(),
            Source::V2Sum(d) => format!(
                "cgroup v2 {}: top-level cpu.stat usage plus the root's tasks' schedstat",
                d.display()
            ),
        }
    }

    /// Whether time stolen while a task ran is inside: /proc/schedstat runs on the run queue's
    /// clock, which counts it; cgroup usage runs on the task clock, which leaves it out when the
    /// kernel takes paravirtual steal out of it (`steal_in_task_clock` false).
    pub fn includes_steal(&self, steal_in_task_clock: bool) -> bool {
        match self {
            Source::Schedstat => true,
            Source::CpuacctV1(_) | Source::V2Sum(_) => steal_in_task_clock,
        }
    }

    /// The text the source is read from (a recording keeps it); for the v2 sum, which is many
    /// files, the sum itself.
    pub fn text(&self, fs: &Fs) -> Option<String> {
        match self {
            Source::CpuacctV1(d) => fs.read(d.join("cpuacct.usage_percpu")),
            Source::Schedstat => fs.read("/proc/schedstat"),
            Source::V2Sum(d) => Some(format!("{:.9}", read_v2_sum(fs, d))),
        }
    }

    /// A reading from the text `text` gives.
    pub fn parse(&self, text: &str) -> Reading {
        match self {
            Source::CpuacctV1(_) => Reading {
                per_cpu: super::cgroupstat::parse_percpu(text),
                total: None,
            },
            Source::Schedstat => Reading {
                per_cpu: parse_schedstat(text),
                total: None,
            },
            Source::V2Sum(_) => Reading {
                per_cpu: None,
                total: text.trim().parse().ok().filter(|x: &f64| x.is_finite()),
            },
        }
    }
}

/// The hierarchy that accounts tasks' CPU time in the tree `fs`: v1's cpuacct, else v2's.
pub fn accounting_root(fs: &Fs) -> Option<PathBuf> {
    let (v1, v2) = roots(&fs.read("/proc/mounts").unwrap_or_default());
    v1.or(v2)
}

/// The first cgroup v1 cpuacct mount and the first cgroup v2 mount in /proc/mounts text.
pub fn roots(mounts: &str) -> (Option<PathBuf>, Option<PathBuf>) {
    let (mut v1, mut v2) = (None, None);
    for line in mounts.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [_, dir, fstype, opts, ..] = f[..] else {
            continue;
        };
        match fstype {
            "cgroup" if v1.is_none() && opts.split(',').any(|o| o == "cpuacct") => {
                v1 = Some(PathBuf::from(dir));
            }
            "cgroup2" if v2.is_none() => v2 = Some(PathBuf::from(dir)),
            _ => {}
        }
    }
    (v1, v2)
}

/// Seconds on each CPU (by number) from /proc/schedstat: `cpuN` lines, run time the 7th number.
pub fn parse_schedstat(text: &str) -> Option<Vec<f64>> {
    let mut v: Vec<(usize, f64)> = Vec::new();
    for line in text.lines() {
        let mut f = line.split_whitespace();
        let Some(id) = f.next().and_then(|n| n.strip_prefix("cpu")) else {
            continue;
        };
        let id: usize = id.parse().ok()?;
        let ns: u64 = f.nth(6)?.parse().ok()?;
        if id >= 4096 {
            return None;
        }
        v.push((id, ns as f64 / 1e9));
    }
    let n = v.iter().map(|x| x.0 + 1).max()?;
    let mut out = vec![0.0; n];
    for (id, s) in v {
        out[id] = s;
    }
    Some(out)
}

/// cgroup v2's machine-wide run time: each top-level folder's `usage_usec` (which holds its whole
/// subtree) plus each task left in the root (kernel threads, mostly) from its schedstat.
fn read_v2_sum(fs: &Fs, root: &Path) -> f64 {
    let folders: f64 = fs
        .names(root)
        .into_iter()
        .filter(|n| fs.path(&root.join(n)).is_dir())
        .filter_map(|n| fs.read(root.join(n).join("cpu.stat")))
        .filter_map(|t| super::cgroupstat::parse("cpu.stat", &t, 1.0).ok())
        .sum();
    let tasks: f64 = fs
        .read(root.join("cgroup.threads"))
        .unwrap_or_default()
        .lines()
        .take(1 << 20)
        .filter_map(|tid| {
            let t = fs.read(format!("/proc/{}/schedstat", tid.trim()))?;
            super::procs::parse_schedstat(&t)
        })
        .sum();
    folders + tasks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedstat_gives_each_cpus_run_time() {
        // Version 15's layout: cpuN yld 0 sched goidle ttwu ttwu_local rq_cpu_time run_delay slices.
        let t = "version 15\ntimestamp 4295\ncpu0 0 0 120 40 70 30 2500000000 9000 80\ndomain0 03 1 2 3\ncpu1 0 0 10 4 7 3 500000000 100 8\n";
        assert_eq!(parse_schedstat(t), Some(vec![2.5, 0.5]));
        assert_eq!(parse_schedstat("version 15\n"), None);
        assert_eq!(parse_schedstat("cpu0 1 2\n"), None);
        assert_eq!(parse_schedstat("cpu99999 0 0 0 0 0 0 1 0 0\n"), None);
    }

    #[test]
    fn the_hierarchies_are_found_in_the_mount_table() {
        let m = "cgroup /sys/fs/cgroup/cpuset cgroup rw,cpuset 0 0\ncgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,cpu,cpuacct 0 0\ncgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n";
        let (v1, v2) = roots(m);
        assert_eq!(v1.unwrap(), PathBuf::from("/sys/fs/cgroup/cpu,cpuacct"));
        assert_eq!(v2.unwrap(), PathBuf::from("/sys/fs/cgroup/unified"));
        assert_eq!(roots("proc /proc proc rw 0 0\n"), (None, None));
    }

    #[test]
    fn a_recorded_text_reads_back_as_the_source_reads_it() {
        let v1 = Source::CpuacctV1("/x".into());
        assert_eq!(
            v1.parse("1500000000 500000000\n").per_cpu,
            Some(vec![1.5, 0.5])
        );
        let v2 = Source::V2Sum("/x".into());
        assert_eq!(v2.parse("12.5\n").total, Some(12.5));
        assert_eq!(v2.parse("nan").total, None);
        assert!(Source::Schedstat.includes_steal(false));
        assert!(!v1.includes_steal(false) && v1.includes_steal(true));
    }
}
