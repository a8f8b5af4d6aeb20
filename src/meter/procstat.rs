//! Host CPU from /proc/stat: per-core and total times split into user, system, irq, softirq,
//! steal, guest and idle, and the busy share between two snapshots. Guest time is already inside
//! user (and guest_nice inside nice), so it is shown but never added twice.

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
        self.user + self.nice + self.system + self.idle + self.iowait + self.irq + self.softirq + self.steal
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
}

pub fn parse(text: &str) -> Result<Snapshot, String> {
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
            return Err(format!("/proc/stat: short line '{line}'"));
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
            s.cores.push(t);
        }
    }
    if !saw_total {
        return Err("/proc/stat has no cpu line".into());
    }
    Ok(s)
}

pub fn read() -> Result<Snapshot, String> {
    parse(&std::fs::read_to_string("/proc/stat").map_err(|e| format!("/proc/stat: {e}"))?)
}

/// Host busy between two snapshots: (busy share 0..1 of all cores, busy cores).
pub fn busy(a: &Snapshot, b: &Snapshot) -> (f64, f64) {
    let d = b.total.delta(&a.total);
    let total = d.total();
    if total == 0 {
        return (0.0, 0.0);
    }
    let share = d.busy() as f64 / total as f64;
    (share, share * b.cores.len().max(1) as f64)
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
        assert_eq!(a.total.guest, 30);
        assert_eq!(a.total.total(), 100 + 50 + 800 + 10 + 5 + 20);
        let b = parse(B).unwrap();
        let d = b.total.delta(&a.total);
        // busy: user 100 + system 50 + softirq 50 = 200 of 300; guest (50) is inside user.
        assert_eq!(d.busy(), 200);
        let (share, cores) = busy(&a, &b);
        assert!((share - 200.0 / 300.0).abs() < 1e-12);
        assert!((cores - 2.0 * 200.0 / 300.0).abs() < 1e-12);
    }

    #[test]
    fn refuses_garbage() {
        assert!(parse("intr 1 2\n").is_err());
        assert!(parse("cpu 1 2\n").is_err());
    }
}
