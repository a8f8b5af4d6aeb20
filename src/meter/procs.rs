//! Per-process CPU from /proc/PID/stat (utime + stime), and a scan of every process that splits
//! the host's remaining time into kernel threads and other user processes.

use std::collections::HashSet;

const PF_KTHREAD: u64 = 0x0020_0000;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProcTimes {
    /// CPU seconds (user + system) so far.
    pub cpu_s: f64,
    pub kthread: bool,
}

/// Parses /proc/PID/stat text. The command name may hold spaces and parentheses: fields are
/// counted from the last ')'.
pub fn parse_stat(text: &str, ticks_per_s: f64) -> Option<ProcTimes> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state(0) ppid(1) … flags(6) … utime(11) stime(12).
    let flags: u64 = f.get(6)?.parse().ok()?;
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    Some(ProcTimes {
        cpu_s: (utime + stime) as f64 / ticks_per_s,
        kthread: flags & PF_KTHREAD != 0,
    })
}

pub fn read(pid: u32, ticks_per_s: f64) -> Option<ProcTimes> {
    parse_stat(
        &std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?,
        ticks_per_s,
    )
}

/// The first field of a schedstat file: time on a CPU, in seconds.
pub fn parse_schedstat(text: &str) -> Option<f64> {
    Some(text.split_whitespace().next()?.parse::<u64>().ok()? as f64 / 1e9)
}

/// One process's CPU seconds as finely as the kernel keeps them: a kernel thread (a NAPI thread,
/// one task) from its schedstat in nanoseconds, where /proc/PID/stat counts 10 ms ticks — over a
/// 3 s window a tick is 0.33 % of a core, a tenth of a paced point's cost; anything else from its
/// stat (which also counts its threads that have ended).
pub fn read_fine(pid: u32, ticks_per_s: f64) -> Option<f64> {
    let t = read(pid, ticks_per_s)?;
    if !t.kthread {
        return Some(t.cpu_s);
    }
    std::fs::read_to_string(format!("/proc/{pid}/schedstat"))
        .ok()
        .and_then(|s| parse_schedstat(&s))
        .or(Some(t.cpu_s))
}

/// CPU seconds of every process outside `exclude`, split into kernel threads and user processes,
/// with the CPUs each may run on (which tells the side of a confined one: a per-CPU kernel thread).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scan {
    pub per_pid: Vec<(u32, ProcTimes)>,
    pub cpus: std::collections::HashMap<u32, Vec<usize>>,
    /// Each process's network namespace (inode), for the lab's tasks that left its cgroups.
    pub netns: std::collections::HashMap<u32, u64>,
}

pub fn scan(exclude: &HashSet<u32>, ticks_per_s: f64) -> Scan {
    let mut per_pid = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if exclude.contains(&pid) {
            continue;
        }
        if let Some(t) = read(pid, ticks_per_s) {
            per_pid.push((pid, t));
        }
    }
    let cpus = per_pid
        .iter()
        .filter_map(|(pid, _)| Some((*pid, crate::sys::affinity(*pid as i32).ok()?)))
        .collect();
    let netns = per_pid
        .iter()
        .filter_map(|(pid, _)| {
            let id = crate::sys::ident::id_of(std::path::Path::new(&format!("/proc/{pid}/ns/net")));
            Some((*pid, id.ok()?.ino))
        })
        .collect();
    Scan {
        per_pid,
        cpus,
        netns,
    }
}

/// Seconds used between two scans by the processes in network namespace `ns` (inode) confined
/// to `cores`: the lab's tasks that left its cgroups (but not its side's cores). Their pids join
/// `taken`.
pub fn netns_delta(a: &Scan, b: &Scan, ns: u64, cores: &[usize], taken: &mut HashSet<u32>) -> f64 {
    let before: std::collections::HashMap<u32, f64> =
        a.per_pid.iter().map(|(p, t)| (*p, t.cpu_s)).collect();
    let inside = |pid: &u32| {
        b.cpus
            .get(pid)
            .is_some_and(|c| !c.is_empty() && c.iter().all(|x| cores.contains(x)))
    };
    b.per_pid
        .iter()
        .filter(|(pid, t)| !t.kthread && b.netns.get(pid) == Some(&ns) && inside(pid))
        .map(|(pid, t)| {
            taken.insert(*pid);
            (t.cpu_s - before.get(pid).copied().unwrap_or(0.0)).max(0.0)
        })
        .sum()
}

/// Seconds used between two scans by processes confined to `cores`, but those in `skip`:
/// (kernel threads, others).
pub fn confined_delta(a: &Scan, b: &Scan, cores: &[usize], skip: &HashSet<u32>) -> (f64, f64) {
    let before: std::collections::HashMap<u32, f64> =
        a.per_pid.iter().map(|(p, t)| (*p, t.cpu_s)).collect();
    let (mut k, mut u) = (0.0, 0.0);
    for (pid, t) in b.per_pid.iter().filter(|(p, _)| !skip.contains(p)) {
        let inside = b
            .cpus
            .get(pid)
            .is_some_and(|c| !c.is_empty() && c.iter().all(|x| cores.contains(x)));
        if !inside {
            continue;
        }
        let d = (t.cpu_s - before.get(pid).copied().unwrap_or(0.0)).max(0.0);
        if t.kthread {
            k += d;
        } else {
            u += d;
        }
    }
    (k, u)
}

/// Seconds used between two scans by (kernel threads, user processes); processes that ended in
/// between are lost (their time is not counted), new ones count from zero.
pub fn scan_delta(a: &Scan, b: &Scan) -> (f64, f64) {
    let before: std::collections::HashMap<u32, f64> =
        a.per_pid.iter().map(|(p, t)| (*p, t.cpu_s)).collect();
    let (mut k, mut u) = (0.0, 0.0);
    for (pid, t) in &b.per_pid {
        let d = (t.cpu_s - before.get(pid).copied().unwrap_or(0.0)).max(0.0);
        if t.kthread {
            k += d;
        } else {
            u += d;
        }
    }
    (k, u)
}

/// PIDs in cgroup folders (their cgroup.procs).
pub fn pids_in(dirs: &[std::path::PathBuf]) -> HashSet<u32> {
    dirs.iter()
        .filter_map(|d| std::fs::read_to_string(d.join("cgroup.procs")).ok())
        .flat_map(|t| {
            t.lines()
                .filter_map(|l| l.trim().parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fixture_with_a_hard_name() {
        let t =
            "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 5 0 0";
        let p = parse_stat(t, 100.0).unwrap();
        assert_eq!(p.cpu_s, 3.0);
        assert!(!p.kthread);
        let k = "12 (ksoftirqd/0) S 2 0 0 0 -1 69238848 0 0 0 0 7 93 0 0 20 0 1 0 9 0 0";
        let p = parse_stat(k, 100.0).unwrap();
        assert!(p.kthread);
        assert_eq!(p.cpu_s, 1.0);
        assert!(parse_stat("garbage", 100.0).is_none());
    }

    #[test]
    fn scan_delta_splits_kernel_and_user() {
        let t = |c: f64, k: bool| ProcTimes {
            cpu_s: c,
            kthread: k,
        };
        let a = Scan {
            per_pid: vec![(1, t(1.0, false)), (2, t(5.0, true)), (3, t(2.0, false))],
            ..Default::default()
        };
        let mut b = Scan {
            per_pid: vec![(1, t(1.5, false)), (2, t(5.25, true)), (4, t(0.5, false))],
            ..Default::default()
        };
        assert_eq!(scan_delta(&a, &b), (0.25, 1.0));
        // Only the per-CPU kernel thread (2, on CPU 0) and process 4 (CPU 1) are confined.
        b.cpus = [(1, vec![0, 1]), (2, vec![0]), (4, vec![1])]
            .into_iter()
            .collect();
        let none = HashSet::new();
        assert_eq!(confined_delta(&a, &b, &[0], &none), (0.25, 0.0));
        assert_eq!(confined_delta(&a, &b, &[1], &none), (0.0, 0.5));
        // A task of a lab's namespace outside its cgroups is that endpoint's, and no one else's.
        b.netns = [(4, 77)].into_iter().collect();
        let mut taken = HashSet::new();
        assert_eq!(netns_delta(&a, &b, 77, &[1], &mut taken), 0.5);
        assert_eq!(confined_delta(&a, &b, &[1], &taken), (0.0, 0.0));
    }
}
