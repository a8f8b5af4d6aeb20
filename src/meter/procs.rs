//! Per-process CPU from /proc/PID/stat (utime + stime) and a task's schedstat (nanoseconds).

use super::fs::Fs;

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
    read_in(&Fs::real(), pid, ticks_per_s)
}

/// `read` in the tree `fs`.
pub fn read_in(fs: &Fs, pid: u32, ticks_per_s: f64) -> Option<ProcTimes> {
    parse_stat(&fs.read(format!("/proc/{pid}/stat"))?, ticks_per_s)
}

/// The first field of a schedstat file: time on a CPU, in seconds.
pub fn parse_schedstat(text: &str) -> Option<f64> {
    Some(text.split_whitespace().next()?.parse::<u64>().ok()? as f64 / 1e9)
}

/// One process's CPU seconds as finely as the kernel keeps them: a kernel thread (a NAPI thread,
/// one task) from its schedstat in nanoseconds, where /proc/PID/stat counts 10 ms ticks — over a
/// 3 s window a tick is 0.33 % of a core, a tenth of a paced point's cost; anything else from its
/// stat (which also counts its threads that have ended).
pub fn read_fine(fs: &Fs, pid: u32, ticks_per_s: f64) -> Option<f64> {
    let t = read_in(fs, pid, ticks_per_s)?;
    if !t.kthread {
        return Some(t.cpu_s);
    }
    fs.read(format!("/proc/{pid}/schedstat"))
        .and_then(|s| parse_schedstat(&s))
        .or(Some(t.cpu_s))
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
}
