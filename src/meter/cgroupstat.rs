//! CPU time of one cgroup folder: v1 `cpuacct.stat` (user and system, in USER_HZ ticks, the same
//! ticks /proc/stat counts, softirq taken while a member task ran included) or v2 `cpu.stat`
//! (`usage_usec`).

use super::error::Error;
use super::fs::Fs;
use std::path::Path;

/// CPU seconds used by a cgroup so far, from the text of its stat file.
pub fn parse(file_name: &str, text: &str, ticks_per_s: f64) -> Result<f64, Error> {
    let field = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(k).and_then(|v| v.trim().parse::<u64>().ok()))
            .ok_or_else(|| Error::Unreadable(format!("{file_name}: no '{}' line", k.trim())))
    };
    match file_name {
        "cpuacct.stat" => Ok((field("user ")? + field("system ")?) as f64 / ticks_per_s),
        "cpu.stat" => Ok(field("usage_usec ")? as f64 / 1e6),
        _ => Err(Error::Unreadable(format!(
            "{file_name}: not a cgroup CPU file"
        ))),
    }
}

/// CPU seconds of a cgroup folder (whichever hierarchy it is in).
pub fn read(fs: &Fs, dir: &Path, ticks_per_s: f64) -> Result<f64, Error> {
    for f in ["cpuacct.stat", "cpu.stat"] {
        if let Some(t) = fs.read(dir.join(f)) {
            return parse(f, &t, ticks_per_s);
        }
    }
    Err(Error::Unreadable(format!(
        "{}: no cpuacct.stat or cpu.stat (is the lab still up?)",
        dir.display()
    )))
}

/// CPU seconds per CPU of a cgroup v1 cpuacct folder (`cpuacct.usage_percpu`, nanoseconds of
/// the scheduler's run time, softirq taken while a member task ran included); None elsewhere.
pub fn read_percpu(fs: &Fs, dir: &Path) -> Option<Vec<f64>> {
    parse_percpu(&fs.read(dir.join("cpuacct.usage_percpu"))?)
}

pub fn parse_percpu(text: &str) -> Option<Vec<f64>> {
    let v: Option<Vec<f64>> = text
        .split_whitespace()
        .map(|x| x.parse::<u64>().ok().map(|ns| ns as f64 / 1e9))
        .collect();
    v.filter(|v| !v.is_empty() && v.len() <= 4096)
}

/// Whether a cgroup folder counts CPU time (a cpuset folder does not: a task can sit in a lab's
/// cpuset and be counted elsewhere).
pub fn counts_cpu(dir: &Path) -> bool {
    ["cpuacct.usage_percpu", "cpuacct.stat", "cpu.stat"]
        .iter()
        .any(|f| dir.join(f).exists())
}

/// The folders' accounting file for CPU time: the first folder that has one (a part may also sit
/// in a cpuset hierarchy, which counts nothing).
pub fn read_any(fs: &Fs, dirs: &[std::path::PathBuf], ticks_per_s: f64) -> Result<f64, Error> {
    let mut last = Err(Error::Unreadable("no cgroup folders".into()));
    for d in dirs.iter().filter(|d| counts_cpu(&fs.path(d))) {
        last = read(fs, d, ticks_per_s);
        if last.is_ok() {
            return last;
        }
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_cpuacct_stat_fixture() {
        let t = "user 154\nsystem 46\n";
        assert_eq!(parse("cpuacct.stat", t, 100.0).unwrap(), 2.0);
        assert!(parse("cpuacct.stat", "user 1\n", 100.0).is_err());
    }

    #[test]
    fn v1_usage_percpu_fixture() {
        assert_eq!(
            parse_percpu("1500000000 500000000 \n").unwrap(),
            vec![1.5, 0.5]
        );
        assert!(parse_percpu("12 x").is_none());
        assert!(parse_percpu("").is_none());
    }

    #[test]
    fn v2_cpu_stat_fixture() {
        let t = "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\nnr_periods 0\n";
        assert_eq!(parse("cpu.stat", t, 100.0).unwrap(), 2.5);
        assert!(parse("cpu.stat", "user_usec 5\n", 100.0).is_err());
        assert!(parse("memory.stat", t, 100.0).is_err());
    }
}
