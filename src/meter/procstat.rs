//! The kernel's per-CPU time texts parsed: /proc/stat (user, system, irq, softirq, steal, guest
//! and idle, in USER_HZ units; guest time is already inside user, so it is never added twice),
//! /proc/timer_list's NO_HZ idle nanoseconds and cpuidle's residency. What they mean together is
//! `busy`'s job.

use super::error::Error;
use serde::Serialize;

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct CpuTimes {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
    pub guest: u64,
    pub guest_nice: u64,
}

impl CpuTimes {
    /// All time, counting guest time once (it is part of user/nice).
    pub fn total(&self) -> u64 {
        self.user
            + self.nice
            + self.system
            + self.idle
            + self.iowait
            + self.irq
            + self.softirq
            + self.steal
    }
    pub fn idle_all(&self) -> u64 {
        self.idle + self.iowait
    }
    pub fn busy(&self) -> u64 {
        self.total() - self.idle_all()
    }
    pub fn delta(&self, earlier: &CpuTimes) -> CpuTimes {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        CpuTimes {
            user: d(self.user, earlier.user),
            nice: d(self.nice, earlier.nice),
            system: d(self.system, earlier.system),
            idle: d(self.idle, earlier.idle),
            iowait: d(self.iowait, earlier.iowait),
            irq: d(self.irq, earlier.irq),
            softirq: d(self.softirq, earlier.softirq),
            steal: d(self.steal, earlier.steal),
            guest: d(self.guest, earlier.guest),
            guest_nice: d(self.guest_nice, earlier.guest_nice),
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    pub total: CpuTimes,
    pub cores: Vec<CpuTimes>,
    /// The CPU number of each entry of `cores` (an offline CPU has no line).
    pub ids: Vec<usize>,
    /// Per entry of `cores`: microseconds spent in idle states (cpuidle), where the kernel has it.
    pub idle_us: Vec<Option<u64>>,
    /// Per entry of `cores`, at a window's edges (and in a fine series): nanoseconds idle as the
    /// tick scheduler counts them (/proc/timer_list), where the kernel shows them.
    pub idle_ns: Vec<Option<u64>>,
}

impl Snapshot {
    /// The times of CPU `id`, if it is online.
    pub fn core(&self, id: usize) -> Option<&CpuTimes> {
        self.ids
            .iter()
            .position(|&i| i == id)
            .map(|k| &self.cores[k])
    }
}

pub fn parse(text: &str) -> Result<Snapshot, Error> {
    let mut s = Snapshot::default();
    let mut saw_total = false;
    for line in text.lines() {
        let mut f = line.split_whitespace();
        let Some(name) = f.next() else { continue };
        if !name.starts_with("cpu") {
            continue;
        }
        let v: Vec<u64> = f.map(|x| x.parse().unwrap_or(0)).collect();
        if v.len() < 4 {
            return Err(Error::Unreadable(format!(
                "/proc/stat: short line '{line}'"
            )));
        }
        let g = |i: usize| v.get(i).copied().unwrap_or(0);
        let t = CpuTimes {
            user: g(0),
            nice: g(1),
            system: g(2),
            idle: g(3),
            iowait: g(4),
            irq: g(5),
            softirq: g(6),
            steal: g(7),
            guest: g(8),
            guest_nice: g(9),
        };
        if name == "cpu" {
            s.total = t;
            saw_total = true;
        } else {
            let id = name[3..].parse::<usize>().map_err(|_| {
                Error::Unreadable(format!(
                    "/proc/stat: bad CPU line '{}'",
                    crate::text::clip(line)
                ))
            })?;
            s.cores.push(t);
            s.ids.push(id);
        }
    }
    if !saw_total {
        return Err(Error::Unreadable("/proc/stat has no cpu line".into()));
    }
    Ok(s)
}

/// Per CPU: nanoseconds idle so far by /proc/timer_list's tick scheduler: `.idle_sleeptime` +
/// `.iowait_sleeptime` (credited when an idle period ends) plus, on a CPU idling with its tick
/// stopped, the idle period under way (`now at` less `.idle_entrytime`).
pub fn timer_list_idle_ns(text: &str) -> std::collections::BTreeMap<usize, u64> {
    let field = |l: &str, name: &str| -> Option<u64> {
        l.strip_prefix(name)?
            .trim_start_matches([' ', ':'])
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    };
    let mut now = None;
    let mut cpus: Vec<(usize, [u64; 4])> = Vec::new();
    for line in text.lines() {
        let l = line.trim();
        if let Some(n) = field(l, "now at") {
            now = Some(n);
        } else if let Some(c) = l.strip_prefix("cpu: ").and_then(|c| c.trim().parse().ok()) {
            cpus.push((c, [0; 4]));
        } else if let Some((_, f)) = cpus.last_mut() {
            let names = [
                ".idle_sleeptime",
                ".iowait_sleeptime",
                ".tick_stopped",
                ".idle_entrytime",
            ];
            for (k, name) in names.iter().enumerate() {
                if let Some(v) = field(l, name) {
                    f[k] = v;
                }
            }
        }
    }
    cpus.into_iter()
        .map(|(c, [idle, iowait, stopped, entry])| {
            let under_way = match now {
                Some(n) if stopped == 1 => n.saturating_sub(entry),
                _ => 0,
            };
            (c, idle + iowait + under_way)
        })
        .collect()
}

/// Each CPU's cpuidle states, found once (a CPU's states do not change while it is online), so a
/// sample reads one file a state and lists no folder.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cpuidle(std::collections::BTreeMap<usize, usize>);

impl Cpuidle {
    /// The states of every CPU that has cpuidle (none: the kernel keeps no residency).
    pub fn find(fs: &super::fs::Fs) -> Cpuidle {
        let cpus = fs.names("/sys/devices/system/cpu");
        let ids = cpus
            .iter()
            .filter_map(|n| n.strip_prefix("cpu")?.parse::<usize>().ok())
            .filter(|&c| c < 4096);
        Cpuidle(
            ids.filter_map(|c| {
                let dir = format!("/sys/devices/system/cpu/cpu{c}/cpuidle");
                let n = fs
                    .names(&dir)
                    .iter()
                    .filter(|n| n.starts_with("state"))
                    .count();
                (n > 0).then_some((c, n.min(64)))
            })
            .collect(),
        )
    }

    /// Whether this host keeps cpuidle residency (then the meter never reads /proc/timer_list,
    /// whose cost grows with the host's pending timers).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Microseconds CPU `c` has spent in its idle states so far (/sys/…/cpuidle/stateN/time).
    pub fn us(&self, fs: &super::fs::Fs, c: usize) -> Option<u64> {
        let n = *self.0.get(&c)?;
        (0..n)
            .map(|k| {
                fs.read(format!(
                    "/sys/devices/system/cpu/cpu{c}/cpuidle/state{k}/time"
                ))?
                .trim()
                .parse::<u64>()
                .ok()
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "cpu  100 0 50 800 10 5 20 0 30 0\ncpu0 50 0 25 400 5 5 10 0 30 0\ncpu1 50 0 25 400 5 0 10 0 0 0\nintr 1 2\n";
    const B: &str = "cpu  200 0 100 900 10 5 70 0 80 0\ncpu0 150 0 50 400 5 5 35 0 80 0\ncpu1 50 0 50 500 5 0 35 0 0 0\n";

    #[test]
    fn parses_and_counts_guest_time_once() {
        let a = parse(A).unwrap();
        assert_eq!(a.cores.len(), 2);
        assert_eq!(a.ids, vec![0, 1]);
        assert_eq!(a.core(1).unwrap().idle, 400);
        assert!(a.core(2).is_none());
        assert_eq!(a.total.guest, 30);
        assert_eq!(a.total.total(), 100 + 50 + 800 + 10 + 5 + 20);
        let b = parse(B).unwrap();
        let d = b.total.delta(&a.total);
        // busy: user 100 + system 50 + softirq 50 = 200 of 300; guest (50) is inside user.
        assert_eq!(d.busy(), 200);
    }

    #[test]
    fn timer_list_counts_idle_to_the_nanosecond() {
        let tl = "now at 2000000000 nsecs\n\ncpu: 0\n clock 0:\n  .tick_stopped   : 0\n  .idle_entrytime : 1900000000 nsecs\n  .idle_sleeptime : 1004321000 nsecs\n  .iowait_sleeptime: 2000000 nsecs\n\ncpu: 1\n  .tick_stopped   : 1\n  .idle_entrytime : 1990000000 nsecs\n  .idle_sleeptime : 7 nsecs\n  .iowait_sleeptime: 0 nsecs\n";
        let m = timer_list_idle_ns(tl);
        // CPU 0 runs: what was credited. CPU 1 idles with its tick stopped since 1.99 s: 10 ms more.
        assert_eq!(m[&0], 1_006_321_000);
        assert_eq!(m[&1], 10_000_007);
    }

    #[test]
    fn refuses_garbage() {
        assert!(parse("intr 1 2\n").is_err());
        assert!(parse("cpu 1 2\n").is_err());
    }
}
